package node

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shardis/shardis/internal/testutil"
)

// These tests run a server on a manual clock (startManual) over a real
// connection: time moves only when the test advances it, and Advance
// returns after the cron ticks it fired have run (clock.Ticker.Done), so
// each step's effect is observed at once and nothing is proved by
// sleeping.

// TestClockPexpireLazyAndActive: a key with PEXPIRE 100 exists until the
// clock has advanced 100 ms; then a lookup finds it gone (lazy), and a key
// nobody reads is removed by the cron's active expiry (DBSIZE).
func TestClockPexpireLazyAndActive(t *testing.T) {
	ts, m := startManual(t)
	rc := ts.client(t)
	c := ctx(t)
	// "lazy" expires at 150 ms, between two cron ticks (100, 200): the
	// cron at 100 ms must keep it and only the lookup at 150 sees it
	// expired. "active" expires at 100 ms and is never read.
	for k, ms := range map[string]int{"lazy": 150, "active": 100} {
		rc.Set(c, k, "v", 0)
		if ok, err := rc.PExpire(c, k, time.Duration(ms)*time.Millisecond).Result(); err != nil || !ok {
			t.Fatalf("PEXPIRE %s: %v %v", k, ok, err)
		}
	}
	m.Advance(99 * time.Millisecond)
	if n := rc.DBSize(c).Val(); n != 2 {
		t.Fatalf("DBSIZE at 99 ms: %d, want 2", n)
	}
	if got := rc.PTTL(c, "active").Val(); got != time.Millisecond {
		t.Fatalf("PTTL active at 99 ms: %v, want 1ms", got)
	}
	m.Advance(time.Millisecond) // the 100 ms cron tick runs active expiry
	if n := rc.DBSize(c).Val(); n != 1 {
		t.Fatalf("DBSIZE after the cron at 100 ms: %d, want 1 (active expired, lazy kept)", n)
	}
	if got := infoInt(t, rc, "expired_keys"); got != 1 {
		t.Fatalf("expired_keys %d after the 100 ms cron, want 1", got)
	}
	m.Advance(49 * time.Millisecond)
	if v, err := rc.Get(c, "lazy").Result(); err != nil || v != "v" {
		t.Fatalf("GET lazy at 149 ms: %q %v, want v", v, err)
	}
	if got := rc.PTTL(c, "lazy").Val(); got != time.Millisecond {
		t.Fatalf("PTTL lazy at 149 ms: %v, want 1ms", got)
	}
	m.Advance(time.Millisecond)
	if n := rc.DBSize(c).Val(); n != 1 {
		t.Fatalf("DBSIZE at 150 ms before any access: %d, want 1 (no cron since 100 ms)", n)
	}
	if err := rc.Get(c, "lazy").Err(); err != redis.Nil {
		t.Fatalf("GET lazy at 150 ms: %v, want nil", err)
	}
	if n := rc.DBSize(c).Val(); n != 0 {
		t.Fatalf("DBSIZE after the lazy expiry: %d, want 0", n)
	}
	if got := infoInt(t, rc, "expired_keys"); got != 2 {
		t.Fatalf("expired_keys %d, want 2", got)
	}
}

// TestClockIdleTimeout: with timeout 1 a client is closed by the cron once
// the clock has it idle for more than 1 s, as Redis's clientsCronHandleTimeout
// (idle > timeout), and not before.
func TestClockIdleTimeout(t *testing.T) {
	ts, m := startManual(t, "timeout", "1")
	idle := ts.raw(t)
	idle.expect("PING\r\n", "+PONG")
	m.Advance(time.Second) // idle exactly 1 s: kept
	obs := ts.client(t)
	list, err := obs.ClientList(ctx(t)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(list, "\n"); n != 2 {
		t.Fatalf("CLIENT LIST after 1 s idle lists %d clients, want 2:\n%s", n, list)
	}
	if !strings.Contains(list, "idle=1 ") {
		t.Fatalf("the idle client's idle time is not 1 s:\n%s", list)
	}
	m.Advance(100 * time.Millisecond) // the next cron tick: idle 1.1 s
	_ = idle.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := idle.br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle client was not closed: read %q, %v", n, err)
	}
	if list := obs.ClientList(ctx(t)).Val(); strings.Count(list, "\n") != 1 {
		t.Fatalf("CLIENT LIST after the timeout:\n%s", list)
	}
}

