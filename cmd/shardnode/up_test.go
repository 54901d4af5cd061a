package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/shardedpool"
	"github.com/shardis/shardis/internal/deploy"
	"github.com/shardis/shardis/internal/testutil"
)

// End-to-end tests of "shardnode up" and "shardnode status": the real
// binary, child processes, a Sentinel failover, a restart.

// asMainEnv makes the test binary run main() instead of the tests: "up"
// starts os.Executable() (this binary) for the nodes and Sentinels, and
// the children inherit the variable. No separate build is needed.
const asMainEnv = "SHARDNODE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// shardnodeBinary returns the test binary, which behaves as shardnode
// when asMainEnv is set (startUp and status set it).
func shardnodeBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func asMain(cmd *exec.Cmd) *exec.Cmd {
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	return cmd
}

// freeRanges returns a node base port and a Sentinel base port such that
// nodes and sentinels consecutive ports (and the same ports + offset) are
// free.
func freeRanges(t *testing.T, nodes, sentinels, offset int) (int, int) {
	t.Helper()
	free := func(p int) bool {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
	for range 200 {
		base := 15000 + rand.IntN(15000) // below the ephemeral range (32768+)
		ok := true
		for p := base; p < base+nodes+sentinels && ok; p++ {
			ok = free(p) && (offset == 0 || free(p+offset))
		}
		if ok {
			return base, base + nodes
		}
	}
	t.Fatal("no free port range")
	return 0, 0
}

// upProc is a running "shardnode up".
type upProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

func (u *upProc) output() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.out.String()
}

func startUp(t *testing.T, bin string, args ...string) *upProc {
	t.Helper()
	u := &upProc{cmd: asMain(exec.Command(bin, append([]string{"up"}, args...)...)), done: make(chan struct{})}
	pr, pw := io.Pipe()
	u.cmd.Stdout, u.cmd.Stderr = pw, pw
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			u.mu.Lock()
			u.out.WriteString(sc.Text() + "\n")
			u.mu.Unlock()
		}
	}()
	go func() { u.cmd.Wait(); pw.Close(); close(u.done) }()
	t.Cleanup(func() {
		u.stop(t)
		if t.Failed() {
			t.Logf("up output:\n%s", u.output())
		}
	})
	return u
}

