package runner_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/sentinel"
	"github.com/shardis/shardis/internal/sentinel/runner"
)

// TestRunnerInProcess runs the runner inside the test binary (so -race
// sees its goroutines) against a real redis-server master and replica:
// discovery, the server commands, pub/sub events and a clean shutdown.
func TestRunnerInProcess(t *testing.T) {
	needE2E(t)
	master := startRedis(t, 0)
	replica := startRedis(t, master.port)
	port := freePort(t)
	startInProcess(t, "port "+strconv.Itoa(port)+"\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 "+
		strconv.Itoa(master.port)+" 1\nsentinel down-after-milliseconds mymaster 500\n")
	ctx := context.Background()

	sc := sentinelClient(t, port)
	waitFor(t, 20*time.Second, "replica discovered", func() bool {
		rs, err := sc.Replicas(ctx, "mymaster").Result()
		return err == nil && len(rs) == 1 && rs[0]["port"] == strconv.Itoa(replica.port) &&
			strings.Contains(rs[0]["flags"], "slave") && !strings.Contains(rs[0]["flags"], "disconnected")
	})
	// RESP3 clients get maps.
	c3 := redis.NewClient(&redis.Options{Addr: addrOf(port), Protocol: 3})
	defer c3.Close()
	m, err := c3.Do(ctx, "SENTINEL", "MASTER", "mymaster").Result()
	if mm, ok := m.(map[interface{}]interface{}); err != nil || !ok || mm["name"] != "mymaster" {
		t.Fatalf("RESP3 SENTINEL MASTER: %#v %v", m, err)
	}
	if role, err := c3.Do(ctx, "ROLE").Slice(); err != nil || role[0] != "sentinel" {
		t.Fatalf("ROLE %v %v", role, err)
	}
	if _, err := sc.Master(ctx, "nosuch").Result(); err == nil || err.Error() != "ERR No such master with that name" {
		t.Fatalf("unknown master: %v", err)
	}
	sub := redis.NewClient(&redis.Options{Addr: addrOf(port)}).PSubscribe(ctx, "*sdown")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	replica.kill()
	select {
	case msg := <-sub.Channel():
		want := "slave 127.0.0.1:" + strconv.Itoa(replica.port) + " 127.0.0.1 " + strconv.Itoa(replica.port) +
			" @ mymaster 127.0.0.1 " + strconv.Itoa(master.port)
		if msg.Channel != "+sdown" || msg.Payload != want {
			t.Fatalf("event %s %q, want +sdown %q", msg.Channel, msg.Payload, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no +sdown for the killed replica")
	}
}

// newInProcess writes conf to a temporary sentinel.conf and builds a runner
// for it, logging nowhere.
func newInProcess(t *testing.T, conf string) *runner.Runner {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := sentinel.ParseFile([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Options{ConfigPath: path, File: f,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startInProcess runs newInProcess's runner until the test ends (Run must
// then return nil within 5 s) and waits until it listens.
func startInProcess(t *testing.T, conf string) *runner.Runner {
	t.Helper()
	r := newInProcess(t, conf)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	waitFor(t, 5*time.Second, "listening", func() bool { return r.Addr() != nil })
	return r
}
