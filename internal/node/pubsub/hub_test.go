package pubsub

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/resp"
)

// fake is a subscriber that records what the hub pushes, rendered as
// text ("subscribe a 1").
type fake struct {
	proto      int
	out        *bytes.Buffer
	subscribed *bool
}

func newFake(proto int) fake {
	return fake{proto: proto, out: new(bytes.Buffer), subscribed: new(bool)}
}

func (f fake) Proto() int                       { return f.proto }
func (f fake) Push(fn func(b []byte) []byte)    { f.out.Write(fn(nil)) }
func (f fake) Confirm(fn func(b []byte) []byte) { f.out.Write(fn(nil)) }
func (f fake) SetSubscribed(on bool)            { *f.subscribed = on }

// events decodes everything pushed so far, one line per push.
func (f fake) events(t *testing.T) []string {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(f.out.Bytes()))
	var out []string
	for br.Buffered() > 0 || f.out.Len() > 0 {
		v, err := resp.ReadValue(br)
		if err != nil {
			break
		}
		var parts []string
		for _, e := range v.Elems {
			switch {
			case e.Null:
				parts = append(parts, "nil")
			case e.Type == ':':
				parts = append(parts, fmt.Sprint(e.Int))
			default:
				parts = append(parts, e.Str)
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	f.out.Reset()
	return out
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %#v, want %#v", what, got, want)
	}
}

func TestSubscribeUnsubscribe(t *testing.T) {
	h := New[fake]()
	a := newFake(2)
	h.Subscribe(a, Channel, []string{"x", "y", "x"})
	h.Subscribe(a, Pattern, []string{"n*"})
	eq(t, "confirmations", a.events(t), []string{"subscribe x 1", "subscribe y 2", "subscribe x 2", "psubscribe n* 3"})
	eq(t, "subscribed", *a.subscribed, true)
	eq(t, "channels", h.Names(Channel, nil), []string{"x", "y"})
	eq(t, "numpat", h.Len(Pattern), 1)
	eq(t, "count", h.Count(a, Channel), 2)

	h.Unsubscribe(a, Channel, nil)
	eq(t, "unsubscribe all", a.events(t), []string{"unsubscribe x 2", "unsubscribe y 1"})
	h.Unsubscribe(a, Channel, nil)
	eq(t, "unsubscribe none", a.events(t), []string{"unsubscribe nil 1"})
	eq(t, "still subscribed", *a.subscribed, true)
	h.Unsubscribe(a, Pattern, []string{"n*", "zz"})
	eq(t, "punsubscribe", a.events(t), []string{"punsubscribe n* 0", "punsubscribe zz 0"})
	eq(t, "subscribed", *a.subscribed, false)
	eq(t, "no names left", h.Names(Channel, nil), []string(nil))
	eq(t, "no owner left", len(h.own), 0)
}

func TestShardCountsApart(t *testing.T) {
	h := New[fake]()
	a := newFake(3)
	h.Subscribe(a, Channel, []string{"c"})
	h.Subscribe(a, Shard, []string{"s1", "s2"})
	eq(t, "counts", a.events(t), []string{"subscribe c 1", "ssubscribe s1 1", "ssubscribe s2 2"})
	h.Unsubscribe(a, Shard, nil)
	eq(t, "sunsubscribe", a.events(t), []string{"sunsubscribe s1 1", "sunsubscribe s2 0"})
	eq(t, "subscribed by channel", *a.subscribed, true)
	h.Unsubscribe(a, Shard, nil)
	eq(t, "sunsubscribe none", a.events(t), []string{"sunsubscribe nil 0"})
}

func TestPublish(t *testing.T) {
	h := New[fake]()
	a, b := newFake(2), newFake(3)
	h.Subscribe(a, Channel, []string{"news"})
	h.Subscribe(b, Pattern, []string{"n*", "x*"})
	h.Subscribe(b, Shard, []string{"news"})
	a.events(t)
	b.events(t)
	eq(t, "receivers", h.Publish("news", []byte("hi")), 2)
	eq(t, "a", a.events(t), []string{"message news hi"})
	eq(t, "b", b.events(t), []string{"pmessage n* news hi"})
	eq(t, "shard receivers", h.PublishShard("news", []byte("s")), 1)
	eq(t, "b shard", b.events(t), []string{"smessage news s"})
	eq(t, "no receivers", h.Publish("other", []byte("x")), 0)
	eq(t, "numsub", h.NumSub(Channel, [][]byte{[]byte("news"), []byte("none")}), []int{1, 0})
	pat := "n?ws"
	eq(t, "channels matching", h.Names(Channel, &pat), []string{"news"})
}

func TestUnsubscribeAllAndRemoveShards(t *testing.T) {
	h := New[fake]()
	a, b := newFake(2), newFake(2)
	h.Subscribe(a, Channel, []string{"c"})
	h.Subscribe(a, Shard, []string{"s1", "t1"})
	h.Subscribe(b, Shard, []string{"s1"})
	a.events(t)
	b.events(t)
	h.RemoveShards(func(name string) bool { return strings.HasPrefix(name, "s") })
	eq(t, "a", a.events(t), []string{"sunsubscribe s1 1"})
	eq(t, "b", b.events(t), []string{"sunsubscribe s1 0"})
	eq(t, "b subscribed", *b.subscribed, false)
	eq(t, "a subscribed", *a.subscribed, true)
	eq(t, "shards left", h.Names(Shard, nil), []string{"t1"})
	h.UnsubscribeAll(a)
	eq(t, "silent", a.events(t), []string(nil))
	eq(t, "a subscribed", *a.subscribed, false)
	eq(t, "nothing left", [3]int{h.Len(Channel), h.Len(Pattern), h.Len(Shard)}, [3]int{})
	eq(t, "of", h.Of(a, Channel), []string{})
}
