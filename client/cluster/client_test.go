package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/clustertest"
	"github.com/shardis/shardis/internal/testutil"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startCluster starts masters x (1 + replicas) nodes as one cluster;
// extra are redis.conf arguments for every node.
func startCluster(t *testing.T, masters, replicas int, extra ...string) []*clustertest.Node {
	t.Helper()
	return startClusterOf(t, "redis", masters, replicas, extra...)
}

// startClusterOf is startCluster with nodes of kind "redis" or "shardnode".
func startClusterOf(t *testing.T, kind string, masters, replicas int, extra ...string) []*clustertest.Node {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test with real cluster nodes")
	}
	testutil.Binary(t, "redis-cli")
	nodes := clustertest.StartKind(t, kind, masters*(1+replicas), extra...)
	clustertest.CreateWithRedisCli(t, nodes, replicas)
	return nodes
}

func newClient(t *testing.T, nodes []*clustertest.Node, opt Options) *Client {
	t.Helper()
	opt.Addrs = []string{nodes[0].Addr}
	if opt.Logger == nil {
		opt.Logger = quiet
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := New(ctx, &opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// keysOnSlots returns n keys, each on a different slot.
func keysOnSlots(prefix string, n int) []string { return keysInRange(prefix, n, 0, SlotCount-1) }

// keysInRange returns n keys on different slots in [lo, hi].
func keysInRange(prefix string, n, lo, hi int) []string {
	var keys []string
	seen := map[int]bool{}
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if s := Slot(k); !seen[s] && s >= lo && s <= hi {
			seen[s] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// nodeFor returns the node serving slot according to the node's own view.
func masterOf(t *testing.T, nodes []*clustertest.Node, slot int) *clustertest.Node {
	t.Helper()
	ctx := context.Background()
	slots, err := nodes[0].Client().ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slots {
		if slot >= r.Start && slot <= r.End {
			for _, n := range nodes {
				if n.Addr == r.Nodes[0].Addr {
					return n
				}
			}
		}
	}
	t.Fatalf("no master for slot %d", slot)
	return nil
}

func TestNewValidates(t *testing.T) {
	ctx := context.Background()
	for name, opt := range map[string]*Options{
		"nil":       nil,
		"no seeds":  {},
		"bad seed":  {Addrs: []string{"nohostport"}},
		"read mode": {Addrs: []string{"127.0.0.1:1"}, ReadFrom: 9},
	} {
		if _, err := New(ctx, opt); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	// Nothing listens: New fails instead of returning a lazy client.
	port := testutil.FreePort(t)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := New(cctx, &Options{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}}); err == nil {
		t.Error("New with an unreachable seed succeeded")
	}
}

func TestSplitMultiKey(t *testing.T) {
	nodes := startCluster(t, 3, 0)
	c := newClient(t, nodes, Options{})
	ctx := context.Background()
	keys := keysOnSlots("split:", 30)
	pairs := make([]interface{}, 0, 2*len(keys))
	for i, k := range keys {
		pairs = append(pairs, k, fmt.Sprintf("v%d", i))
	}
	if err := c.MSet(ctx, pairs...).Err(); err != nil {
		t.Fatalf("MSET across slots: %v", err)
	}
	// Every key is on its slot's master.
	for i, k := range keys {
		n := masterOf(t, nodes, Slot(k))
		if v, err := n.Client().Get(ctx, k).Result(); err != nil || v != fmt.Sprintf("v%d", i) {
			t.Fatalf("key %s on %s: %q %v", k, n.Addr, v, err)
		}
	}
	query := append(slices.Clone(keys), "split:missing")
	vals, err := c.MGet(ctx, query...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if vals[i] != fmt.Sprintf("v%d", i) {
			t.Fatalf("MGET[%d] (%s) = %v", i, k, vals[i])
		}
	}
	if vals[len(keys)] != nil {
		t.Fatalf("MGET of a missing key = %v", vals[len(keys)])
	}
	if n, err := c.Exists(ctx, query...).Result(); err != nil || n != int64(len(keys)) {
		t.Fatalf("EXISTS = %d %v, want %d", n, err, len(keys))
	}
	if n, err := c.Touch(ctx, keys[:10]...).Result(); err != nil || n != 10 {
		t.Fatalf("TOUCH = %d %v", n, err)
	}
	if n, err := c.Del(ctx, keys[:15]...).Result(); err != nil || n != 15 {
		t.Fatalf("DEL = %d %v", n, err)
	}
	if n, err := c.Unlink(ctx, query...).Result(); err != nil || n != int64(len(keys)-15) {
		t.Fatalf("UNLINK = %d %v", n, err)
	}
	if n, _ := c.Exists(ctx, keys...).Result(); n != 0 {
		t.Fatalf("%d keys left after DEL and UNLINK", n)
	}

	// The same in a pipeline, mixed with single-key commands.
	pipe := c.Pipeline()
	mset := pipe.MSet(ctx, pairs...)
	get := pipe.Get(ctx, keys[3])
	mget := pipe.MGet(ctx, keys...)
	del := pipe.Del(ctx, keys...)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if mset.Val() != "OK" || get.Val() != "v3" || len(mget.Val()) != len(keys) || mget.Val()[7] != "v7" || del.Val() != int64(len(keys)) {
		t.Fatalf("pipeline replies: %q %q %v %d", mset.Val(), get.Val(), mget.Val(), del.Val())
	}
	// Through Do, as a raw command.
	if err := c.Do(ctx, "mset", keys[0], "a", keys[1], "b").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Do(ctx, "mget", keys[1], keys[0]).Slice(); err != nil || v[0] != "b" || v[1] != "a" {
		t.Fatalf("raw MGET = %v %v", v, err)
	}
}

func TestCrossSlotRefused(t *testing.T) {
	nodes := startCluster(t, 3, 0)
	c := newClient(t, nodes, Options{})
	ctx := context.Background()
	k := keysOnSlots("tx:", 2)
	// A transaction spanning two slots: nothing is written.
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k[0], "1", 0)
		p.Set(ctx, k[1], "1", 0)
		return nil
	})
	if !errors.Is(err, ErrCrossSlot) {
		t.Fatalf("cross-slot transaction: %v, want ErrCrossSlot", err)
	}
	// A split command inside a transaction cannot be split.
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.MSet(ctx, k[0], "2", k[1], "2")
		return nil
	})
	if !errors.Is(err, ErrCrossSlot) {
		t.Fatalf("cross-slot MSET in a transaction: %v", err)
	}
	// Other multi-key commands are refused before they are sent.
	if err := c.Set(ctx, k[0], "src", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for name, cmd := range map[string]redis.Cmder{
		"RENAME":      c.Rename(ctx, k[0], k[1]),
		"SUNIONSTORE": c.SUnionStore(ctx, k[1], k[0]),
		"EVAL":        c.Eval(ctx, "redis.call('set', KEYS[2], 'x')", []string{k[0], k[1]}),
	} {
		if !errors.Is(cmd.Err(), ErrCrossSlot) {
			t.Errorf("%s across slots: %v", name, cmd.Err())
		}
	}
	for _, n := range nodes {
		if v, _ := n.Client().Exists(ctx, k[1]).Result(); v != 0 {
			t.Fatalf("key %s was written on %s", k[1], n.Addr)
		}
		if v, _ := n.Client().Get(ctx, k[0]).Result(); v != "" && v != "src" {
			t.Fatalf("key %s = %q on %s", k[0], v, n.Addr)
		}
	}
	// Same slot ({tag}) transactions run.
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{t}a", "1", 0)
		p.MSet(ctx, "{t}b", "2", "{t}c", "3")
		return nil
	})
	if err != nil {
		t.Fatalf("same-slot transaction: %v", err)
	}
	if v, _ := c.MGet(ctx, "{t}a", "{t}b", "{t}c").Result(); fmt.Sprint(v) != "[1 2 3]" {
		t.Fatalf("same-slot transaction wrote %v", v)
	}
}

