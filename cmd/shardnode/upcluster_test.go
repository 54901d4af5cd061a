package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/client/cluster"
	"github.com/shardis/shardis/internal/deploy"
)

// freeClusterBase returns a base port such that n consecutive ports and
// their cluster bus ports (+10000) are free.
func freeClusterBase(t *testing.T, n int) int {
	t.Helper()
	free := func(p int) bool {
		ln, err := net.Listen("tcp", addr(p))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
	for range 200 {
		base := 15000 + rand.IntN(7000) // bus ports stay below the ephemeral range (32768+)
		ok := true
		for p := base; p < base+n && ok; p++ {
			ok = free(p) && free(p+10000)
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

func clusterStatus(t *testing.T, bin, dir string) *deploy.ClusterStatus {
	t.Helper()
	out, err := asMain(exec.Command(bin, "status", "--dir", dir, "--json")).Output()
	if err != nil {
		t.Fatalf("status --json: %v", err)
	}
	var st deploy.ClusterStatus
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return &st
}

// clusterShape is what must survive a restart: per node address its id,
// role (the master's id for a replica) and slot ranges.
func clusterShape(st *deploy.ClusterStatus) map[string]string {
	out := map[string]string{}
	for _, m := range st.Masters {
		out[m.Addr] = m.ID + " master " + m.Ranges
		for _, r := range m.Replicas {
			out[r.Addr] = r.ID + " replica-of " + m.ID
		}
	}
	return out
}

func newClusterClient(t *testing.T, ctx context.Context, seeds []string) *cluster.Client {
	t.Helper()
	c, err := cluster.New(ctx, &cluster.Options{Addrs: seeds, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("cluster.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestUpCluster drives "shardnode up --cluster" with 3 masters x 1
// replica: healthy within 10s, the summary's client code, keys through
// client/cluster, "status" (JSON and table), Ctrl-C, and a restart from
// nodes.conf and the AOF with the same ids, slots, roles and keys, and a
// start after an unfinished creation.
func TestUpCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	bin := shardnodeBinary(t)
	base := freeClusterBase(t, 6)
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	start := time.Now()
	u := startUp(t, bin, "--cluster", "--dir", dir, "--masters", "3", "--replicas", "1",
		"--base-port", strconv.Itoa(base), "--node-timeout", "2s")
	healthy := u.waitHealthy(t, 30*time.Second)
	t.Logf("up --cluster: healthy in %v (reported %v)", time.Since(start).Round(time.Millisecond), healthy)
	if healthy > 10*time.Second && !raceEnabled {
		t.Errorf("healthy after %v, want within 10s", healthy)
	}
	seeds := []string{addr(base), addr(base + 1), addr(base + 2)}
	// The summary is printed after the "healthy in" line: wait for its
	// last line before reading it.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(u.output(), "Ctrl-C stops everything"); {
		if time.Now().After(deadline) {
			t.Fatalf("no summary after the healthy line:\n%s", u.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{"cluster.New(ctx, &cluster.Options{", `"` + strings.Join(seeds, `", "`) + `"`, "shardis cluster started"} {
		if !strings.Contains(u.output(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if l, err := deploy.LoadLayout(dir); err != nil || l.Mode != deploy.ModeCluster || !l.Created || l.NodeTimeoutMs != 2000 {
		t.Errorf("deploy.json: %+v, %v", l, err)
	}

	// Keys through client/cluster.
	c := newClusterClient(t, ctx, seeds)
	const nkeys = 300
	for i := range nkeys {
		if err := c.Set(ctx, "upcl:key:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	st := clusterStatus(t, bin, dir)
	if st.Mode != deploy.ModeCluster || st.State != "ok" || st.KnownNodes != 6 || st.Agree != 6 || st.Asked != 6 ||
		len(st.Masters) != 3 || st.LastFailover != nil || len(st.Unreachable) != 0 {
		t.Fatalf("status = %+v", st)
	}
	total := 0
	for i, m := range st.Masters {
		total += m.Slots
		if m.Addr != addr(base+i) || len(m.ID) != 40 || m.ConfigEpoch < 1 || m.State != "ok" || m.Slots < 5000 || m.Ranges == "" {
			t.Errorf("status master %d = %+v", i, m)
		}
		if len(m.Replicas) != 1 || m.Replicas[0].Addr != addr(base+3+i) || m.Replicas[0].Link != "up" || len(m.Replicas[0].ID) != 40 ||
			m.Replicas[0].LagSeconds < 0 {
			t.Errorf("status master %s replicas = %+v", m.Addr, m.Replicas)
		}
	}
	if total != 16384 || !strings.HasPrefix(st.Masters[0].Ranges, "0-") {
		t.Errorf("slots: %d in all, first ranges %s", total, st.Masters[0].Ranges)
	}
	table, err := asMain(exec.Command(bin, "status", "--dir", dir)).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(table), "\n") {
		if len(line) >= 80 {
			t.Errorf("status line over 79 columns: %q", line)
		}
	}
	for _, want := range []string{"cluster_state ok, 6/6 agree", addr(base) + " ", st.Masters[0].ID[:8], " up lag ", "last failover: -"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("status table lacks %q:\n%s", want, table)
		}
	}
	shape := clusterShape(st)
	// --node shows a cluster without its deploy.json (no undated-failover
	// inference then, the same shape otherwise).
	out, err := asMain(exec.Command(bin, "status", "--dir", t.TempDir(), "--node", "127.0.0.1:1,"+addr(base+4), "--json")).Output()
	var viaNode deploy.ClusterStatus
	if err != nil || json.Unmarshal(out, &viaNode) != nil || viaNode.Entry != addr(base+4) || len(viaNode.Unreachable) != 1 ||
		len(clusterShape(&viaNode)) != 6 {
		t.Errorf("status --node: %v\n%s", err, out)
	}
	for a, want := range clusterShape(&viaNode) {
		if shape[a] != want {
			t.Errorf("status --node: %s = %q, want %q", a, want, shape[a])
		}
	}

	// Ctrl-C stops every node.
	c.Close()
	u.stop(t)
	if !strings.Contains(u.output(), "stopped;") {
		t.Errorf("no stop message:\n%s", u.output())
	}
	for p := base; p < base+6; p++ {
		if conn, err := net.DialTimeout("tcp", addr(p), 200*time.Millisecond); err == nil {
			conn.Close()
			t.Errorf("node %d still listening after up stopped", p)
		}
	}

	// Up again: the same cluster from nodes.conf and the AOF.
	start = time.Now()
	u2 := startUp(t, bin, "--dir", dir)
	healthy = u2.waitHealthy(t, 30*time.Second)
	t.Logf("up (restart): healthy in %v (reported %v)", time.Since(start).Round(time.Millisecond), healthy)
	if !strings.Contains(u2.output(), "shardis cluster restarted") || strings.Contains(u2.output(), "cluster created") {
		t.Errorf("restart summary:\n%s", u2.output())
	}
	st2 := clusterStatus(t, bin, dir)
	shape2 := clusterShape(st2)
	for a, want := range shape {
		if shape2[a] != want {
			t.Errorf("after restart %s = %q, want %q", a, shape2[a], want)
		}
	}
	if len(shape2) != len(shape) || st2.State != "ok" || st2.Agree != 6 {
		t.Errorf("after restart status = %+v", st2)
	}
	c = newClusterClient(t, ctx, seeds)
	for i := range nkeys {
		k := "upcl:key:" + strconv.Itoa(i)
		if v, err := c.Get(ctx, k).Result(); err != nil || v != strconv.Itoa(i) {
			t.Fatalf("after restart GET %s = %q, %v", k, v, err)
		}
	}
	for p := base + 3; p < base+6; p++ {
		role, err := os.ReadFile(filepath.Join(deploy.NodeDir(dir, p), "nodes.conf"))
		if err != nil || !strings.Contains(string(role), "myself,slave") {
			t.Errorf("node %d's nodes.conf does not say it is a replica: %v", p, err)
		}
	}
	u2.stop(t)

	// A creation that did not finish (deploy.json not marked created)
	// starts afresh from empty nodes rather than from half-made nodes.conf.
	l, err := deploy.LoadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	l.Created = false
	if err := l.Save(dir); err != nil {
		t.Fatal(err)
	}
	u3 := startUp(t, bin, "--dir", dir)
	u3.waitHealthy(t, 30*time.Second)
	if !strings.Contains(u3.output(), "cluster created") {
		t.Errorf("an unfinished creation was not redone:\n%s", u3.output())
	}
	st3 := clusterStatus(t, bin, dir)
	if len(st3.Masters) != 3 || st3.Masters[0].ID == st.Masters[0].ID {
		t.Errorf("after re-creation: %+v (old first id %s)", st3.Masters, st.Masters[0].ID)
	}
	if l, err := deploy.LoadLayout(dir); err != nil || !l.Created {
		t.Errorf("deploy.json after re-creation: %+v, %v", l, err)
	}
	u3.stop(t)
}
