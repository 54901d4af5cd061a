package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node"
)

func startNode(t *testing.T) string {
	t.Helper()
	cfg := node.NewConfig()
	for k, v := range map[string]string{"port": "0", "bind": "127.0.0.1", "save": "", "dir": t.TempDir()} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := node.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	})
	return srv.Addr().String()
}

// TestMigrateUnderWrites moves a shard while a client writes continuously
// and checks that every acknowledged write is readable on the new master.
func TestMigrateUnderWrites(t *testing.T) {
	oldAddr, newAddr := startNode(t), startNode(t)
	dir := t.TempDir()
	topo := filepath.Join(dir, "topology")
	if err := os.WriteFile(topo, []byte("# shards\nshard-a "+oldAddr+"\nshard-b 127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	seed := redis.NewClient(&redis.Options{Addr: oldAddr, DisableIdentity: true})
	defer seed.Close()
	for i := 0; i < 2000; i++ {
		seed.Set(ctx, fmt.Sprintf("seed:%d", i), i, 0)
	}

	// The writer follows the topology file, as a shardedpool would.
	currentAddr := func() string {
		data, _ := os.ReadFile(topo)
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "shard-a" {
				return f[1]
			}
		}
		return ""
	}
	var acked sync.Map
	var nAcked, nFailed atomic.Int64
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		addr := currentAddr()
		c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
		defer func() { c.Close() }()
		for i := 0; i < 1_000_000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("w:%d", i)
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			err := c.Set(wctx, key, i, 0).Err()
			wcancel()
			if err == nil {
				acked.Store(key, i)
				nAcked.Add(1)
				continue
			}
			nFailed.Add(1)
			if a := currentAddr(); a != addr {
				addr = a
				c.Close()
				c = redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
			}
			time.Sleep(time.Millisecond)
		}
	}()
	time.Sleep(200 * time.Millisecond)

	var progress bytes.Buffer
	err := Run(ctx, Options{From: oldAddr, To: newAddr, TopologyFile: topo, Shard: "shard-a", Progress: &progress, SwitchTimeout: 5 * time.Second})
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := currentAddr(); got != newAddr {
		t.Fatalf("topology points at %s, want %s", got, newAddr)
	}
	// Keep writing to the new master for a moment, then stop.
	before := nAcked.Load()
	deadline := time.Now().Add(5 * time.Second)
	for nAcked.Load() < before+100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-writerDone
	if nAcked.Load() <= before {
		t.Fatalf("no write succeeded on the new master (acked %d, failed %d)", nAcked.Load(), nFailed.Load())
	}

	nc := redis.NewClient(&redis.Options{Addr: newAddr, DisableIdentity: true})
	defer nc.Close()
	missing := 0
	acked.Range(func(k, v any) bool {
		got, err := nc.Get(ctx, k.(string)).Int()
		if err != nil || got != v.(int) {
			missing++
		}
		return true
	})
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged writes missing on the new master", missing, nAcked.Load())
	}
	if n := nc.DBSize(ctx).Val(); n < 2000 {
		t.Fatalf("new master has %d keys, want the 2000 seeded keys and more", n)
	}
	role, _ := nc.Do(ctx, "ROLE").Slice()
	if role[0] != "master" {
		t.Fatalf("new node role %v", role[0])
	}
	t.Logf("acknowledged writes: %d, failed attempts during the switch: %d", nAcked.Load(), nFailed.Load())
}

func TestMigrateRefusesNonEmptyTarget(t *testing.T) {
	oldAddr, newAddr := startNode(t), startNode(t)
	ctx := context.Background()
	nc := redis.NewClient(&redis.Options{Addr: newAddr, DisableIdentity: true})
	defer nc.Close()
	nc.Set(ctx, "x", "1", 0)
	err := Run(ctx, Options{From: oldAddr, To: newAddr})
	if err == nil || !strings.Contains(err.Error(), "holds 1 keys") {
		t.Fatalf("err = %v", err)
	}
	if err := Run(ctx, Options{From: oldAddr}); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("missing --to accepted: %v", err)
	}
}
