package node

import (
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// TestDebugSleepFreezesServer: DEBUG SLEEP stops the whole server as in
// Redis: another client's PING (no keys) and INFO wait for it, and a
// replica applies none of its master's stream meanwhile.
func TestDebugSleepFreezesServer(t *testing.T) {
	s := startServer(t, "enable-debug-command", "yes")
	a, b := s.client(t), s.client(t)
	c := ctx(t)
	b.Ping(c) // connected before the sleep
	errc := make(chan error, 1)
	go func() { errc <- a.Do(c, "DEBUG", "SLEEP", "0.5").Err() }()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := b.Ping(c).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("PING answered after %v during DEBUG SLEEP 0.5", d)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	b.Ping(c)
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("PING after the sleep took %v", d)
	}

	// A frozen replica applies nothing of its master's stream.
	m := startServer(t)
	mc := m.client(t)
	h, p := hostPort(m.addr)
	if err := a.Do(c, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, a)
	go func() { errc <- a.Do(c, "DEBUG", "SLEEP", "0.6").Err() }()
	time.Sleep(100 * time.Millisecond)
	mc.Set(c, "k", "v", 0)
	time.Sleep(200 * time.Millisecond)
	if n := s.srv.DB(0).Size(); n != 0 {
		t.Fatalf("the frozen replica applied the master's write (%d keys)", n)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "write applied after the sleep", func() bool { return b.Get(c, "k").Val() == "v" })
}

// TestKeyDelays: rdb-key-save-delay and key-load-delay slow saving and
// loading by their microseconds per key (Redis's tests use them to make a
// full sync slow); at 0 they cost nothing measurable.
func TestKeyDelays(t *testing.T) {
	s := startServer(t, "enable-debug-command", "yes")
	rc := s.client(t)
	c := ctx(t)
	for i := 0; i < 100; i++ {
		rc.Set(c, "k"+strconv.Itoa(i), i, 0)
	}
	timed := func(fn func()) time.Duration {
		start := time.Now()
		fn()
		return time.Since(start)
	}
	save := func() {
		if err := s.srv.WriteRDB(io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	reload := func() {
		if err := rc.Do(c, "DEBUG", "RELOAD").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if d := timed(save); d > 150*time.Millisecond {
		t.Fatalf("save of 100 keys took %v without delay", d)
	}
	rc.ConfigSet(c, "rdb-key-save-delay", "3000")
	if d := timed(save); d < 300*time.Millisecond {
		t.Fatalf("save with rdb-key-save-delay 3000 took %v, want >= 300ms", d)
	}
	rc.ConfigSet(c, "rdb-key-save-delay", "0")
	rc.ConfigSet(c, "key-load-delay", "3000")
	if d := timed(reload); d < 300*time.Millisecond {
		t.Fatalf("DEBUG RELOAD with key-load-delay 3000 took %v, want >= 300ms", d)
	}
	rc.ConfigSet(c, "key-load-delay", "0")
	if d := timed(reload); d > 250*time.Millisecond {
		t.Fatalf("DEBUG RELOAD without delay took %v", d)
	}
	if n := rc.DBSize(c).Val(); n != 100 {
		t.Fatalf("%d keys after reloads", n)
	}
}
