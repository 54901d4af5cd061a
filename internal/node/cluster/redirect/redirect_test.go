package redirect

import (
	"strconv"
	"testing"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/cluster"
)

// routing builds a Routing over nodes a (index 0, me), b and c, with slot
// owners given by owner(slot).
func routing(owner func(slot int) int32) *cluster.Routing {
	rt := &cluster.Routing{State: cluster.ClusterOK, Me: 0, MyMaster: -1, Nodes: []cluster.RouteNode{
		{ID: "a", IP: "10.0.0.1", Port: 7000, Hostname: "ha"},
		{ID: "b", IP: "10.0.0.2", Port: 7001, Hostname: "hb"},
		{ID: "c", IP: "10.0.0.3", Port: 7002},
	}}
	for i := range cluster.NumSlots {
		rt.SetSlot(i, owner(i), -1, -1)
	}
	return rt
}

func slotOf(k string) int { return consistent.KeySlot(k) }

// decide feeds keys (present says which exist) and returns the rendered
// outcome: "" to serve, else the error text with IP endpoints.
func decide(t *testing.T, rt *cluster.Routing, keys []string, present map[string]bool, r Request) string {
	t.Helper()
	q := NewQuery(rt, false)
	for _, k := range keys {
		msg, check := q.Key(k)
		if msg != "" {
			return msg
		}
		if check {
			q.Exists(present[k])
		}
	}
	out, msg, to := q.Decide(r)
	switch out {
	case Serve:
		if msg != "" {
			t.Fatalf("Serve with message %q", msg)
		}
		return ""
	case Moved:
		return Message("MOVED", q.Slot, rt, to, "ip")
	case Ask:
		return Message("ASK", q.Slot, rt, to, "ip")
	}
	return msg
}

