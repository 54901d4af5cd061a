package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/client/cluster/clustertest"
	"github.com/shardis/shardis/internal/testutil"
)

// TestClusterCLIShardnode drives the reshaping verbs of "shardnode
// cluster" against in-process shardnode nodes (TestClusterCLI does every
// verb against redis-server): create, add-node (a master and its
// replica), reshard and rebalance (whole-slot migration, logged as such),
// reshard away and del-node (the replica moves to another master), fix of
// an open slot, failover of that replica; redis-cli --cluster check agrees
// after each.
func TestClusterCLIShardnode(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test with real cluster nodes")
	}
	testutil.Binary(t, "redis-cli")
	// No step waits for failure detection (the failover is a manual
	// one). clustertest's 1 s node timeout let a loaded machine's stalls
	// of the test process expire MEET handshakes and fail nodes over;
	// 5 s tolerates them, and keeps a manual failover whose first
	// election failed retryable (after 4 x node timeout = 20 s) within
	// the CLI's 60 s wait, which Redis's default 15 s would not (60 s).
	nodes := clustertest.StartKind(t, "shardnode", 5, "--cluster-node-timeout", "5000")
	seed := nodes[0].Addr
	check := func(step string) {
		t.Helper()
		out := clustertest.WaitCheck(t, seed, 2*time.Minute)
		if !strings.Contains(out, "[OK] All nodes agree about slots configuration.") {
			t.Fatalf("after %s, redis-cli check:\n%s", step, out)
		}
	}
	mustCluster(t, append(append([]string{"create"}, clustertest.Addrs(nodes[:3])...), "--yes", "--no-progress")...)
	check("create")
	mustCluster(t, "add-node", nodes[3].Addr, seed)
	check("add-node")
	newID := nodes[3].NodeID(t)
	mustCluster(t, "add-node", nodes[4].Addr, seed, "--replica-of", newID)
	check("add-node (replica)")
	_, logs, code := runCluster(t, "reshard", seed, "--from", "all", "--to", newID, "--slots", "100", "--yes", "--no-progress")
	if code != 0 || !strings.Contains(logs, "whole-slot migration") {
		t.Fatalf("reshard: exit %d, want whole-slot migration in the log:\n%s", code, logs)
	}
	check("reshard")
	mustCluster(t, "rebalance", seed, "--use-empty-masters", "--no-progress")
	check("rebalance")
	for _, m := range clusterInfoJSON(t, seed).Masters {
		if m.Slots < 4095 || m.Slots > 4097 {
			t.Fatalf("after rebalance: %+v", m)
		}
	}
	var mine int
	for _, m := range clusterInfoJSON(t, seed).Masters {
		if m.ID == newID {
			mine = m.Slots
		}
	}
	mustCluster(t, "reshard", seed, "--from", newID, "--to", nodes[0].NodeID(t), "--slots", strconv.Itoa(mine), "--yes", "--no-progress")
	check("reshard away")
	mustCluster(t, "del-node", seed, newID)
	check("del-node")
	// An open slot: check exits 1, fix closes it.
	info := clusterInfoJSON(t, seed)
	other := ""
	for _, m := range info.Masters {
		if m.Addr != seed {
			other = m.ID
		}
	}
	if err := nodes[0].Client().Do(t.Context(), "cluster", "setslot", 0, "migrating", other).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, code := runCluster(t, "check", seed); code != 1 {
		t.Fatalf("check of a cluster with an open slot exited %d", code)
	}
	mustCluster(t, "fix", seed)
	check("fix")
	replica := nodes[4]
	if role, _ := replica.Client().Do(t.Context(), "role").Slice(); len(role) == 0 || role[0] != "slave" {
		t.Fatalf("%s after del-node: role %v, want a replica of another master", replica.Addr, role)
	}
	mustCluster(t, "failover", replica.Addr)
	if role, _ := replica.Client().Do(t.Context(), "role").Slice(); len(role) == 0 || role[0] != "master" {
		t.Fatalf("role after failover: %v", role)
	}
	check("failover")
}
