package shardedpool

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/clustertest"
	"github.com/shardis/shardis/internal/testutil"
	"github.com/shardis/shardis/internal/tocluster"
)

// startMigrated starts two static shards and a 3-master cluster, and
// writes a migration's notice on the shards (what migrate-to-cluster does
// before its cut-over); commit, when set, also writes the commit key.
func startMigrated(t *testing.T) (shards []StaticShard, seeds []string, commit func()) {
	t.Helper()
	nodes := clustertest.StartNodes(t, 3)
	clustertest.CreateWithRedisCli(t, nodes, 0)
	seeds = clustertest.Addrs(nodes)
	ctx := context.Background()
	notice := `{"id":"m1","seeds":["` + strings.Join(seeds, `","`) + `"]}`
	for _, name := range []string{"s1", "s2"} {
		p := testutil.StartRedis(t)
		shards = append(shards, StaticShard{Name: name, Addr: p.Addr})
		c := redis.NewClient(&redis.Options{Addr: p.Addr})
		if err := c.Set(ctx, tocluster.NoticeKey, notice, 0).Err(); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
	t.Cleanup(func() { cc.Close() })
	return shards, seeds, func() {
		if err := cc.Set(ctx, tocluster.CommitKey, "m1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func quietPool(t *testing.T, o *Options) *Pool {
	t.Helper()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestClusterFollowPoll: a notice without a commit moves nothing; once
// the commit key is on the cluster the poll moves the pool, and commands,
// split multi-key commands and pipelines then run on the cluster.
func TestClusterFollowPoll(t *testing.T) {
	shards, _, commit := startMigrated(t)
	switched := make(chan ClusterSwitchEvent, 1)
	p := quietPool(t, &Options{Shards: shards, ClusterPollInterval: 20 * time.Millisecond,
		OnClusterSwitch: func(e ClusterSwitchEvent) { switched <- e }})
	ctx := context.Background()
	// Not committed: the pool keeps the shards (observed through the
	// check counter, not a sleep).
	testutil.WaitFor(t, 5*time.Second, "three checks", func() bool { return p.follow.checks.Load() >= 3 })
	if p.ClusterClient() != nil {
		t.Fatal("moved to the cluster without a commit")
	}
	if err := p.Set(ctx, "k", "on-shard", 0).Err(); err != nil {
		t.Fatal(err)
	}
	commit()
	select {
	case e := <-switched:
		if e.ID != "m1" || e.Reason != "poll" {
			t.Errorf("switch event %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no switch after the commit")
	}
	if err := p.MSet(ctx, "a", "1", "b", "2", "c", "3").Err(); err != nil {
		t.Fatalf("MSET across slots: %v", err)
	}
	if v := p.MGet(ctx, "a", "b", "c").Val(); len(v) != 3 || v[2] != "3" {
		t.Errorf("MGET = %v", v)
	}
	if v, err := p.Get(ctx, "k").Result(); err != redis.Nil {
		t.Errorf("GET k on the cluster = %q, %v; want nil (the key was only on a shard)", v, err)
	}
	cmds, err := p.Pipelined(ctx, func(pp redis.Pipeliner) error {
		pp.Incr(ctx, "n")
		pp.Incr(ctx, "n")
		return nil
	})
	if err != nil || cmds[1].(*redis.IntCmd).Val() != 2 {
		t.Errorf("pipeline on the cluster: %v %v", cmds, err)
	}
	if v := p.ClusterClient().Get(ctx, "a").Val(); v != "1" {
		t.Errorf("cluster GET a = %q", v)
	}
	// Client(key) now names the cluster master of the key's slot: a
	// plain command on it is served, not redirected.
	for _, key := range []string{"a", "b", "c"} {
		c := p.Client(key)
		if v, err := c.Get(ctx, key).Result(); err != nil || v == "" {
			t.Errorf("Client(%q) = %s: GET = %q, %v; want the value from the slot's master", key, c.Options().Addr, v, err)
		}
	}
}

// TestClusterFollowFenced: with polling off in effect (an hour), a write
// refused by a fenced source (NOREPLICAS) makes the pool look at once,
// move, and run the write on the cluster: the caller sees no error.
func TestClusterFollowFenced(t *testing.T) {
	shards, seeds, commit := startMigrated(t)
	commit()
	p := quietPool(t, &Options{Shards: shards, ClusterPollInterval: time.Hour})
	ctx := context.Background()
	for _, s := range shards {
		c := redis.NewClient(&redis.Options{Addr: s.Addr})
		if err := c.ConfigSet(ctx, "min-replicas-to-write", tocluster.FenceReplicas).Err(); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if p.ClusterClient() != nil {
		t.Fatal("moved before any write was refused")
	}
	if err := p.Set(ctx, "x", "1", 0).Err(); err != nil {
		t.Fatalf("SET after the fence: %v", err)
	}
	if p.ClusterClient() == nil {
		t.Fatal("the fence error did not move the pool")
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
	defer cc.Close()
	if v := cc.Get(ctx, "x").Val(); v != "1" {
		t.Errorf("x on the cluster = %q, want 1", v)
	}
}
