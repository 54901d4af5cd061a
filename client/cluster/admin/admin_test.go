package admin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
	"github.com/shardis/shardis/client/cluster/clustertest"
	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/testutil"
)

type nopRedisLogger struct{}

func (nopRedisLogger) Printf(context.Context, string, ...interface{}) {}

func TestMain(m *testing.M) {
	redis.SetLogger(nopRedisLogger{})
	os.Exit(m.Run())
}

// testOptions bounds each wait for the cluster to converge by two
// minutes: a hang bound, not a timing goal (8 nodes in one loaded test
// process took more than 30 s to join).
func testOptions(t *testing.T) *Options {
	return &Options{Timeout: 10 * time.Second, WaitTimeout: 2 * time.Minute, Progress: func(p Progress) {
		if p.Done == p.Total {
			t.Logf("progress: %s %d/%d %s", p.Op, p.Done, p.Total, p.Detail)
		}
	}}
}

// redisCliCheck asserts that redis-cli agrees the cluster is healthy,
// polling while the configuration spreads by gossip.
func redisCliCheck(t *testing.T, addr string) {
	t.Helper()
	out := clustertest.WaitCheck(t, addr, 2*time.Minute)
	if !strings.Contains(out, "[OK] All nodes agree about slots configuration.") {
		t.Fatalf("redis-cli check:\n%s", out)
	}
}

