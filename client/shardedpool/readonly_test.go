package shardedpool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// swapRoles makes the replica r the master and the master m its replica,
// as FAILOVER TO does, and returns once m refuses writes.
func swapRoles(t *testing.T, m, r *testutil.Process) {
	t.Helper()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	mc := redis.NewClient(&redis.Options{Addr: m.Addr})
	defer rc.Close()
	defer mc.Close()
	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(r.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the old master refusing writes", func() bool {
		err := mc.Set(ctx, "probe", "x", 0).Err()
		return err != nil && strings.HasPrefix(err.Error(), "READONLY")
	})
}

// TestReadOnlyWaitsForSwitch checks that a write refused with READONLY by
// a shard's old master (a planned switch that the pool has not followed
// yet) waits for the switch and then succeeds, once, on the new master;
// and that with ReadOnlyWait -1 the error is returned as a plain client
// returns it.
func TestReadOnlyWaitsForSwitch(t *testing.T) {
	m := testutil.StartRedis(t, "--repl-diskless-sync-delay", "0")
	r := testutil.StartRedis(t, "--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1", strconv.Itoa(m.Port))
	path := filepath.Join(t.TempDir(), "topology.conf")
	write := func(addr string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte("s0 "+addr+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(m.Addr)
	ctx := context.Background()
	p, err := New(ctx, &Options{TopologyFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Set(ctx, "k0", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()
	testutil.WaitFor(t, 5*time.Second, "the replica holding k0", func() bool { return rc.Get(ctx, "k0").Val() == "before" })
	swapRoles(t, m, r)

	done := make(chan error, 2)
	go func() { done <- p.Set(ctx, "k1", "single", 0).Err() }()
	go func() {
		cmds, err := p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, "k2", "piped", 0)
			pipe.Incr(ctx, "k3")
			return nil
		})
		if err == nil && cmds[1].(*redis.IntCmd).Val() != 1 {
			err = fmt.Errorf("INCR k3 = %d, want 1 (run once)", cmds[1].(*redis.IntCmd).Val())
		}
		done <- err
	}()
	testutil.WaitFor(t, 5*time.Second, "both writes waiting for the switch", func() bool {
		return p.counts.readOnlyWaits.Load() == 2
	})
	select {
	case err := <-done:
		t.Fatalf("a write returned (%v) before the switch", err)
	default:
	}
	write(r.Addr)
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("write after the switch: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a write still waits after the switch")
		}
	}
	for k, want := range map[string]string{"k0": "before", "k1": "single", "k2": "piped", "k3": "1"} {
		if v, err := rc.Get(ctx, k).Result(); err != nil || v != want {
			t.Errorf("new master: GET %s = %q %v, want %q", k, v, err, want)
		}
	}
	if n := p.counts.readOnlyRetries.Load(); n != 2 {
		t.Errorf("%d retries on the new master, want 2", n)
	}

	// Without the wait, READONLY comes back at once.
	write2 := filepath.Join(t.TempDir(), "topology.conf")
	if err := os.WriteFile(write2, []byte("s0 "+m.Addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := New(ctx, &Options{TopologyFile: write2, ReadOnlyWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Set(ctx, "k4", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("SET on the old master with ReadOnlyWait -1: %v, want READONLY", err)
	}
}
