package repl

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdHost is a ReplicaHost with a hold (HoldHost).
type holdHost struct {
	unfrozenHost
	h *Hold
}

func (h holdHost) ReplHold() *Hold { return h.h }

// ackConn records what SendAck writes.
type ackConn struct {
	net.Conn
	mu  sync.Mutex
	out strings.Builder
}

func (c *ackConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(b)
}
func (c *ackConn) SetWriteDeadline(time.Time) error { return nil }
func (c *ackConn) Close() error                     { return nil }
func (c *ackConn) written() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// waiting reports whether a stream waits on h (its change channel
// exists only once a held link asked for it).
func waiting(h *Hold) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed != nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func heldLink(t *testing.T, h *Hold) (*Link, *ackConn) {
	t.Helper()
	l := NewLink(holdHost{h: h}, slog.New(slog.NewTextHandler(io.Discard, nil)), "10.0.0.1", 6379, nil)
	c := &ackConn{}
	l.conn, l.state = c, StateConnected
	return l, c
}

// TestHoldStopsApplyAndAck: while its master's address is held, the
// stream runs nothing and sends no ACK (not even the one a stream starts
// with, nor the GETACK's); once released it runs the stream and
// acknowledges it.
func TestHoldStopsApplyAndAck(t *testing.T) {
	h := &Hold{}
	h.Set("10.0.0.1:6379")
	l, c := heldLink(t, h)
	a := &fakeApplier{reads: []string{cmd("SET", "a", "v") + cmd("REPLCONF", "GETACK", "*")}}
	f := &fakeFeed{}
	done := make(chan error, 1)
	go func() { done <- l.RunStream(a, f, time.Second) }()
	waitFor(t, "the stream waiting on the hold", func() bool { return waiting(h) })
	if len(a.ran) != 0 || f.off != 0 {
		t.Fatalf("ran %v (offset %d) while held", a.ran, f.off)
	}
	if w := c.written(); w != "" {
		t.Fatalf("sent %q while held", w)
	}
	h.Set("10.0.0.2:6379") // another master held: not this link
	if err := <-done; !errors.Is(err, errEOF) {
		t.Fatalf("RunStream ended with %v", err)
	}
	if strings.Join(a.ran, " ") != "SET" {
		t.Fatalf("ran %v", a.ran)
	}
	// The release's ACK (offset 0, nothing applied yet), then the GETACK's
	// (and the idle stream's) at the applied offset.
	first, last := cmd("REPLCONF", "ACK", "0"), cmd("REPLCONF", "ACK", strconv.FormatInt(f.off, 10))
	if w := c.written(); !strings.HasPrefix(w, first+last) || !strings.HasSuffix(w, last) {
		t.Fatalf("sent %q after the release, want ACKs ending at offset %d", w, f.off)
	}
}

// TestHoldStoppedLink: a link stopped while its stream is held ends the
// stream at once, running nothing.
func TestHoldStoppedLink(t *testing.T) {
	h := &Hold{}
	h.Set("10.0.0.1:6379")
	l, _ := heldLink(t, h)
	a := &fakeApplier{reads: []string{cmd("SET", "a", "v")}}
	done := make(chan error, 1)
	go func() { done <- l.RunStream(a, &fakeFeed{}, time.Second) }()
	waitFor(t, "the stream waiting on the hold", func() bool { return waiting(h) })
	l.quitOnce.Do(func() { close(l.quit) }) // what Stop does first
	if err := <-done; !errors.Is(err, errLinkStopped) || len(a.ran) != 0 {
		t.Fatalf("RunStream ended with %v having run %v", err, a.ran)
	}
}

// TestHoldSet: the address is what is held; "" holds none; a nil Hold
// holds nothing.
func TestHoldSet(t *testing.T) {
	var h Hold
	if h.HeldFor("a:1") || h.Held() != "" {
		t.Fatal("a zero Hold holds")
	}
	h.Set("a:1")
	if !h.HeldFor("a:1") || h.HeldFor("b:1") || h.Held() != "a:1" {
		t.Fatal("a:1 not held alone")
	}
	h.Set("")
	if h.HeldFor("a:1") {
		t.Fatal("still held after Set(\"\")")
	}
	var nh *Hold
	if nh.HeldFor("a:1") || nh.wait("a:1") != nil {
		t.Fatal("a nil Hold holds")
	}
}
