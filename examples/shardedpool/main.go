// Command shardedpool writes and reads keys through a sharded pool on a
// local Sentinel deployment and reports master switches as they happen.
//
//	go run ./examples/shardedpool -sentinels 127.0.0.1:26379,127.0.0.1:26380 -masters shard0,shard1,shard2
//
// Kill a master while it runs to watch that shard fail over.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/shardis/shardis/client/shardedpool"
)

func main() {
	sentinels := flag.String("sentinels", "127.0.0.1:26379", "comma-separated Sentinel addresses")
	masters := flag.String("masters", "mymaster", "comma-separated master names, in ring order")
	password := flag.String("password", "", "password of the Redis servers")
	interval := flag.Duration("interval", 100*time.Millisecond, "pause between writes")
	keys := flag.Int("keys", 20, "number of distinct keys written")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	startCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	pool, err := shardedpool.New(startCtx, &shardedpool.Options{
		MasterNames:   strings.Split(*masters, ","),
		SentinelAddrs: strings.Split(*sentinels, ","),
		Password:      *password,
		OnSwitch: func(e shardedpool.SwitchEvent) {
			fmt.Printf("switch: shard %s %s -> %s (epoch %d)\n", e.Shard, e.From, e.To, e.Epoch)
		},
		Logger: logger,
	})
	cancel()
	if err != nil {
		logger.Error("start", "err", err)
		os.Exit(1)
	}
	defer pool.Close()

	for _, st := range pool.Stats() {
		fmt.Printf("shard %s: master %s\n", st.Name, st.Addr)
	}
	var ok, failed int
	report := time.NewTicker(time.Second)
	defer report.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		key := fmt.Sprintf("example:%d", i%*keys)
		if err := pool.Incr(ctx, key).Err(); err != nil {
			failed++
			logger.Warn("write failed", "key", key, "shard", pool.ShardFor(key), "err", err)
		} else {
			ok++
		}
		select {
		case <-report.C:
			fmt.Printf("%d writes ok, %d failed\n", ok, failed)
		case <-time.After(*interval):
		case <-ctx.Done():
		}
	}
	vals, err := pool.MGet(context.Background(), "example:0", "example:1", "example:2").Result()
	fmt.Printf("example:0..2 = %v (err %v)\n", vals, err)
}
