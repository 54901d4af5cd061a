package main

import (
	"context"
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

	"github.com/shardis/shardis/internal/testutil"
)

// lockedBuffer collects a child's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startChild starts cmd with the given output buffers; it is killed at
// the end of the test. The channel gets cmd.Wait's result.
func startChild(t *testing.T, cmd *exec.Cmd, stdout, stderr *lockedBuffer) chan error {
	t.Helper()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	done := make(chan struct{})
	go func() { err := cmd.Wait(); close(done); exited <- err }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return exited
}

// A final save that fails keeps the node running, as redis-server 7.0
// does (shutdown.tcl "SHUTDOWN will abort if rdb save failed on signal /
// on shutdown command"): SIGTERM logs and keeps serving, SHUTDOWN answers
// an error, SHUTDOWN NOSAVE still exits.
func TestShutdownSaveFailureKeepsServing(t *testing.T) {
	dir := t.TempDir()
	port := testutil.FreePort(t)
	cmd := asMain(exec.Command(shardnodeBinary(t), "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "3600", "1", "--appendonly", "no"))
	var out lockedBuffer
	exited := startChild(t, cmd, &out, &out)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	testutil.WaitFor(t, 10*time.Second, "node up", func() bool {
		if strings.Contains(out.String(), "Ready to accept") {
			return testutil.Ping(addr) == nil
		}
		return false
	})
	rc := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
	defer rc.Close()
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rc.Set(c, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// A directory named dump.rdb makes the rename of the snapshot fail.
	if err := os.Mkdir(filepath.Join(dir, "dump.rdb"), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "save failure logged", func() bool {
		return strings.Contains(out.String(), "Error trying to save the DB, can't exit.")
	})
	if got := rc.Get(c, "k").Val(); got != "v" {
		t.Fatalf("after SIGTERM with a failing save: GET k = %q (output:\n%s)", got, out.String())
	}

	err := rc.Do(c, "SHUTDOWN").Err()
	if err == nil || err.Error() != "ERR Errors trying to SHUTDOWN. Check logs." {
		t.Fatalf("SHUTDOWN with a failing save: %v", err)
	}
	if err := rc.Ping(c).Err(); err != nil {
		t.Fatalf("PING after a failed SHUTDOWN: %v", err)
	}

	_ = rc.Do(c, "SHUTDOWN", "NOSAVE").Err()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SHUTDOWN NOSAVE: %v\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("SHUTDOWN NOSAVE did not stop the node:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "ready to exit, bye bye") {
		t.Fatalf("no bye bye in the log:\n%s", out.String())
	}
}

// With logfile "" (the default) the log goes to standard output, as
// redis-server's does; Redis's test suite waits for " PID: <pid>" there.
func TestLogToStdoutByDefault(t *testing.T) {
	port := testutil.FreePort(t)
	cmd := asMain(exec.Command(shardnodeBinary(t), "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", t.TempDir(), "--save", "", "--appendonly", "no"))
	var stdout, stderr lockedBuffer
	startChild(t, cmd, &stdout, &stderr)
	want := " PID: " + strconv.Itoa(cmd.Process.Pid)
	testutil.WaitFor(t, 10*time.Second, "the start-up line on stdout", func() bool {
		return strings.Contains(stdout.String(), want) && strings.Contains(stdout.String(), "Ready to accept")
	})
	if s := stderr.String(); s != "" {
		t.Fatalf("stderr not empty: %q", s)
	}
}
