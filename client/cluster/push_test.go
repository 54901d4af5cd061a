package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardis/shardis/client/cluster/clustertest"
	"github.com/shardis/shardis/internal/testutil"
)

func TestParseTopology(t *testing.T) {
	got, err := ParseTopology("epoch 7 slots abc 10.0.0.1:7000 0-3,9\nepoch 7 fail def 10.0.0.2:7001")
	if err != nil {
		t.Fatal(err)
	}
	want := []TopologyChange{
		{Epoch: 7, Kind: ChangeSlots, NodeID: "abc", Addr: "10.0.0.1:7000", Slots: [][2]int{{0, 3}, {9, 9}}},
		{Epoch: 7, Kind: ChangeFail, NodeID: "def", Addr: "10.0.0.2:7001"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ParseTopology = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "1 slots draft", "epoch x slots a b 1", "epoch 1 slots a b 5-2", "epoch 1 slots a b 16384", "epoch 1 slots a b 1-x"} {
		if _, err := ParseTopology(bad); err == nil {
			t.Errorf("ParseTopology(%q) succeeded", bad)
		}
	}
}

// waitWatched waits until every master has one of the client's watch
// subscriptions (one watcher per master when WatchNodes >= masters).
func waitWatched(t *testing.T, nodes []*clustertest.Node, masters int) {
	t.Helper()
	ctx := context.Background()
	testutil.WaitFor(t, 10*time.Second, "the watchers' subscriptions", func() bool {
		n := 0
		for _, nd := range nodes {
			if m, _ := nd.Client().PubSubNumSub(ctx, ReservedChannel).Result(); m[ReservedChannel] > 0 {
				n++
			}
		}
		return n >= masters
	})
}

// TestPushRoutesMovedSlots: after slots move between shardnode masters,
// the client routes their keys to the new owner without a single MOVED
// and without waiting for a refresh (refreshes are off), because the
// nodes pushed the change; the time from the end of the move to the
// client's map naming the new owner is logged (scripts/bench-cluster-
// staleness.sh collects it). Against redis-server nothing is pushed and
// the client needs at most one MOVED per slot (TestFollowMovedSlots).
func TestPushRoutesMovedSlots(t *testing.T) {
	nodes := startClusterOf(t, "shardnode", 3, 0)
	c := newClient(t, nodes, Options{RefreshInterval: -1, MinRefreshInterval: time.Hour, ErrorRefreshInterval: time.Hour})
	waitWatched(t, nodes, 3)
	ctx := context.Background()
	keys := keysInRange("push:", 20, 0, 5460)
	from, to := masterOf(t, nodes, 0), masterOf(t, nodes, 16383)
	for _, k := range keys {
		if err := c.Set(ctx, k, "v"+k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	before := c.Stats()
	var worst time.Duration
	for _, k := range keys {
		s := Slot(k)
		clustertest.MoveSlot(t, s, from, to, nodes)
		moved := time.Now()
		testutil.WaitFor(t, 5*time.Second, "the pushed move of slot "+fmt.Sprint(s), func() bool {
			return c.SlotMaster(s) == to.Addr
		})
		worst = max(worst, time.Since(moved))
		if v, err := c.Get(ctx, k).Result(); err != nil || v != "v"+k {
			t.Fatalf("GET %s after the move: %q %v", k, v, err)
		}
	}
	st := c.Stats()
	if st.Moved != before.Moved {
		t.Fatalf("%d MOVED replies after pushed moves", st.Moved-before.Moved)
	}
	if st.Pushes == before.Pushes {
		t.Fatal("no push received")
	}
	t.Logf("push staleness: %d slots moved one by one, worst %v from the last SETSLOT to the client's map, 0 MOVED, %d pushes, %d refreshes",
		len(keys), worst.Round(time.Microsecond), st.Pushes-before.Pushes, st.Refreshes-before.Refreshes)
}
