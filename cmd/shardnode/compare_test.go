package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCompareCmd runs "shardnode compare" (this test binary as main) with
// small figures and returns results.json decoded and the output. The
// output directory is given relative to the command's working directory,
// as the default --out is.
func runCompareCmd(t *testing.T, args ...string) (map[string]any, string) {
	t.Helper()
	wd := t.TempDir()
	out := filepath.Join(wd, "compare")
	argv := append([]string{"compare", "--duration", "1s", "--masters", "3", "--replicas", "1", "--keys", "2000",
		"--clients", "4", "--down-after", "1s", "--out", "compare"}, args...)
	cmd := asMain(exec.Command(shardnodeBinary(t), argv...))
	cmd.Dir = wd
	done := make(chan struct{})
	timer := time.AfterFunc(90*time.Second, func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	text, err := cmd.CombinedOutput()
	close(done)
	if err != nil {
		t.Fatalf("compare: %v\n%s", err, text)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(out, "compare.png")); err != nil || st.Size() < 1000 {
		t.Fatalf("compare.png: %v (%v)", st, err)
	}
	return res, string(text)
}

func topology(t *testing.T, res map[string]any, name string) map[string]any {
	t.Helper()
	tops, _ := res["topologies"].(map[string]any)
	top, _ := tops[name].(map[string]any)
	if top == nil {
		t.Fatalf("results.json has no topologies.%s: %v", name, res)
	}
	return top
}

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("%s is %v (%T), want a number", k, m[k], m[k])
	}
	return v
}

// TestCompareEndToEnd runs both topologies' workloads and the kill -9 of
// a master, and checks results.json's shape and that its figures are
// sane.
func TestCompareEndToEnd(t *testing.T) {
	res, out := runCompareCmd(t, "--phases", "workloads,failover")
	for _, name := range []string{"presharding", "cluster"} {
		top := topology(t, res, name)
		for _, k := range []string{"ops_per_sec", "p50_ms", "p99_ms", "p999_ms"} {
			if num(t, top, k) <= 0 {
				t.Errorf("%s.%s = %v, want > 0", name, k, top[k])
			}
		}
		if p50, p99, p999 := num(t, top, "p50_ms"), num(t, top, "p99_ms"), num(t, top, "p999_ms"); p50 > p99 || p99 > p999 {
			t.Errorf("%s: percentiles out of order: %v %v %v", name, p50, p99, p999)
		}
		wl, _ := top["workloads"].(map[string]any)
		for _, w := range []string{"getset", "pipeline", "multikey", "multikey_tagged"} {
			f, _ := wl[w].(map[string]any)
			if f == nil || num(t, f, "ops_per_sec") <= 0 || num(t, f, "errors") != 0 {
				t.Errorf("%s.workloads.%s = %v, want ops and no errors", name, w, f)
			}
		}
		if b := num(t, top, "failover_blackout_s"); b <= 0 || b > 30 {
			t.Errorf("%s: failover_blackout_s = %v", name, b)
		}
		fo, _ := top["failover"].(map[string]any)
		if fo == nil || fo["recovered"] != true || num(t, fo, "acked_writes") < 100 {
			t.Errorf("%s: failover = %v, want recovered with acknowledged writes", name, fo)
		}
		if lost := num(t, top, "lost_acked_writes"); lost < 0 || lost > num(t, fo, "acked_writes") {
			t.Errorf("%s: lost_acked_writes = %v", name, lost)
		}
		if top["grow_seconds"] != nil {
			t.Errorf("%s: grow_seconds = %v though growth did not run", name, top["grow_seconds"])
		}
		if num(t, top, "memory_per_key_bytes") <= 0 || num(t, top, "keys") < 2000 {
			t.Errorf("%s: memory per key %v over %v keys", name, top["memory_per_key_bytes"], top["keys"])
		}
		st, _ := top["settings"].(map[string]any)
		if st == nil {
			t.Errorf("%s: no settings", name)
		}
	}
	if s := topology(t, res, "presharding")["settings"].(map[string]any); s["down_after_ms"] != 1000.0 {
		t.Errorf("presharding down_after_ms = %v, want 1000", s["down_after_ms"])
	}
	if s := topology(t, res, "cluster")["settings"].(map[string]any); s["cluster_node_timeout_ms"] != 1000.0 {
		t.Errorf("cluster cluster_node_timeout_ms = %v, want 1000", s["cluster_node_timeout_ms"])
	}
	if !strings.Contains(out, "kill -9 master: blackout its keys") {
		t.Errorf("no table in the output:\n%s", out)
	}
}

// TestComparePreShardingGrow runs the pre-sharding growth: a shard moved
// to a new node with migrate-shard and followed by the pool.
func TestComparePreShardingGrow(t *testing.T) {
	res, _ := runCompareCmd(t, "--only", "presharding", "--phases", "grow")
	top := topology(t, res, "presharding")
	g, _ := top["grow"].(map[string]any)
	if g == nil || num(t, top, "grow_seconds") <= 0 {
		t.Fatalf("grow = %v", g)
	}
	// The moved shard holds about a third of the keys.
	if moved := num(t, g, "keys_moved"); moved < 200 || moved > 2200 {
		t.Errorf("keys_moved = %v", moved)
	}
	if f := num(t, g, "ring_change_fraction"); f <= 0.05 || f >= 0.5 {
		t.Errorf("ring_change_fraction = %v, want about 1/4", f)
	}
	if num(t, g, "client_requests") <= 0 {
		t.Errorf("no client traffic during the growth: %v", g)
	}
}

// TestCompareClusterGrow runs the cluster's growth: a new master added
// with add-node and filled by rebalance, with client traffic running.
func TestCompareClusterGrow(t *testing.T) {
	res, _ := runCompareCmd(t, "--only", "cluster", "--phases", "grow")
	top := topology(t, res, "cluster")
	g, _ := top["grow"].(map[string]any)
	if g == nil || num(t, top, "grow_seconds") <= 0 {
		t.Fatalf("grow = %v", g)
	}
	if g["completed"] != true {
		t.Fatalf("rebalance did not complete: %v", g)
	}
	// Four masters after the growth: the new one holds about a quarter of
	// the slots and of the keys.
	if moved, total := num(t, g, "slots_moved"), num(t, g, "slots_total"); moved < 3000 || moved != total {
		t.Errorf("slots moved %v of %v, want about 16384/4, all of them", moved, total)
	}
	if keys := num(t, g, "keys_moved"); keys < 200 || keys > 1000 {
		t.Errorf("keys_moved = %v, want about 2000/4", keys)
	}
	if num(t, g, "client_requests") <= 0 {
		t.Errorf("no client traffic during the growth: %v", g)
	}
	if e := num(t, g, "client_errors"); e != 0 {
		t.Errorf("client errors during the growth: %v", e)
	}
}
