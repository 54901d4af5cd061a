package repl

import (
	"strings"
	"testing"
	"time"
)

func TestHelloRunID(t *testing.T) {
	id := strings.Repeat("ab", 20)
	tests := []struct{ payload, want string }{
		{"10.0.0.1,26379," + id + ",3,mymaster,10.0.0.2,6379,3", id},
		{"10.0.0.1,26379," + id + ",3,mymaster,10.0.0.2,6379", ""}, // 7 fields
		{"10.0.0.1,26379,short,3,mymaster,10.0.0.2,6379,3", ""},
		{"hello", ""},
	}
	for _, tt := range tests {
		if got := HelloRunID([]byte(tt.payload)); got != tt.want {
			t.Errorf("HelloRunID(%q) = %q, want %q", tt.payload, got, tt.want)
		}
	}
}

// TestFenceMajority: the fence is up while fewer than a majority of the
// known Sentinels pinged within SentinelLease; a master no Sentinel knows
// is never fenced.
func TestFenceMajority(t *testing.T) {
	var f Fence
	t0 := time.Unix(1000, 0)
	if f.Fenced(t0) {
		t.Fatal("no Sentinel known: fenced")
	}
	f.Known("a", t0)
	f.Known("b", t0)
	f.Known("c", time.Time{}) // its hello came before any PING
	if f.Fenced(t0) {
		t.Fatal("2 of 3 pinged just now: fenced")
	}
	f.Ping("a", t0.Add(SentinelLease))
	if f.Fenced(t0.Add(SentinelLease)) {
		t.Fatal("2 of 3 within the lease: fenced")
	}
	if !f.Fenced(t0.Add(SentinelLease + time.Millisecond)) {
		t.Fatal("1 of 3 within the lease: not fenced")
	}
	f.Ping("zz", t0.Add(SentinelLease)) // not known: ignored
	f.Ping("c", t0.Add(SentinelLease))
	if f.Fenced(t0.Add(SentinelLease + time.Millisecond)) {
		t.Fatal("a and c pinged within the lease: fenced")
	}
	f.Known("a", t0) // an older PING does not move a later one back
	if f.Fenced(t0.Add(SentinelLease + time.Millisecond)) {
		t.Fatal("Known moved a's last PING back")
	}
	if f.Sentinels() != 3 {
		t.Fatalf("Sentinels = %d, want 3", f.Sentinels())
	}
	f.Reset()
	if f.Fenced(t0.Add(time.Hour)) || f.Sentinels() != 0 {
		t.Fatal("after Reset: still fenced or Sentinels known")
	}
}

// TestMasterFence: a master with min-replicas-ack 1 and an eligible
// replica refuses writes once its Sentinels stopped pinging for the lease,
// replaces the success reply of a write acknowledged while fenced by
// UNACKED, and forgets its Sentinels when it becomes a replica.
func TestMasterFence(t *testing.T) {
	m, _ := newTestMaster(t, 1, false)
	c := newFakeConn(1)
	var hello Hello
	hello.Addr = "a:1"
	if e := m.Sync(c, hello, "?", -1, true, 1); e != "" {
		t.Fatal(e)
	}
	now := time.Now()
	if m.RefuseWrites(now, 0, 1, 0) || m.Fenced(now) {
		t.Fatal("no Sentinel known: writes refused or fenced")
	}
	old := now.Add(-SentinelLease - time.Second)
	m.SentinelHello(strings.Repeat("a", 40), old)
	m.SentinelHello(strings.Repeat("b", 40), old)
	if !m.RefuseWrites(now, 0, 1, 0) || !m.Fenced(now) {
		t.Fatal("no Sentinel pinged within the lease: writes allowed")
	}
	out := []byte("+OK\r\n:1\r\n")
	segs := []AckSeg{{Start: 0, End: 5, Off: 10}}
	got, n := m.unackedIfFenced(out, segs)
	if want := "-" + UnackedFencedReply + "\r\n:1\r\n"; n != 1 || string(got) != want {
		t.Fatalf("fenced: %q (%d replaced), want the write's reply UNACKED and the rest kept", got, n)
	}
	m.SentinelPing(strings.Repeat("a", 40), now)
	if !m.Fenced(now) {
		t.Fatal("1 of 2 pinged: not fenced (a majority of 2 is 2)")
	}
	m.SentinelPing(strings.Repeat("b", 40), now)
	if m.RefuseWrites(now, 0, 1, 0) || m.Fenced(now) {
		t.Fatal("both pinged just now: still fenced")
	}
	if got, n := m.unackedIfFenced(out, segs); n != 0 || string(got) != string(out) {
		t.Fatalf("not fenced: %q, want the output unchanged", got)
	}
	m.mu.Lock()
	m.SetLinkedLocked(true)
	m.SetLinkedLocked(false)
	m.mu.Unlock()
	if m.Fenced(now.Add(time.Hour)) {
		t.Fatal("a change of role kept the Sentinels")
	}
}

// TestMasterClusterFence: the cluster fence's predicate refuses writes
// with its own NOQUORUM, replaces an acknowledged write's reply by its
// UNACKED, is asked only on a master with min-replicas-ack on, and stays
// across a change of role (it is the cluster machine's).
func TestMasterClusterFence(t *testing.T) {
	m, _ := newTestMaster(t, 1, false)
	c := newFakeConn(1)
	var hello Hello
	hello.Addr = "a:1"
	if e := m.Sync(c, hello, "?", -1, true, 1); e != "" {
		t.Fatal(e)
	}
	now := time.Now()
	up := false
	m.SetClusterFence(func(time.Time) bool { return up })
	if m.RefuseWrites(now, 0, 1, 0) || m.Fenced(now) || m.FenceError(now) != "" {
		t.Fatal("cluster fence down: writes refused or fenced")
	}
	up = true
	if !m.RefuseWrites(now, 0, 1, 0) || m.FenceError(now) != ErrClusterFenced {
		t.Fatalf("cluster fence up: refused %v, error %q", m.RefuseWrites(now, 0, 1, 0), m.FenceError(now))
	}
	out := []byte("+OK\r\n:1\r\n")
	segs := []AckSeg{{Start: 0, End: 5, Off: 10}}
	got, n := m.unackedIfFenced(out, segs)
	if want := "-" + UnackedClusterFencedReply + "\r\n:1\r\n"; n != 1 || string(got) != want {
		t.Fatalf("fenced: %q (%d replaced), want the write's reply UNACKED", got, n)
	}
	m.mu.Lock()
	m.SetLinkedLocked(true)
	m.mu.Unlock()
	if m.Fenced(now) {
		t.Fatal("a replica is fenced")
	}
	m.mu.Lock()
	m.SetLinkedLocked(false)
	m.mu.Unlock()
	if !m.Fenced(now) {
		t.Fatal("a change of role dropped the cluster fence")
	}
	m.mu.Lock()
	m.SyncAckNeedLocked(0)
	m.mu.Unlock()
	if m.Fenced(now) {
		t.Fatal("fenced with min-replicas-ack 0")
	}
}
