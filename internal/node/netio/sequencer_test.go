package netio

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// pair is a loopback TCP connection: peer writes, conn is the server
// side as a *Conn that joined seq.
type pair struct {
	peer net.Conn
	conn *Conn
	nc   net.Conn
}

func newPair(t *testing.T, seq *Sequencer, id int64, exempt func() bool) *pair {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c, ok := New(nc, seq).(*Conn)
	if !ok || !c.stamps {
		t.Skip("no receive timestamps on this platform")
	}
	seq.Add(c, id, exempt)
	return &pair{peer: peer, conn: c, nc: nc}
}

// send writes msg from the peer and waits until the server socket has it.
func (p *pair) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := p.peer.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var b [1]byte
		if n, _ := p.conn.rx.peek(p.conn.fd, b[:]); n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("data never reached the socket")
		}
		time.Sleep(time.Millisecond)
	}
}

// read reads what the socket holds, as the connection's owner.
func (p *pair) read(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1024)
	if _, err := p.conn.Read(buf); err != nil {
		t.Fatal(err)
	}
}

func newSequencer(t *testing.T) *Sequencer {
	t.Helper()
	seq := &Sequencer{}
	if !seq.Enable() {
		t.Skip("no sequencer on this platform")
	}
	return seq
}

// waitAsync runs seq.Wait(self, ns, nil) and returns a channel closed when it
// returns, after it is asleep (or done).
func waitAsync(t *testing.T, seq *Sequencer, self *Conn, ns int64) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		seq.Wait(self, ns, nil)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case <-done:
			return done
		default:
		}
		seq.mu.Lock()
		asleep := seq.wake != nil && seq.sleepers.Load() > 0
		seq.mu.Unlock()
		if asleep {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatal("Wait neither returned nor slept")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func waitDone(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("Wait did not return after %s", what)
	}
}

// TestSequencerOlderUnread: input that reached another member's socket
// first holds a later command until that member read and ran it.
func TestSequencerOlderUnread(t *testing.T) {
	seq := newSequencer(t)
	a := newPair(t, seq, 1, nil)
	b := newPair(t, seq, 2, nil)
	a.send(t, "older")
	b.send(t, "newer")
	b.read(t)
	done := waitAsync(t, seq, b.conn, b.conn.RxTime())
	if isDone(done) {
		t.Fatal("Wait returned while an older command was unread in another socket")
	}
	a.read(t) // read: busy, still not run
	if a.conn.busy.Load() == 0 {
		t.Fatal("a read did not make the connection busy")
	}
	if isDone(done) {
		t.Fatal("Wait returned while an older command was read and not run")
	}
	a.conn.Done()
	waitDone(t, done, "the older input ran")
}

// TestSequencerNewerInput: input received after the command does not
// hold it, unread or busy.
func TestSequencerNewerInput(t *testing.T) {
	seq := newSequencer(t)
	a := newPair(t, seq, 1, nil)
	b := newPair(t, seq, 2, nil)
	b.send(t, "older")
	b.read(t)
	a.send(t, "newer")
	waitDone(t, waitAsync(t, seq, b.conn, b.conn.RxTime()), "nothing older was pending (unread)")
	a.read(t)
	waitDone(t, waitAsync(t, seq, b.conn, b.conn.RxTime()), "nothing older was pending (busy)")
}

// TestSequencerExempt: a blocked member's older input does not hold a
// later command; the wait ends when the member blocks.
func TestSequencerExempt(t *testing.T) {
	seq := newSequencer(t)
	var blocked atomic.Bool
	a := newPair(t, seq, 1, blocked.Load)
	b := newPair(t, seq, 2, nil)
	a.send(t, "older")
	a.read(t)
	b.send(t, "newer")
	b.read(t)
	done := waitAsync(t, seq, b.conn, b.conn.RxTime())
	if isDone(done) {
		t.Fatal("Wait returned while an older command was not run")
	}
	blocked.Store(true)
	seq.Notify()
	waitDone(t, done, "the older member blocked")
	// Unread input of a blocked member does not count either.
	a.conn.Done()
	a.send(t, "older again")
	b.send(t, "newer again")
	b.read(t)
	waitDone(t, waitAsync(t, seq, b.conn, b.conn.RxTime()), "only a blocked member had older input")
}

// TestSequencerRemove: a member leaving ends the wait for it.
func TestSequencerRemove(t *testing.T) {
	seq := newSequencer(t)
	a := newPair(t, seq, 1, nil)
	b := newPair(t, seq, 2, nil)
	a.send(t, "older")
	b.send(t, "newer")
	b.read(t)
	done := waitAsync(t, seq, b.conn, b.conn.RxTime())
	if isDone(done) {
		t.Fatal("Wait returned while an older command was unread")
	}
	seq.Remove(a.conn)
	waitDone(t, done, "the older member left")
}

// TestSequencerOff: a sequencer that is off never waits and members do
// not track busy times.
func TestSequencerOff(t *testing.T) {
	seq := &Sequencer{}
	a := newPair(t, seq, 1, nil)
	a.send(t, "x")
	a.read(t)
	if a.conn.busy.Load() != 0 {
		t.Fatal("busy tracked while the sequencer is off")
	}
	seq.Wait(nil, 0, nil) // returns at once
}

func TestBefore(t *testing.T) {
	for _, tc := range []struct {
		ts, id, ns, self int64
		want             bool
	}{
		{10, 5, 20, 1, true},
		{20, 5, 10, 1, false},
		{10, 1, 10, 2, true},  // same time: lower id first
		{10, 2, 10, 1, false}, // same time: higher id after
		{10, 1, 10, 1, false},
	} {
		if got := before(tc.ts, tc.id, tc.ns, tc.self); got != tc.want {
			t.Errorf("before(%d, %d, %d, %d) = %v, want %v", tc.ts, tc.id, tc.ns, tc.self, got, tc.want)
		}
	}
}

// TestSequencerCancel: a wait ends when the caller's connection closes.
func TestSequencerCancel(t *testing.T) {
	seq := newSequencer(t)
	a := newPair(t, seq, 1, nil)
	b := newPair(t, seq, 2, nil)
	a.send(t, "older")
	b.send(t, "newer")
	b.read(t)
	cancel := make(chan struct{})
	done := make(chan struct{})
	go func() {
		seq.Wait(b.conn, b.conn.RxTime(), cancel)
		close(done)
	}()
	close(cancel)
	waitDone(t, done, "the cancel")
}

// TestSequencerWriteUnderWay: while a write system call holds another
// member's socket, input arriving on it waits in the socket's backlog,
// unseen by the poller; a command waits for the write to end, whose end
// wakes it (the socket then shows what arrived).
func TestSequencerWriteUnderWay(t *testing.T) {
	seq := newSequencer(t)
	a := newPair(t, seq, 1, nil)
	b := newPair(t, seq, 2, nil)
	b.send(t, "cmd")
	b.read(t)
	a.conn.writing.Store(true) // as Conn.write marks its system call
	done := waitAsync(t, seq, b.conn, b.conn.RxTime())
	if isDone(done) {
		t.Fatal("Wait returned while another member's write was under way")
	}
	// The write ends: nothing arrived on a, so the wait ends.
	a.conn.writing.Store(false)
	seq.notify()
	waitDone(t, done, "the write ended")

	// A real write marks and unmarks itself.
	if _, err := a.conn.Write([]byte("+OK\r\n")); err != nil {
		t.Fatal(err)
	}
	if a.conn.writing.Load() {
		t.Fatal("writing still set after the write returned")
	}
}
