package cluster

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/clustertest"
)

// nodesText is a CLUSTER NODES reply of redis-server 7.0's form: three
// masters (one with a hostname, one with an open slot), a replica.
const nodesText = `aaaa 10.0.0.1:7000@17000 myself,master - 0 0 5 connected 0-99 200 [300->-cccc]
bbbb 10.0.0.2:7000@17000,redis-b master - 0 1700000000000 7 connected 100-199
cccc 10.0.0.3:7000@17000 master,fail - 0 0 2 disconnected 201-16383
dddd 10.0.0.4:7000@17000 slave aaaa 0 0 5 connected
`

func TestParseClusterNodes(t *testing.T) {
	nv, err := parseClusterNodes(nodesText)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(nv.ids, ",") != "aaaa,bbbb,cccc" || len(nv.epochs) != 3 || nv.epochs[0] != 5 || nv.epochs[1] != 7 || nv.epochs[2] != 2 {
		t.Fatalf("ids %v epochs %v", nv.ids, nv.epochs)
	}
	for s, want := range map[int]int32{0: 0, 99: 0, 100: 1, 199: 1, 200: 0, 201: 2, 300: 2, 16383: 2} {
		if nv.owner[s] != want {
			t.Errorf("slot %d: owner %d, want %d", s, nv.owner[s], want)
		}
	}
	for _, bad := range []string{"aaaa 10.0.0.1:7000@17000 master - 0 0", "aaaa 1:1@1 master - 0 0 x connected",
		"aaaa 1:1@1 master - 0 0 1 connected 5-2", "aaaa 1:1@1 master - 0 0 1 connected 16384"} {
		if _, err := parseClusterNodes(bad); err == nil {
			t.Errorf("parseClusterNodes(%q) succeeded", bad)
		}
	}

	// The epochs of a CLUSTER SLOTS reply's masters by address, when the
	// two replies agree on every slot's owner.
	node := func(id, addr string) redis.ClusterNode { return redis.ClusterNode{ID: id, Addr: addr} }
	slots := []redis.ClusterSlot{
		{Start: 0, End: 99, Nodes: []redis.ClusterNode{node("aaaa", "10.0.0.1:7000"), node("dddd", "10.0.0.4:7000")}},
		{Start: 100, End: 199, Nodes: []redis.ClusterNode{node("bbbb", "10.0.0.2:7000")}},
		{Start: 200, End: 200, Nodes: []redis.ClusterNode{node("aaaa", "10.0.0.1:7000")}},
		{Start: 201, End: 16383, Nodes: []redis.ClusterNode{node("cccc", "10.0.0.3:7000")}},
	}
	got := ownerEpochs(slots, nv)
	if len(got) != 3 || got["10.0.0.1:7000"] != 5 || got["10.0.0.2:7000"] != 7 || got["10.0.0.3:7000"] != 2 {
		t.Fatalf("ownerEpochs = %v", got)
	}
	// A slot owned by another node in one of them (the node's view
	// changed between the two commands), a slot missing from CLUSTER
	// SLOTS, no node ids: no epochs at all.
	moved := append([]redis.ClusterSlot(nil), slots...)
	moved[2] = redis.ClusterSlot{Start: 200, End: 200, Nodes: []redis.ClusterNode{node("bbbb", "10.0.0.2:7000")}}
	noIDs := append([]redis.ClusterSlot(nil), slots...)
	noIDs[1] = redis.ClusterSlot{Start: 100, End: 199, Nodes: []redis.ClusterNode{{Addr: "10.0.0.2:7000"}}}
	for name, s := range map[string][]redis.ClusterSlot{"owner differs": moved, "slot missing": slots[:3], "no ids": noIDs} {
		if got := ownerEpochs(s, nv); got != nil {
			t.Errorf("%s: ownerEpochs = %v, want nil", name, got)
		}
	}
}

