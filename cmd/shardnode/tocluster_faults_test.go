package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/shardedpool"
	"github.com/shardis/shardis/internal/tocluster"
)

// faultWriter writes fresh keys through its own pool and records every
// acknowledged one, and whether the pool was on the cluster when the
// write returned.
type faultWriter struct {
	pool *shardedpool.Pool

	mu      sync.Mutex
	acked   []string
	post    map[string]bool // acknowledged after the pool moved
	failed  map[string]bool // refused or unknown outcome
	errs    int
	longest time.Duration
}

func (w *faultWriter) run(ctx context.Context, i int, stop <-chan struct{}) {
	for n := 0; n < 10_000_000; n++ {
		select {
		case <-stop:
			return
		default:
		}
		k := fmt.Sprintf("f%d:%d", i, n)
		start := time.Now()
		err := w.pool.Set(ctx, k, n, 0).Err()
		d := time.Since(start)
		moved := w.pool.ClusterClient() != nil
		w.mu.Lock()
		w.longest = max(w.longest, d)
		if err == nil {
			w.acked = append(w.acked, k)
			if moved {
				w.post[k] = true
			}
		} else {
			w.failed[k] = true
			w.errs++
		}
		w.mu.Unlock()
		if err != nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (w *faultWriter) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...)
}

// logFile is a file a child process writes, read by the test.
type logFile struct{ path string }

func (l logFile) text() string {
	b, _ := os.ReadFile(l.path)
	return string(b)
}

// waitLine waits (bounded) until the file holds a line matching re, and
// returns it.
func (l logFile) waitLine(t *testing.T, re *regexp.Regexp, limit time.Duration, done <-chan struct{}) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(l.text()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if re.MatchString(sc.Text()) {
				return sc.Text()
			}
		}
		select {
		case <-done:
			// one more look after the process ended
			if m := re.FindString(l.text()); m != "" {
				return m
			}
			t.Fatalf("process ended before %q:\n%s", re, tail(l.text(), 3000))
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %q within %v:\n%s", re, limit, tail(l.text(), 3000))
	return ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// pipeliner is what readStates needs of a client.
type pipeliner interface{ Pipeline() redis.Pipeliner }

// readStates reads keys' type, value and TTL with pipelines.
func readStates(ctx context.Context, c pipeliner, keys []string) (map[string]keyState, error) {
	out := make(map[string]keyState, len(keys))
	for lo := 0; lo < len(keys); lo += 1000 {
		batch := keys[lo:min(lo+1000, len(keys))]
		p := c.Pipeline()
		types := make([]*redis.StatusCmd, len(batch))
		ttls := make([]*redis.DurationCmd, len(batch))
		for i, k := range batch {
			types[i], ttls[i] = p.Type(ctx, k), p.PTTL(ctx, k)
		}
		if _, err := p.Exec(ctx); err != nil {
			return nil, err
		}
		p = c.Pipeline()
		vals := make([]redis.Cmder, len(batch))
		for i, k := range batch {
			switch types[i].Val() {
			case "string":
				vals[i] = p.Get(ctx, k)
			case "list":
				vals[i] = p.LRange(ctx, k, 0, -1)
			case "set":
				vals[i] = p.SMembers(ctx, k)
			case "zset":
				vals[i] = p.ZRangeWithScores(ctx, k, 0, -1)
			case "hash":
				vals[i] = p.HGetAll(ctx, k)
			}
		}
		if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
			return nil, err
		}
		now := time.Now()
		for i, k := range batch {
			v := ""
			switch c := vals[i].(type) {
			case *redis.StringCmd:
				v = c.Val()
			case *redis.StringSliceCmd:
				s := c.Val()
				if types[i].Val() == "set" {
					slices.Sort(s)
				}
				v = strings.Join(s, ",")
			case *redis.ZSliceCmd:
				v = fmt.Sprint(c.Val())
			case *redis.MapStringStringCmd:
				v = fmt.Sprint(c.Val())
			}
			st := keyState{val: types[i].Val() + " " + v}
			if d := ttls[i].Val(); d > 0 {
				st.expireAt = now.Add(d)
			}
			out[k] = st
		}
	}
	return out, nil
}