// createCluster builds masters x (1 + replicas) with Create.
func createCluster(t *testing.T, nodes []*clustertest.Node, replicas int) {
	t.Helper()
	ctx := context.Background()
	opt := testOptions(t)
	plan, err := PlanCreate(ctx, clustertest.Addrs(nodes), replicas, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := Create(ctx, plan, opt); err != nil {
		t.Fatal(err)
	}
	redisCliCheck(t, nodes[0].Addr)
}

func mustInfo(t *testing.T, addr string) *ClusterInfo {
	t.Helper()
	info, err := Info(context.Background(), addr, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func masterByAddr(info *ClusterInfo, addr string) *MasterInfo {
	for i := range info.Masters {
		if info.Masters[i].Addr == addr {
			return &info.Masters[i]
		}
	}
	return nil
}

// dataset writes keys with TTLs through client/cluster and checks them.
type dataset struct {
	t    *testing.T
	c    *cluster.Client
	keys []string
}

func newDataset(t *testing.T, seed string, n int) *dataset {
	t.Helper()
	ctx := context.Background()
	c, err := cluster.New(ctx, &cluster.Options{Addrs: []string{seed}, RefreshInterval: 200 * time.Millisecond,
		MinRefreshInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	d := &dataset{t: t, c: c}
	for i := range n {
		k := fmt.Sprintf("data:%d", i)
		d.keys = append(d.keys, k)
		if err := c.Set(ctx, k, "v"+k, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// verify reads every key back with its TTL.
func (d *dataset) verify() {
	d.t.Helper()
	ctx := context.Background()
	_ = d.c.RefreshNow(ctx)
	for _, k := range d.keys {
		v, err := d.c.Get(ctx, k).Result()
		if err != nil || v != "v"+k {
			d.t.Fatalf("GET %s = %q %v", k, v, err)
		}
		if ttl, err := d.c.PTTL(ctx, k).Result(); err != nil || ttl <= 0 || ttl > time.Hour {
			d.t.Fatalf("PTTL %s = %v %v: TTL lost", k, ttl, err)
		}
	}
}

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test with real redis-server processes")
	}
	testutil.Binary(t, "redis-cli")
}

// TestLifecycle: create 3 masters + 3 replicas, add a master and a
// replica, reshard, rebalance, empty and delete the new master, fail
// over; redis-cli --cluster check agrees after each step.
//
// Against shardnode the reshard and rebalance use whole-slot migration
// (CLUSTER MIGRATION), against redis-server 7.0 key-by-key moves.
func TestLifecycle(t *testing.T) {
	for _, kind := range clustertest.Kinds {
		t.Run(kind, func(t *testing.T) { testLifecycle(t, kind) })
	}
}

func testLifecycle(t *testing.T, kind string) {
	skipShort(t)
	ctx := context.Background()
	opt := testOptions(t)
	var whole, single atomic.Int64
	progress := opt.Progress
	opt.Progress = func(p Progress) {
		if p.Op == "reshard" || p.Op == "rebalance" {
			if strings.Contains(p.Detail, "whole-slot migration") {
				whole.Add(1)
			} else {
				single.Add(1)
			}
		}
		progress(p)
	}
	// Nothing here waits for failure detection (the failover is a manual
	// one), so the nodes run with Redis's default node timeout: with
	// clustertest's 1 s, a loaded machine stalling the test process for
	// a second made the nodes mark each other failed, fail over and
	// answer CLUSTERDOWN.
	nodes := clustertest.StartKind(t, kind, 8, "--cluster-node-timeout", "15000")
	createCluster(t, nodes[:6], 1)
	info := mustInfo(t, nodes[0].Addr)
	if len(info.Masters) != 3 {
		t.Fatalf("%d masters", len(info.Masters))
	}
	for _, m := range info.Masters {
		if m.Replicas != 1 || m.Slots < 5460 {
			t.Fatalf("master %+v", m)
		}
	}
	data := newDataset(t, nodes[0].Addr, 500)

	// add-node as a master, then as a replica of it.
	newMaster, newReplica := nodes[6], nodes[7]
	if err := AddNode(ctx, newMaster.Addr, nodes[0].Addr, AddNodeOptions{}, opt); err != nil {
		t.Fatal(err)
	}
	redisCliCheck(t, nodes[0].Addr)
	newID := newMaster.NodeID(t)
	if err := AddNode(ctx, newReplica.Addr, nodes[0].Addr, AddNodeOptions{ReplicaOf: newID[:8]}, opt); err != nil {
		t.Fatal(err)
	}
	redisCliCheck(t, nodes[0].Addr)
	info = mustInfo(t, nodes[0].Addr)
	if m := masterByAddr(info, newMaster.Addr); m == nil || m.Slots != 0 || m.Replicas != 1 {
		t.Fatalf("new master: %+v", m)
	}

	// reshard 300 slots with keys in them.
	if err := Reshard(ctx, nodes[0].Addr, ReshardOptions{From: []string{"all"}, To: newID, Slots: 300}, opt); err != nil {
		t.Fatal(err)
	}
	redisCliCheck(t, nodes[0].Addr)
	if m := masterByAddr(mustInfo(t, nodes[0].Addr), newMaster.Addr); m.Slots != 300 || m.Keys == 0 {
		t.Fatalf("after reshard: %+v", m)
	}
	switch {
	case kind == "shardnode" && (whole.Load() == 0 || single.Load() != 0):
		t.Fatalf("shardnode reshard: %d whole-slot migrations, %d key-by-key slots; want only the former", whole.Load(), single.Load())
	case kind == "redis" && whole.Load() != 0:
		t.Fatalf("redis-server reshard used whole-slot migration %d times", whole.Load())
	}
	t.Logf("reshard of 300 slots: %d whole-slot migration tasks, %d key-by-key slot moves", whole.Load(), single.Load())
	data.verify()

	// rebalance: 4 masters with equal weights get 4096 slots each (±1).
	moved, err := Rebalance(ctx, nodes[0].Addr, RebalanceOptions{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	redisCliCheck(t, nodes[0].Addr)
	for _, m := range mustInfo(t, nodes[0].Addr).Masters {
		if m.Slots < 4095 || m.Slots > 4097 {
			t.Fatalf("after rebalance (%d moved): %+v", moved, m)
		}
	}
	data.verify()
	// Balanced now: a second rebalance moves nothing.
	if again, err := Rebalance(ctx, nodes[0].Addr, RebalanceOptions{}, opt); err != nil || again != 0 {
		t.Fatalf("second rebalance moved %d: %v", again, err)
	}

	// Empty the new master and delete it; its replica moves elsewhere.
	m := masterByAddr(mustInfo(t, nodes[0].Addr), newMaster.Addr)
	if err := Reshard(ctx, nodes[0].Addr, ReshardOptions{From: []string{newID}, To: nodes[0].NodeID(t), Slots: m.Slots}, opt); err != nil {
		t.Fatal(err)
	}
	redisCliCheck(t, nodes[0].Addr)
	if err := DelNode(ctx, nodes[0].Addr, newID, opt); err != nil {
		t.Fatal(err)
	}
	redisCliCheck(t, nodes[0].Addr)
	info = mustInfo(t, nodes[0].Addr)
	if masterByAddr(info, newMaster.Addr) != nil || len(info.Masters) != 3 {
		t.Fatalf("after del-node: %+v", info)
	}
	if n, _ := newMaster.Client().ClusterInfo(ctx).Result(); !strings.Contains(n, "cluster_known_nodes:1") {
		t.Fatalf("deleted node was not reset:\n%s", n)
	}
	data.verify()

	// Failover: a replica takes over from its master.
	var replica *clustertest.Node
	for _, n := range nodes[:6] {
		if role, _ := n.Client().Do(ctx, "role").Slice(); len(role) > 0 && role[0] == "slave" {
			replica = n
			break
		}
	}
	if err := Failover(ctx, replica.Addr, FailoverDefault, opt); err != nil {
		t.Fatal(err)
	}
	if role, _ := replica.Client().Do(ctx, "role").Slice(); role[0] != "master" {
		t.Fatalf("role after failover: %v", role)
	}
	redisCliCheck(t, nodes[0].Addr)
	data.verify()
}

// TestFix leaves slots half-migrated, open on one side, and uncovered,
// and checks that Fix repairs each so that redis-cli agrees.
func TestFix(t *testing.T) {
	for _, kind := range clustertest.Kinds {
		t.Run(kind, func(t *testing.T) { testFix(t, kind) })
	}
}

func testFix(t *testing.T, kind string) {
	skipShort(t)
	ctx := context.Background()
	opt := testOptions(t)
	nodes := clustertest.StartKind(t, kind, 3)
	createCluster(t, nodes, 0)
	data := newDataset(t, nodes[0].Addr, 300)
	a, b := nodes[0], nodes[1]
	aID, bID := a.NodeID(t), b.NodeID(t)
	ac, bc := a.Client(), b.Client()
	// Slots of a (0-5460) that hold keys.
	var slots []int
	for _, k := range data.keys {
		if s := cluster.Slot(k); s <= 5460 && !slices.Contains(slots, s) {
			slots = append(slots, s)
		}
	}
	if len(slots) < 5 {
		t.Fatalf("only %d slots with keys on the first master", len(slots))
	}
	do := func(c *redis.Client, args ...interface{}) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	expectBroken := func(what string) {
		t.Helper()
		r, err := Check(ctx, a.Addr, opt)
		if err != nil {
			t.Fatal(err)
		}
		if r.OK {
			t.Fatalf("%s: check found nothing wrong", what)
		}
		if _, err := clustertest.RedisCli(t, "--cluster", "check", a.Addr); err == nil {
			t.Fatalf("%s: redis-cli check passes before the fix", what)
		}
	}
	fix := func(what string) *Report {
		t.Helper()
		r, err := Fix(ctx, a.Addr, opt)
		if err != nil {
			t.Fatalf("%s: fix: %v", what, err)
		}
		if !r.OK {
			t.Fatalf("%s: check after fix: %v", what, r.Messages)
		}
		t.Logf("%s: fixed: %v", what, r.Fixed)
		redisCliCheck(t, a.Addr)
		data.verify()
		return r
	}

	// 1. Half-migrated: IMPORTING on b, MIGRATING on a, one of a slot's
	// five keys moved.
	tag := ""
	for i := 0; tag == "" || cluster.Slot(tag) > 5460 || slices.Contains(slots, cluster.Slot(tag)); i++ {
		tag = fmt.Sprintf("{tag%d}", i)
	}
	for i := range 5 {
		k := fmt.Sprintf("%s:%d", tag, i)
		data.keys = append(data.keys, k)
		if err := data.c.Set(ctx, k, "v"+k, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s := cluster.Slot(tag)
	do(bc, "cluster", "setslot", s, "importing", aID)
	do(ac, "cluster", "setslot", s, "migrating", bID)
	expectBroken("slot importing on b, migrating on a")
	if r := fix("slot importing on b, migrating on a"); !strings.HasPrefix(r.Fixed[0], "Case 1:") {
		t.Fatalf("fixed by %v, want redis-cli's case 1 (finish the move)", r.Fixed)
	}
	// The same with one key already moved: two nodes hold keys, redis-cli
	// (and Fix) gives the slot to the one with most and moves the key back.
	tag2 := ""
	for i := 100; tag2 == "" || cluster.Slot(tag2) > 5460 || cluster.Slot(tag2) == cluster.Slot(tag); i++ {
		tag2 = fmt.Sprintf("{tag%d}", i)
	}
	for i := range 5 {
		k := fmt.Sprintf("%s:%d", tag2, i)
		data.keys = append(data.keys, k)
		if err := data.c.Set(ctx, k, "v"+k, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	owner := a
	if data.c.SlotMaster(cluster.Slot(tag2)) != a.Addr {
		t.Fatalf("slot %d not on %s", cluster.Slot(tag2), a.Addr)
	}
	s = cluster.Slot(tag2)
	do(bc, "cluster", "setslot", s, "importing", aID)
	do(ac, "cluster", "setslot", s, "migrating", bID)
	do(ac, "migrate", "127.0.0.1", b.Port, "", 0, 5000, "keys", tag2+":0")
	expectBroken("half-migrated slot with a key moved")
	fix("half-migrated slot with a key moved")
	if got := data.c.SlotMaster(s); got != owner.Addr {
		t.Fatalf("slot %d ended on %s, want %s (most keys)", s, got, owner.Addr)
	}

	// 2. Open on one side only: MIGRATING on a (owner, keys stay).
	s = slots[1]
	do(ac, "cluster", "setslot", s, "migrating", bID)
	expectBroken("slot migrating on one side")
	fix("slot migrating on one side")

	// 3. Open on one side only: IMPORTING on b, nothing on a.
	s = slots[2]
	do(bc, "cluster", "setslot", s, "importing", aID)
	expectBroken("slot importing on one side")
	fix("slot importing on one side")

	// 4. Uncovered: the owner drops a slot that holds keys, and one that
	// holds none.
	var empty int
	for empty = 100; slices.Contains(slots, empty); empty++ {
	}
	do(ac, "cluster", "delslots", slots[3], empty)
	expectBroken("uncovered slots")
	fix("uncovered slots")
}

func TestReshardTable(t *testing.T) {
	a := &Node{ID: "a", Slots: []int{0, 1, 2, 3, 4, 5}}
	b := &Node{ID: "b", Slots: []int{10, 11, 12}}
	got := reshardTable([]*Node{b, a}, 4)
	var want = []move{{0, a}, {1, a}, {2, a}, {10, b}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("move %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestParseNodes(t *testing.T) {
	text := "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@40001,host1 myself,master - 0 0 1 connected 0-2 5 [3->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f] [4-<-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]\n" +
		"292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30002@40002 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 2 connected\n"
	nodes, err := parseNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if n.Addr != "127.0.0.1:30001" || n.BusPort != 40001 || !n.IsMaster() || !slices.Equal(n.Slots, []int{0, 1, 2, 5}) ||
		n.Migrating[3] == "" || n.Importing[4] == "" || n.ConfigEpoch != 1 {
		t.Fatalf("%+v", n)
	}
	if r := nodes[1]; r.IsMaster() || r.ReplicaOf != n.ID {
		t.Fatalf("%+v", r)
	}
	if sig := signature(text); sig != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca:0-2,5" {
		t.Fatalf("signature %q", sig)
	}
	if got := consistent.SlotRanges([]int{0, 1, 2, 5, 7, 8}); got != "0-2,5,7-8" {
		t.Fatalf("ranges %q", got)
	}
}
