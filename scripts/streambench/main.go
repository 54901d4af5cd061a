// Command streambench drives a stream workload against a server, for
// scripts/bench-streams.sh: "fill" appends entries to a stream, "consume"
// has consumers of one group read them with XREADGROUP and acknowledge
// them with XACK until the stream is drained, and prints the rate.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	mode := flag.String("mode", "fill", "fill or consume")
	n := flag.Int("n", 200000, "entries to add (fill)")
	clients := flag.Int("c", 8, "consumers (consume)")
	count := flag.Int("count", 10, "XREADGROUP COUNT (consume)")
	key := flag.String("key", "bench:stream", "stream key")
	flag.Parse()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *clients + 2, DisableIdentity: true})
	defer rc.Close()
	switch *mode {
	case "fill":
		rc.Del(ctx, *key)
		for done := 0; done < *n; {
			p := rc.Pipeline()
			for i := 0; i < 1000 && done < *n; i++ {
				p.XAdd(ctx, &redis.XAddArgs{Stream: *key, Values: []any{"f", done}})
				done++
			}
			if _, err := p.Exec(ctx); err != nil {
				log.Fatal(err)
			}
		}
		if err := rc.XGroupCreate(ctx, *key, "g", "0").Err(); err != nil {
			log.Fatal(err)
		}
	case "consume":
		var acked atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; i < *clients; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				name := fmt.Sprint("c", i)
				for iter := 0; iter < 10_000_000; iter++ {
					res, err := rc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: name, Streams: []string{*key, ">"}, Count: int64(*count), Block: -1}).Result()
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
					if err := rc.XAck(ctx, *key, "g", ids...).Err(); err != nil {
						log.Fatal(err)
					}
					acked.Add(int64(len(ids)))
				}
			}(i)
		}
		wg.Wait()
		el := time.Since(start)
		fmt.Printf("acked=%d seconds=%.2f entries/s=%.0f\n", acked.Load(), el.Seconds(), float64(acked.Load())/el.Seconds())
	default:
		fmt.Fprintln(os.Stderr, "mode: fill or consume")
		os.Exit(2)
	}
}
