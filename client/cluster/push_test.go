package cluster

import (
	"context"
	"fmt"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

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
	// The owner's config epoch, a trailing key=value token; unknown keys
	// are skipped, and may follow an event without slots.
	got, err = ParseTopology("epoch 9 slots abc 10.0.0.1:7000 5 config-epoch=8 later=x\nepoch 9 join def 10.0.0.2:7001 later=y")
	if err != nil {
		t.Fatal(err)
	}
	want = []TopologyChange{
		{Epoch: 9, Kind: ChangeSlots, NodeID: "abc", Addr: "10.0.0.1:7000", Slots: [][2]int{{5, 5}}, ConfigEpoch: 8, HasConfigEpoch: true},
		{Epoch: 9, Kind: ChangeJoin, NodeID: "def", Addr: "10.0.0.2:7001"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ParseTopology = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "1 slots draft", "epoch x slots a b 1", "epoch 1 slots a b 5-2", "epoch 1 slots a b 16384", "epoch 1 slots a b 1-x",
		"epoch 1 slots a b 1 config-epoch=x", "epoch 1 slots a b 1 2", "epoch 1 slots a b 1 config-epoch=-1"} {
		if _, err := ParseTopology(bad); err == nil {
			t.Errorf("ParseTopology(%q) succeeded", bad)
		}
	}
}

// TestPushOrderedByConfigEpoch feeds notices to the client's slot map
// out of order, one state step each (patchNotice, no network): a notice
// claiming slots for another node with a config epoch no higher than the
// owner's the map holds changes nothing, per slot; one with a higher
// epoch, or from a node that sends none, moves them.
func TestPushOrderedByConfigEpoch(t *testing.T) {
	const a, b, cc, d = "10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000", "10.0.0.4:7000"
	c := &Client{pending: map[int]string{}}
	c.table.Store(tableFromSlots([]redis.ClusterSlot{
		{Start: 0, End: 8191, Nodes: []redis.ClusterNode{{Addr: a}}},
		{Start: 8192, End: SlotCount - 1, Nodes: []redis.ClusterNode{{Addr: d}}},
	}))
	notice := func(payload string, wantPatched, wantStale int) {
		t.Helper()
		ch, err := ParseTopology(payload)
		if err != nil {
			t.Fatal(err)
		}
		if p, s := c.patchNotice(ch); p != wantPatched || s != wantStale {
			t.Fatalf("%q: patched %d stale %d, want %d and %d", payload, p, s, wantPatched, wantStale)
		}
	}
	owners := func(want ...string) { // owner of slots 0, 50, 100, 150, 200
		t.Helper()
		tb := c.table.Load()
		for i, w := range want {
			if got := tb.master(i * 50); got != w {
				t.Fatalf("slot %d: owner %s, want %s", i*50, got, w)
			}
		}
		for s, addr := range c.pending {
			if tb.master(s) != addr {
				t.Fatalf("slot %d pending for %s, the map says %s", s, addr, tb.master(s))
			}
		}
	}
	// A move to b at config epoch 6, then the older announcement of an
	// earlier move to c at 5 (a node behind the others): b keeps the slots.
	notice("epoch 7 slots idb "+b+" 0-99 config-epoch=6", 100, 0)
	notice("epoch 6 slots idc "+cc+" 0-99 config-epoch=5", 0, 100)
	owners(b, b, a)
	// Equal config epochs: the owner the map has stays (strictly higher
	// wins); the owner's own line at a higher epoch raises what is held.
	notice("epoch 7 slots idc "+cc+" 0-49 config-epoch=6", 0, 50)
	notice("epoch 9 slots idb "+b+" 0-49 config-epoch=8", 0, 0)
	notice("epoch 9 slots idc "+cc+" 0-99 config-epoch=7", 50, 50)
	owners(b, cc, a)
	// Per slot: a line over slots held at 8 (b), 7 (c) and unknown (a)
	// moves only the last.
	notice("epoch 9 slots idd "+d+" 0-199 config-epoch=7", 100, 100)
	owners(b, cc, d, d, a)
	// A node that sends no config epoch applies in arrival order, and
	// what the map held for those slots is forgotten.
	notice("epoch 9 slots ida "+a+" 0-49", 50, 0)
	notice("epoch 9 slots idc "+cc+" 0-49 config-epoch=1", 50, 0)
	owners(cc, cc, d, d, a)
	// A refresh without config epochs (a node without CLUSTER NODES) that
	// names another owner makes the held epoch unknown: the map is the
	// refresh's, and the next notice applies.
	c.apply(tableFromSlots([]redis.ClusterSlot{{Start: 0, End: SlotCount - 1, Nodes: []redis.ClusterNode{{Addr: a}}}}), nil)
	notice("epoch 9 slots idb "+b+" 0-49 config-epoch=2", 50, 0)
	owners(b, a, a)
	// A refresh that agrees keeps it.
	c.apply(tableFromSlots([]redis.ClusterSlot{
		{Start: 0, End: 49, Nodes: []redis.ClusterNode{{Addr: b}}},
		{Start: 50, End: SlotCount - 1, Nodes: []redis.ClusterNode{{Addr: a}}},
	}), nil)
	notice("epoch 9 slots idc "+cc+" 0-49 config-epoch=2", 0, 50)
	owners(b, a, a)
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
// nodes pushed the change. Logged for scripts/bench-cluster-staleness.sh:
// the time to the client's map naming the new owner, watched by a poller
// that runs while the move's SETSLOT NODEs are sent, from just before the
// target's SETSLOT NODE and from its reply (by then the target serves the
// slot); how long the three SETSLOT NODEs took (each node saves
// nodes.conf before replying); and the longest pause of the test process
// (a ticker's largest gap: the nodes and the client share it, so time the
// process does not get the CPU shows in every figure). Against
// redis-server nothing is pushed and the client needs at most one MOVED
// per slot (TestFollowMovedSlots).
//
// The nodes run as their own processes ("shardnode-process", as
// deployed: the client alone in its process) and, for comparison, in the
// test's process ("shardnode": their goroutines, heap and garbage
// collector are the client's).
func TestPushRoutesMovedSlots(t *testing.T) {
	for _, kind := range []string{"shardnode-process", "shardnode"} {
		t.Run(kind, func(t *testing.T) { testPushRoutesMovedSlots(t, kind) })
	}
}

func testPushRoutesMovedSlots(t *testing.T, kind string) {
	nodes := startClusterOf(t, kind, 3, 0)
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
	// Persistent connections, so the timing is the push's, not dials'.
	src, dst := from.Client(), to.Client()
	var rest []*redis.Client
	for _, n := range nodes {
		if n != from && n != to {
			rest = append(rest, n.Client())
		}
	}
	fromID, toID := from.NodeID(t), to.NodeID(t)
	do := func(cl *redis.Client, args ...interface{}) {
		t.Helper()
		if err := cl.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	pause := startPauseMeter(t)
	rt := startRuntimeMeter()
	before := c.Stats()
	var fromCmd, fromReply []time.Duration
	var admin, targetReply time.Duration
	for _, k := range keys {
		s := Slot(k)
		do(dst, "cluster", "setslot", s, "importing", fromID)
		do(src, "cluster", "setslot", s, "migrating", toID)
		do(src, "migrate", "127.0.0.1", to.Port, k, 0, 5000)
		// The owner changes with the target's SETSLOT NODE; the move is
		// timed from just before it, and the client's map is watched
		// meanwhile, not after the other nodes' SETSLOTs.
		start := time.Now()
		seen := make(chan time.Duration, 1)
		go func() {
			for c.SlotMaster(s) != to.Addr {
				if time.Since(start) > 5*time.Second {
					seen <- -1
					return
				}
				time.Sleep(time.Millisecond)
			}
			seen <- time.Since(start)
		}()
		do(dst, "cluster", "setslot", s, "node", toID)
		replied := time.Since(start)
		targetReply = max(targetReply, replied)
		do(src, "cluster", "setslot", s, "node", toID)
		for _, r := range rest {
			do(r, "cluster", "setslot", s, "node", toID)
		}
		admin = max(admin, time.Since(start))
		took := <-seen
		if took < 0 {
			t.Fatalf("slot %d: the client's map still has %s 5 s after the move", s, c.SlotMaster(s))
		}
		fromCmd = append(fromCmd, took)
		fromReply = append(fromReply, max(took-replied, 0))
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
	slices.Sort(fromCmd)
	slices.Sort(fromReply)
	us := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	gc, sched := rt()
	t.Logf("push staleness (%s): %d slots moved one by one; the client's map names the new owner: from the target's SETSLOT NODE median %v worst %v, from its reply median %v worst %v; the 3 SETSLOT NODEs took up to %v; process paused up to %v; 0 MOVED, %d pushes, %d refreshes; test process: GC pauses up to %v, goroutines waited for a thread up to %v; the target's SETSLOT NODE replied after up to %v",
		kind, len(keys), us(fromCmd[len(fromCmd)/2]), us(fromCmd[len(fromCmd)-1]), us(fromReply[len(fromReply)/2]), us(fromReply[len(fromReply)-1]),
		us(admin), us(pause()), st.Pushes-before.Pushes, st.Refreshes-before.Refreshes, gc, sched, us(targetReply))
}

// TestPushFromBystander: the client watches one master only, and slots
// move between the two others with SETSLOT NODE sent to the target and
// the source alone. The watched master still announces each move (the
// target's new config epoch reaches it in the PONG the target broadcasts
// on closing the import), so the client routes to the new owner without
// a MOVED although neither node that changed is watched; the time from
// the target's SETSLOT NODE is logged. The nodes run as processes and
// in the test's process, as in TestPushRoutesMovedSlots.
func TestPushFromBystander(t *testing.T) {
	for _, kind := range []string{"shardnode-process", "shardnode"} {
		t.Run(kind, func(t *testing.T) { testPushFromBystander(t, kind) })
	}
}

func testPushFromBystander(t *testing.T, kind string) {
	nodes := startClusterOf(t, kind, 3, 0)
	c := newClient(t, nodes, Options{RefreshInterval: -1, MinRefreshInterval: time.Hour, ErrorRefreshInterval: time.Hour, WatchNodes: 1})
	waitWatched(t, nodes, 1)
	ctx := context.Background()
	var watched *clustertest.Node
	var others []*clustertest.Node
	for _, n := range nodes {
		if m, _ := n.Client().PubSubNumSub(ctx, ReservedChannel).Result(); m[ReservedChannel] > 0 {
			watched = n
		} else if n.Client().ClusterCountKeysInSlot(ctx, 0).Err() == nil {
			others = append(others, n)
		}
	}
	if watched == nil || len(others) != 2 {
		t.Fatalf("watched %v, others %d", watched, len(others))
	}
	from, to := others[0], others[1]
	fromID, toID := from.NodeID(t), to.NodeID(t)
	var lo, hi int
	slots, err := from.Client().ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slots {
		if r.Nodes[0].Addr == from.Addr {
			lo, hi = r.Start, r.End
		}
	}
	keys := keysInRange("bystander:", 5, lo, hi)
	src, dst := from.Client(), to.Client()
	do := func(cl *redis.Client, args ...interface{}) {
		t.Helper()
		if err := cl.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	before := c.Stats()
	var took []time.Duration
	for _, k := range keys {
		s := Slot(k)
		do(dst, "cluster", "setslot", s, "importing", fromID)
		do(src, "cluster", "setslot", s, "migrating", toID)
		start := time.Now()
		do(dst, "cluster", "setslot", s, "node", toID)
		do(src, "cluster", "setslot", s, "node", toID)
		for c.SlotMaster(s) != to.Addr {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("slot %d: the client's map still has %s 5 s after the move", s, c.SlotMaster(s))
			}
			time.Sleep(time.Millisecond)
		}
		took = append(took, time.Since(start))
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s after the move: %v", k, err)
		}
	}
	if st := c.Stats(); st.Moved != before.Moved {
		t.Fatalf("%d MOVED replies", st.Moved-before.Moved)
	}
	slices.Sort(took)
	t.Logf("push from a bystander (%s): %d slots, client's map names the new owner after median %v, worst %v from the target's SETSLOT NODE",
		kind, len(took), took[len(took)/2].Round(time.Microsecond), took[len(took)-1].Round(time.Microsecond))
}

// startPauseMeter runs a 1 ms ticker until the test ends; the returned
// function reports its largest gap beyond the tick so far: how long the
// test process (nodes and client alike) went without running.
func startPauseMeter(t *testing.T) func() time.Duration {
	var worst atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				now := time.Now()
				if g := int64(now.Sub(last) - time.Millisecond); g > worst.Load() {
					worst.Store(g)
				}
				last = now
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return func() time.Duration { return time.Duration(worst.Load()) }
}

// startRuntimeMeter reads the Go runtime's histograms of stop-the-world
// pauses for garbage collection and of goroutine scheduling latency (the
// time a runnable goroutine waited for a thread); the returned function
// gives, for each, the upper bound of the highest bucket that gained
// samples since: a pause of the ticker (startPauseMeter) that these do
// not show is time the operating system did not run the process.
func startRuntimeMeter() func() (gc, sched time.Duration) {
	names := []string{"/sched/pauses/total/gc:seconds", "/sched/latencies:seconds"}
	read := func() []metrics.Sample {
		ss := make([]metrics.Sample, len(names))
		for i, n := range names {
			ss[i].Name = n
		}
		metrics.Read(ss)
		return ss
	}
	before := read()
	return func() (gc, sched time.Duration) {
		after := read()
		var out [2]time.Duration
		for i := range names {
			if after[i].Value.Kind() != metrics.KindFloat64Histogram || before[i].Value.Kind() != metrics.KindFloat64Histogram {
				continue
			}
			a, b := after[i].Value.Float64Histogram(), before[i].Value.Float64Histogram()
			for j := len(a.Counts) - 1; j >= 0; j-- {
				if j < len(b.Counts) && a.Counts[j] > b.Counts[j] {
					out[i] = time.Duration(a.Buckets[j+1] * float64(time.Second))
					break
				}
			}
		}
		return out[0].Round(time.Microsecond), out[1].Round(time.Microsecond)
	}
}

// TestSMigratedReloadsPlainGoRedis: a plain go-redis ClusterClient with
// maintenance notifications on learns a reshard of a shardnode cluster
// from the source node's SMIGRATED push: its routing names the new owner
// although no command met a MOVED.
func TestSMigratedReloadsPlainGoRedis(t *testing.T) {
	nodes := startClusterOf(t, "shardnode", 3, 0)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr},
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeEnabled}})
	defer cc.Close()
	var moved atomic.Int64
	cc.OnNewNode(func(rdb *redis.Client) { rdb.AddHook(movedCounter{&moved}) })
	keys := keysInRange("smig:", 2, 0, 5460)
	from, to := masterOf(t, nodes, Slot(keys[0])), masterOf(t, nodes, 16383)
	for _, k := range keys {
		if err := cc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	clustertest.MoveSlot(t, Slot(keys[0]), from, to, nodes)
	// A command on the source's connection (keys[1] stays there) reads
	// the push that waits on it.
	testutil.WaitFor(t, 10*time.Second, "go-redis's routing to name the new owner", func() bool {
		if err := cc.Get(ctx, keys[1]).Err(); err != nil {
			t.Fatal(err)
		}
		m, err := cc.MasterForKey(ctx, keys[0])
		return err == nil && nodeKey(m.Options().Addr) == nodeKey(to.Addr)
	})
	if n := moved.Load(); n != 0 {
		t.Fatalf("%d MOVED replies", n)
	}
}

// movedCounter counts MOVED replies on a node's connection.
type movedCounter struct{ n *atomic.Int64 }

func (h movedCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h movedCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if isRedirect(err) {
			h.n.Add(1)
		}
		return err
	}
}
func (h movedCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