// TestRefreshOrderedByConfigEpoch applies refreshes (CLUSTER SLOTS with
// its masters' config epochs, as queryView returns them), notices and
// MOVED replies to the client's slot map, one state step each (no
// network): a refresh that names another owner with a config epoch no
// higher than the one kept for the slot, from a notice or an earlier
// refresh, changes nothing for that slot; a higher one wins.
func TestRefreshOrderedByConfigEpoch(t *testing.T) {
	const a, b, cc = "10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"
	c := &Client{pending: map[int]string{}}
	c.table.Store(emptyTable())
	type rng struct {
		lo, hi int
		addr   string
	}
	view := func(rs ...rng) *slotTable {
		var slots []redis.ClusterSlot
		for _, r := range rs {
			slots = append(slots, redis.ClusterSlot{Start: r.lo, End: r.hi,
				Nodes: []redis.ClusterNode{{Addr: r.addr}, {Addr: r.addr + "-replica"}}})
		}
		return tableFromSlots(slots)
	}
	refresh := func(tb *slotTable, epochs map[string]uint64, wantChanged, wantStale int) {
		t.Helper()
		if ch, st := c.apply(tb, epochs); ch != wantChanged || st != wantStale {
			t.Fatalf("refresh %v: changed %d stale %d, want %d and %d", epochs, ch, st, wantChanged, wantStale)
		}
	}
	notice := func(payload string, wantPatched int) {
		t.Helper()
		ch, err := ParseTopology(payload)
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := c.patchNotice(ch); p != wantPatched {
			t.Fatalf("%q: patched %d, want %d", payload, p, wantPatched)
		}
	}
	owners := func(want ...string) { // owners of slots 0, 100, 200, 16383
		t.Helper()
		tb := c.table.Load()
		for i, s := range []int{0, 100, 200, 16383} {
			if got := tb.master(s); got != want[i] {
				t.Fatalf("slot %d: owner %q, want %q", s, got, want[i])
			}
		}
		for s, addr := range c.pending {
			if tb.master(s) != addr {
				t.Fatalf("slot %d pending for %s, the map says %s", s, addr, tb.master(s))
			}
		}
	}
	// The first refresh: a owns 0-8191 at config epoch 1, b the rest at 2.
	refresh(view(rng{0, 8191, a}, rng{8192, 16383, b}), map[string]uint64{a: 1, b: 2}, SlotCount, 0)
	owners(a, a, a, b)
	// A notice moves 0-199 to c at config epoch 3; a refresh from a node
	// that has not heard of it (a still at 1) changes nothing there.
	notice("epoch 3 slots idc "+cc+" 0-199 config-epoch=3", 200)
	owners(cc, cc, a, b)
	refresh(view(rng{0, 8191, a}, rng{8192, 16383, b}), map[string]uint64{a: 1, b: 2}, 0, 200)
	owners(cc, cc, a, b)
	// Equal epochs do not move a slot either: a at 3 (it was bumped for
	// another reason) against c's 3.
	refresh(view(rng{0, 8191, a}, rng{8192, 16383, b}), map[string]uint64{a: 3, b: 2}, 0, 200)
	owners(cc, cc, a, b)
	// The kept slots keep their replicas although the refresh lists c as
	// no master (the notice gave none; an empty list here).
	if sh := c.Shards(); len(sh) != 3 {
		t.Fatalf("shards %v", sh)
	}
	// A newer refresh wins: a took 100-199 back at config epoch 4.
	refresh(view(rng{0, 99, cc}, rng{100, 8191, a}, rng{8192, 16383, b}), map[string]uint64{a: 4, b: 2, cc: 3}, 100, 0)
	owners(cc, a, a, b)
	// ... and an older notice after it cannot undo it (c's claim at 3
	// against a's 4), while it raises nothing.
	notice("epoch 3 slots idc "+cc+" 0-199 config-epoch=3", 0)
	owners(cc, a, a, b)
	// A refresh naming no owner for slots with a known owner (a node that
	// has not learnt them; gossip never unassigns) keeps them.
	refresh(view(rng{100, 8191, a}, rng{8192, 16383, b}), map[string]uint64{a: 4, b: 2}, 0, 100)
	owners(cc, a, a, b)
	// A MOVED applies whatever the kept epoch (it comes from the owner
	// the map named), and keeps the new owner's epoch as last seen (b at
	// 2): a refresh still naming a at 4 wins over it, one naming a at 2
	// does not.
	c.ClusterClient = redis.NewClusterClient(&redis.ClusterOptions{ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
		return c.table.Load().clusterSlots(), nil
	}})
	defer c.ClusterClient.Close()
	c.wake = make(chan struct{}, 1)
	c.moved(200, b)
	owners(cc, a, b, b)
	refresh(view(rng{0, 99, cc}, rng{100, 8191, a}, rng{8192, 16383, b}), map[string]uint64{a: 2, b: 2, cc: 3}, 0, 1)
	owners(cc, a, b, b)
	refresh(view(rng{0, 99, cc}, rng{100, 8191, a}, rng{8192, 16383, b}), map[string]uint64{a: 4, b: 2, cc: 3}, 1, 0)
	owners(cc, a, a, b)
	// A MOVED to a node of unknown epoch leaves the slot's epoch unknown:
	// the next refresh applies as read.
	c.moved(200, "10.0.0.9:7000")
	owners(cc, a, "10.0.0.9:7000", b)
	refresh(view(rng{0, 99, cc}, rng{100, 8191, a}, rng{8192, 16383, b}), map[string]uint64{a: 1, b: 1, cc: 1}, 1, 0)
	owners(cc, a, a, b)
	// A refresh without epochs (CLUSTER NODES refused) applies as read,
	// as before epochs were kept.
	refresh(view(rng{0, 16383, b}), nil, 8192, 0)
	owners(b, b, b, b)
}

