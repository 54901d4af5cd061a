package cluster

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestSlotTableRoundTrip(t *testing.T) {
	in := []redis.ClusterSlot{
		{Start: 0, End: 99, Nodes: []redis.ClusterNode{{Addr: "a:1"}, {Addr: "a:2"}}},
		{Start: 100, End: 100, Nodes: []redis.ClusterNode{{Addr: "b:1"}}},
		{Start: 200, End: 16383, Nodes: []redis.ClusterNode{{Addr: "a:1"}, {Addr: "a:2"}}},
	}
	tb := tableFromSlots(in)
	if tb.master(0) != "a:1" || tb.master(100) != "b:1" || tb.master(150) != "" || tb.master(16383) != "a:1" {
		t.Fatalf("masters: %q %q %q %q", tb.master(0), tb.master(100), tb.master(150), tb.master(16383))
	}
	out := tb.clusterSlots()
	if len(out) != 3 || out[0].End != 99 || out[1].Start != 100 || out[2].Start != 200 || len(out[2].Nodes) != 2 {
		t.Fatalf("clusterSlots: %+v", out)
	}
	moved := tb.withOwner(5, "b:1")
	if moved.master(5) != "b:1" || tb.master(5) != "a:1" {
		t.Fatal("withOwner changed the original or did not move the slot")
	}
	if d := tb.diff(moved); !slices.Equal(d, []int{5}) {
		t.Fatalf("diff = %v", d)
	}
	if got := len(moved.clusterSlots()); got != 5 {
		t.Fatalf("ranges after a move inside a range: %d, want 5", got)
	}
	fresh := moved.withOwner(6, "c:1")
	if fresh.master(6) != "c:1" || len(fresh.shards) != 3 || !fresh.sameReplicas(fresh) || fresh.sameReplicas(tb) {
		t.Fatalf("new master: %+v", fresh.shards)
	}
	if !tb.isMaster("a:1") || tb.isMaster("a:2") {
		t.Fatal("isMaster")
	}
}

func TestNodeKey(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:7000": ":7000", ":7000": ":7000", "[::1]:7000": ":7000",
		"10.0.0.1:7000": "10.0.0.1:7000", "redis-0:7000": "redis-0:7000",
	} {
		if got := nodeKey(in); got != want {
			t.Errorf("nodeKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSlotKeys(t *testing.T) {
	keys := slotKeys()
	for s := range SlotCount {
		if Slot(keys[s]) != s {
			t.Fatalf("slotKeys[%d] = %q hashes to %d", s, keys[s], Slot(keys[s]))
		}
	}
}

func TestCommandKeys(t *testing.T) {
	for _, tc := range []struct {
		args []interface{}
		want []string
	}{
		{[]interface{}{"rename", "a", "b"}, []string{"a", "b"}},
		{[]interface{}{"mset", "a", "1", "b", "2"}, []string{"a", "b"}},
		{[]interface{}{"blpop", "a", "b", 0}, []string{"a", "b"}},
		{[]interface{}{"eval", "s", 2, "a", "b", "arg"}, []string{"a", "b"}},
		{[]interface{}{"zunionstore", "d", "2", "a", "b", "weights", 1, 2}, []string{"d", "a", "b"}},
		{[]interface{}{"zunion", 2, "a", "b"}, []string{"a", "b"}},
		{[]interface{}{"bitop", "and", "d", "a", []byte("b")}, []string{"d", "a", "b"}},
		{[]interface{}{"get", "a"}, nil},
	} {
		if got := commandKeys(tc.args[0].(string), tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("%v: keys %v, want %v", tc.args, got, tc.want)
		}
	}
	if s, ok := firstKeySlot("get", []interface{}{"get", "{x}1"}); !ok || s != Slot("x") {
		t.Fatal("firstKeySlot of GET")
	}
	if _, ok := firstKeySlot("ping", []interface{}{"ping"}); ok {
		t.Fatal("firstKeySlot of PING")
	}
}

func TestParseMoved(t *testing.T) {
	if s, a, ok := parseMoved(redis.ErrClosed); ok {
		t.Fatalf("parsed %d %s", s, a)
	}
	s, a, ok := parseMoved(movedErr("MOVED 3999 127.0.0.1:6381"))
	if !ok || s != 3999 || a != "127.0.0.1:6381" {
		t.Fatalf("%d %s %v", s, a, ok)
	}
}

type movedErr string

func (e movedErr) Error() string { return string(e) }
