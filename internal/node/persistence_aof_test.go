package node

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/persist"
	"github.com/shardis/shardis/internal/testutil"
)

// aofDataset is datasetCommands with expiries set by SET PX only, plus a
// transaction and counters, written through real connections.
func aofDataset() [][]string {
	var out [][]string
	for _, c := range datasetCommands() {
		if c[0] == "PEXPIRE" {
			continue
		}
		out = append(out, c)
	}
	out = append(out,
		[]string{"INCR", "counter"}, []string{"INCR", "counter"},
		[]string{"MULTI"}, []string{"SET", "tx:a", "1"}, []string{"SET", "tx:b", "2"}, []string{"EXEC"},
		[]string{"DEL", "str:neg"},
	)
	return out
}

// stopServer shuts a fixture server down (hooks run: AOF fsync).
func stopServer(t *testing.T, ts *testServer) {
	t.Helper()
	if err := ts.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func newServerErr(t *testing.T, dir string, directives ...string) error {
	cfg := NewConfig()
	for _, kv := range [][2]string{{"save", ""}, {"dir", dir}, {"port", "0"}, {"bind", "127.0.0.1"}} {
		_ = cfg.Set(kv[0], kv[1])
	}
	for i := 0; i+1 < len(directives); i += 2 {
		if err := cfg.Set(directives[i], directives[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Listen()
	if err == nil {
		s.closeListeners()
	}
	return err
}

func TestAOFRoundTripAndRedisInterop(t *testing.T) {
	for _, preamble := range []string{"yes", "no"} {
		t.Run("preamble="+preamble, func(t *testing.T) {
			dir := t.TempDir()
			a := startServerIn(t, dir, "appendonly", "yes", "aof-use-rdb-preamble", preamble)
			runCommands(t, a.addr, aofDataset())
			want := canonServer(a.srv)
			if want["0:counter"].val != "2" || want["0:tx:b"].val != "2" || len(want) < 15 {
				t.Fatalf("dataset not applied: %d keys", len(want))
			}
			stopServer(t, a)
			aofDir := filepath.Join(dir, "appendonlydir")
			m, err := os.ReadFile(filepath.Join(aofDir, "appendonly.aof.manifest"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(m, []byte("file appendonly.aof.1.base."+map[string]string{"yes": "rdb", "no": "aof"}[preamble]+" seq 1 type b\n")) ||
				!bytes.Contains(m, []byte("file appendonly.aof.1.incr.aof seq 1 type i\n")) {
				t.Fatalf("manifest:\n%s", m)
			}
			b := startServerIn(t, dir, "appendonly", "yes")
			sameData(t, canonServer(b.srv), want)
			stopServer(t, b)
			if check, err := exec.LookPath("redis-check-aof"); err == nil || testutil.InCI() {
				out, err := exec.Command(check, filepath.Join(aofDir, "appendonly.aof.manifest")).CombinedOutput()
				if err != nil || !bytes.Contains(out, []byte("is valid")) {
					t.Fatalf("redis-check-aof: %v\n%s", err, out)
				}
			}
			r := testutil.StartRedis(t, "--dir", dir, "--appendonly", "yes")
			sameData(t, canonRedis(t, r.Addr), want)
		})
	}
}

func TestAOFWeLoadRedisServerAOF(t *testing.T) {
	r := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	runCommands(t, r.Addr, aofDataset())
	want := canonRedis(t, r.Addr)
	// Rewrite once so the directory has an RDB base and an incr file with
	// later writes, then write more.
	rc := redis.NewClient(&redis.Options{Addr: r.Addr, DisableIdentity: true})
	defer rc.Close()
	c := ctx(t)
	if err := rc.BgRewriteAOF(c).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "redis rewrite", func() bool {
		info := rc.Info(c, "persistence").Val()
		return strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrites:1")
	})
	rc.Set(c, "after", "rewrite", 0)
	want = canonRedis(t, r.Addr)
	r.Kill()
	dir := t.TempDir()
	if err := exec.Command("cp", "-r", filepath.Join(r.Dir, "appendonlydir"), dir).Run(); err != nil {
		t.Fatal(err)
	}
	a := startServerIn(t, dir, "appendonly", "yes")
	sameData(t, canonServer(a.srv), want)
}

func TestAOFRewriteAndConfigSet(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir)
	rc := a.client(t)
	c := ctx(t)
	for i := 0; i < 100; i++ {
		rc.Set(c, "k"+strconv.Itoa(i), i, 0)
	}
	// Switching the AOF on writes a base of the current data.
	if err := rc.ConfigSet(c, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "aof on", func() bool {
		return a.srv.persist.AOF().Enabled() && !a.srv.persist.AOF().Rewriting()
	})
	rc.Set(c, "after-on", "1", 0)
	if got := rc.BgRewriteAOF(c).Val(); got != "Background append only file rewriting started" {
		t.Fatalf("BGREWRITEAOF: %q", got)
	}
	testutil.WaitFor(t, 5*time.Second, "rewrite", func() bool {
		return a.srv.persist.AOF().Rewrites() >= 2 && !a.srv.persist.AOF().Rewriting()
	})
	rc.Set(c, "after-rewrite", "1", 0)
	want := canonServer(a.srv)
	stopServer(t, a)
	entries, _ := os.ReadDir(filepath.Join(dir, "appendonlydir"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "appendonly.aof.2.base.rdb appendonly.aof.2.incr.aof appendonly.aof.manifest" {
		t.Fatalf("files after two rewrites: %v", names)
	}
	b := startServerIn(t, dir, "appendonly", "yes")
	sameData(t, canonServer(b.srv), want)
}

func TestAOFTruncatedAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir, "appendonly", "yes")
	rc := a.client(t)
	c := ctx(t)
	rc.Set(c, "a", "1", 0)
	rc.Set(c, "b", "2", 0)
	stopServer(t, a)
	incr := filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof")
	good, err := os.ReadFile(incr)
	if err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) {
		if err := os.WriteFile(incr, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("truncated-load", func(t *testing.T) {
		write(append(bytes.Clone(good), "*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$5\r\nhal"...))
		b := startServerIn(t, dir, "appendonly", "yes")
		got := canonServer(b.srv)
		if got["0:a"].val != "1" || got["0:b"].val != "2" || len(got) != 2 {
			t.Fatalf("got %v", got)
		}
		stopServer(t, b)
		now, _ := os.ReadFile(incr)
		if !bytes.Equal(now, good) {
			t.Fatalf("file not cut back to the last full command (%d bytes, want %d)", len(now), len(good))
		}
	})
	t.Run("truncated-multi", func(t *testing.T) {
		write(append(bytes.Clone(good), "*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1\r\n3\r\n"...))
		b := startServerIn(t, dir, "appendonly", "yes")
		if got := canonServer(b.srv); len(got) != 2 {
			t.Fatalf("a transaction without EXEC was applied: %v", got)
		}
		stopServer(t, b)
	})
	t.Run("truncated-refused", func(t *testing.T) {
		write(append(bytes.Clone(good), "*3\r\n$3\r\nSET"...))
		err := newServerErr(t, dir, "appendonly", "yes", "aof-load-truncated", "no")
		if err == nil || !strings.Contains(err.Error(), "appendonly.aof.1.incr.aof") || !strings.Contains(err.Error(), "offset "+strconv.Itoa(len(good))) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		bad := append(bytes.Clone(good), "garbage\r\n"...)
		bad = append(bad, good...)
		write(bad)
		err := newServerErr(t, dir, "appendonly", "yes")
		if err == nil || !strings.Contains(err.Error(), "Bad file format") || !strings.Contains(err.Error(), "offset "+strconv.Itoa(len(good))) {
			t.Fatalf("got %v", err)
		}
	})
}

// buildShardnode builds the binary once per test run.
func buildShardnode(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "shardnode")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/shardnode").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type nodeProc struct {
	cmd  *exec.Cmd
	addr string
}

func startNodeProc(t *testing.T, bin, dir string, port int, args ...string) *nodeProc {
	t.Helper()
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--loglevel", "warning"}, args...)
	cmd := exec.Command(bin, all...)
	logf, _ := os.OpenFile(filepath.Join(dir, "node.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &nodeProc{cmd: cmd, addr: "127.0.0.1:" + strconv.Itoa(port)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	testutil.WaitFor(t, 10*time.Second, "shardnode up", func() bool { return testutil.Ping(p.addr) == nil })
	return p
}

// TestAOFCrashKill9 writes continuously, kills the process with SIGKILL
// and checks what survived: with appendfsync always every acknowledged
// write; with everysec at most about a second of them.
func TestAOFCrashKill9(t *testing.T) {
	bin := buildShardnode(t)
	for _, mode := range []string{"always", "everysec"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			port := testutil.FreePort(t)
			p := startNodeProc(t, bin, dir, port, "--appendonly", "yes", "--appendfsync", mode)
			var acked atomic.Int64
			begin := time.Now()
			stop := make(chan struct{})
			done := make(chan struct{})
			const writers = 4
			var perWriter [writers]atomic.Int64
			for w := 0; w < writers; w++ {
				go func(w int) {
					defer func() { done <- struct{}{} }()
					rc := redis.NewClient(&redis.Options{Addr: p.addr, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
					defer rc.Close()
					for i := 1; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						if err := rc.Set(context.Background(), "w"+strconv.Itoa(w)+":"+strconv.Itoa(i), i, 0).Err(); err != nil {
							return
						}
						perWriter[w].Store(int64(i))
						acked.Add(1)
					}
				}(w)
			}
			// Write for at least 700 ms and until 200 writes are
			// acknowledged: with appendfsync always on a loaded machine
			// 700 ms may hold only a few dozen fsyncs. The minute only
			// bounds a hang.
			testutil.WaitFor(t, time.Minute, "200 acknowledged writes", func() bool {
				return acked.Load() >= 200 && time.Since(begin) >= 700*time.Millisecond
			})
			ran := time.Since(begin)
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			_ = p.cmd.Wait()
			close(stop)
			for w := 0; w < writers; w++ {
				<-done
			}
			q := startNodeProc(t, bin, dir, testutil.FreePort(t), "--appendonly", "yes", "--appendfsync", mode)
			rc := redis.NewClient(&redis.Options{Addr: q.addr, DisableIdentity: true})
			defer rc.Close()
			c := ctx(t)
			n := rc.DBSize(c).Val()
			missing := acked.Load() - n
			t.Logf("%s: %d acknowledged in %v, %d present after kill -9", mode, acked.Load(), ran.Round(time.Millisecond), n)
			for w := 0; w < writers; w++ {
				last := perWriter[w].Load()
				if last == 0 {
					continue
				}
				ok := rc.Exists(c, "w"+strconv.Itoa(w)+":"+strconv.Itoa(int(last))).Val() == 1
				if mode == "always" && !ok {
					t.Errorf("writer %d: last acknowledged write %d lost", w, last)
				}
			}
			if mode == "always" && missing > 0 {
				t.Fatalf("%d acknowledged writes lost", missing)
			}
			// everysec: the rate was acked/ran; one second of it at most.
			if mode == "everysec" && float64(missing) > float64(acked.Load())/ran.Seconds()*1.2 {
				t.Fatalf("%d writes lost, more than about a second", missing)
			}
		})
	}
}

// TestAOFLoadBlockingCommandsDoNotBlock replays blocking commands from an
// AOF: Redis runs them as if their timeout had expired (the loading client
// never blocks), so a BLPOP on an empty list with timeout 0 is a no-op and
// loading goes on. Found by FuzzAOFLoad, which hung on "BLPOP q 0".
func TestAOFLoadBlockingCommandsDoNotBlock(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir, "appendonly", "yes")
	a.client(t).Set(ctx(t), "a", "1", 0)
	stopServer(t, a)
	incr := filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof")
	var tail []byte
	for _, c := range [][]string{
		{"RPUSH", "l", "x", "y"},
		{"BLPOP", "q", "0"},
		{"BRPOP", "q", "0"},
		{"BLMOVE", "q", "r", "LEFT", "LEFT", "0"},
		{"BRPOPLPUSH", "q", "r", "0"},
		{"BLMPOP", "0", "1", "q", "LEFT"},
		{"BZPOPMIN", "z", "0"},
		{"BZMPOP", "0", "1", "z", "MIN"},
		{"BLPOP", "l", "0"},
		{"SET", "done", "1"},
	} {
		tail = persist.AppendCommand(tail, toBytes(c)...)
	}
	f, err := os.OpenFile(incr, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(tail); err != nil {
		t.Fatal(err)
	}
	f.Close()

	cfg := NewConfig()
	for _, kv := range [][2]string{{"save", ""}, {"dir", dir}, {"port", "0"}, {"appendonly", "yes"}} {
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.StartPersistence() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("loading the AOF blocked on a blocking command")
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	got := canonServer(s)
	if got["0:a"].val != "1" || got["0:done"].val != "1" || got["0:l"].val != canonList([]string{"y"}) {
		t.Fatalf("dataset after loading: %v", got)
	}
	if _, ok := got["0:r"]; ok {
		t.Fatalf("a blocking move on an empty source created its target: %v", got)
	}
}
