package shardedpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/testutil"
)

func quietLogger() *slog.Logger {
	return slog.New(slog.DiscardHandler)
}

// testLogger logs to stderr when SHARDEDPOOL_DEBUG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SHARDEDPOOL_DEBUG") == "" {
		return quietLogger()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// staticPool starts n real redis-servers and a static pool over them.
func staticPool(t *testing.T, n int) (*Pool, []*testutil.Process) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	var procs []*testutil.Process
	var shards []StaticShard
	for i := range n {
		r := testutil.StartRedis(t)
		procs = append(procs, r)
		shards = append(shards, StaticShard{Name: fmt.Sprintf("shard%d", i), Addr: r.Addr})
	}
	p, err := New(context.Background(), &Options{Shards: shards, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, procs
}

// keysOnDistinctShards returns one key per shard.
func keysOnDistinctShards(t *testing.T, p *Pool) []string {
	t.Helper()
	keys := make([]string, len(p.shards))
	found := 0
	for i := 0; found < len(keys) && i < 10000; i++ {
		k := fmt.Sprintf("k%d", i)
		if s := p.shardOf(k).idx; keys[s] == "" {
			keys[s] = k
			found++
		}
	}
	if found < len(keys) {
		t.Fatal("could not find a key for every shard")
	}
	return keys
}

func TestRoutingMatchesJedisRing(t *testing.T) {
	p, procs := staticPool(t, 3)
	ctx := context.Background()
	ring := consistent.NewMurmur(make([]consistent.Shard, 3), consistent.MurmurOptions{})
	for i := range 200 {
		k := fmt.Sprintf("user:%d", i)
		if err := p.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		want := ring.Get(k)
		if got := p.ShardFor(k); got != fmt.Sprintf("shard%d", want) {
			t.Fatalf("ShardFor(%q) = %s, want shard%d", k, got, want)
		}
		// The value must be on that shard's server and nowhere else.
		for s, r := range procs {
			c := redis.NewClient(&redis.Options{Addr: r.Addr})
			n, err := c.Exists(ctx, k).Result()
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			if (n == 1) != (s == want) {
				t.Fatalf("key %q exists=%d on shard %d, ring says %d", k, n, s, want)
			}
		}
	}
	if v, err := p.Get(ctx, "user:7").Int(); err != nil || v != 7 {
		t.Fatalf("GET user:7 = %v, %v", v, err)
	}
	if err := p.Get(ctx, "missing").Err(); err != redis.Nil {
		t.Fatalf("GET missing: err %v, want redis.Nil unwrapped", err)
	}
}

func TestSplitCommands(t *testing.T) {
	p, _ := staticPool(t, 3)
	ctx := context.Background()
	keys := keysOnDistinctShards(t, p)
	a, b, c := keys[0], keys[1], keys[2]

	if err := p.MSet(ctx, a, "1", b, "2", c, "3").Err(); err != nil {
		t.Fatal(err)
	}
	vals, err := p.MGet(ctx, c, "nokey", a, b).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"3", nil, "1", "2"}
	if fmt.Sprint(vals) != fmt.Sprint(want) {
		t.Fatalf("MGET = %v, want %v", vals, want)
	}
	if n, err := p.Exists(ctx, a, b, c, "nokey", a).Result(); err != nil || n != 4 {
		t.Fatalf("EXISTS = %d, %v; want 4", n, err)
	}
	if n, err := p.Touch(ctx, a, b).Result(); err != nil || n != 2 {
		t.Fatalf("TOUCH = %d, %v; want 2", n, err)
	}
	if n, err := p.Unlink(ctx, a).Result(); err != nil || n != 1 {
		t.Fatalf("UNLINK = %d, %v; want 1", n, err)
	}
	if n, err := p.Del(ctx, a, b, c).Result(); err != nil || n != 2 {
		t.Fatalf("DEL = %d, %v; want 2", n, err)
	}
	// Raw Do goes through the same split.
	if err := p.Do(ctx, "mset", a, "x", b, "y").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := p.Do(ctx, "mget", a, b).Slice(); err != nil || fmt.Sprint(v) != "[x y]" {
		t.Fatalf("Do MGET = %v, %v", v, err)
	}
}

