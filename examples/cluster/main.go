// Command cluster connects a client/cluster Client to the Redis Cluster
// "shardnode up --cluster" started, writes and reads keys across every
// slot range, and optionally kills one master to show the client
// following the cluster's failover while the other masters keep serving:
//
//	go run ./cmd/shardnode up --cluster                          # terminal 1
//	go run ./examples/cluster --kill-master 127.0.0.1:7001       # terminal 2
//
// The nodes come from the deployment's directory (--dir, default
// ./shardis-data) or from --addrs. --kill-master takes a master's
// address or a slot number (its master is killed). After the kill the
// program writes to one key per master every 100 ms and reports when a
// write to the killed master's slots succeeds again and who serves them
// now. If no replica is promoted within --timeout it says so and exits 1
// (it never waits longer). It also exits non-zero if a key is lost or a
// master other than the killed one returns an error.
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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
	"github.com/shardis/shardis/internal/deploy"
)

func main() {
	dir := flag.String("dir", "./shardis-data", "data directory of \"shardnode up --cluster\" (to find the nodes)")
	addrs := flag.String("addrs", "", "comma-separated seed node addresses (default: from --dir)")
	keys := flag.Int("keys", 1000, "keys written and read back")
	kill := flag.String("kill-master", "", "SIGKILL this master (host:port, or a slot number: that slot's master) and follow the failover")
	timeout := flag.Duration("timeout", 30*time.Second, "longest wait for a replica to take over the killed master's slots")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *dir, *addrs, *keys, *kill, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// ErrNoPromotion is returned when the killed master's slots found no new
// master within the timeout.
var ErrNoPromotion = errors.New("no replica promoted")

func run(ctx context.Context, out io.Writer, dir, addrs string, nkeys int, kill string, timeout time.Duration) error {
	redis.SetLogger(quiet{}) // dial errors to the dead master are counted, not logged
	var seeds []string
	if l, err := deploy.LoadLayout(dir); err == nil && l.Mode == deploy.ModeCluster {
		seeds = l.NodeAddrs()
	}
	if addrs != "" {
		seeds = strings.Split(addrs, ",")
	}
	if len(seeds) == 0 {
		return fmt.Errorf("no cluster deployment in %s: start one with \"go run ./cmd/shardnode up --cluster\" or pass --addrs", dir)
	}
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	client, err := cluster.New(startCtx, &cluster.Options{
		Addrs:        seeds,
		DialTimeout:  time.Second,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	cancel()
	if err != nil {
		return err
	}
	defer client.Close()
	shards := client.Shards()
	sort.Slice(shards, func(i, j int) bool { return shards[i].Master < shards[j].Master })
	fmt.Fprintf(out, "connected to a cluster of %d masters:\n", len(shards))
	for _, s := range shards {
		fmt.Fprintf(out, "  master %-16s replicas %s\n", s.Master, strings.Join(s.Replicas, " "))
	}

	// Write keys, then read them back.
	t0 := time.Now()
	perMaster := map[string]int{}
	for i := range nkeys {
		k := "example:cluster:" + strconv.Itoa(i)
		if err := client.Set(ctx, k, i, 0).Err(); err != nil {
			return fmt.Errorf("SET %s: %w", k, err)
		}
		perMaster[client.SlotMaster(cluster.Slot(k))]++
	}
	if err := verify(ctx, client, nkeys); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote and read back %d keys in %v:", nkeys, time.Since(t0).Round(time.Millisecond))
	for _, s := range shards {
		fmt.Fprintf(out, " %s=%d", s.Master, perMaster[s.Master])
	}
	fmt.Fprintln(out)
	if kill == "" {
		fmt.Fprintln(out, "run with --kill-master", shards[len(shards)/2].Master, "to watch a failover")
		return nil
	}
	return killAndFollow(ctx, out, client, nkeys, kill, timeout)
}

func verify(ctx context.Context, client *cluster.Client, nkeys int) error {
	for i := range nkeys {
		k := "example:cluster:" + strconv.Itoa(i)
		v, err := client.Get(ctx, k).Result()
		if err != nil || v != strconv.Itoa(i) {
			return fmt.Errorf("GET %s (slot %d, master %s) = %q, %v; want %d", k, cluster.Slot(k), client.SlotMaster(cluster.Slot(k)), v, err, i)
		}
	}
	return nil
}

// probeKeys returns one key per master, in the order of masters.
func probeKeys(client *cluster.Client, masters []string) map[string]string {
	probe := map[string]string{}
	for i := 0; len(probe) < len(masters) && i < 1000000; i++ {
		k := "example:cluster:probe:" + strconv.Itoa(i)
		m := client.SlotMaster(cluster.Slot(k))
		if _, ok := probe[m]; !ok && m != "" {
			probe[m] = k
		}
	}
	return probe
}

func killAndFollow(ctx context.Context, out io.Writer, client *cluster.Client, nkeys int, victim string, timeout time.Duration) error {
	if slot, err := strconv.Atoi(victim); err == nil {
		victim = client.SlotMaster(slot)
	}
	var masters []string
	for _, s := range client.Shards() {
		masters = append(masters, s.Master)
	}
	sort.Strings(masters)
	found := false
	for _, m := range masters {
		found = found || m == victim
	}
	if !found {
		return fmt.Errorf("%q is not a master (masters: %s)", victim, strings.Join(masters, ", "))
	}
	probe := probeKeys(client, masters)
	victimSlot := cluster.Slot(probe[victim])

	direct := redis.NewClient(&redis.Options{Addr: victim, DialTimeout: time.Second, ReadTimeout: 3 * time.Second, MaxRetries: -1})
	defer direct.Close()
	// Make sure the replicas have every key before the master dies.
	if got, err := direct.Do(ctx, "WAIT", 1, 2000).Int(); err != nil || got < 1 {
		fmt.Fprintf(out, "note: %s has no replica in sync (WAIT: %d, %v); its keys may be lost\n", victim, got, err)
	}
	pid, err := processID(ctx, direct)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	killed := time.Now()
	fmt.Fprintf(out, "killed master %s (pid %d); writing to every master's slots until %s's slots are served again\n", victim, pid, victim)

	errs := map[string]int{}
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	report := time.NewTicker(time.Second)
	defer report.Stop()
	for {
		select {
		case <-tick.C:
		case <-report.C:
			fmt.Fprintf(out, "  %4.1fs  failed writes so far: %v\n", time.Since(killed).Seconds(), errs)
			continue
		case <-deadline:
			return fmt.Errorf("%w for %s's slots within %v: the cluster did not fail over (shardnode's automatic failover must be available, and the master needs a replica in sync); restart \"shardnode up\" to bring the node back",
				ErrNoPromotion, victim, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		var victimOK bool
		for _, m := range masters {
			octx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			err := client.Incr(octx, probe[m]).Err()
			cancel()
			switch {
			case err != nil:
				errs[m]++
			case m == victim:
				victimOK = true
			}
		}
		if now := client.SlotMaster(victimSlot); victimOK && now != victim && now != "" {
			fmt.Fprintf(out, "switch: slot %d (and the rest of %s's slots) served by %s, first successful write %.2fs after the kill\n",
				victimSlot, victim, now, time.Since(killed).Seconds())
			break
		}
	}
	if err := verify(ctx, client, nkeys); err != nil {
		return err
	}
	fmt.Fprintf(out, "all %d keys read back after the failover\n", nkeys)
	bad := false
	for _, m := range masters {
		switch {
		case m == victim:
			fmt.Fprintf(out, "  %-16s %d failed writes while it was down (expected)\n", m, errs[m])
		case errs[m] > 0:
			fmt.Fprintf(out, "  %-16s %d failed writes: unexpected\n", m, errs[m])
			bad = true
		default:
			fmt.Fprintf(out, "  %-16s no errors\n", m)
		}
	}
	if bad {
		return errors.New("errors on masters that did not fail")
	}
	fmt.Fprintln(out, "the killed node comes back as a replica when you restart \"shardnode up\"")
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
