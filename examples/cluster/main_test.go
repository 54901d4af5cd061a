package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/deploy"
	"github.com/shardis/shardis/internal/node"
)

// asShardnodeEnv makes this test binary behave as shardnode (a node from
// a node.conf), so deploy.Up can start it without a separate build of
// cmd/shardnode.
const asShardnodeEnv = "CLUSTER_EXAMPLE_TEST_AS_SHARDNODE"

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

// shardnodeMain is the part of cmd/shardnode that "shardnode up --cluster"
// uses.
func shardnodeMain(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if len(args) != 1 {
		return fmt.Errorf("usage: node.conf")
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

// TestClusterExample runs the example against a cluster started by
// deploy.Up (what "shardnode up --cluster" runs) with this test binary as
// shardnode: 3 masters x 1 replica, node-timeout 1s. The write/read path
// must succeed; the kill path must either report the switch or, while
// shardnode has no automatic failover, fail with ErrNoPromotion within
// its bound.
func TestClusterExample(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(asShardnodeEnv, "1") // the children run shardnodeMain
	base := freeClusterRange(t, 6)
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d, err := deploy.Up(ctx, deploy.Options{Dir: dir, Executable: bin,
		Cluster: &deploy.ClusterPlan{Masters: 3, Replicas: 1, BasePort: base, NodeTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(5 * time.Second) })
	t.Logf("cluster healthy in %v", d.Healthy)

	var out strings.Builder
	if err := run(ctx, &out, dir, "", 300, "", time.Minute); err != nil {
		t.Fatalf("write/read: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "connected to a cluster of 3 masters") ||
		!strings.Contains(out.String(), "wrote and read back 300 keys") {
		t.Errorf("output:\n%s", out.String())
	}

	if err := run(ctx, &out, dir, "", 10, "127.0.0.1:1", time.Second); err == nil || !strings.Contains(err.Error(), "not a master") {
		t.Errorf("unknown master: %v", err)
	}
	if err := run(ctx, &out, filepath.Join(t.TempDir(), "none"), "", 1, "", time.Second); err == nil {
		t.Error("missing deployment accepted")
	}

	// Kill the master of slot 6000 (the second master's range).
	out.Reset()
	const bound = 6 * time.Second
	start := time.Now()
	err = run(ctx, &out, dir, "", 300, "6000", bound)
	took := time.Since(start)
	t.Logf("kill path returned after %v: %v\n%s", took.Round(time.Millisecond), err, out.String())
	switch {
	case err == nil:
		if !strings.Contains(out.String(), "switch: slot") || !strings.Contains(out.String(), "all 300 keys read back") {
			t.Errorf("success without the switch report:\n%s", out.String())
		}
	case errors.Is(err, ErrNoPromotion):
		if took > bound+5*time.Second {
			t.Errorf("no-promotion reported after %v, bound %v", took, bound)
		}
	default:
		t.Errorf("kill path: %v", err)
	}
	if !strings.Contains(out.String(), "killed master "+net.JoinHostPort("127.0.0.1", strconv.Itoa(base+1))) {
		t.Errorf("did not kill slot 6000's master %d:\n%s", base+1, out.String())
	}
	select {
	case p := <-d.Exited():
		if p != d.Proc(base+1) {
			t.Errorf("%s exited, want the killed master", p.Name)
		}
	case <-time.After(5 * time.Second):
		t.Error("the killed master was not reported")
	}
}

// freeClusterRange returns a base port such that n consecutive ports and
// their bus ports (+10000) are free.
func freeClusterRange(t *testing.T, n int) int {
	t.Helper()
	free := func(p int) bool {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
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