func TestCrossShardError(t *testing.T) {
	p, _ := staticPool(t, 3)
	ctx := context.Background()
	keys := keysOnDistinctShards(t, p)
	err := p.SUnion(ctx, keys[0], keys[1]).Err()
	if !errors.Is(err, ErrCrossShard) {
		t.Fatalf("SUNION across shards: %v, want ErrCrossShard", err)
	}
	for _, name := range []string{"shard0", "shard1"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	// Same shard: works.
	same := []string{keys[0]}
	for i := 0; len(same) < 2; i++ {
		if k := fmt.Sprintf("s%d", i); p.ShardFor(k) == p.ShardFor(keys[0]) {
			same = append(same, k)
		}
	}
	p.SAdd(ctx, same[0], "a")
	p.SAdd(ctx, same[1], "b")
	if v, err := p.SUnion(ctx, same...).Result(); err != nil || len(v) != 2 {
		t.Fatalf("SUNION same shard = %v, %v", v, err)
	}
	if err := p.Rename(ctx, same[0], same[1]).Err(); err != nil {
		t.Fatalf("RENAME same shard: %v", err)
	}
	// Keyless commands cannot be routed.
	if err := p.DBSize(ctx).Err(); err == nil || !strings.Contains(err.Error(), "ForEachShard") {
		t.Fatalf("DBSIZE: %v, want a routing error", err)
	}
	if err := p.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING all shards: %v", err)
	}
}

func TestPipelines(t *testing.T) {
	p, _ := staticPool(t, 3)
	ctx := context.Background()
	keys := keysOnDistinctShards(t, p)
	cmds, err := p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, k := range keys {
			pipe.Set(ctx, k, i, 0)
			pipe.Incr(ctx, k)
		}
		pipe.MGet(ctx, keys...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := cmds[len(cmds)-1].(*redis.SliceCmd).Val(); fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("pipelined MGET = %v", got)
	}
	for i := range keys {
		if v := cmds[2*i+1].(*redis.IntCmd).Val(); v != int64(i+1) {
			t.Fatalf("INCR %d = %d", i, v)
		}
	}

	// A transaction on one shard works; across shards it fails untouched.
	k := keys[0]
	_, err = p.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, k, "tx", 0)
		pipe.Append(ctx, k, "!")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := p.Get(ctx, k).Val(); v != "tx!" {
		t.Fatalf("after tx: %q", v)
	}
	_, err = p.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, keys[0], "no", 0)
		pipe.Set(ctx, keys[1], "no", 0)
		return nil
	})
	if !errors.Is(err, ErrCrossShard) {
		t.Fatalf("cross-shard tx: %v", err)
	}
	if v := p.Get(ctx, k).Val(); v != "tx!" {
		t.Fatalf("cross-shard tx changed %s to %q", k, v)
	}

	// WATCH on one shard.
	err = p.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, keys[1]).Int()
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, keys[1], n*10, 0)
			return nil
		})
		return err
	}, keys[1])
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Get(ctx, keys[1]).Int(); v != 20 {
		t.Fatalf("after WATCH tx: %d", v)
	}
	if err := p.Watch(ctx, func(*redis.Tx) error { return nil }, keys...); !errors.Is(err, ErrCrossShard) {
		t.Fatalf("cross-shard WATCH: %v", err)
	}
}

func TestPubSubOnChannelShard(t *testing.T) {
	p, _ := staticPool(t, 3)
	ctx := context.Background()
	ps, err := p.Subscribe(ctx, "news")
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Publish(ctx, "news", "hello").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH = %d, %v; want 1 receiver", n, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := ps.ReceiveMessage(rctx)
	if err != nil || msg.Payload != "hello" {
		t.Fatalf("message %v, %v", msg, err)
	}
}

func TestForEachShardAndStats(t *testing.T) {
	p, _ := staticPool(t, 3)
	ctx := context.Background()
	seen := make(chan string, 3)
	err := p.ForEachShard(ctx, func(ctx context.Context, name string, c *redis.Client) error {
		seen <- name
		return c.Ping(ctx).Err()
	})
	if err != nil || len(seen) != 3 {
		t.Fatalf("ForEachShard: %v, %d shards", err, len(seen))
	}
	for _, st := range p.Stats() {
		if st.Switches != 0 || !st.LastSwitch.IsZero() || st.Addr == "" {
			t.Fatalf("fresh stats %+v", st)
		}
	}
	p.Close()
	if err := p.Set(ctx, "a", 1, 0).Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
