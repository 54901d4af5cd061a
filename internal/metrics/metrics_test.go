package metrics_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/metrics"
	"github.com/shardis/shardis/internal/node"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/sentinel"
	"github.com/shardis/shardis/internal/sentinel/runner"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func startNode(t *testing.T, ctx context.Context, directives ...string) *node.Server {
	t.Helper()
	cfg := node.NewConfig()
	args := append([]string{"port", "0", "bind", "127.0.0.1", "save", "", "dir", t.TempDir()}, directives...)
	for i := 0; i+1 < len(args); i += 2 {
		if err := cfg.Set(args[i], args[i+1]); err != nil {
			t.Fatalf("config %s: %v", args[i], err)
		}
	}
	srv, err := node.New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx) }()
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		<-done
	})
	return srv
}

// scrape returns the samples of a /metrics page keyed by their text
// ("name" or `name{label="v",...}`).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("scrape %s: %s\n%s", url, resp.Status, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

func want(t *testing.T, samples map[string]float64, key string, ok func(float64) bool, what string) {
	t.Helper()
	v, found := samples[key]
	if !found {
		t.Errorf("missing series %s", key)
		return
	}
	if !ok(v) {
		t.Errorf("%s = %v, want %s", key, v, what)
	}
}

func eq(x float64) func(float64) bool { return func(v float64) bool { return v == x } }
func gt(x float64) func(float64) bool { return func(v float64) bool { return v > x } }

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestNodeMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	master := startNode(t, ctx)
	mport := master.Config().Get(config.DirPort)
	replica := startNode(t, ctx, "replicaof", "127.0.0.1 "+mport)

	mc := redis.NewClient(&redis.Options{Addr: master.Addr().String()})
	defer mc.Close()
	for i := range 10 {
		if err := mc.Set(ctx, fmt.Sprint("k", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mc.Expire(ctx, "k0", time.Hour)
	mc.Get(ctx, "k1")
	mc.Do(ctx, "LPUSH", "k1", "x") // WRONGTYPE: a failed call
	mc.Do(ctx, "SELECT", "2")
	mc2 := redis.NewClient(&redis.Options{Addr: master.Addr().String(), DB: 2})
	defer mc2.Close()
	mc2.Set(ctx, "other", "1", 0)

	addr, err := metrics.ServeNode(ctx, "127.0.0.1:0", master, quiet)
	if err != nil {
		t.Fatal(err)
	}
	raddr, err := metrics.ServeNode(ctx, "127.0.0.1:0", replica, quiet)
	if err != nil {
		t.Fatal(err)
	}
	murl, rurl := "http://"+addr.String()+"/metrics", "http://"+raddr.String()+"/metrics"

	// The replica acknowledges the whole stream (acks every second).
	var m map[string]float64
	waitUntil(t, 10*time.Second, "the replica to catch up", func() bool {
		m = scrape(t, murl)
		for k, v := range m {
			if strings.HasPrefix(k, "shardis_node_replica_lag_bytes{") && v == 0 && m["shardis_node_repl_offset_bytes"] > 0 {
				return true
			}
		}
		return false
	})
	want(t, m, `shardis_node_commands_total{command="set"}`, eq(11), "11")
	want(t, m, `shardis_node_commands_total{command="get"}`, eq(1), "1")
	want(t, m, `shardis_node_command_failed_calls_total{command="lpush"}`, eq(1), "1")
	want(t, m, `shardis_node_command_duration_seconds_count{command="set"}`, eq(11), "11")
	want(t, m, `shardis_node_command_duration_seconds_sum{command="set"}`, func(v float64) bool { return v > 0 && v < 1 }, "in (0, 1s)")
	want(t, m, `shardis_node_commands_processed_total`, func(v float64) bool { return v >= 14 }, ">= 14")
	want(t, m, `shardis_node_keys{db="0"}`, eq(10), "10")
	want(t, m, `shardis_node_expiring_keys{db="0"}`, eq(1), "1")
	want(t, m, `shardis_node_keys{db="2"}`, eq(1), "1")
	want(t, m, `shardis_node_used_memory_bytes`, gt(0), "> 0")
	want(t, m, `shardis_node_connected_clients`, func(v float64) bool { return v >= 2 }, ">= 2")
	want(t, m, `shardis_node_role{role="master"}`, eq(1), "1")
	want(t, m, `shardis_node_role{role="slave"}`, eq(0), "0")
	want(t, m, `shardis_node_connected_replicas`, eq(1), "1")
	want(t, m, `shardis_node_repl_offset_bytes`, gt(0), "> 0")
	raddrLabel := "127.0.0.1:" + replica.Config().Get(config.DirPort)
	want(t, m, `shardis_node_replica_lag_bytes{replica="`+raddrLabel+`"}`, eq(0), "0")
	want(t, m, `shardis_node_replica_lag_seconds{replica="`+raddrLabel+`"}`, func(v float64) bool { return v >= 0 && v < 5 }, "in [0, 5s)")
	want(t, m, `shardis_node_replica_ack_offset_bytes{replica="`+raddrLabel+`"}`, eq(m["shardis_node_repl_offset_bytes"]), "the master's offset")
	want(t, m, `go_goroutines`, gt(0), "> 0")

	r := scrape(t, rurl)
	want(t, r, `shardis_node_role{role="slave"}`, eq(1), "1")
	want(t, r, `shardis_node_master_link_up{master="127.0.0.1:`+mport+`"}`, eq(1), "1")
	want(t, r, `shardis_node_keys{db="0"}`, eq(10), "10")
	want(t, r, `shardis_node_repl_offset_bytes`, eq(m["shardis_node_repl_offset_bytes"]), "the master's offset")
}

func TestSentinelMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("failover test skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	master := startNode(t, ctx)
	mport := master.Config().Get(config.DirPort)
	replica := startNode(t, ctx, "replicaof", "127.0.0.1 "+mport)
	waitUntil(t, 10*time.Second, "the replica to sync", func() bool {
		st := master.Stats()
		return len(st.Replicas) == 1 && st.Replicas[0].State == "online"
	})

	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	text := "port 0\nbind 127.0.0.1\nsentinel monitor m 127.0.0.1 " + mport + " 1\n" +
		"sentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 5000\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	type started struct {
		r   *runner.Runner
		url string
	}
	ready := make(chan started, 1)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runner.RunConfigFile(sctx, conf, runner.FileOptions{
			ExtraLines: []string{"metrics-addr 127.0.0.1:0"},
			Logger:     quiet,
			OnStart: func(ctx context.Context, r *runner.Runner, f *sentinel.File) error {
				if runner.Directive(f, "metrics-addr") != "127.0.0.1:0" {
					return fmt.Errorf("metrics-addr directive not seen: %q", f.Unknown)
				}
				a, err := metrics.ServeSentinel(ctx, "127.0.0.1:0", r, quiet)
				if err == nil {
					ready <- started{r, "http://" + a.String() + "/metrics"}
				}
				return err
			},
		})
	}()
	t.Cleanup(func() { stop(); <-done })
	var s started
	select {
	case s = <-ready:
	case err := <-done:
		t.Fatalf("sentinel: %v", err)
	case <-ctx.Done():
		t.Fatal("sentinel did not start")
	}

	var m map[string]float64
	waitUntil(t, 10*time.Second, "the Sentinel to see the replica", func() bool {
		m = scrape(t, s.url)
		return m[`shardis_sentinel_known_replicas{master="m"}`] == 1
	})
	want(t, m, `shardis_sentinel_master_info{addr="127.0.0.1:`+mport+`",master="m"}`, eq(1), "1")
	want(t, m, `shardis_sentinel_master_sdown{master="m"}`, eq(0), "0")
	want(t, m, `shardis_sentinel_master_odown{master="m"}`, eq(0), "0")
	want(t, m, `shardis_sentinel_known_sentinels{master="m"}`, eq(1), "1")
	want(t, m, `shardis_sentinel_master_quorum{master="m"}`, eq(1), "1")
	want(t, m, `shardis_sentinel_failovers_total{master="m"}`, eq(0), "0")
	want(t, m, `shardis_sentinel_current_epoch`, eq(0), "0")
	want(t, m, `shardis_sentinel_tilt`, eq(0), "0")

	// Kill the master: SDOWN then ODOWN (quorum 1), failover, switch.
	master.Shutdown(context.Background())
	waitUntil(t, 20*time.Second, "the failover", func() bool {
		m = scrape(t, s.url)
		return m[`shardis_sentinel_failovers_total{master="m"}`] == 1
	})
	raddr := "127.0.0.1:" + replica.Config().Get(config.DirPort)
	want(t, m, `shardis_sentinel_master_info{addr="`+raddr+`",master="m"}`, eq(1), "1")
	want(t, m, `shardis_sentinel_current_epoch`, gt(0), "> 0")
	want(t, m, `shardis_sentinel_master_config_epoch{master="m"}`, gt(0), "> 0")
	want(t, m, `shardis_sentinel_failovers_led_total{master="m"}`, eq(1), "1")
	if st := replica.Stats(); st.Role != "master" {
		t.Errorf("promoted replica role = %s", st.Role)
	}
}