// TestRefreshReadsConfigEpochs: against a redis-server and a shardnode
// cluster, the client's refresh learns every slot owner's config epoch,
// the one CLUSTER NODES gives for it.
func TestRefreshReadsConfigEpochs(t *testing.T) {
	for _, kind := range clustertest.Kinds {
		t.Run(kind, func(t *testing.T) {
			nodes := startClusterOf(t, kind, 3, 0)
			c := newClient(t, nodes, Options{RefreshInterval: -1, WatchNodes: -1})
			if err := c.RefreshNow(context.Background()); err != nil {
				t.Fatal(err)
			}
			text, err := nodes[0].Client().ClusterNodes(context.Background()).Result()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]uint64{}
			for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
				f := strings.Fields(line)
				addr, _, _ := strings.Cut(f[1], "@")
				e, _ := strconv.ParseUint(f[6], 10, 64)
				want[addr] = e
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.slotEpochs == nil {
				t.Fatal("no config epoch kept")
			}
			tb := c.table.Load()
			for s := range SlotCount {
				m := tb.master(s)
				if e, ok := c.knownEpoch(s, m); !ok || e != want[m] {
					t.Fatalf("slot %d (%s): kept epoch %d %v, CLUSTER NODES says %d", s, m, e, ok, want[m])
				}
			}
		})
	}
}

// TestRefreshWithoutClusterNodes: a user whose ACL refuses CLUSTER NODES
// (redis-server 7.0) still gets the slot map from CLUSTER SLOTS; the
// refresh then has no epochs, and the client follows a move by MOVED as
// before epochs were kept.
func TestRefreshWithoutClusterNodes(t *testing.T) {
	nodes := startCluster(t, 3, 0)
	ctx := context.Background()
	for _, n := range nodes {
		if err := n.Client().Do(ctx, "acl", "setuser", "app", "on", ">pw", "~*", "&*", "+@all", "-cluster|nodes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, nodes, Options{Username: "app", Password: "pw", RefreshInterval: -1, WatchNodes: -1})
	if err := c.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	kept := c.slotEpochs != nil
	c.mu.Unlock()
	if kept {
		t.Fatal("config epochs kept although CLUSTER NODES is refused")
	}
	k := keysInRange("noacl:", 1, 0, 5460)[0]
	if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	from, to := masterOf(t, nodes, Slot(k)), masterOf(t, nodes, 16383)
	clustertest.MoveSlot(t, Slot(k), from, to, nodes)
	if v, err := c.Get(ctx, k).Result(); err != nil || v != "v" {
		t.Fatalf("GET after the move: %q %v", v, err)
	}
	if err := c.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.SlotMaster(Slot(k)); got != to.Addr {
		t.Fatalf("slot %d: the map has %s, want %s", Slot(k), got, to.Addr)
	}
}
