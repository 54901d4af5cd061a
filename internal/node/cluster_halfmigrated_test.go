package node

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/consistent"
)

// Redis 7.0's tests/cluster/tests/20-half-migrated-slot.tcl and
// 21-many-slot-migration.tcl are disabled there (`if {false}`); these are
// their scenarios as Go tests, each state then `redis-cli --cluster fix`,
// with redis-server nodes and with shardnodes.

// clusterKinds starts n masters of one kind.
var clusterKinds = []struct {
	name  string
	start func(t *testing.T) *clNode
}{
	{"redis", func(t *testing.T) *clNode { return startRedisNode(t, "cluster-allow-replica-migration", "no") }},
	{"shardnode", func(t *testing.T) *clNode {
		return startShardNode(t, 0, 0, "", "cluster-allow-replica-migration", "no")
	}},
}

// fixCluster is the suites' fix_cluster: `redis-cli --cluster fix`
// (answering yes), whose exit code may be non-zero while nodes disagree,
// then the cluster must be ok and `--cluster check` must pass within
// 10 s.
func fixCluster(t *testing.T, nodes []*clNode, addr string) {
	t.Helper()
	bin := needBinary(t, "redis-cli")
	c, cancel := context.WithTimeout(context.Background(), redisCliTimeout)
	defer cancel()
	cmd := exec.CommandContext(c, bin, "--cluster", "fix", addr, "--cluster-yes")
	cmd.Stdin = strings.NewReader(strings.Repeat("yes\n", 20))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("redis-cli --cluster fix exit %v:\n%s", err, out)
	}
	waitClusterOK(t, nodes)
	var last string
	for i := 0; i < 100; i++ {
		out, err := redisCli(t, "--cluster", "check", addr)
		if err == nil {
			return
		}
		last = out
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("redis-cli --cluster check still fails after the fix:\n%s", last)
}

// slotOwners returns the node owning slot and another master.
func slotOwners(t *testing.T, nodes []*clNode, slot int) (from, to *clNode) {
	t.Helper()
	for _, n := range nodes {
		rs, err := n.rc.ClusterSlots(ctx(t)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if slot >= r.Start && slot <= r.End {
				for _, m := range nodes {
					if m.addr == r.Nodes[0].Addr {
						from = m
					}
				}
			}
		}
		break
	}
	if from == nil {
		t.Fatalf("no owner for slot %d", slot)
	}
	for _, n := range nodes {
		if n != from {
			return from, n
		}
	}
	t.Fatal("one node only")
	return nil, nil
}

// TestHalfMigratedSlotFix is 20-half-migrated-slot: slot 609 (key "aga")
// half-migrated at every stage, each fixed by redis-cli.
func TestHalfMigratedSlotFix(t *testing.T) {
	if consistent.KeySlot("aga") != 609 {
		t.Fatal("aga is not in slot 609")
	}
	for _, kind := range clusterKinds {
		t.Run(kind.name, func(t *testing.T) {
			nodes := []*clNode{kind.start(t), kind.start(t)}
			buildCluster(t, nodes, nil, false)
			c := ctx(t)
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}, MaxRedirects: 16, DisableIdentity: true})
			defer cc.Close()
			if err := cc.Set(c, "aga", "xyz", 0).Err(); err != nil {
				t.Fatal(err)
			}
			from, to := slotOwners(t, nodes, 609)
			fromID, toID := from.id(t), to.id(t)
			get := func(what string) {
				t.Helper()
				if v, err := cc.Get(c, "aga").Result(); err != nil || v != "xyz" {
					t.Fatalf("%s: GET aga = %q, %v", what, v, err)
				}
			}
			reset := func() {
				t.Helper()
				cc.ReloadState(c)
				from, to = slotOwners(t, nodes, 609)
				fromID, toID = from.id(t), to.id(t)
			}
			migrate := func() {
				t.Helper()
				if got := from.str(t, "migrate", "127.0.0.1", to.port, "aga", 0, 10000); got != "OK" {
					t.Fatalf("MIGRATE: %q", got)
				}
			}

			// Half init migration in 'migrating' is fixable.
			from.do(t, "cluster", "setslot", 609, "migrating", toID)
			fixCluster(t, nodes, from.addr)
			get("half init migrating")

			// Half init migration in 'importing' is fixable.
			to.do(t, "cluster", "setslot", 609, "importing", fromID)
			fixCluster(t, nodes, from.addr)
			get("half init importing")

			// Init migration and move key.
			from.do(t, "cluster", "setslot", 609, "migrating", toID)
			to.do(t, "cluster", "setslot", 609, "importing", fromID)
			migrate()
			get("key moved, slot open")
			fixCluster(t, nodes, from.addr)
			get("moved key, fixed")

			// Move key again, then half-finish the migration on the
			// 'migrating' node.
			reset()
			from.do(t, "cluster", "setslot", 609, "migrating", toID)
			to.do(t, "cluster", "setslot", 609, "importing", fromID)
			migrate()
			get("key moved again")
			from.do(t, "cluster", "setslot", 609, "node", toID)
			fixCluster(t, nodes, from.addr)
			get("half-finished on the migrating node")

			// Move key back, then half-finish on the 'importing' node.
			reset()
			from.do(t, "cluster", "setslot", 609, "migrating", toID)
			to.do(t, "cluster", "setslot", 609, "importing", fromID)
			migrate()
			get("key moved back")
			to.do(t, "cluster", "setslot", 609, "node", toID)
			fixCluster(t, nodes, from.addr)
			get("half-finished on the importing node")
		})
	}
}

