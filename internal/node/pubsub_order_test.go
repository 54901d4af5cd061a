package node

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// respCmd encodes args as a RESP array.
func respCmd(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// readPush reads one RESP2 array of bulk strings and integers (a pub/sub
// confirmation or message) as its elements.
func (r *rawConn) readPush() []string {
	r.t.Helper()
	h := r.readLine()
	var n int
	if _, err := fmt.Sscanf(h, "*%d", &n); err != nil {
		r.t.Fatalf("want a push, got %q", h)
	}
	out := make([]string, 0, n)
	for range n {
		l := r.readLine()
		switch {
		case strings.HasPrefix(l, "$-1"):
			out = append(out, "")
		case strings.HasPrefix(l, "$"):
			out = append(out, r.readLine())
		default:
			out = append(out, l)
		}
	}
	return out
}

// pubsubOrderRounds bounds the tests below in rounds and time.
const (
	pubsubOrderRounds = 300
	pubsubOrderTime   = 30 * time.Second
)

// TestPubSubUnsubscribeThenPublish is Redis's "PUBLISH/SUBSCRIBE after
// UNSUBSCRIBE without arguments" looped: the subscriber sends UNSUBSCRIBE
// without waiting for its reply, another connection publishes right
// after, and the publish must reach nobody (Redis runs the UNSUBSCRIBE
// first: it arrived first). A goroutine per connection may run the
// PUBLISH first; the sequencer (sequence.go) must prevent it.
func TestPubSubUnsubscribeThenPublish(t *testing.T) {
	for _, tc := range []struct{ sub, unsub, kind string }{
		{"SUBSCRIBE", "UNSUBSCRIBE", "unsubscribe"},
		{"PSUBSCRIBE", "PUNSUBSCRIBE", "punsubscribe"},
	} {
		t.Run(tc.unsub, func(t *testing.T) {
			ts := startServer(t)
			pub := ts.raw(t)
			rd := ts.raw(t)
			deadline := time.Now().Add(pubsubOrderTime)
			fails, rounds := 0, 0
			for ; rounds < pubsubOrderRounds && time.Now().Before(deadline); rounds++ {
				rd.send(respCmd(tc.sub, "chan1", "chan2", "chan3"))
				for i := 1; i <= 3; i++ {
					if got := rd.readPush(); len(got) != 3 || got[2] != fmt.Sprintf(":%d", i) {
						t.Fatalf("round %d: subscribe reply %q", rounds, got)
					}
				}
				rd.send(respCmd(tc.unsub)) // no wait for the reply
				pub.send(respCmd("PUBLISH", "chan1", "hello"))
				if got := pub.readLine(); got != ":0" {
					fails++
				}
				// Drain: a message delivered out of order comes first.
				for left := 3; left > 0; {
					got := rd.readPush()
					if got[0] == tc.kind {
						left--
					}
				}
			}
			t.Logf("%d rounds, %d publishes reached an unsubscribed client", rounds, fails)
			if fails > 0 {
				t.Fatalf("%d of %d publishes ran before an earlier %s", fails, rounds, tc.unsub)
			}
		})
	}
}

// TestPubSubSubscribeThenPublish: a new connection sends SUBSCRIBE (or
// PSUBSCRIBE) without waiting, another publishes right after; the publish
// must reach it (1) and the message must follow the confirmation.
// (A connection not accepted yet is not seen: the new connection first
// makes a round trip, as Redis's test clients do.)
func TestPubSubSubscribeThenPublish(t *testing.T) {
	for _, tc := range []struct{ sub, unsub, kind, msg string }{
		{"SUBSCRIBE", "UNSUBSCRIBE", "subscribe", "message"},
		{"PSUBSCRIBE", "PUNSUBSCRIBE", "psubscribe", "pmessage"},
	} {
		t.Run(tc.sub, func(t *testing.T) {
			ts := startServer(t)
			pub := ts.raw(t)
			// The sequencer is on from the first subscription on the
			// server (a server that never had one pays nothing).
			warm := ts.raw(t)
			warm.send(respCmd("SUBSCRIBE", "warm"))
			warm.readPush()
			deadline := time.Now().Add(pubsubOrderTime)
			fails, rounds := 0, 0
			for ; rounds < pubsubOrderRounds && time.Now().Before(deadline); rounds++ {
				rd := ts.raw(t)
				// A round trip first, as Redis's test client (SELECT):
				// the server has accepted the connection.
				rd.expect(respCmd("PING"), "+PONG")
				rd.send(respCmd(tc.sub, "chan1")) // no wait for the reply
				pub.send(respCmd("PUBLISH", "chan1", "hello"))
				got := pub.readLine()
				if r := rd.readPush(); r[0] != tc.kind {
					t.Fatalf("round %d: first reply %q", rounds, r)
				}
				if got != ":1" {
					fails++
				} else if r := rd.readPush(); r[0] != tc.msg || r[len(r)-1] != "hello" {
					t.Fatalf("round %d: message %q", rounds, r)
				}
				// Leave no subscriber behind for the next round (a closed
				// connection is unsubscribed only when the server sees it).
				rd.send(respCmd(tc.unsub))
				rd.readPush()
				rd.nc.Close()
			}
			t.Logf("%d rounds, %d publishes missed an earlier %s", rounds, fails, tc.sub)
			if fails > 0 {
				t.Fatalf("%d of %d publishes ran before an earlier %s", fails, rounds, tc.sub)
			}
		})
	}
}

// TestPubSubStuckSubscriber: a subscriber that stops reading its replies
// (so the server's write to it waits for room and its commands are not
// read) does not hold PUBLISH back: the sequencer does not wait for a
// connection whose writes are stalled.
func TestPubSubStuckSubscriber(t *testing.T) {
	ts := startServer(t)
	pub := ts.raw(t)
	pub.expect(respCmd("PUBLISH", "chan1", "x"), ":0")
	rd := ts.raw(t)
	rd.send(respCmd("SUBSCRIBE", "chan1"))
	rd.readPush()
	// Flood PINGs without reading the replies until the server stops
	// reading them (its writes to rd block) and rd's send buffer fills.
	chunk := []byte(strings.Repeat("PING\r\n", 64<<10/6))
	stop := time.Now().Add(10 * time.Second)
	for time.Now().Before(stop) {
		_ = rd.nc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := rd.nc.Write(chunk); err != nil {
			break // timed out: nobody reads
		}
	}
	const n = 100
	start := time.Now()
	for range n {
		pub.send(respCmd("PUBLISH", "chan1", "hello"))
		// A PUBLISH waiting for the stuck subscriber would wait forever.
		if got := pub.readLineWithin(5 * time.Second); !strings.HasPrefix(got, ":") {
			t.Fatalf("PUBLISH replied %q", got)
		}
	}
	t.Logf("%d PUBLISH took %v with a stuck subscriber", n, time.Since(start))
}
