package repl

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// fakeConn is a replica's connection that records what it was sent.
type fakeConn struct {
	id       int64
	mu       sync.Mutex
	stream   []byte // Push
	raw      []byte // WriteRaw
	attached bool
	closed   bool
	done     chan struct{}
}

func newFakeConn(id int64) *fakeConn { return &fakeConn{id: id, done: make(chan struct{})} }

func (c *fakeConn) ID() int64       { return c.id }
func (c *fakeConn) Push(b []byte)   { c.mu.Lock(); c.stream = append(c.stream, b...); c.mu.Unlock() }
func (c *fakeConn) WriteStreamNow() {}
func (c *fakeConn) Flush()          {}
func (c *fakeConn) WriteRaw(b []byte) error {
	c.mu.Lock()
	c.raw = append(c.raw, b...)
	c.mu.Unlock()
	return nil
}
func (c *fakeConn) Attach()               { c.attached = true }
func (c *fakeConn) Close()                { c.mu.Lock(); c.closed = true; c.mu.Unlock() }
func (c *fakeConn) Done() <-chan struct{} { return c.done }

func (c *fakeConn) got() (stream, raw string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.stream), string(c.raw)
}

// fakeHost is a server whose snapshot is a fixed payload.
type fakeHost struct {
	st      MasterSettings
	payload string
	at      func() // run inside the snapshot, as a write racing it would
}

func (h *fakeHost) MasterSettings() MasterSettings { return h.st }
func (h *fakeHost) LinkDown() bool                 { return false }
func (h *fakeHost) ReplicaListed()                 {}
func (h *fakeHost) Frozen() bool                   { return false }
func (h *fakeHost) Snapshot(at func()) func(io.Writer) error {
	at()
	return func(w io.Writer) error { _, err := io.WriteString(w, h.payload); return err }
}

func newTestMaster(t *testing.T, ackNeed int, guard bool) (*Master, *fakeHost) {
	t.Helper()
	h := &fakeHost{st: MasterSettings{BacklogSize: 1 << 20, CanSnapshot: true}, payload: "RDB"}
	return NewMaster(new(sync.Mutex), h, slog.New(slog.NewTextHandler(io.Discard, nil)), ackNeed, guard), h
}

func cmd(args ...string) string { return string(resp.AppendCommandStrings(nil, args...)) }

// TestMasterSyncAndStream serves a full sync, then the stream, then a
// partial resync of what a cut replica missed.
func TestMasterSyncAndStream(t *testing.T) {
	m, _ := newTestMaster(t, 0, false)
	m.Propagate(0, [][][]byte{{[]byte("SET"), []byte("a"), []byte("1")}})
	if m.Offset() != 0 {
		t.Fatalf("no backlog yet: offset %d, want 0 (nothing streamed)", m.Offset())
	}
	c := newFakeConn(1)
	hello := Hello{Addr: "10.0.0.2:5000", Port: 6380, CapaPSync2: true}
	if e := m.Sync(c, hello, "?", -1, true, 0); e != "" {
		t.Fatal(e)
	}
	replid, _, _ := m.History()
	if _, raw := c.got(); raw != "+FULLRESYNC "+replid+" 0\r\n$3\r\nRDB" || !c.attached {
		t.Fatalf("full sync sent %q (attached %v)", raw, c.attached)
	}
	m.Propagate(0, [][][]byte{{[]byte("SET"), []byte("b"), []byte("2")}})
	want := cmd("SELECT", "0") + cmd("SET", "b", "2")
	if stream, _ := c.got(); stream != want {
		t.Fatalf("stream %q, want %q", stream, want)
	}
	if m.Offset() != int64(len(want)) {
		t.Fatalf("offset %d, want %d", m.Offset(), len(want))
	}
	m.mu.Lock()
	online := m.OnlineLocked()
	m.mu.Unlock()
	if len(online) != 1 || online[0].IP() != "10.0.0.2" || online[0].Port() != 6380 {
		t.Fatalf("online replicas %+v", online)
	}

	// The replica is cut after the SELECT: it continues from there.
	m.RemoveReplica(1)
	m.Propagate(0, [][][]byte{{[]byte("DEL"), []byte("a")}})
	c2 := newFakeConn(2)
	from := int64(len(cmd("SELECT", "0"))) + 1
	if e := m.Sync(c2, hello, replid, from, true, 0); e != "" {
		t.Fatal(e)
	}
	wantRaw := "+CONTINUE " + replid + "\r\n" + cmd("SET", "b", "2") + cmd("DEL", "a")
	if _, raw := c2.got(); raw != wantRaw {
		t.Fatalf("partial resync sent %q, want %q", raw, wantRaw)
	}
	if full, ok, bad := m.SyncCounters(); full != 1 || ok != 1 || bad != 0 {
		t.Fatalf("sync counters %d %d %d", full, ok, bad)
	}

	// An unknown history gets a full resync.
	c3 := newFakeConn(3)
	if e := m.Sync(c3, hello, strings.Repeat("f", 40), 5, true, 0); e != "" {
		t.Fatal(e)
	}
	if _, raw := c3.got(); !strings.HasPrefix(raw, "+FULLRESYNC ") {
		t.Fatalf("unknown history: %q", raw)
	}
	if _, _, bad := m.SyncCounters(); bad != 1 {
		t.Fatalf("sync_partial_err %d, want 1", bad)
	}
}