// waitHealthy waits for the summary line and returns the start-up time.
func (u *upProc) waitHealthy(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		out := u.output()
		if i := strings.Index(out, "healthy in "); i >= 0 {
			rest := out[i+len("healthy in "):]
			d, err := time.ParseDuration(rest[:strings.IndexByte(rest, '\n')])
			if err != nil {
				t.Fatalf("bad summary: %v", err)
			}
			return d
		}
		select {
		case <-u.done:
			t.Fatalf("up exited before healthy:\n%s", out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("up not healthy after %v:\n%s", limit, u.output())
	return 0
}

// stop interrupts up (Ctrl-C) and waits for it to stop its children.
func (u *upProc) stop(t *testing.T) {
	select {
	case <-u.done:
		return
	default:
	}
	_ = u.cmd.Process.Signal(os.Interrupt)
	select {
	case <-u.done:
	case <-time.After(20 * time.Second):
		t.Errorf("up did not stop within 20s")
		_ = u.cmd.Process.Kill() // children get SIGTERM (Pdeathsig)
		<-u.done
	}
}

func status(t *testing.T, bin, sentinel string) *deploy.Status {
	t.Helper()
	out, err := asMain(exec.Command(bin, "status", "--sentinel", sentinel, "--json")).Output()
	if err != nil {
		t.Fatalf("status --json: %v", err)
	}
	var st deploy.Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return &st
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func addr(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }

func newPool(t *testing.T, ctx context.Context, sentinels []string) *shardedpool.Pool {
	t.Helper()
	pool, err := shardedpool.New(ctx, &shardedpool.Options{
		MasterNames: []string{"shard-1", "shard-2"}, SentinelAddrs: sentinels,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

func masterOf(pool *shardedpool.Pool, shard string) string {
	for _, s := range pool.Stats() {
		if s.Name == shard {
			return s.Addr
		}
	}
	return ""
}

func checkKeys(t *testing.T, ctx context.Context, pool *shardedpool.Pool, n int) {
	t.Helper()
	for i := range n {
		k := "up:key:" + strconv.Itoa(i)
		v, err := pool.Get(ctx, k).Result()
		if err != nil || v != strconv.Itoa(i) {
			t.Fatalf("GET %s (shard %s) = %q, %v; want %d", k, pool.ShardFor(k), v, err, i)
		}
	}
}

func scrapeHas(t *testing.T, url string, series ...string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range series {
		if !strings.Contains(string(body), "\n"+s) {
			t.Errorf("%s: no line starting with %q", url, s)
		}
	}
}

// TestUpFailoverRestart drives "shardnode up" with 2 shards x 1 replica and
// 3 of our Sentinels: healthy, status, data through the pool, a master
// SIGKILLed and replaced, Ctrl-C, and a restart with the same data and the
// new master.
func TestUpFailoverRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	bin := shardnodeBinary(t)
	const offset = 1000 // metrics ports
	base, sbase := freeRanges(t, 4, 3, offset)
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	start := time.Now()
	u := startUp(t, bin, "--dir", dir, "--shards", "2", "--replicas", "1", "--sentinels", "3",
		"--base-port", strconv.Itoa(base), "--sentinel-port", strconv.Itoa(sbase),
		"--down-after", "1000ms", "--failover-timeout", "5s", "--metrics-port-offset", strconv.Itoa(offset))
	healthy := u.waitHealthy(t, 30*time.Second)
	t.Logf("up: healthy in %v (reported %v)", time.Since(start).Round(time.Millisecond), healthy)
	if healthy > 15*time.Second && !raceEnabled {
		t.Errorf("healthy after %v, want < 15s", healthy)
	}
	sentinels := []string{addr(sbase), addr(sbase + 1), addr(sbase + 2)}
	for _, want := range append([]string{"shardedpool.New", `"shard-1", "shard-2"`}, sentinels...) {
		if !strings.Contains(u.output(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}

	st := status(t, bin, sentinels[0])
	if len(st.Shards) != 2 || len(st.Sentinels) != 3 {
		t.Fatalf("status: %d shards, %d sentinels", len(st.Shards), len(st.Sentinels))
	}
	for i, s := range st.Shards {
		wantMaster, wantReplica := addr(base+2*i), addr(base+2*i+1)
		if s.Name != "shard-"+strconv.Itoa(i+1) || s.Master != wantMaster || s.State != "ok" || s.Role != "master" ||
			s.Agree != 3 || s.SentinelsAsked != 3 || s.Quorum != 2 || s.LastFailover != nil {
			t.Errorf("status shard %d = %+v", i, s)
		}
		if len(s.Replicas) != 1 || s.Replicas[0].Addr != wantReplica || s.Replicas[0].Link != "up" {
			t.Errorf("status %s replicas = %+v", s.Name, s.Replicas)
		}
	}

	// Metrics of the binaries (--metrics-port-offset gives each its own).
	scrapeHas(t, "http://"+addr(base+offset)+"/metrics", `shardis_node_role{role="master"} 1`, "shardis_node_connected_replicas 1")
	scrapeHas(t, "http://"+addr(base+1+offset)+"/metrics", `shardis_node_role{role="slave"} 1`)
	scrapeHas(t, "http://"+addr(sbase+offset)+"/metrics", `shardis_sentinel_known_replicas{master="shard-2"} 1`,
		`shardis_sentinel_known_sentinels{master="shard-1"} 3`)

	// Data through the pool, replicated before the kill.
	pool := newPool(t, ctx, sentinels)
	const nkeys = 200
	for i := range nkeys {
		if err := pool.Set(ctx, "up:key:"+strconv.Itoa(i), strconv.Itoa(i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, shard := range []string{"shard-1", "shard-2"} {
		if n, err := pool.ShardClient(shard).Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
			t.Fatalf("WAIT on %s: %d, %v", shard, n, err)
		}
	}

	// SIGKILL shard-2's master (pid from INFO server), as examples/quickstart does.
	oldMaster := masterOf(pool, "shard-2")
	if oldMaster != addr(base+2) {
		t.Fatalf("pool sees shard-2 at %s", oldMaster)
	}
	info, err := pool.ShardClient("shard-2").Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		t.Fatal("no process_id in INFO server")
	}
	// A "status --watch --json" running across the failover dates it.
	watcher := asMain(exec.Command(bin, "status", "--sentinel", sentinels[0], "--json", "--watch", "--interval", "200ms"))
	wout, err := watcher.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watcher.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watcher.Process.Kill(); watcher.Wait() })
	watched := make(chan *deploy.ShardStatus, 1)
	go func() {
		sc := bufio.NewScanner(wout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var st deploy.Status
			if json.Unmarshal(sc.Bytes(), &st) == nil && len(st.Shards) == 2 && st.Shards[1].LastFailover != nil &&
				!st.Shards[1].LastFailover.Time.IsZero() && st.Shards[1].ConfigEpoch > 0 {
				watched <- &st.Shards[1]
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the watcher subscribes first

	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Shard-1 keeps working while shard-2 fails over.
	k1 := "up:other"
	for pool.ShardFor(k1) != "shard-1" {
		k1 += "x"
	}
	var shard1Errs int
	waitUntil(t, 30*time.Second, "the pool to follow shard-2's failover", func() bool {
		if err := pool.Incr(ctx, k1).Err(); err != nil {
			shard1Errs++
		}
		return masterOf(pool, "shard-2") == addr(base+3)
	})
	t.Logf("shard-2 failed over to %s in %v", addr(base+3), time.Since(killed).Round(time.Millisecond))
	if shard1Errs != 0 {
		t.Errorf("%d errors on shard-1 during shard-2's failover", shard1Errs)
	}
	checkKeys(t, ctx, pool, nkeys)
	if err := pool.Set(ctx, "up:after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "up to report the killed node and the switch", func() bool {
		return strings.Contains(u.output(), "node "+addr(base+2)+" (shard-2 master) exited") &&
			strings.Contains(u.output(), "+switch-master shard-2 "+addr(base+2)+" -> "+addr(base+3))
	})
	var s2 deploy.ShardStatus
	waitUntil(t, 10*time.Second, "status to show the new master agreed by all", func() bool {
		s2 = status(t, bin, "127.0.0.1:1,"+sentinels[1]).Shards[1] // the first does not answer
		return s2.Master == addr(base+3) && s2.Agree == 3 && s2.Role == "master"
	})
	if s2.LastFailover == nil || s2.LastFailover.Epoch < 1 || s2.ConfigEpoch < 1 {
		t.Errorf("status shard-2 last failover = %+v, config epoch %d", s2.LastFailover, s2.ConfigEpoch)
	}
	if len(s2.Replicas) != 1 || s2.Replicas[0].Addr != addr(base+2) || s2.Replicas[0].Link != "down" {
		t.Errorf("status shard-2 replicas = %+v, want the old master down", s2.Replicas)
	}
	select {
	case w := <-watched:
		f := w.LastFailover
		if w.Master != addr(base+3) || f.From != addr(base+2) || f.To != addr(base+3) || f.Time.Before(killed) || f.Epoch < 1 {
			t.Errorf("status --watch --json: master %s, last failover %+v", w.Master, f)
		}
	case <-time.After(10 * time.Second):
		t.Error("status --watch --json never showed a dated failover")
	}
	table, err := asMain(exec.Command(bin, "status", "--sentinel", sentinels[0])).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(table), "\n") {
		if len(line) >= 80 {
			t.Errorf("status line over 79 columns: %q", line)
		}
		if strings.HasPrefix(line, "shard-2 ") && (!strings.Contains(line, addr(base+3)) || !strings.Contains(line, "epoch")) {
			t.Errorf("status table shard-2 line: %q", line)
		}
	}
	pool.Close()

	// Ctrl-C stops every process.
	u.stop(t)
	if !strings.Contains(u.output(), "stopped;") {
		t.Errorf("no stop message:\n%s", u.output())
	}
	for p := base; p < base+4; p++ {
		if c, err := net.DialTimeout("tcp", addr(p), 200*time.Millisecond); err == nil {
			c.Close()
			t.Errorf("node %d still listening after up stopped", p)
		}
	}
	for _, s := range sentinels {
		if c, err := net.DialTimeout("tcp", s, 200*time.Millisecond); err == nil {
			c.Close()
			t.Errorf("sentinel %s still listening after up stopped", s)
		}
	}

	// Up again: same data, shard-2's master is the promoted replica, and
	// the old master comes back as its replica.
	start = time.Now()
	u2 := startUp(t, bin, "--dir", dir)
	healthy = u2.waitHealthy(t, 30*time.Second)
	t.Logf("up (restart): healthy in %v (reported %v)", time.Since(start).Round(time.Millisecond), healthy)
	if !strings.Contains(u2.output(), "restarted") || !strings.Contains(u2.output(), "shard-2   master "+addr(base+3)) {
		t.Errorf("restart summary:\n%s", u2.output())
	}
	pool = newPool(t, ctx, sentinels)
	if m := masterOf(pool, "shard-2"); m != addr(base+3) {
		t.Errorf("after restart shard-2 master = %s", m)
	}
	checkKeys(t, ctx, pool, nkeys)
	if v, err := pool.Get(ctx, "up:after").Result(); err != nil || v != "1" {
		t.Errorf("key written after the failover: %q, %v", v, err)
	}
	st = status(t, bin, sentinels[2])
	if s := st.Shards[1]; s.Master != addr(base+3) || len(s.Replicas) != 1 || s.Replicas[0].Addr != addr(base+2) || s.Replicas[0].Link != "up" {
		t.Errorf("status after restart shard-2 = %+v", s)
	}
	u2.stop(t)
}

// TestUpRedisSentinel runs the deployment under redis-sentinel.
func TestUpRedisSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	testutil.LookPath(t, "redis-sentinel")
	bin := shardnodeBinary(t)
	base, sbase := freeRanges(t, 2, 3, 0)
	u := startUp(t, bin, "--dir", filepath.Join(t.TempDir(), "data"), "--shards", "2", "--replicas", "0",
		"--base-port", strconv.Itoa(base), "--sentinel-port", strconv.Itoa(sbase), "--sentinel", "redis", "--down-after", "1000ms")
	healthy := u.waitHealthy(t, 30*time.Second)
	t.Logf("up --sentinel redis: healthy in %v", healthy)
	st := status(t, bin, addr(sbase))
	if len(st.Shards) != 2 || st.Shards[0].Master != addr(base) || st.Shards[1].Master != addr(base+1) ||
		st.Shards[0].Agree != 3 || len(st.Shards[0].Replicas) != 0 {
		t.Errorf("status = %+v", st)
	}
	c := redis.NewClient(&redis.Options{Addr: addr(sbase)})
	defer c.Close()
	if info, err := c.Info(context.Background(), "server").Result(); err != nil || !strings.Contains(info, "redis_mode:sentinel") {
		t.Errorf("sentinel INFO: %v", err)
	}

	// SIGKILL "up" itself: the kernel signals the children (Pdeathsig).
	_ = u.cmd.Process.Kill()
	<-u.done
	waitUntil(t, 10*time.Second, "the children to die with up", func() bool {
		for _, p := range []int{base, base + 1, sbase, sbase + 1, sbase + 2} {
			if c, err := net.DialTimeout("tcp", addr(p), 100*time.Millisecond); err == nil {
				c.Close()
				return false
			}
		}
		return true
	})
}
