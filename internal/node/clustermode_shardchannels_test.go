package node

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/testutil"
)

// routingOf builds a Routing over nodes a, b, c (indices 0, 1, 2) with
// the given owners for slots 0..len(owners)-1 and -1 elsewhere.
func routingOf(me, myMaster int32, owners ...int32) *cluster.Routing {
	rt := &cluster.Routing{Me: me, MyMaster: myMaster, Nodes: []cluster.RouteNode{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	for i, o := range owners {
		rt.SetSlot(i, o, -1, -1)
	}
	return rt
}

// The slots whose shard channels go are those my shard (me or my master)
// served and no longer does, as clusterDelSlot's removeChannelsInSlot.
func TestLostShardSlots(t *testing.T) {
	cases := []struct {
		name      string
		old, next *cluster.Routing
		want      []int
	}{
		{"master gives slot 1 away, deletes slot 2", routingOf(0, -1, 0, 0, 0, 1), routingOf(0, -1, 0, 1, -1, 1), []int{1, 2}},
		{"replica of b: b loses slot 3", routingOf(0, 1, 2, 1, 1, 1), routingOf(0, 1, 2, 1, 1, 2), []int{3}},
		{"another shard's slot moves", routingOf(0, -1, 1, 1), routingOf(0, -1, 2, 1), nil},
		{"slot gained", routingOf(0, -1, -1, 1), routingOf(0, -1, 0, 1), nil},
		{"replica follows a new master: its old master keeps its slots", routingOf(0, 1, 1, 1), routingOf(0, 2, 1, 1), nil},
		{"node indices shift, same owner", routingOf(0, -1, 1), func() *cluster.Routing {
			rt := routingOf(0, -1, 2)
			rt.Nodes[2].ID = "b"
			rt.Nodes[1].ID = "c"
			return rt
		}(), nil},
		{"first routing", nil, routingOf(0, -1, 0), nil},
	}
	for _, tc := range cases {
		if got := cluster.LostShardSlots(tc.old, tc.next, nil, false); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if tc.old == nil {
			continue
		}
		// The partial path, given every slot that differs, agrees.
		var changed []int
		for s := range cluster.NumSlots {
			if tc.old.Owner(s) != tc.next.Owner(s) {
				changed = append(changed, s)
			}
		}
		if got := cluster.LostShardSlots(tc.old, tc.next, changed, true); !slices.Equal(got, tc.want) {
			t.Errorf("%s, partial: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A shard channel subscriber is told "sunsubscribe" when its slot leaves
// the node (25-pubsubshard-slot-migration.tcl "Delete a slot, verify
// sunsubscribe message"); a channel of a slot the node keeps stays.
func TestShardChannelsDroppedWithSlot(t *testing.T) {
	ts := startServer(t, "port", strconv.Itoa(testutil.FreePort(t)), "cluster-port", strconv.Itoa(testutil.FreePort(t)),
		"cluster-enabled", "yes", "cluster-config-file", "nodes.conf")
	admin := ts.raw(t)
	admin.expect("CLUSTER ADDSLOTSRANGE 0 16383\r\n", "+OK")
	sub := ts.raw(t)
	// ch3 is in slot 1672, ch7 in 1548 (CLUSTER KEYSLOT).
	for _, ch := range []string{"ch3", "ch7"} {
		if s := keySlot(ch); s != map[string]int{"ch3": 1672, "ch7": 1548}[ch] {
			t.Fatalf("keyslot %s = %d", ch, s)
		}
	}
	sub.send("SSUBSCRIBE ch3\r\nSSUBSCRIBE ch7\r\n")
	for _, want := range []string{"*3", "$10", "ssubscribe", "$3", "ch3", ":1", "*3", "$10", "ssubscribe", "$3", "ch7", ":2"} {
		if got := sub.readLine(); got != want {
			t.Fatalf("SSUBSCRIBE reply line %q, want %q", got, want)
		}
	}
	admin.expect("CLUSTER DELSLOTS 1672\r\n", "+OK")
	var got []string
	for range 6 {
		got = append(got, sub.readLine())
	}
	if want := "*3 $12 sunsubscribe $3 ch3 :1"; strings.Join(got, " ") != want {
		t.Fatalf("after DELSLOTS: %q, want %q", strings.Join(got, " "), want)
	}
	admin.expect("PUBSUB SHARDNUMSUB ch3 ch7\r\n", "*4")
	for _, want := range []string{"$3", "ch3", ":0", "$3", "ch7", ":1"} {
		if got := admin.readLine(); got != want {
			t.Fatalf("SHARDNUMSUB line %q, want %q", got, want)
		}
	}
}