// TestMasterRestartGuard: with min-replicas-ack, a restarted master refuses
// a replica whose history is ahead of its own, and then refuses writes,
// until the guard is lifted.
func TestMasterRestartGuard(t *testing.T) {
	m, _ := newTestMaster(t, 1, true)
	m.mu.Lock()
	m.CreateBacklogLocked()
	m.mu.Unlock()
	replid, _, _ := m.History()
	c := newFakeConn(1)
	e := m.Sync(c, Hello{Addr: "a:1"}, replid, 500, true, 1)
	if !strings.HasPrefix(e, "NOMASTERLINK restarted master with min-replicas-ack") || c.attached {
		t.Fatalf("ahead replica: %q (attached %v)", e, c.attached)
	}
	if !m.RefuseWrites(time.Now(), 0, 1, 0) {
		t.Fatal("writes allowed after the guard refused a replica")
	}
	// A replica with no history is served as always.
	if e := m.Sync(newFakeConn(2), Hello{Addr: "b:1"}, "?", -1, true, 1); e != "" {
		t.Fatal(e)
	}
	// So is one whose own history has no byte (redis-server after
	// REPLICAOF or CLUSTER REPLICATE on a master that replicated nothing:
	// PSYNC <its replid> 1).
	c4 := newFakeConn(4)
	if e := m.Sync(c4, Hello{Addr: "d:1"}, strings.Repeat("e", 40), 1, true, 1); e != "" {
		t.Fatalf("replica at offset 0: %q", e)
	}
	if _, raw := c4.got(); !strings.HasPrefix(raw, "+FULLRESYNC ") {
		t.Fatalf("replica at offset 0: %q, want a full resync", raw)
	}
	m.LiftRestartGuard()
	if e := m.Sync(newFakeConn(3), Hello{Addr: "c:1"}, replid, 500, true, 1); e != "" {
		t.Fatalf("guard lifted: %q", e)
	}
}

// TestMasterAckRefuse: min-replicas-ack refuses writes while fewer eligible
// replicas are online; a replica announcing priority 0 does not count.
func TestMasterAckRefuse(t *testing.T) {
	m, _ := newTestMaster(t, 1, false)
	now := time.Now()
	if !m.RefuseWrites(now, 0, 1, 0) {
		t.Fatal("no replica: writes allowed")
	}
	c := newFakeConn(1)
	var hello Hello
	if e, _ := m.ReplConf(c, &hello, "replica-priority", []byte("0")); e != "" {
		t.Fatal(e)
	}
	hello.Addr = "a:1"
	if e := m.Sync(c, hello, "?", -1, true, 1); e != "" {
		t.Fatal(e)
	}
	if !m.RefuseWrites(now, 0, 1, 0) {
		t.Fatal("only a priority-0 replica: writes allowed")
	}
	if e, noReply := m.ReplConf(c, &hello, "REPLICA-PRIORITY", []byte("100")); e != "" || !noReply {
		t.Fatalf("priority on a live link: %q, no reply %v", e, noReply)
	}
	if m.RefuseWrites(now, 0, 1, 0) {
		t.Fatal("an eligible replica online: writes refused")
	}
}

func TestReplConf(t *testing.T) {
	m, _ := newTestMaster(t, 0, false)
	c := newFakeConn(1)
	var h Hello
	for _, tc := range []struct {
		opt, val string
		err      string
		noReply  bool
	}{
		{"listening-port", "6380", "", false},
		{"listening-port", "x", ErrNotInt, false},
		{"ip-address", "10.1.1.1", "", false},
		{"CAPA", "EOF", "", false},
		{"capa", "psync2", "", false},
		{"capa", "other", "", false},
		{"rdb-only", "1", "", false},
		{"ack", "12", "", true},
		{"getack", "*", "", true},
		{"replica-priority", "x", ErrNotInt, false},
		{"Bogus", "1", "ERR Unrecognized REPLCONF option: Bogus", false},
	} {
		e, noReply := m.ReplConf(c, &h, tc.opt, []byte(tc.val))
		if e != tc.err || noReply != tc.noReply {
			t.Errorf("%s %s: %q %v, want %q %v", tc.opt, tc.val, e, noReply, tc.err, tc.noReply)
		}
	}
	if h != (Hello{Port: 6380, IP: "10.1.1.1", CapaEOF: true, CapaPSync2: true}) {
		t.Fatalf("hello %+v", h)
	}
	if h.Name() != "10.1.1.1:6380" || (Hello{Addr: "1.2.3.4:5"}).Name() != "1.2.3.4:5" {
		t.Fatalf("names %q", h.Name())
	}
}

