package reply

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/runner"
)

// text is a Writer that records RESP2-shaped tokens.
type text struct{ b strings.Builder }

func (t *text) ArrayLen(n int) { fmt.Fprintf(&t.b, "*%d ", n) }
func (t *text) MapLen(n int)   { fmt.Fprintf(&t.b, "%%%d ", n) }
func (t *text) Int(n int64)    { fmt.Fprintf(&t.b, ":%d ", n) }
func (t *text) Bulk(s string)  { fmt.Fprintf(&t.b, "$%s ", s) }
func (t *text) Null()          { t.b.WriteString("_ ") }

func TestNode(t *testing.T) {
	withHost := cluster.NodeInfo{ID: "id1", IP: "10.0.0.1", Port: 7000, Hostname: "h1"}
	noHost := cluster.NodeInfo{ID: "id2", IP: "10.0.0.2", Port: 7001}
	cases := []struct {
		n    cluster.NodeInfo
		typ  string
		want string
	}{
		{withHost, "ip", "*4 $10.0.0.1 :7000 $id1 %1 $hostname $h1 "},
		{noHost, "ip", "*4 $10.0.0.2 :7001 $id2 %0 "},
		{withHost, "hostname", "*4 $h1 :7000 $id1 %1 $ip $10.0.0.1 "},
		{noHost, "hostname", "*4 $? :7001 $id2 %1 $ip $10.0.0.2 "},
		{withHost, "unknown-endpoint", "*4 _ :7000 $id1 %2 $ip $10.0.0.1 $hostname $h1 "},
	}
	for _, tc := range cases {
		var w text
		Node(&w, tc.n, tc.typ)
		if got := w.b.String(); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.n.ID, tc.typ, got, tc.want)
		}
	}
}

func TestShardsAndSlots(t *testing.T) {
	n := cluster.ShardNode{NodeInfo: cluster.NodeInfo{ID: "m", IP: "10.0.0.1", Port: 7000}, Role: "master", Health: "online"}
	n.ReplOffset = 42
	var w text
	Shards(&w, []cluster.Shard{{Slots: [][2]int{{0, 5}, {9, 9}}, Nodes: []cluster.ShardNode{n}}}, "ip")
	want := "*1 %2 $slots *4 :0 :5 :9 :9 $nodes *1 %7 $id $m $port :7000 $ip $10.0.0.1 $endpoint $10.0.0.1 " +
		"$role $master $replication-offset :42 $health $online "
	if got := w.b.String(); got != want {
		t.Errorf("shards: %q, want %q", got, want)
	}
	w = text{}
	Slots(&w, []cluster.SlotRange{{Start: 0, End: 5, Master: n.NodeInfo, Replicas: []cluster.NodeInfo{{ID: "r", IP: "10.0.0.2", Port: 7001}}}}, "ip")
	want = "*1 *4 :0 :5 *4 $10.0.0.1 :7000 $m %0 *4 $10.0.0.2 :7001 $r %0 "
	if got := w.b.String(); got != want {
		t.Errorf("slots: %q, want %q", got, want)
	}
}

