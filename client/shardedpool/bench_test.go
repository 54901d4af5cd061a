package shardedpool

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/testutil"
)

func BenchmarkRingLookup(b *testing.B) {
	p := &Pool{}
	p.hash = consistent.NewMurmur(make([]consistent.Shard, 3), consistent.MurmurOptions{})
	p.shards = []*shard{{name: "a"}, {name: "b"}, {name: "c"}}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = p.ShardFor(keys[i&1023])
	}
}

// BenchmarkGetSet compares GET and SET through the pool with a plain
// go-redis client on the same redis-server (parallel, 1 shard).
func BenchmarkGetSet(b *testing.B) {
	if testing.Short() {
		b.Skip("starts redis-server")
	}
	r := testutil.StartRedis(b)
	ctx := context.Background()
	plain := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer plain.Close()
	pool, err := New(ctx, &Options{Shards: []StaticShard{{Name: "s", Addr: r.Addr}}, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	for _, c := range []struct {
		name string
		c    redis.Cmdable
	}{{"plain", plain}, {"pool", pool}} {
		b.Run("SET/"+c.name, func(b *testing.B) {
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if err := c.c.Set(ctx, "bench:"+strconv.FormatInt(i&1023, 10), "v", 0).Err(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run("GET/"+c.name, func(b *testing.B) {
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if err := c.c.Get(ctx, "bench:"+strconv.FormatInt(i&1023, 10)).Err(); err != nil && err != redis.Nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkRouteSet is the pool's own CPU cost per single-key command:
// command-table lookup, key extraction and ring lookup (no network).
func BenchmarkRouteSet(b *testing.B) {
	p := &Pool{}
	p.hash = consistent.NewMurmur(make([]consistent.Shard, 3), consistent.MurmurOptions{})
	p.shards = []*shard{{name: "a"}, {name: "b"}, {name: "c"}}
	ctx := context.Background()
	cmd := redis.NewStatusCmd(ctx, "set", "user:1000", "v")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.route(cmd.Name(), cmd.Args()); err != nil {
			b.Fatal(err)
		}
	}
}