// TestFollowMovedSlots moves slots between masters behind the client's
// back and checks that it needs at most one MOVED per slot to follow.
func TestFollowMovedSlots(t *testing.T) {
	for _, kind := range clustertest.Kinds {
		t.Run(kind, func(t *testing.T) { testFollowMovedSlots(t, kind) })
	}
}

func testFollowMovedSlots(t *testing.T, kind string) {
	nodes := startClusterOf(t, kind, 3, 0)
	// No refresh, no push: only MOVED replies can teach the client.
	c := newClient(t, nodes, Options{RefreshInterval: -1, MinRefreshInterval: time.Hour, WatchNodes: -1})
	ctx := context.Background()
	// Slots of the first master's range (redis-cli create gives it
	// 0-5460), all moved to one other master, as a reshard does.
	keys := keysInRange("mv:", 8, 0, 5460)
	from, to := masterOf(t, nodes, 0), masterOf(t, nodes, 16383)
	for _, k := range keys {
		if err := c.Set(ctx, k, "val-"+k, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		clustertest.MoveSlot(t, Slot(k), from, to, nodes)
	}
	// The nodes settle (epochs) before the client is judged.
	clustertest.WaitCheck(t, nodes[0].Addr, 20*time.Second)
	before := c.Stats()
	for round := range 20 {
		for _, k := range keys {
			v, err := c.Get(ctx, k).Result()
			if err != nil || v != "val-"+k {
				t.Fatalf("round %d: GET %s = %q %v stats %+v slotmaster %s", round, k, v, err, c.Stats(), c.SlotMaster(Slot(k)))
			}
		}
	}
	st := c.Stats()
	moved := st.Moved - before.Moved
	if moved > int64(len(keys)) {
		t.Fatalf("%d MOVED replies for %d moved slots", moved, len(keys))
	}
	if st.Refreshes != before.Refreshes {
		t.Fatalf("refreshed %d times; the test disabled refreshes", st.Refreshes-before.Refreshes)
	}
	for _, k := range keys {
		if got, want := c.SlotMaster(Slot(k)), masterOf(t, nodes, Slot(k)).Addr; got != want {
			t.Fatalf("slot map has %s for slot %d, cluster %s", got, Slot(k), want)
		}
	}
	t.Logf("%d slots moved: %d MOVED, %d patched, %d sent directly, %d go-redis rebuilds", len(keys), moved, st.Patched, st.Direct, st.Rebuilds-before.Rebuilds)
}

// TestMovedStorm: 100 goroutines hit moved slots at once; the refreshes
// they cause are bounded by MinRefreshInterval.
func TestMovedStorm(t *testing.T) {
	for _, kind := range clustertest.Kinds {
		t.Run(kind, func(t *testing.T) { testMovedStorm(t, kind) })
	}
}

func testMovedStorm(t *testing.T, kind string) {
	nodes := startClusterOf(t, kind, 3, 0)
	c := newClient(t, nodes, Options{RefreshInterval: -1, MinRefreshInterval: time.Second, WatchNodes: -1})
	ctx := context.Background()
	keys := keysInRange("storm:", 20, 0, 5460)
	from, to := masterOf(t, nodes, 0), masterOf(t, nodes, 16383)
	for _, k := range keys {
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		clustertest.MoveSlot(t, Slot(k), from, to, nodes)
	}
	clustertest.WaitCheck(t, nodes[0].Addr, 20*time.Second)
	before := c.Stats()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				k := keys[(g+i)%len(keys)]
				if v, err := c.Get(ctx, k).Result(); err != nil || v != k {
					errs <- fmt.Errorf("GET %s = %q %v", k, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The MOVED replies asked for one refresh; it comes within the
	// interval, and only one.
	testutil.WaitFor(t, 3*time.Second, "the refresh MOVED asked for", func() bool {
		return c.Stats().Refreshes > before.Refreshes
	})
	elapsed := time.Since(start)
	st := c.Stats()
	refreshes := st.Refreshes - before.Refreshes
	// One refresh may start at once, then one per interval.
	if limit := int64(elapsed/time.Second) + 1; refreshes > limit {
		t.Fatalf("%d refreshes in %v (limit %d)", refreshes, elapsed, limit)
	}
	t.Logf("4000 GETs from 100 goroutines over %d moved slots in %v: %d MOVED, %d refreshes, %d go-redis rebuilds, %d direct",
		len(keys), elapsed, st.Moved-before.Moved, refreshes, st.Rebuilds-before.Rebuilds, st.Direct-before.Direct)
}