func TestReplaceUnacked(t *testing.T) {
	out := []byte("+OK\r\n:1\r\n+OK\r\n")
	segs := []AckSeg{{0, 5, 10}, {5, 9, 20}, {9, 14, 30}}
	got, n := ReplaceUnacked(out, segs, 10, []int{0, 1, 0}, 2)
	want := "+OK\r\n-" + UnackedReply(1, 2) + "\r\n-" + UnackedReply(0, 2) + "\r\n"
	if string(got) != want || n != 2 {
		t.Fatalf("got %q (%d), want %q", got, n, want)
	}
	if got, n := ReplaceUnacked(out, segs, 30, []int{0, 0, 0}, 2); !bytes.Equal(got, out) || n != 0 {
		t.Fatalf("all acknowledged: %q %d", got, n)
	}
}

func TestRDBAuxAndRestore(t *testing.T) {
	m, _ := newTestMaster(t, 0, false)
	m.mu.Lock()
	defer m.mu.Unlock()
	if aux := m.RDBAuxLocked(3); aux != nil {
		t.Fatalf("no history: aux %v", aux)
	}
	in := NewRDBInfo()
	in.Aux([]byte("repl-id"), []byte(strings.Repeat("a", 40)))
	in.Aux([]byte("repl-offset"), []byte("100"))
	in.Aux([]byte("repl-stream-db"), []byte("2"))
	if !in.Complete() {
		t.Fatal("incomplete info")
	}
	// A master keeps the saved history as its secondary id.
	if m.RestoreLocked(in, true, false) {
		t.Fatal("a master reported a replica's restore")
	}
	if m.replid2 != in.ID || m.secondOffset != 101 || m.offset != 100 {
		t.Fatalf("master restore: %s %d %d", m.replid2, m.secondOffset, m.offset)
	}
	// A replica takes it as its cached master's.
	r, _ := newTestMaster(t, 0, false)
	r.SetLinkedLocked(true)
	if !r.RestoreLocked(in, true, true) || r.replid != in.ID || r.offset != 100 {
		t.Fatalf("replica restore: %s %d", r.replid, r.offset)
	}
	if aux := r.RDBAuxLocked(2); !slices.Equal(aux, AuxFields(2, in.ID, 100)) {
		t.Fatalf("replica aux %v", aux)
	}
}

func TestLocalExpires(t *testing.T) {
	var le LocalExpires
	le.Remember(0, []string{"a", "b"})
	le.Remember(1, []string{"a"})
	keys := le.Keys()
	slices.SortFunc(keys, func(x, y DBKey) int {
		if x.DB != y.DB {
			return x.DB - y.DB
		}
		return strings.Compare(x.Key, y.Key)
	})
	if !slices.Equal(keys, []DBKey{{0, "a"}, {0, "b"}, {1, "a"}}) {
		t.Fatalf("keys %v", keys)
	}
	le.Forget(0, "a")
	if len(le.Keys()) != 2 {
		t.Fatalf("after Forget: %v", le.Keys())
	}
	le.Reset()
	if len(le.Keys()) != 0 {
		t.Fatalf("after Reset: %v", le.Keys())
	}
}

// TestWaitAll returns once every online replica acknowledged, and gives up
// at its deadline otherwise.
func TestWaitAll(t *testing.T) {
	m, _ := newTestMaster(t, 0, false)
	if !m.WaitAll(time.Millisecond) {
		t.Fatal("no replica: not all acknowledged")
	}
	c := newFakeConn(1)
	if e := m.Sync(c, Hello{Addr: "a:1"}, "?", -1, true, 0); e != "" {
		t.Fatal(e)
	}
	m.Propagate(0, [][][]byte{{[]byte("SET"), []byte("k"), []byte("v")}})
	if m.WaitAll(20 * time.Millisecond) {
		t.Fatal("a lagging replica counted as acknowledged")
	}
	if stream, _ := c.got(); !strings.HasSuffix(stream, string(getAckCmd)) {
		t.Fatalf("no GETACK sent: %q", stream)
	}
	off := m.Offset()
	done := make(chan bool)
	go func() { done <- m.WaitAll(10 * time.Second) }()
	time.Sleep(10 * time.Millisecond) // let it wait: the ACK must wake it
	m.ReplConf(c, &Hello{}, "ack", []byte(strconv.FormatInt(off, 10)))
	if !<-done {
		t.Fatal("acknowledged replica not seen")
	}
}