func TestDecide(t *testing.T) {
	mine := routing(func(int) int32 { return 0 })
	theirs := routing(func(int) int32 { return 1 })
	unbound := routing(func(int) int32 { return -1 })
	down := routing(func(int) int32 { return 0 })
	down.State = cluster.ClusterFail
	// {x} keys share a slot; "a" and "b" do not.
	xs := slotOf("{x}1")
	migrating := routing(func(int) int32 { return 0 })
	migrating.SetSlot(xs, 0, 2, -1)
	importing := routing(func(int) int32 { return 1 })
	importing.SetSlot(xs, 1, -1, 1)
	replica := routing(func(int) int32 { return 1 })
	replica.MyMaster = 1
	if slotOf("a") == slotOf("b") {
		t.Fatal("fixture: a and b share a slot")
	}
	cases := []struct {
		name    string
		rt      *cluster.Routing
		keys    []string
		present map[string]bool
		r       Request
		want    string
	}{
		{"no keys", theirs, nil, nil, Request{}, ""},
		{"mine", mine, []string{"a"}, nil, Request{}, ""},
		{"moved", theirs, []string{"a"}, nil, Request{}, "MOVED 15495 10.0.0.2:7001"},
		{"unbound", unbound, []string{"a"}, nil, Request{}, ErrClusterDownUnbound},
		{"crossslot", mine, []string{"a", "b"}, nil, Request{}, ErrCrossSlot},
		{"same key twice", mine, []string{"a", "a"}, nil, Request{}, ""},
		{"down", down, []string{"a"}, nil, Request{}, ErrClusterDown},
		{"down reads allowed", down, []string{"a"}, nil, Request{AllowReadsWhenDown: true}, ""},
		{"down reads allowed, write", down, []string{"a"}, nil, Request{AllowReadsWhenDown: true, Write: true}, ErrClusterDownRO},
		{"migrating, present", migrating, []string{"{x}1"}, map[string]bool{"{x}1": true}, Request{}, ""},
		{"migrating, missing", migrating, []string{"{x}1"}, nil, Request{}, "ASK " + itoa(xs) + " 10.0.0.3:7002"},
		{"migrating, partly", migrating, []string{"{x}1", "{x}2"}, map[string]bool{"{x}1": true}, Request{}, ErrTryAgain},
		{"migrating, migrate", migrating, []string{"{x}1"}, nil, Request{Name: "migrate"}, ""},
		{"importing, no asking", importing, []string{"{x}1"}, nil, Request{}, "MOVED " + itoa(xs) + " 10.0.0.2:7001"},
		{"importing, asking", importing, []string{"{x}1"}, nil, Request{Asking: true}, ""},
		{"importing, restore-asking", importing, []string{"{x}1"}, nil, Request{Name: "restore-asking"}, ""},
		{"importing, asking, multi missing", importing, []string{"{x}1", "{x}2"}, map[string]bool{"{x}1": true}, Request{Asking: true}, ErrTryAgain},
		{"replica, readonly read", replica, []string{"a"}, nil, Request{ReadOnly: true}, ""},
		{"replica, readonly write", replica, []string{"a"}, nil, Request{ReadOnly: true, Write: true}, "MOVED 15495 10.0.0.2:7001"},
		{"replica, no readonly", replica, []string{"a"}, nil, Request{}, "MOVED 15495 10.0.0.2:7001"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(t, tc.rt, tc.keys, tc.present, tc.r); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Shard pub/sub channels are never looked up, and the down check has its
// own directive.
func TestDecideShardPubSub(t *testing.T) {
	rt := routing(func(int) int32 { return 0 })
	rt.SetSlot(slotOf("ch"), 0, 1, -1)
	rt.State = cluster.ClusterFail
	q := NewQuery(rt, true)
	if msg, check := q.Key("ch"); msg != "" || check {
		t.Fatalf("Key = %q, %v; want no error, no existence check", msg, check)
	}
	if out, msg, _ := q.Decide(Request{AllowReadsWhenDown: true}); out != Refuse || msg != ErrClusterDown {
		t.Fatalf("down: %v %q", out, msg)
	}
	if out, _, _ := q.Decide(Request{AllowPubsubShardWhenDown: true}); out != Serve {
		t.Fatalf("down, allowed: %v", out)
	}
}

func TestBlocked(t *testing.T) {
	rt := routing(func(s int) int32 { return int32(s%3) - 1 })
	rt.MyMaster = 1
	rt.Me = 2
	rt.SetSlot(3, rt.Owner(3), -1, 0)
	cases := []struct {
		slot int
		ro   bool
		want Outcome
		to   int32
		msg  string
	}{
		{0, false, Refuse, -1, ErrClusterDownUnbound},
		{1, false, Moved, 0, ""},
		{2, false, Moved, 1, ""},
		{2, true, Serve, -1, ""},
		{3, false, Serve, -1, ""},
	}
	for _, tc := range cases {
		out, msg, to := Blocked(rt, tc.slot, tc.ro)
		if out != tc.want || msg != tc.msg || to != tc.to {
			t.Errorf("slot %d ro %v: %v %q %d, want %v %q %d", tc.slot, tc.ro, out, msg, to, tc.want, tc.msg, tc.to)
		}
	}
	rt.State = cluster.ClusterFail
	if out, msg, _ := Blocked(rt, 3, false); out != Refuse || msg != ErrClusterDown {
		t.Errorf("down: %v %q", out, msg)
	}
}

func TestMessageEndpoints(t *testing.T) {
	rt := routing(func(int) int32 { return 1 })
	for _, tc := range []struct {
		kind      string
		to        int32
		typ, want string
	}{
		{"MOVED", 1, "ip", "MOVED 5 10.0.0.2:7001"},
		{"ASK", 1, "hostname", "ASK 5 hb:7001"},
		{"MOVED", 2, "hostname", "MOVED 5 ?:7002"},
		{"MOVED", 1, "unknown-endpoint", "MOVED 5 :7001"},
	} {
		if got := Message(tc.kind, 5, rt, tc.to, tc.typ); got != tc.want {
			t.Errorf("%s %d %s: %q, want %q", tc.kind, tc.to, tc.typ, got, tc.want)
		}
	}
}

// The decision allocates nothing: it runs before every command.
func TestDecideAllocs(t *testing.T) {
	rt := routing(func(int) int32 { return 0 })
	key := "user:1000"
	n := testing.AllocsPerRun(100, func() {
		q := NewQuery(rt, false)
		q.Key(key)
		q.Decide(Request{Write: true})
	})
	if n != 0 {
		t.Fatalf("%v allocations per decision", n)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
