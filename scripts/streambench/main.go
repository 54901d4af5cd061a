// Command streambench drives the workloads of scripts/bench-streams.sh
// against a server: "fill" appends entries to a stream and creates group
// g, "consume" has consumers of that group read them with XREADGROUP and
// acknowledge them with XACK until the stream is drained and prints the
// rate, "hllfill" fills HyperLogLogs, "geofill" adds members at
// deterministic pseudo-random positions to a geo set.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	mode := flag.String("mode", "fill", "fill, consume, hllfill or geofill")
	n := flag.Int("n", 200000, "entries to add (fill), elements per key (hllfill), members (geofill)")
	clients := flag.Int("c", 8, "consumers (consume)")
	count := flag.Int("count", 10, "XREADGROUP COUNT (consume)")
	key := flag.String("key", "bench:stream", "stream key, HyperLogLog key prefix (hllfill: <key>1..3), geo key")
	flag.Parse()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *clients + 2, DisableIdentity: true})
	defer rc.Close()
	switch *mode {
	case "fill":
		rc.Del(ctx, *key)
		pipelined(ctx, rc, *n, func(p redis.Pipeliner, i int) {
			p.XAdd(ctx, &redis.XAddArgs{Stream: *key, Values: []any{"f", i}})
		})
		if err := rc.XGroupCreate(ctx, *key, "g", "0").Err(); err != nil {
			log.Fatal(err)
		}
	case "consume":
		consume(ctx, rc, *key, *clients, *count)
	case "hllfill":
		for k := 1; k <= 3; k++ {
			name := fmt.Sprint(*key, k)
			rc.Del(ctx, name)
			pipelined(ctx, rc, *n, func(p redis.Pipeliner, i int) { p.PFAdd(ctx, name, fmt.Sprint("e", k, ":", i)) })
		}
	case "geofill":
		rc.Del(ctx, *key)
		rng := rand.New(rand.NewPCG(1, 2))
		pipelined(ctx, rc, *n, func(p redis.Pipeliner, i int) {
			p.GeoAdd(ctx, *key, &redis.GeoLocation{Name: fmt.Sprint("m", i), Longitude: 10 + 10*rng.Float64(), Latitude: 35 + 10*rng.Float64()})
		})
	default:
		fmt.Fprintln(os.Stderr, "mode: fill, consume, hllfill or geofill")
		os.Exit(2)
	}
}

// pipelined sends n commands in pipelines of 1000.
func pipelined(ctx context.Context, rc *redis.Client, n int, add func(p redis.Pipeliner, i int)) {
	for done := 0; done < n; {
		p := rc.Pipeline()
		for i := 0; i < 1000 && done < n; i++ {
			add(p, done)
			done++
		}
		if _, err := p.Exec(ctx); err != nil {
			log.Fatal(err)
		}
	}
}

// consume drains group g of key with consumers clients, COUNT count.
func consume(ctx context.Context, rc *redis.Client, key string, clients, count int) {
	var acked atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprint("c", i)
			for iter := 0; iter < 10_000_000; iter++ {
				res, err := rc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: name, Streams: []string{key, ">"}, Count: int64(count), Block: -1}).Result()
				if err == redis.Nil || (err == nil && len(res[0].Messages) == 0) {
					return
				}
				if err != nil {
					log.Fatal(err)
				}
				ids := make([]string, len(res[0].Messages))
				for j, m := range res[0].Messages {
					ids[j] = m.ID
				}
				if err := rc.XAck(ctx, key, "g", ids...).Err(); err != nil {
					log.Fatal(err)
				}
				acked.Add(int64(len(ids)))
			}
		}(i)
	}
	wg.Wait()
	el := time.Since(start)
	fmt.Printf("acked=%d seconds=%.2f entries/s=%.0f\n", acked.Load(), el.Seconds(), float64(acked.Load())/el.Seconds())
}
