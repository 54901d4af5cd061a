package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/shardedpool"
	"github.com/shardis/shardis/internal/testutil"
	"github.com/shardis/shardis/internal/tocluster"
)

// keyState is a key's type and value and when it expires, as read.
type keyState struct {
	val      string
	expireAt time.Time
}

func (a keyState) same(b keyState) bool {
	if a.expireAt.IsZero() != b.expireAt.IsZero() {
		return false
	}
	d := a.expireAt.Sub(b.expireAt)
	return a.val == b.val && d <= time.Second && d >= -time.Second
}

func readKey(ctx context.Context, c redis.Cmdable, k string) keyState {
	typ := c.Type(ctx, k).Val()
	var v string
	switch typ {
	case "string":
		v = c.Get(ctx, k).Val()
	case "list":
		v = strings.Join(c.LRange(ctx, k, 0, -1).Val(), ",")
	case "set":
		m := c.SMembers(ctx, k).Val()
		slices.Sort(m)
		v = strings.Join(m, ",")
	case "zset":
		v = fmt.Sprint(c.ZRangeWithScores(ctx, k, 0, -1).Val())
	case "hash":
		v = fmt.Sprint(c.HGetAll(ctx, k).Val())
	}
	st := keyState{val: typ + " " + v}
	if ttl := c.PTTL(ctx, k).Val(); ttl > 0 {
		st.expireAt = time.Now().Add(ttl)
	}
	return st
}

