// Package testutil starts real redis-server and redis-sentinel processes
// for end-to-end tests.
//
// Set TESTUTIL_LOGS=1 to print the last lines of every process's log when
// a test fails.
//
// Every process listens on a free 127.0.0.1 port, keeps its files in a
// t.TempDir(), and is killed by t.Cleanup. A test that needs a binary that
// is not installed is skipped on a developer's machine and fails when the
// environment has CI=true (.ci/run sets it), so CI runs every test.
package testutil

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartTimeout bounds how long Start* waits for a process to answer PING.
const StartTimeout = 10 * time.Second

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testutil: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Binary returns the path of the named executable; see [LookPath] for a
// missing one. The environment variable TESTUTIL_<NAME> (name upper
// cased, '-' as '_', e.g. TESTUTIL_REDIS_SERVER=/path/to/shardnode)
// replaces it, so the same end-to-end tests can run against shardis's own
// server and Sentinel, which take redis.conf-style flags.
func Binary(t testing.TB, name string) string {
	t.Helper()
	env := "TESTUTIL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if v := os.Getenv(env); v != "" {
		name = v
	}
	return LookPath(t, name)
}

// LookPath returns the path of the named executable, never replaced (a
// comparison with redis-server needs the real one). When it is not
// installed the test is skipped, or fails if [InCI].
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, fmt.Sprintf("%s not installed (apt-get install redis-server redis-sentinel redis-tools)", name))
	}
	return p
}

// Missing reports that something a test needs is not there: the test is
// skipped, or fails if [InCI], where nothing may be silently left out.
func Missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("testutil: %s; CI=true requires it", why)
		return
	}
	t.Skipf("testutil: %s", why)
}

// InCI reports whether the tests run in CI: the environment variable CI is
// "true" (or another true value of strconv.ParseBool).
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// Process is a running server started by [StartRedis] or [StartSentinel].
type Process struct {
	// Addr is the "127.0.0.1:port" address the process listens on.
	Addr string
	// Port is the TCP port the process listens on.
	Port int
	// Dir is the process's working directory (its config, data and log).
	Dir string

	t       testing.TB
	bin     string
	args    []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts redis-server on a free port with persistence off and
// the extra redis.conf-style arguments given (for example "--replicaof",
// "127.0.0.1 6379"), and waits until it answers PING.
func StartRedis(t testing.TB, args ...string) *Process {
	t.Helper()
	bin := Binary(t, "redis-server")
	port := FreePort(t)
	dir := t.TempDir()
	base := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no",
		"--protected-mode", "no",
	}
	p := &Process{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir,
		t: t, bin: bin, args: append(base, args...), logPath: filepath.Join(dir, "redis.log"),
	}
	p.start()
	return p
}

// StartSentinel writes conf (redis-sentinel configuration lines such as
// "sentinel monitor m 127.0.0.1 6379 2") to a writable sentinel.conf with a
// free port, starts redis-sentinel on it and waits until it answers PING.
func StartSentinel(t testing.TB, conf string) *Process {
	t.Helper()
	bin := Binary(t, "redis-sentinel")
	port := FreePort(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "sentinel.conf")
	full := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nprotected-mode no\n%s\n", port, dir, conf)
	if err := os.WriteFile(path, []byte(full), 0o644); err != nil {
		t.Fatalf("testutil: write sentinel.conf: %v", err)
	}
	p := &Process{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir,
		t: t, bin: bin, args: []string{path}, logPath: filepath.Join(dir, "sentinel.log"),
	}
	p.start()
	return p
}

func (p *Process) start() {
	p.t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatalf("testutil: %v", err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		p.t.Fatalf("testutil: start %s: %v", p.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	p.t.Cleanup(func() {
		p.Kill()
		if p.t.Failed() && os.Getenv("TESTUTIL_LOGS") != "" {
			p.t.Logf("testutil: last lines of %s:\n%s", p.logPath, tail(p.logPath, 30))
		}
	})
	deadline := time.Now().Add(StartTimeout)
	for {
		if err := Ping(p.Addr); err == nil {
			return
		}
		select {
		case <-done:
			p.t.Fatalf("testutil: %s exited at start:\n%s", p.bin, tail(p.logPath, 30))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("testutil: %s did not answer PING on %s within %v", p.bin, p.Addr, StartTimeout)
		}
	}
}

// Kill sends SIGKILL to the process and waits for it to exit. It is a
// no-op if the process is not running.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts the process again, on the same port and directory and
// with the same arguments, after a [Process.Kill]. A Sentinel restarts
// from its config file as it rewrote it.
func (p *Process) Restart() {
	p.t.Helper()
	p.Kill()
	p.start()
}

// Ping sends an inline PING to addr and reports an error unless the reply
// is +PONG.
func Ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("testutil: PING %s: %q", addr, strings.TrimSpace(line))
	}
	return nil
}

// WaitFor polls cond every 10 ms until it returns true, failing the test
// with msg if that does not happen within timeout.
func WaitFor(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("testutil: timed out after %v waiting for %s", timeout, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// RandomBytes returns n pseudo-random bytes of the PCG stream (seed1,
// seed2): the same bytes for the same seeds, and incompressible, so a
// DUMP payload of them holds a raw string.
func RandomBytes(n int, seed1, seed2 uint64) []byte {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