func TestLinks(t *testing.T) {
	links := []cluster.LinkInfo{{ID: 1, Direction: "to", Node: "n1", CreateTime: 5}, {ID: 2, Direction: "from", Node: "n1", CreateTime: 6}, {ID: 3, Direction: "to", Node: "n2", CreateTime: 7}}
	bufs := map[cluster.LinkID]runner.LinkBuffer{1: {Allocated: 10, Used: 3, Connected: true}, 2: {Allocated: 10, Connected: true}}
	var w text
	Links(&w, links, bufs)
	got := w.b.String()
	for _, ev := range []string{"$events $rw ", "$events $r ", "$events $ "} {
		if !strings.Contains(got, ev) {
			t.Errorf("missing %q in %q", ev, got)
		}
	}
	if !strings.HasPrefix(got, "*3 %6 $direction $to $node $n1 $create-time :5 $events $rw $send-buffer-allocated :10 $send-buffer-used :3 ") {
		t.Errorf("first link: %q", got)
	}
}

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestParseSlotRanges(t *testing.T) {
	cases := []struct {
		in   string
		want string // the ranges, or the error
	}{
		{"0 5 10 10", "[[0 5] [10 10]]"},
		{"0", "ERR wrong number of arguments for 'cluster|migration' command"},
		{"", "ERR wrong number of arguments for 'cluster|migration' command"},
		{"0 16384", "ERR Invalid or out of range slot"},
		{"-1 3", "ERR Invalid or out of range slot"},
		{"x 3", "ERR Invalid or out of range slot"},
		{"5 3", "ERR start slot number 5 is greater than end slot number 3"},
		{"0 5 5 6", "ERR Slot 5 specified multiple times"},
	}
	for _, tc := range cases {
		r, msg := ParseSlotRanges(args(tc.in))
		got := msg
		if msg == "" {
			got = fmt.Sprint(r)
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := fmt.Sprint(SlotList([][2]int{{1, 3}, {7, 7}})); got != "[1 2 3 7]" {
		t.Errorf("SlotList: %s", got)
	}
}

func TestParseResetAndMigration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		hard bool
		msg  string
	}{
		{"", false, ""}, {"HARD", true, ""}, {"soft", false, ""}, {"medium", false, ErrSyntax}, {"hard x", false, ErrSubSyntax},
	} {
		if hard, msg := ParseReset(args(tc.in)); hard != tc.hard || msg != tc.msg {
			t.Errorf("reset %q: %v %q", tc.in, hard, msg)
		}
	}
	for _, tc := range []struct {
		in, want string
	}{
		{"IMPORT 0 5", "{import [[0 5]] false } "},
		{"import 5", "{import [] false } ERR wrong number of arguments for 'cluster|migration' command"},
		{"Cancel ALL", "{cancel [] true } "},
		{"cancel id abc", "{cancel [] false abc} "},
		{"cancel", "{cancel [] false } " + ErrSyntax},
		{"status", "{status [] false } "},
		{"status id", "{status [] false } " + ErrSyntax},
		{"nope", "{ [] false } " + ErrSubSyntax},
	} {
		op, msg := ParseMigration(args(tc.in))
		if got := fmt.Sprint(op) + " " + msg; got != tc.want {
			t.Errorf("migration %q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzParseMigration(f *testing.F) {
	for _, s := range []string{"import 0 5 7 9", "cancel all", "status id x", "import 9 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := args(s)
		if len(a) == 0 {
			return
		}
		op, msg := ParseMigration(a)
		if msg == "" && op.Verb == "import" {
			for _, r := range op.Ranges {
				if r[0] < 0 || r[1] >= cluster.NumSlots || r[0] > r[1] {
					t.Fatalf("%q: bad range %v", s, r)
				}
			}
		}
	})
}

func TestParseKeysInSlot(t *testing.T) {
	for _, tc := range []struct {
		in   string
		slot int
		msg  string
	}{
		{"0", 0, ""}, {"16383", 16383, ""}, {"16384", 0, "ERR Invalid slot"}, {"-1", 0, "ERR Invalid slot"}, {"x", 0, ErrNotInt},
	} {
		if slot, msg := ParseCountKeysInSlot([]byte(tc.in)); slot != tc.slot || msg != tc.msg {
			t.Errorf("count %q: %d %q", tc.in, slot, msg)
		}
	}
	for _, tc := range []struct {
		slot, count string
		want        string
	}{
		{"5", "10", "5 10 "},
		{"5", "99999999999", "5 1073741824 "},
		{"5", "-1", "0 0 ERR Invalid slot or number of keys"},
		{"16384", "1", "0 0 ERR Invalid slot or number of keys"},
		{"x", "1", "0 0 " + ErrNotInt},
		{"1", "y", "0 0 " + ErrNotInt},
	} {
		s, n, msg := ParseGetKeysInSlot([]byte(tc.slot), []byte(tc.count))
		if got := fmt.Sprint(s, " ", n, " ", msg); got != tc.want {
			t.Errorf("get %s %s: %q, want %q", tc.slot, tc.count, got, tc.want)
		}
	}
}
