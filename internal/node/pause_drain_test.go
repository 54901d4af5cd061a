package node

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// pauser is a raw connection that sends CLIENT PAUSE and reads its reply
// on a goroutine.
type pauser struct {
	c     *Client // the server's side of the connection
	reply chan string
}

func startPause(t *testing.T, ts *testServer, args string) *pauser {
	t.Helper()
	r := ts.raw(t)
	r.send("CLIENT ID\r\n")
	id, err := strconv.ParseInt(strings.TrimPrefix(r.readLine(), ":"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	p := &pauser{c: ts.srv.lookupClient(id), reply: make(chan string, 1)}
	if p.c == nil {
		t.Fatalf("client %d not found", id)
	}
	_ = r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	r.send("CLIENT PAUSE " + args + "\r\n")
	go func() {
		line, err := r.br.ReadString('\n')
		if err != nil {
			line = "read error: " + err.Error()
		}
		p.reply <- strings.TrimSpace(line)
	}()
	return p
}

// TestClientPauseWaitsForWritesInFlight: a write past the pause check
// when CLIENT PAUSE WRITE arrives (here: waiting for its key's shard
// lock, which the test holds) has run, and is in the replication offset,
// when CLIENT PAUSE replies, as with Redis, which runs one command at a
// time. migrate-to-cluster reads master_repl_offset right after the pause
// and takes it as the end of the source's writes: a write that ran after
// the reply was acknowledged on the source and never reached the cluster.
func TestClientPauseWaitsForWritesInFlight(t *testing.T) {
	ts := startServer(t)
	s := ts.srv
	rc := ts.client(t)
	// A replica-side backlog so that master_repl_offset moves with writes.
	rep := startServer(t)
	host, port, _ := strings.Cut(ts.addr, ":")
	if err := rep.client(t).Do(ctx(t), "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the replica online", func() bool {
		return strings.Contains(rc.Info(ctx(t), "replication").Val(), "connected_slaves:1")
	})
	offset := func() int64 {
		for _, l := range strings.Split(rc.Info(ctx(t), "replication").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(l, "master_repl_offset:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("no master_repl_offset")
		return 0
	}

	release := holdKeyShard(t, s, "k")
	before := offset()
	setDone := make(chan error, 1)
	wc, wctx := ts.client(t), ctx(t)
	go func() { setDone <- wc.Set(wctx, "k", "v", 0).Err() }()
	testutil.WaitFor(t, 10*time.Second, "the SET in flight", func() bool { return s.inflightWrites.Load() == 1 })

	p := startPause(t, ts, "20000 WRITE")
	// Either the pause replies (with the SET still waiting for its lock:
	// the bug) or it waits for the write (parked while it does).
	var early string
	testutil.WaitFor(t, 10*time.Second, "CLIENT PAUSE to reply or wait for the write", func() bool {
		select {
		case early = <-p.reply:
			return true
		default:
			return p.c.hasFlag(clientParked)
		}
	})
	if early != "" {
		t.Fatalf("CLIENT PAUSE replied %q while a write was in flight (offset %d, the write not in it)", early, offset())
	}
	release()
	select {
	case r := <-p.reply:
		if r != "+OK" {
			t.Fatalf("CLIENT PAUSE: %q", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CLIENT PAUSE did not reply after the write ended")
	}
	after := offset()
	if after <= before {
		t.Fatalf("master_repl_offset %d when CLIENT PAUSE replied, %d before the SET: the write is not in it", after, before)
	}
	if err := <-setDone; err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestClientPauseNotHeldByBlockedClients: a client parked in a blocking
// write (BLMOVE) is no write in flight: CLIENT PAUSE replies at once, and
// a push released by UNPAUSE serves it.
func TestClientPauseNotHeldByBlockedClients(t *testing.T) {
	ts := startServer(t)
	s := ts.srv
	rc := ts.client(t)
	moved := make(chan string, 1)
	bc, pc, c := ts.client(t), ts.client(t), ctx(t)
	go func() { moved <- bc.BLMove(c, "src", "dst", "LEFT", "RIGHT", 0).Val() }()
	testutil.WaitFor(t, 10*time.Second, "BLMOVE blocked", func() bool { return s.blockedClients.Load() == 1 })
	if n := s.inflightWrites.Load(); n != 0 {
		t.Fatalf("%d writes in flight with only a blocked BLMOVE", n)
	}
	p := startPause(t, ts, "30000 WRITE")
	select {
	case r := <-p.reply:
		if r != "+OK" {
			t.Fatalf("CLIENT PAUSE: %q", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CLIENT PAUSE held by a blocked client")
	}
	pushed := make(chan error, 1)
	go func() { pushed <- pc.RPush(c, "src", "x").Err() }()
	testutil.WaitFor(t, 10*time.Second, "the push held by the pause", func() bool { return s.pause.Waiting() == 1 })
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	if v := <-moved; v != "x" {
		t.Fatalf("BLMOVE served %q", v)
	}
	if n := s.inflightWrites.Load(); n != 0 {
		t.Fatalf("%d writes in flight at the end", n)
	}
}

// holdKeyShard locks the shard lock of key in database 0, so that a write
// of key waits past its pause check, and returns the release: it unlocks
// once, and the test's cleanup calls it too.
func holdKeyShard(t *testing.T, s *Server, key string) (release func()) {
	t.Helper()
	mu := &s.dbs[0].KeyShard(key).Mu
	mu.Lock()
	var once sync.Once
	release = func() { once.Do(mu.Unlock) }
	t.Cleanup(release)
	return release
}