// TestManySlotMigrationFix is 21-many-slot-migration, shrunk to stay
// short (5 masters, 4000 keys, 200 slots instead of 10, 40000 and 1000):
// many slots left MIGRATING/IMPORTING at once, fixed by one redis-cli
// fix, every key still readable.
func TestManySlotMigrationFix(t *testing.T) {
	const masters, keys, slots = 5, 4000, 200
	for _, kind := range clusterKinds {
		t.Run(kind.name, func(t *testing.T) {
			var nodes []*clNode
			for i := 0; i < masters; i++ {
				nodes = append(nodes, kind.start(t))
			}
			buildCluster(t, nodes, nil, false)
			// The context spans 4000 writes, 400 SETSLOTs, redis-cli's
			// fix and 4000 reads: more than ctx's 10 s on a loaded
			// machine. It only bounds a hang.
			c := ctxFor(t, 3*time.Minute)
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}, MaxRedirects: 16, DisableIdentity: true})
			defer cc.Close()
			pipe := cc.Pipeline()
			for i := 0; i < keys; i++ {
				pipe.Set(c, "key:"+strconv.Itoa(i), "val:"+strconv.Itoa(i), 0)
			}
			if _, err := pipe.Exec(c); err != nil {
				t.Fatal(err)
			}
			check := func(what string) {
				t.Helper()
				cmds := make([]*redis.StringCmd, keys)
				p := cc.Pipeline()
				for i := range cmds {
					cmds[i] = p.Get(c, "key:"+strconv.Itoa(i))
				}
				_, _ = p.Exec(c)
				for i, cmd := range cmds {
					if v, err := cmd.Result(); err != nil || v != "val:"+strconv.Itoa(i) {
						t.Fatalf("%s: GET key:%d = %q, %v", what, i, v, err)
					}
				}
			}
			check("before")
			// Owners from one CLUSTER SLOTS read.
			owner := map[int]*clNode{}
			rs, err := nodes[0].rc.ClusterSlots(c).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				for _, n := range nodes {
					if n.addr == r.Nodes[0].Addr {
						for s := r.Start; s <= r.End && s < slots; s++ {
							owner[int(s)] = n
						}
					}
				}
			}
			ids := map[*clNode]string{}
			for _, n := range nodes {
				ids[n] = n.id(t)
			}
			var from *clNode
			for s := 0; s < slots; s++ {
				from = owner[s]
				to := nodes[0]
				if to == from {
					to = nodes[1]
				}
				from.do(t, "cluster", "setslot", s, "migrating", ids[to])
				to.do(t, "cluster", "setslot", s, "importing", ids[from])
			}
			fixCluster(t, nodes, from.addr)
			check("after the fix")
			for s := 0; s < slots; s++ {
				for _, n := range nodes {
					if out := n.str(t, "cluster", "nodes"); strings.Contains(out, fmt.Sprintf("[%d-", s)) {
						t.Fatalf("slot %d still open on %s", s, n.addr)
					}
				}
			}
		})
	}
}
