package node

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// TestBlockingArrivalOrder is Redis's "BRPOPLPUSH with multiple blocked
// clients" run many times without waiting between the sends: two clients
// send a blocking BRPOPLPUSH one after the other (the first one's
// destination has the wrong type), and a third pushes right after. Redis
// serves the first (WRONGTYPE), then the second (the element). With a
// goroutine per connection the scheduler may run the three in any order;
// the sequencer (sequence.go) must still run them in arrival order.
// Without it the second client takes the element and the first blocks
// forever (about half the rounds on a 2-core machine).
func TestBlockingArrivalOrder(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	// The sequencer is on from the first blocking command.
	r.expect("*3\r\n$5\r\nBLPOP\r\n$4\r\nwarm\r\n$4\r\n0.01\r\n", "*-1")
	const rounds = 150
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < rounds && time.Now().Before(deadline); i++ {
		rd1, rd2 := ts.raw(t), ts.raw(t)
		r.send("*4\r\n$3\r\nDEL\r\n$5\r\nblist\r\n$7\r\ntarget1\r\n$7\r\ntarget2\r\n")
		if got := r.readLine(); !strings.HasPrefix(got, ":") {
			t.Fatalf("round %d: DEL replied %q", i, got)
		}
		r.expect("*3\r\n$3\r\nSET\r\n$7\r\ntarget1\r\n$6\r\nnolist\r\n", "+OK")
		rd1.send("*4\r\n$10\r\nBRPOPLPUSH\r\n$5\r\nblist\r\n$7\r\ntarget1\r\n$1\r\n0\r\n")
		rd2.send("*4\r\n$10\r\nBRPOPLPUSH\r\n$5\r\nblist\r\n$7\r\ntarget2\r\n$1\r\n0\r\n")
		r.send("*3\r\n$5\r\nLPUSH\r\n$5\r\nblist\r\n$3\r\nfoo\r\n")
		if got := r.readLine(); got != ":1" {
			t.Fatalf("round %d: LPUSH replied %q", i, got)
		}
		got1 := rd1.readLineWithin(3 * time.Second)
		if !strings.HasPrefix(got1, "-WRONGTYPE") {
			t.Fatalf("round %d: first client got %q, want WRONGTYPE (served out of arrival order)", i, got1)
		}
		if got := rd2.readLineWithin(3 * time.Second); got != "$3" {
			t.Fatalf("round %d: second client got %q, want the element", i, got)
		}
		if got := rd2.readLine(); got != "foo" {
			t.Fatalf("round %d: second client got %q", i, got)
		}
		r.expect("*4\r\n$6\r\nLRANGE\r\n$7\r\ntarget2\r\n$1\r\n0\r\n$2\r\n-1\r\n", "*1")
		if got := r.readLine(); got != "$3" {
			t.Fatalf("round %d: %q", i, got)
		}
		if got := r.readLine(); got != "foo" {
			t.Fatalf("round %d: target2 holds %q", i, got)
		}
		rd1.nc.Close()
		rd2.nc.Close()
	}
}

// readLineWithin reads one line, failing the test after d.
func (r *rawConn) readLineWithin(d time.Duration) string {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(d))
	line, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read: %v (got %q): client left blocked", err, line)
	}
	return strings.TrimSuffix(line, "\r\n")
}

// TestSequencedExecBeforeLaterPush: an EXEC sent just before another
// client's LPUSH runs first, as in Redis's single event loop, so a push
// that serves a blocked BRPOPLPUSH into a WATCHed key does not fail the
// transaction (Redis's "BRPOPLPUSH does not affect WATCH while still
// blocked", unit/type/list).
func TestSequencedExecBeforeLaterPush(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("BLPOP warm 0.01\r\n", "*-1") // the sequencer is on
	const rounds = 200
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < rounds && time.Now().Before(deadline); i++ {
		r.send("DEL srclist dstlist somekey\r\n")
		r.readLine()
		r.expect("SET somekey somevalue\r\n", "+OK")
		b, w := ts.raw(t), ts.raw(t)
		b.send("BRPOPLPUSH srclist dstlist 0\r\n")
		w.expect("WATCH dstlist\r\n", "+OK")
		w.expect("MULTI\r\n", "+OK")
		w.expect("GET somekey\r\n", "+QUEUED")
		w.send("EXEC\r\n")
		r.expect("LPUSH srclist element\r\n", ":1")
		if got := w.readLine(); got != "*1" {
			t.Fatalf("round %d: EXEC replied %q: it ran after the later LPUSH", i, got)
		} else if v := w.readLine() + w.readLine(); v != "$9somevalue" {
			t.Fatalf("EXEC reply: %q", v)
		}
		b.nc.Close()
		w.nc.Close()
	}
}

// TestSequencedNotHeldByWait: a client waiting in WAIT (for replicas that
// never acknowledge) holds no sequenced command of another client, nor
// does a client blocked in BLPOP or a client paused by CLIENT PAUSE: their
// input runs when they move again.
func TestSequencedNotHeldByWait(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	r := ts.raw(t)
	r.expect("BLPOP warm 0.01\r\n", "*-1") // the sequencer is on
	w := ts.raw(t)
	w.send("WAIT 1 0\r\n") // never answered: no replica
	b := ts.raw(t)
	b.send("BLPOP never 0\r\n")
	deadline := time.Now().Add(5 * time.Second)
	for infoInt(t, rc, "blocked_clients") != 2 {
		if time.Now().After(deadline) {
			t.Fatal("WAIT and BLPOP never blocked")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 20 {
		r.send("LPUSH q x\r\n")
		if got := r.readLineWithin(5 * time.Second); got != ":"+strconv.Itoa(i+1) {
			t.Fatalf("LPUSH replied %q", got)
		}
		r.send("PUBLISH ch x\r\n")
		if got := r.readLineWithin(5 * time.Second); got != ":0" {
			t.Fatalf("PUBLISH replied %q", got)
		}
	}
}

// TestSequencedOnReplica: on a replica, the link to the master (whose
// goroutine applies the stream in its own loop) holds no sequenced
// command: with the sequencer switched on by a subscription on the
// replica after the link is up, the replica's PUBLISH still runs while
// the master writes.
func TestSequencedOnReplica(t *testing.T) {
	_, replica, mc, rc := linkedPair(t)
	if err := mc.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the write on the replica", func() bool { return rc.Get(ctx(t), "k").Val() == "v" })
	sub := replica.raw(t)
	sub.send(respCmd("SUBSCRIBE", "ch")) // the sequencer is on
	sub.readPush()
	for i := range 20 {
		if err := mc.Set(ctx(t), "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		p := replica.raw(t)
		p.send(respCmd("PUBLISH", "ch", "x"))
		if got := p.readLineWithin(5 * time.Second); got != ":1" {
			t.Fatalf("PUBLISH on the replica replied %q", got)
		}
		p.nc.Close()
	}
}