// preloadPool writes n keys of every type through the pool, a sixth with
// TTLs, Jedis-style {tag} keys among them.
func preloadPool(t *testing.T, ctx context.Context, pool *shardedpool.Pool, n int) {
	t.Helper()
	for lo := 0; lo < n; lo += 500 {
		pipe := pool.Pipeline()
		for i := lo; i < min(lo+500, n); i++ {
			k := "pre:" + strconv.Itoa(i)
			switch i % 6 {
			case 0:
				pipe.Set(ctx, k, "v"+strconv.Itoa(i), 0)
			case 1:
				pipe.RPush(ctx, "{user:"+strconv.Itoa(i/12)+"}list", "a", i)
			case 2:
				pipe.SAdd(ctx, k, "x", i)
			case 3:
				pipe.ZAdd(ctx, k, redis.Z{Score: float64(i) / 3, Member: "m"}, redis.Z{Score: -1, Member: "n"})
			case 4:
				pipe.HSet(ctx, "{user:"+strconv.Itoa(i/12)+"}hash", "f"+strconv.Itoa(i), i)
			case 5:
				pipe.Set(ctx, k, strings.Repeat("t", 64), time.Hour)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("preload: %v", err)
		}
	}
}

// TestMigrateToCluster is issue 25's first must-show at small scale:
// "shardnode up" (3 shards x 1 replica, 3 Sentinels), writers through
// ShardedSentinelPool, keys of every type preloaded, migrate-to-cluster
// into a 3-master "shardnode up --cluster": no acknowledged write lost,
// every key equal on the cluster (type, value, TTL within a second), the
// writers' longest pause, and every writer's pool on the cluster.
func TestMigrateToCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	// scripts/bench-tocluster.sh runs the full scale (100,000 keys, 16
	// writers, and redis-cli --cluster import on the same data).
	preloadKeys, writers := envInt("TOCLUSTER_KEYS", 5000), envInt("TOCLUSTER_WRITERS", 4)
	compareImport := os.Getenv("TOCLUSTER_COMPARE_IMPORT") != ""
	bin := shardnodeBinary(t)
	base, sbase := freeRanges(t, 6, 3, 0)
	cbase := freeClusterBase(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+time.Duration(preloadKeys)*time.Millisecond)
	defer cancel()
	src := startUp(t, bin, "--dir", filepath.Join(t.TempDir(), "src"), "--shards", "3", "--replicas", "1", "--sentinels", "3",
		"--base-port", strconv.Itoa(base), "--sentinel-port", strconv.Itoa(sbase), "--down-after", "1000ms", "--failover-timeout", "5s")
	dst := startUp(t, bin, "--cluster", "--dir", filepath.Join(t.TempDir(), "dst"), "--masters", "3", "--replicas", "0",
		"--base-port", strconv.Itoa(cbase), "--node-timeout", "2s")
	src.waitHealthy(t, 60*time.Second)
	dst.waitHealthy(t, 60*time.Second)
	sentinels := []string{addr(sbase), addr(sbase + 1), addr(sbase + 2)}
	names := []string{"shard-1", "shard-2", "shard-3"}

	// A failure tells when each event happened (seconds since t0) beside
	// the tool's log: which phase a lost write belongs to.
	t0 := time.Now()
	var events lockedBuffer
	event := func(f string, a ...any) {
		fmt.Fprintf(&events, "%8.3fs %s\n", time.Since(t0).Seconds(), fmt.Sprintf(f, a...))
	}
	npool := 0
	newPool := func() *shardedpool.Pool {
		npool++
		id := npool
		p, err := shardedpool.New(ctx, &shardedpool.Options{MasterNames: names, SentinelAddrs: sentinels,
			ClusterPollInterval: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OnSwitch: func(e shardedpool.SwitchEvent) {
				event("pool %d: shard %s switch %s -> %s (%s)", id, e.Shard, e.From, e.To, e.Reason)
			},
			OnClusterSwitch: func(e shardedpool.ClusterSwitchEvent) { event("pool %d: to the cluster (%s)", id, e.Reason) }})
		if err != nil {
			t.Fatalf("pool: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	loader := newPool()
	preloadPool(t, ctx, loader, preloadKeys)
	importRate := 0.0
	if compareImport {
		importRate = redisCliImport(t, ctx, bin, loader, names)
	}

	// Writers: each its own pool, a counter and fresh keys; every
	// acknowledged write is recorded, and the longest time one took.
	type writer struct {
		pool    *shardedpool.Pool
		counter int64
		keys    []string
		acked   []acked // per key
		longest time.Duration
		errs    int
	}
	ws := make([]*writer, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ws {
		w := &writer{pool: newPool()}
		ws[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 1_000_000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				var err error
				if n%2 == 0 {
					var v int64
					if v, err = w.pool.Incr(ctx, fmt.Sprintf("{w%d}counter", i)).Result(); err == nil {
						w.counter = v
					}
				} else {
					k := fmt.Sprintf("w%d:%d", i, n)
					onCluster := w.pool.ClusterClient() != nil
					if err = w.pool.Set(ctx, k, n, 0).Err(); err == nil {
						w.keys = append(w.keys, k)
						w.acked = append(w.acked, acked{sent: start.Sub(t0), at: time.Since(t0), onCluster: onCluster})
					} else {
						event("writer %d: SET %s: %v", i, k, err)
					}
				}
				w.longest = max(w.longest, time.Since(start))
				if err != nil {
					w.errs++
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}

	var toolErr lockedBuffer
	toolCmd := asMain(exec.CommandContext(ctx, bin, "migrate-to-cluster", "--sentinels", strings.Join(sentinels, ","),
		"--masters", strings.Join(names, ","), "--to", addr(cbase), "--cutover-timeout", "3s", "--json"))
	toolCmd.Stderr = &toolErr
	event("tool starts")
	out, err := toolCmd.Output()
	event("tool ended")
	defer func() {
		if t.Failed() {
			t.Logf("t0 %s; events:\n%s\nmigrate-to-cluster's log:\n%s", t0.UTC().Format(time.RFC3339Nano), events.String(), toolErr.String())
		}
	}()
	if err != nil {
		t.Fatalf("migrate-to-cluster: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var final struct {
		OK     bool             `json:"ok"`
		Result tocluster.Result `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil || !final.OK {
		t.Fatalf("migrate-to-cluster result: %v\n%s", err, lines[len(lines)-1])
	}
	res := final.Result
	t.Logf("migrate-to-cluster: %d keys at %.0f keys/s (every shard streaming after %v), writes paused %v",
		res.Keys, res.CopyRate, res.CopyTime.Round(time.Millisecond), res.PauseTime)
	if compareImport {
		t.Logf("copy rate: migrate-to-cluster %.0f keys/s, redis-cli --cluster import %.0f keys/s: %.1fx",
			res.CopyRate, importRate, res.CopyRate/importRate)
	}
	// Every writer's pool moves (the fence error makes it look at once).
	waitUntil(t, 10*time.Second, "every pool on the cluster", func() bool {
		for _, w := range ws {
			if w.pool.ClusterClient() == nil {
				return false
			}
		}
		return true
	})
	time.Sleep(200 * time.Millisecond) // writes on the cluster after the switch
	close(stop)
	wg.Wait()

	cc := ws[0].pool.ClusterClient()
	for i, w := range ws {
		t.Logf("writer %d: counter %d, %d keys, %d errors, longest write %v", i, w.counter, len(w.keys), w.errs, w.longest)
		if got, _ := cc.Get(ctx, fmt.Sprintf("{w%d}counter", i)).Int64(); got != w.counter {
			t.Errorf("writer %d: counter on the cluster %d, last acknowledged %d", i, got, w.counter)
		}
		missing := 0
		for j, k := range w.keys {
			if n, err := cc.Exists(ctx, k).Result(); n != 1 {
				if missing++; missing <= 3 {
					a, shard := w.acked[j], w.pool.ShardFor(k)
					sv, serr := loader.ShardClient(shard).Get(ctx, k).Result()
					t.Errorf("acknowledged key %s missing on the cluster (EXISTS: %d %v): sent at %.3fs, acknowledged at %.3fs, pool on the cluster before: %v; source %s holds %q (%v)",
						k, n, err, a.sent.Seconds(), a.at.Seconds(), a.onCluster, shard, sv, serr)
				}
			}
		}
		if missing > 3 {
			t.Errorf("writer %d: %d of %d acknowledged keys missing on the cluster", i, missing, len(w.keys))
		}
		if w.errs > 0 {
			t.Errorf("writer %d saw %d errors", i, w.errs)
		}
		t.Logf("BENCH longest-write-pause writer=%d %v", i, w.longest)
		// The bound: the cut-over timeout (3s) plus the pool's check; the
		// target (1s) is measured, not asserted, on a shared machine.
		if limit := 5 * time.Second; w.longest > limit {
			t.Errorf("writer %d: longest write %v, want <= %v", i, w.longest, limit)
		}
	}
	// Every key of the (fenced) sources is equal on the cluster.
	var total int
	bad := 0
	for _, name := range names {
		sc := loader.ShardClient(name)
		keys, err := sc.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k == tocluster.NoticeKey || strings.HasSuffix(k, "}counter") {
				continue // the counters moved on after the switch; checked above
			}
			total++
			want, got := readKey(ctx, sc, k), readKey(ctx, cc, k)
			if !got.same(want) {
				if bad++; bad <= 5 {
					t.Errorf("key %s: cluster %+v, source %s %+v", k, got, name, want)
				}
			}
		}
	}
	if total < preloadKeys*2/3 {
		t.Errorf("only %d keys on the sources", total)
	}
	t.Logf("%d source keys compared, %d differ", total, bad)
}

// acked is when a writer's acknowledged SET was sent and answered (since
// the test's t0), and whether the pool had moved to the cluster before.
type acked struct {
	sent, at  time.Duration
	onCluster bool
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// redisCliImport copies every source master's keys with "redis-cli
// --cluster import --cluster-copy --cluster-replace" into a fresh 3-master
// cluster and returns the keys per second.
func redisCliImport(t *testing.T, ctx context.Context, bin string, pool *shardedpool.Pool, names []string) float64 {
	t.Helper()
	cli := testutil.LookPath(t, "redis-cli")
	base := freeClusterBase(t, 3)
	u := startUp(t, bin, "--cluster", "--dir", filepath.Join(t.TempDir(), "import"), "--masters", "3", "--replicas", "0",
		"--base-port", strconv.Itoa(base), "--node-timeout", "2s")
	u.waitHealthy(t, 60*time.Second)
	var keys int64
	start := time.Now()
	for _, name := range names {
		sc := pool.ShardClient(name)
		keys += sc.DBSize(ctx).Val()
		out, err := exec.CommandContext(ctx, cli, "--cluster", "import", addr(base), "--cluster-from", sc.Options().Addr,
			"--cluster-copy", "--cluster-replace").CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli --cluster import: %v\n%s", err, out)
		}
	}
	d := time.Since(start)
	rate := float64(keys) / d.Seconds()
	t.Logf("redis-cli --cluster import: %d keys in %v (%.0f keys/s)", keys, d.Round(time.Millisecond), rate)
	u.stop(t)
	return rate
}

// TestMigrateToClusterKilled is the guardian process end to end:
// "migrate-to-cluster --pause-at fenced" stops with every source node
// fenced just before its commit point, and is SIGKILLed there. Its
// guardian (a process of its own, started before the cut-over touched
// the sources) settles the cut-over: the commit key marked aborted, the
// fences lifted, the source unpaused and taking writes, the notice gone.
// scripts/tocluster-faults.sh runs every point under writers.
func TestMigrateToClusterKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	bin := shardnodeBinary(t)
	base, sbase := freeRanges(t, 2, 1, 0)
	cbase := freeClusterBase(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := startUp(t, bin, "--dir", filepath.Join(t.TempDir(), "src"), "--shards", "1", "--replicas", "1", "--sentinels", "1",
		"--base-port", strconv.Itoa(base), "--sentinel-port", strconv.Itoa(sbase))
	dst := startUp(t, bin, "--cluster", "--dir", filepath.Join(t.TempDir(), "dst"), "--masters", "3", "--replicas", "0",
		"--base-port", strconv.Itoa(cbase), "--node-timeout", "2s")
	src.waitHealthy(t, 60*time.Second)
	dst.waitHealthy(t, 60*time.Second)
	m := redis.NewClient(&redis.Options{Addr: addr(base)})
	defer m.Close()
	r := redis.NewClient(&redis.Options{Addr: addr(base + 1)})
	defer r.Close()
	for i := range 300 {
		if err := m.Set(ctx, "k:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr(cbase)}})
	defer cc.Close()

	var stderr lockedBuffer
	tool := asMain(exec.CommandContext(ctx, bin, "migrate-to-cluster", "--sentinels", addr(sbase), "--masters", "shard-1",
		"--to", addr(cbase), "--cutover-timeout", "3s", "--json", "--id", "killed", "--pause-at", tocluster.PauseFenced))
	tool.Stderr = &stderr
	if err := tool.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "the tool paused at fenced", func() bool {
		return strings.Contains(stderr.String(), "tocluster: paused at fenced")
	})
	if v := m.ConfigGet(ctx, "min-replicas-to-write").Val()["min-replicas-to-write"]; v != tocluster.FenceReplicas {
		t.Fatalf("source not fenced at the pause point: %q", v)
	}
	if err := tool.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = tool.Wait()
	waitUntil(t, 30*time.Second, "the guardian to settle the cut-over", func() bool {
		return strings.Contains(stderr.String(), "tocluster: guardian finished: aborted killed")
	})
	if v := cc.Get(ctx, tocluster.CommitKey).Val(); v != tocluster.AbortPrefix+"killed" {
		t.Errorf("commit key %q, want the abort marker", v)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Second) // unpaused: at once
	defer wcancel()
	if err := m.Set(wctx, "after", "1", 0).Err(); err != nil {
		t.Errorf("write on the source after the guardian: %v\n%s", err, stderr.String())
	}
	for i, c := range []*redis.Client{m, r} {
		if v := c.ConfigGet(ctx, "min-replicas-to-write").Val()["min-replicas-to-write"]; v != "0" {
			t.Errorf("node %d still fenced: %q", i, v)
		}
	}
	if m.Exists(ctx, tocluster.NoticeKey).Val() != 0 {
		t.Error("notice left on the source")
	}
}