// TestClockBlpopTimeout: BLPOP with timeout 1 replies nil when the clock
// is past 1 s (Redis's timeout < now), not before; until then the client
// shows as blocked.
func TestClockBlpopTimeout(t *testing.T) {
	ts, m := startManual(t)
	obs := ts.client(t)
	bl := ts.raw(t)
	bl.send("BLPOP q 1\r\n")
	testutil.WaitFor(t, 10*time.Second, "BLPOP to block", func() bool { return infoInt(t, obs, "blocked_clients") == 1 })
	m.Advance(time.Second)
	if n := infoInt(t, obs, "blocked_clients"); n != 1 {
		t.Fatalf("blocked_clients %d at 1000 ms, want 1", n)
	}
	list := obs.ClientList(ctx(t)).Val()
	if !strings.Contains(list, "flags=b ") {
		t.Fatalf("CLIENT LIST at 1000 ms shows no blocked BLPOP:\n%s", list)
	}
	m.Advance(time.Millisecond)
	if got := bl.readLine(); got != "*-1" {
		t.Fatalf("BLPOP at 1001 ms: %q, want *-1", got)
	}
	if n := infoInt(t, obs, "blocked_clients"); n != 0 {
		t.Fatalf("blocked_clients %d after the timeout, want 0", n)
	}
	// The connection still serves.
	bl.expect("PING\r\n", "+PONG")
}

// TestClockClientPause: CLIENT PAUSE holds writes until the clock reaches
// its deadline.
func TestClockClientPause(t *testing.T) {
	ts, m := startManual(t)
	rc := ts.client(t)
	if err := rc.Do(ctx(t), "CLIENT", "PAUSE", 500, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	w := ts.raw(t)
	w.send("SET k v\r\n")
	testutil.WaitFor(t, 10*time.Second, "the pause to hold SET", func() bool { return infoInt(t, rc, "blocked_clients") == 1 })
	m.Advance(499 * time.Millisecond)
	if n := infoInt(t, rc, "blocked_clients"); n != 1 {
		t.Fatalf("blocked_clients %d at 499 ms, want 1 (SET held)", n)
	}
	if n := rc.Exists(ctx(t), "k").Val(); n != 0 {
		t.Fatal("SET ran during the pause")
	}
	m.Advance(time.Millisecond)
	if got := w.readLine(); got != "+OK" {
		t.Fatalf("SET after the pause: %q", got)
	}
}

// TestClockTimeAndLRU: TIME, OBJECT IDLETIME and the slowlog read the
// server's clock.
func TestClockTimeAndLRU(t *testing.T) {
	ts, m := startManual(t, "slowlog-log-slower-than", "0")
	rc := ts.client(t)
	c := ctx(t)
	start := m.Now()
	tm, err := rc.Time(c).Result()
	if err != nil || !tm.Equal(start) {
		t.Fatalf("TIME %v %v, want %v", tm, err, start)
	}
	rc.Set(c, "k", "v", 0)
	m.Advance(42 * time.Second)
	if got := rc.ObjectIdleTime(c, "k").Val(); got != 42*time.Second {
		t.Fatalf("OBJECT IDLETIME %v, want 42s", got)
	}
	logs, err := rc.SlowLogGet(c, -1).Result()
	if err != nil || len(logs) == 0 {
		t.Fatalf("SLOWLOG GET: %v %v", logs, err)
	}
	if got := logs[len(logs)-1].Time; !got.Equal(start) {
		t.Fatalf("first slowlog entry at %v, want %v", got, start)
	}
	if got := logs[0].Time; !got.Equal(start.Add(42 * time.Second)) {
		t.Fatalf("last slowlog entry at %v, want %v", got, start.Add(42*time.Second))
	}
}
