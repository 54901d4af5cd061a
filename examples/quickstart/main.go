// Command quickstart connects a ShardedSentinelPool to the deployment
// "shardnode up" started, writes and reads keys, and optionally kills one
// shard's master to show the pool following the Sentinels' failover while
// the other shards keep serving:
//
//	go run ./cmd/shardnode up                       # terminal 1
//	go run ./examples/quickstart --kill-master shard-2   # terminal 2
//
// The Sentinels and master names come from the deployment's directory
// (--dir, default ./shardis-data) or from --sentinels and --masters.
// It exits non-zero if a key is lost or a shard other than the killed one
// returns an error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/shardedpool"
	"github.com/shardis/shardis/internal/deploy"
)

func main() {
	dir := flag.String("dir", "./shardis-data", "data directory of \"shardnode up\" (to find the Sentinels and masters)")
	sentinels := flag.String("sentinels", "", "comma-separated Sentinel addresses (default: from --dir)")
	masters := flag.String("masters", "", "comma-separated master names in ring order (default: from --dir)")
	keys := flag.Int("keys", 1000, "keys written and read back")
	kill := flag.String("kill-master", "", "SIGKILL this shard's master (e.g. shard-2) and follow the failover")
	timeout := flag.Duration("timeout", 60*time.Second, "longest wait for the failover")
	flag.Parse()
	if err := run(*dir, *sentinels, *masters, *keys, *kill, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(dir, sentinels, masters string, nkeys int, kill string, timeout time.Duration) error {
	redis.SetLogger(quiet{}) // dial errors to the dead master are counted, not logged
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var names, addrs []string
	if l, err := deploy.LoadLayout(dir); err == nil {
		names, addrs = l.MasterNames(), l.SentinelAddrs()
	}
	if sentinels != "" {
		addrs = strings.Split(sentinels, ",")
	}
	if masters != "" {
		names = strings.Split(masters, ",")
	}
	if len(names) == 0 || len(addrs) == 0 {
		return fmt.Errorf("no deployment in %s: start one with \"go run ./cmd/shardnode up\" or pass --sentinels and --masters", dir)
	}

	switched := make(chan shardedpool.SwitchEvent, 16)
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	pool, err := shardedpool.New(startCtx, &shardedpool.Options{
		MasterNames:   names,
		SentinelAddrs: addrs,
		OnSwitch: func(e shardedpool.SwitchEvent) {
			select {
			case switched <- e:
			default:
			}
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	cancel()
	if err != nil {
		return err
	}
	defer pool.Close()
	fmt.Printf("connected to %d Sentinels:\n", len(addrs))
	for _, s := range pool.Stats() {
		fmt.Printf("  %-9s master %s\n", s.Name, s.Addr)
	}

	// Write keys, then read them back.
	t0 := time.Now()
	perShard := map[string]int{}
	for i := range nkeys {
		k := "quickstart:" + strconv.Itoa(i)
		if err := pool.Set(ctx, k, i, 0).Err(); err != nil {
			return fmt.Errorf("SET %s: %w", k, err)
		}
		perShard[pool.ShardFor(k)]++
	}
	if err := verify(ctx, pool, nkeys); err != nil {
		return err
	}
	fmt.Printf("wrote and read back %d keys in %v:", nkeys, time.Since(t0).Round(time.Millisecond))
	for _, n := range names {
		fmt.Printf(" %s=%d", n, perShard[n])
	}
	fmt.Println()
	if kill == "" {
		fmt.Println("run with --kill-master", names[len(names)/2], "to watch a failover")
		return nil
	}
	return killAndFollow(ctx, pool, names, nkeys, kill, switched, timeout)
}

func verify(ctx context.Context, pool *shardedpool.Pool, nkeys int) error {
	for i := range nkeys {
		k := "quickstart:" + strconv.Itoa(i)
		v, err := pool.Get(ctx, k).Result()
		if err != nil || v != strconv.Itoa(i) {
			return fmt.Errorf("GET %s on %s = %q, %v; want %d", k, pool.ShardFor(k), v, err, i)
		}
	}
	return nil
}

func killAndFollow(ctx context.Context, pool *shardedpool.Pool, names []string, nkeys int, victim string,
	switched <-chan shardedpool.SwitchEvent, timeout time.Duration) error {
	victimClient := pool.ShardClient(victim)
	if victimClient == nil {
		return fmt.Errorf("no shard %q (shards: %s)", victim, strings.Join(names, ", "))
	}
	// Make sure the replicas have every key before the master dies.
	for _, n := range names {
		if got, err := pool.ShardClient(n).Do(ctx, "WAIT", 1, 2000).Int(); err != nil || got < 1 {
			fmt.Printf("note: %s has no replica in sync (WAIT: %d, %v); its keys may be lost\n", n, got, err)
		}
	}
	old := victimClient.Options().Addr
	pid, err := processID(ctx, victimClient)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	killed := time.Now()
	fmt.Printf("killed %s's master %s (pid %d); writing to every shard until the pool follows the failover\n", victim, old, pid)

	// One key per shard, written every 100ms.
	probe := map[string]string{}
	for i := 0; len(probe) < len(names) && i < 100000; i++ {
		k := "quickstart:probe:" + strconv.Itoa(i)
		if _, ok := probe[pool.ShardFor(k)]; !ok {
			probe[pool.ShardFor(k)] = k
		}
	}
	errs := map[string]int{}
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	report := time.NewTicker(time.Second)
	defer report.Stop()
	var sw *shardedpool.SwitchEvent
	for sw == nil {
		select {
		case e := <-switched:
			if e.Shard == victim {
				sw = &e
			}
		case <-tick.C:
			for _, n := range names {
				if err := pool.Incr(ctx, probe[n]).Err(); err != nil && !errors.Is(err, redis.Nil) {
					errs[n]++
				}
			}
		case <-report.C:
			fmt.Printf("  %4.1fs  errors so far: %v\n", time.Since(killed).Seconds(), errs)
		case <-deadline:
			return fmt.Errorf("no failover of %s within %v (are the Sentinels running?)", victim, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Printf("failover: %s %s -> %s after %.1fs (epoch %d)\n", victim, sw.From, sw.To, time.Since(killed).Seconds(), sw.Epoch)
	if err := pool.Incr(ctx, probe[victim]).Err(); err != nil {
		return fmt.Errorf("write to %s after the failover: %w", victim, err)
	}
	if err := verify(ctx, pool, nkeys); err != nil {
		return err
	}
	fmt.Printf("all %d keys read back after the failover\n", nkeys)
	bad := false
	for _, n := range names {
		switch {
		case n == victim:
			fmt.Printf("  %-9s %d failed writes while its master was down (expected)\n", n, errs[n])
		case errs[n] > 0:
			fmt.Printf("  %-9s %d failed writes: unexpected\n", n, errs[n])
			bad = true
		default:
			fmt.Printf("  %-9s no errors\n", n)
		}
	}
	if bad {
		return errors.New("errors on shards that did not fail over")
	}
	fmt.Println("the killed node comes back as a replica when you restart \"shardnode up\"")
	return nil
}

// processID reads the server's pid from INFO server.
func processID(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("no process_id in INFO server")
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
