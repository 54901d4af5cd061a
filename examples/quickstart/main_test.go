package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/deploy"
	"github.com/shardis/shardis/internal/node"
	"github.com/shardis/shardis/internal/sentinel/runner"
)

// asShardnodeEnv makes this test binary behave as shardnode (nodes from a
// node.conf, "sentinel sentinel.conf" for our Sentinel), so deploy.Up can
// start it without a separate build of cmd/shardnode.
const asShardnodeEnv = "QUICKSTART_TEST_AS_SHARDNODE"

func TestMain(m *testing.M) {
	if os.Getenv(asShardnodeEnv) == "1" {
		if err := shardnodeMain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// shardnodeMain is the part of cmd/shardnode that "shardnode up" uses.
func shardnodeMain(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if len(args) == 2 && args[0] == "sentinel" {
		return runner.RunConfigFile(ctx, args[1], runner.FileOptions{})
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: node.conf | sentinel sentinel.conf")
	}
	cfg := node.NewConfig()
	if err := cfg.ParseFile(args[0]); err != nil {
		return err
	}
	srv, err := node.New(cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

// TestQuickstartKillMaster runs the example against a deployment started
// by deploy.Up (what "shardnode up" runs) with this test binary as shardnode: 2 shards x 1 replica, 3 Sentinels, down-after 1s.
func TestQuickstartKillMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(asShardnodeEnv, "1") // the children run shardnodeMain
	base := freeRange(t, 7)
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d, err := deploy.Up(ctx, deploy.Options{Dir: dir, Executable: bin, Plan: deploy.Plan{
		Shards: 2, Replicas: 1, Sentinels: 3, BasePort: base, SentinelPort: base + 4,
		SentinelKind: deploy.SentinelOurs, DownAfter: time.Second, FailoverTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(5 * time.Second) })
	t.Logf("deployment healthy in %v", d.Healthy)

	if err := run(dir, "", "", 300, "", time.Minute); err != nil {
		t.Fatalf("write/read: %v", err)
	}
	start := time.Now()
	if err := run(dir, "", "", 300, "shard-2", 30*time.Second); err != nil {
		t.Fatalf("kill shard-2: %v", err)
	}
	t.Logf("failover followed in %v", time.Since(start))
	select {
	case p := <-d.Exited():
		if p != d.Proc(base+2) {
			t.Errorf("%s exited, want shard-2's master", p.Name)
		}
	case <-time.After(5 * time.Second):
		t.Error("the killed master was not reported")
	}
	if err := run(dir, "", "", 300, "no-such-shard", time.Second); err == nil {
		t.Error("unknown shard accepted")
	}
	if err := run(filepath.Join(t.TempDir(), "none"), "", "", 1, "", time.Second); err == nil {
		t.Error("missing deployment accepted")
	}
}

func freeRange(t *testing.T, n int) int {
	t.Helper()
	for range 200 {
		base := 15000 + rand.IntN(15000) // below the ephemeral range (32768+)
		ok := true
		for p := base; p < base+n && ok; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if ok = err == nil; ok {
				ln.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}