// TestMigrateToClusterFaults is one run of scripts/tocluster-faults.sh
// (issue 25, must-show 4): TOCLUSTER_FAULT names the point. For copy,
// paused, fenced and committed, "shardnode migrate-to-cluster --pause-at
// <point>" is SIGKILLed there while writers run through
// ShardedSentinelPool; then exactly one side must take writes (the
// sources, or the cluster with the commit), every acknowledged write must
// be on it, and a rerun must complete with the cluster equal to the
// (fenced) sources and every acknowledged write on the cluster. For
// failover, the master of the shard paused mid-copy is SIGKILLed instead,
// the tool resumed (SIGUSR1), and the cluster must end equal to the new
// source master. It prints one "FAULT ..." line. Skipped unless
// TOCLUSTER_FAULT is set.
func TestMigrateToClusterFaults(t *testing.T) {
	phase := os.Getenv("TOCLUSTER_FAULT")
	if phase == "" {
		t.Skip("set TOCLUSTER_FAULT (copy, paused, fenced, committed, failover, failover-full): scripts/tocluster-faults.sh")
	}
	redis.SetLogger(quietRedisLog{})
	run := os.Getenv("TOCLUSTER_FAULT_RUN")
	preloadKeys, writers := envInt("TOCLUSTER_KEYS", 5000), envInt("TOCLUSTER_WRITERS", 4)
	bin := shardnodeBinary(t)
	base, sbase := freeRanges(t, 6, 3, 0)
	cbase := freeClusterBase(t, 3)
	// The sources' ports apart from the cluster's and its bus ports.
	for range 100 {
		if (cbase+3 <= base || cbase >= base+9) && (cbase+10003 <= base || cbase+10000 >= base+9) {
			break
		}
		cbase = freeClusterBase(t, 3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := startUp(t, bin, "--dir", filepath.Join(t.TempDir(), "src"), "--shards", "3", "--replicas", "1", "--sentinels", "3",
		"--base-port", strconv.Itoa(base), "--sentinel-port", strconv.Itoa(sbase), "--down-after", "1000ms", "--failover-timeout", "5s")
	dst := startUp(t, bin, "--cluster", "--dir", filepath.Join(t.TempDir(), "dst"), "--masters", "3", "--replicas", "0",
		"--base-port", strconv.Itoa(cbase), "--node-timeout", "2s")
	src.waitHealthy(t, 60*time.Second)
	dst.waitHealthy(t, 60*time.Second)
	sentinels := []string{addr(sbase), addr(sbase + 1), addr(sbase + 2)}
	names := []string{"shard-1", "shard-2", "shard-3"}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	newPool := func(poll time.Duration) *shardedpool.Pool {
		p, err := shardedpool.New(ctx, &shardedpool.Options{MasterNames: names, SentinelAddrs: sentinels,
			ClusterPollInterval: poll, Logger: quiet})
		if err != nil {
			t.Fatalf("pool: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	// loader never follows: it reads the sources.
	loader := newPool(-1)
	preloadPool(t, ctx, loader, preloadKeys)
	failover := phase == "failover" || phase == "failover-full"
	if phase == "failover-full" {
		// Snapshots larger than what the tool and the sockets buffer, so
		// that the source's death cuts the copy itself short.
		rng := rand.New(rand.NewPCG(1, 2))
		raw := make([]byte, 4<<10)
		for lo := 0; lo < 3000; lo += 100 {
			pipe := loader.Pipeline()
			for i := lo; i < lo+100; i++ {
				for j := range raw {
					raw[j] = byte(rng.Uint32())
				}
				pipe.Set(ctx, "big:"+strconv.Itoa(i), hex.EncodeToString(raw), 0) // 8 KiB the RDB cannot compress
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("preload: %v", err)
			}
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr(cbase), addr(cbase + 1), addr(cbase + 2)}})
	defer cc.Close()

	ws := make([]*faultWriter, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ws {
		w := &faultWriter{pool: newPool(200 * time.Millisecond), post: map[string]bool{}, failed: map[string]bool{}}
		ws[i] = w
		wg.Add(1)
		go func() { defer wg.Done(); w.run(ctx, i, stop) }()
	}
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriters()
	totalAcked := func() int {
		n := 0
		for _, w := range ws {
			w.mu.Lock()
			n += len(w.acked)
			w.mu.Unlock()
		}
		return n
	}

	// The tool's and the rerun's output stay in TOCLUSTER_FAULT_LOGDIR
	// when it is set.
	dir := t.TempDir()
	if d := os.Getenv("TOCLUSTER_FAULT_LOGDIR"); d != "" {
		dir = filepath.Join(d, phase+"-"+run)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	migrate := func(id, logName string, extra ...string) (*exec.Cmd, logFile, chan struct{}) {
		lf := logFile{filepath.Join(dir, logName+".stderr")}
		stderr, err := os.Create(lf.path)
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := os.Create(filepath.Join(dir, logName+".stdout"))
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"migrate-to-cluster", "--sentinels", strings.Join(sentinels, ","), "--masters", strings.Join(names, ","),
			"--to", addr(cbase), "--cutover-timeout", "3s", "--json", "--id", id}, extra...)
		cmd := asMain(exec.Command(bin, args...))
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); stdout.Close(); stderr.Close(); close(done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
			if t.Failed() {
				t.Logf("%s stderr:\n%s", logName, tail(lf.text(), 6000))
			}
		})
		return cmd, lf, done
	}
	waitExit := func(cmd *exec.Cmd, done chan struct{}, limit time.Duration, what string) bool {
		select {
		case <-done:
			return cmd.ProcessState.Success()
		case <-time.After(limit):
			t.Errorf("%s still running after %v", what, limit)
			return false
		}
	}

	id := "fault-" + phase + "-" + run
	if run == "" {
		id = "fault-" + phase
	}
	point := phase
	if failover {
		point = tocluster.PauseCopy
	}
	// Let the writers write before the migration starts.
	waitUntil(t, 10*time.Second, "first writes", func() bool { return totalAcked() >= 50 })
	var tool *exec.Cmd
	var toolLog logFile
	pausedLine := ""
	var toolDone chan struct{}
	if phase == "cutover-any" {
		// A kill at a random moment of the cut-over: up to 60 ms after
		// its start (it takes tens of milliseconds; the log's last line
		// says where the kill landed).
		tool, toolLog, toolDone = migrate(id, "tool")
		line := toolLog.waitLine(t, regexp.MustCompile(`tocluster: cut-over starts`), 90*time.Second, toolDone)
		t.Logf("tool: %s", line)
		time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
	} else {
		tool, toolLog, toolDone = migrate(id, "tool", "--pause-at", point)
		line := toolLog.waitLine(t, regexp.MustCompile(`tocluster: paused at `+point), 90*time.Second, toolDone)
		t.Logf("tool: %s", line)
		pausedLine = line
	}

	result := map[string]string{"phase": phase, "run": run}
	if failover {
		m := regexp.MustCompile(`shard=(\S+)`).FindStringSubmatch(pausedLine)
		if m == nil {
			t.Fatalf("no shard in %q", pausedLine)
		}
		shard := m[1]
		old := loader.ShardClient(shard)
		oldAddr := old.Options().Addr
		if n, err := old.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n < 1 {
			t.Logf("WAIT before the kill: %d, %v", n, err)
		}
		info := old.Info(ctx, "server").Val()
		pid := 0
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
				pid, _ = strconv.Atoi(v)
			}
		}
		if pid <= 0 {
			t.Fatal("no process_id")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		if err := tool.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		ok := waitExit(tool, toolDone, 120*time.Second, "migrate-to-cluster")
		result["rerun"] = map[bool]string{true: "ok", false: "fail"}[ok]
		if !ok {
			t.Fatalf("migrate-to-cluster after the source failover failed:\n%s", tail(toolLog.text(), 4000))
		}
		waitUntil(t, 30*time.Second, "the pools to follow the failover", func() bool {
			return loader.ShardClient(shard).Options().Addr != oldAddr
		})
		result["new_master"] = loader.ShardClient(shard).Options().Addr
		result["followed_in"] = time.Since(killed).Round(time.Millisecond).String()
		out, _ := os.ReadFile(filepath.Join(dir, "tool.stdout"))
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var final struct {
			Result tocluster.Result `json:"result"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err == nil {
			for _, s := range final.Result.Shards {
				if s.Name == shard {
					result["resyncs"] = fmt.Sprintf("%dp/%df", s.PartialResyncs, s.FullResyncs)
				}
			}
		}
	} else {
		killed := time.Now()
		if err := tool.Process.Kill(); err != nil { // SIGKILL
			select {
			case <-toolDone: // cutover-any: the tool was done before the kill
				result["kill"] = "after-exit"
			default:
				t.Fatal(err)
			}
		}
		<-toolDone
		msgRe := regexp.MustCompile(`msg="(tocluster: [^"]*)"`)
		last := ""
		for _, l := range strings.Split(toolLog.text(), "\n") {
			if m := msgRe.FindStringSubmatch(l); m != nil && !strings.Contains(l, "guardian") {
				last = m[1] // the tool's, not its guardian's
			}
		}
		if last != "" {
			result["last_log"] = strings.ReplaceAll(strings.TrimPrefix(last, "tocluster: "), " ", "_")
		}
		if phase != tocluster.PauseCopy && phase != "cutover-any" {
			// The guardian settles what the tool left.
			g := toolLog.waitLine(t, regexp.MustCompile(`tocluster: guardian( finished|: cannot)`), 60*time.Second, nil)
			t.Logf("guardian: %s", g)
		}
		// Which side takes writes: the sources (every master takes a
		// write at once) or the cluster (the commit key holds the id and
		// every master refuses writes at once). Until one holds (a
		// guardian may still be at work), poll.
		sideNow := func() (string, bool) {
			commit, err := cc.Get(ctx, tocluster.CommitKey).Result()
			if err != nil && err != redis.Nil {
				t.Fatal(err)
			}
			committed := commit == id
			writable, refused, notices := 0, 0, 0
			for _, name := range names {
				k := "probe:" + name
				for loader.ShardFor(k) != name {
					k += "x"
				}
				c := loader.ShardClient(name)
				if c.Exists(ctx, tocluster.NoticeKey).Val() == 1 {
					notices++
				}
				pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				err := c.Set(pctx, k, "1", 0).Err()
				pcancel()
				switch {
				case err == nil:
					writable++
				case strings.HasPrefix(err.Error(), "NOREPLICAS"):
					refused++
				}
			}
			switch {
			case committed && refused == len(names):
				return "cluster", true
			case !committed && writable == len(names):
				return "sources", notices == 0
			case !committed && writable == 0:
				return "none", false
			}
			return fmt.Sprintf("both(commit=%v,writable=%d,refused=%d)", committed, writable, refused), false
		}
		side, settled := sideNow()
		for deadline := time.Now().Add(20 * time.Second); !settled && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			side, settled = sideNow()
		}
		result["settled_in"] = time.Since(killed).Round(time.Millisecond).String()
		result["one_side"] = side
		if !settled {
			t.Errorf("after a kill at %s: not settled after 20s: %s", phase, side)
		}
		want := map[string]string{tocluster.PauseCopy: "sources", tocluster.PausePaused: "sources",
			tocluster.PauseFenced: "sources", tocluster.PauseCommitted: "cluster"}[phase]
		if want != "" && side != want || side != "sources" && side != "cluster" {
			t.Errorf("after a kill at %s: %s serve writes, want %s", phase, side, want)
		}
		// Every write acknowledged so far is on that side.
		var on pipeliner = cc
		if side == "sources" {
			on = sourceReader{loader}
		}
		lost := 0
		for _, w := range ws {
			keys := w.snapshot()
			got, err := readStates(ctx, on, keys)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if !strings.HasPrefix(got[k].val, "string ") {
					lost++
				}
			}
		}
		result["lost_after_kill"] = strconv.Itoa(lost)
		if lost > 0 {
			t.Errorf("%d acknowledged writes missing on the serving side after the kill", lost)
		}
		// The rerun completes.
		rerun, rlog, rdone := migrate(id+"-rerun", "rerun")
		ok := waitExit(rerun, rdone, 120*time.Second, "the rerun")
		result["rerun"] = map[bool]string{true: "ok", false: "fail"}[ok]
		if !ok {
			t.Errorf("rerun failed:\n%s", tail(rlog.text(), 4000))
		}
	}

	// Every writer moves to the cluster and writes there; then the end
	// state: every acknowledged write on the cluster, the (fenced)
	// sources' keys equal there, no other key there.
	waitUntil(t, 20*time.Second, "every pool on the cluster", func() bool {
		for _, w := range ws {
			if w.pool.ClusterClient() == nil {
				return false
			}
		}
		return true
	})
	after := totalAcked()
	waitUntil(t, 10*time.Second, "writes on the cluster", func() bool { return totalAcked() >= after+50 })
	stopWriters()
	lostFinal, errs := 0, 0
	var longest time.Duration
	post, failed := map[string]bool{}, map[string]bool{}
	var ackedAll []string
	for _, w := range ws {
		ackedAll = append(ackedAll, w.acked...)
		for k := range w.post {
			post[k] = true
		}
		for k := range w.failed {
			failed[k] = true
		}
		errs += w.errs
		longest = max(longest, w.longest)
	}
	got, err := readStates(ctx, cc, ackedAll)
	if err != nil {
		t.Fatal(err)
	}
	// Source keys (the sources are fenced and take no more writes).
	srcKeys := map[string]bool{}
	var srcList []string
	for _, name := range names {
		keys, err := loader.ShardClient(name).Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k != tocluster.NoticeKey {
				srcKeys[k] = true
				srcList = append(srcList, k)
			}
		}
	}
	lostByFailover := 0
	for _, k := range ackedAll {
		if !strings.HasPrefix(got[k].val, "string ") {
			if failover && !post[k] && !srcKeys[k] {
				lostByFailover++ // acknowledged by the killed master, never replicated
				continue
			}
			lostFinal++
		}
	}
	result["acked"] = strconv.Itoa(len(ackedAll))
	result["lost_final"] = strconv.Itoa(lostFinal)
	if failover {
		result["lost_by_failover"] = strconv.Itoa(lostByFailover)
	}
	if lostFinal > 0 {
		t.Errorf("%d acknowledged writes missing on the cluster at the end", lostFinal)
	}
	want, err := readStates(ctx, sourceReader{loader}, srcList)
	if err != nil {
		t.Fatal(err)
	}
	have, err := readStates(ctx, cc, srcList)
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for _, k := range srcList {
		if !have[k].same(want[k]) {
			if differ++; differ <= 5 {
				t.Errorf("key %s: cluster %+v, source %+v", k, have[k], want[k])
			}
		}
	}
	// Keys on the cluster the sources lack: only writes made after the
	// pools moved (or whose outcome the writer does not know).
	extra := 0
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "*").Result()
		for _, k := range keys {
			if !srcKeys[k] && !post[k] && !failed[k] && !strings.HasPrefix(k, "shardis:tocluster") {
				if extra++; extra <= 5 {
					t.Errorf("key %s on the cluster, not on the sources", k)
				}
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	result["differ"] = strconv.Itoa(differ)
	result["extra"] = strconv.Itoa(extra)
	result["writer_errors"] = strconv.Itoa(errs)
	result["longest_write"] = longest.Round(time.Millisecond).String()
	var b strings.Builder
	b.WriteString("FAULT")
	for _, k := range []string{"phase", "run", "kill", "last_log", "one_side", "settled_in", "lost_after_kill", "rerun", "new_master", "followed_in",
		"resyncs", "acked", "lost_final", "lost_by_failover", "differ", "extra", "writer_errors", "longest_write"} {
		if v, ok := result[k]; ok {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	if t.Failed() {
		b.WriteString(" FAILED")
	}
	fmt.Println(b.String())
}

// sourceReader sends each key's commands to its source shard (a pool
// that never follows the cluster), for readStates.
type sourceReader struct{ p *shardedpool.Pool }

func (s sourceReader) Pipeline() redis.Pipeliner { return s.p.Pipeline() }
