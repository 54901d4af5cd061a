package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/client/cluster/admin"
	"github.com/shardis/shardis/client/cluster/clustertest"
	"github.com/shardis/shardis/internal/testutil"
)

// runCluster runs "shardnode cluster args..." (this test binary as main)
// and returns its stdout, stderr and exit code.
func runCluster(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := asMain(exec.CommandContext(ctx, shardnodeBinary(t), append([]string{"cluster"}, args...)...))
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("shardnode cluster %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func mustCluster(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := runCluster(t, args...)
	if code != 0 {
		t.Fatalf("shardnode cluster %v: exit %d\n%s\n%s", args, code, out, errs)
	}
	return out
}

func clusterInfoJSON(t *testing.T, addr string) admin.ClusterInfo {
	t.Helper()
	var res struct {
		OK     bool              `json:"ok"`
		Result admin.ClusterInfo `json:"result"`
	}
	if err := json.Unmarshal([]byte(mustCluster(t, "info", addr, "--json")), &res); err != nil || !res.OK {
		t.Fatalf("info --json: %v %+v", err, res)
	}
	return res.Result
}

// TestClusterCLI drives every verb of "shardnode cluster" against real
// redis-server nodes; redis-cli --cluster check agrees after each.
func TestClusterCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test with real redis-server processes")
	}
	testutil.Binary(t, "redis-cli")
	nodes := clustertest.StartNodes(t, 8)
	seed := nodes[0].Addr
	check := func(step string) {
		t.Helper()
		out := clustertest.WaitCheck(t, seed, 30*time.Second)
		if !strings.Contains(out, "[OK] All nodes agree about slots configuration.") {
			t.Fatalf("after %s, redis-cli check:\n%s", step, out)
		}
		if got := mustCluster(t, "check", seed); !strings.Contains(got, "[OK] All 16384 slots covered.") {
			t.Fatalf("after %s, shardnode cluster check:\n%s", step, got)
		}
	}

	// Flags after the addresses, as redis-cli takes them.
	mustCluster(t, append(append([]string{"create"}, clustertest.Addrs(nodes[:6])...), "--replicas", "1", "--yes", "--no-progress")...)
	check("create")
	info := clusterInfoJSON(t, seed)
	if len(info.Masters) != 3 {
		t.Fatalf("create: %+v", info)
	}

	mustCluster(t, "add-node", nodes[6].Addr, seed)
	check("add-node (master)")
	newID := nodes[6].NodeID(t)
	mustCluster(t, "add-node", nodes[7].Addr, seed, "--replica-of", newID)
	check("add-node (replica)")

	// Keys to carry through the moves.
	ctx := context.Background()
	for _, k := range []string{"{a}1", "{b}2", "{c}3", "{d}4"} {
		if err := clustertest.SetAny(ctx, nodes, k, "v"+k); err != nil {
			t.Fatal(err)
		}
	}

	mustCluster(t, "reshard", seed, "--from", "all", "--to", newID, "--slots", "200", "--yes", "--no-progress")
	check("reshard")
	out := mustCluster(t, "rebalance", seed, "--json")
	if !strings.Contains(out, `"moved"`) {
		t.Fatalf("rebalance --json: %s", out)
	}
	check("rebalance")
	for _, m := range clusterInfoJSON(t, seed).Masters {
		if m.Slots < 4095 || m.Slots > 4097 {
			t.Fatalf("after rebalance: %+v", m)
		}
	}
	for _, k := range []string{"{a}1", "{b}2", "{c}3", "{d}4"} {
		if v, err := clustertest.GetAny(ctx, nodes, k); err != nil || v != "v"+k {
			t.Fatalf("GET %s after the moves: %q %v", k, v, err)
		}
	}

	// The replica added last leaves.
	mustCluster(t, "del-node", seed, nodes[7].NodeID(t))
	check("del-node")

	// A broken slot: check exits 1, fix repairs it.
	cl, err := admin.Load(ctx, seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	slot := cl.Nodes[0].Slots[0]
	cl.Close()
	if err := nodes[0].Client().Do(ctx, "cluster", "setslot", slot, "migrating", newID).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, code := runCluster(t, "check", seed); code != 1 {
		t.Fatalf("check of a cluster with an open slot exited %d", code)
	}
	mustCluster(t, "fix", seed)
	check("fix")

	// Failover: one of the first six that is a replica now.
	var replica string
	for _, n := range nodes[:6] {
		if role, _ := n.Client().Do(ctx, "role").Slice(); len(role) > 0 && role[0] == "slave" {
			replica = n.Addr
			break
		}
	}
	mustCluster(t, "failover", replica)
	check("failover")

	// Wrong usage exits non-zero.
	if _, _, code := runCluster(t, "check"); code == 0 {
		t.Fatal("check without an address exited 0")
	}
}

func TestFlagsFirst(t *testing.T) {
	got := flagsFirst([]string{"a:1", "b:2", "--replicas", "1", "c:3", "--yes", "--json", "--timeout=5s", "--", "--weird"})
	want := []string{"--replicas", "1", "--yes", "--json", "--timeout=5s", "a:1", "b:2", "c:3", "--weird"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("flagsFirst = %v, want %v", got, want)
	}
}
