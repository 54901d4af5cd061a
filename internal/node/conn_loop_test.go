package node

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// readsPerRequest runs n request-reply round trips on a new connection
// and returns the read system calls the server made per request
// (total_reads_processed, less the INFO calls' own reads).
func readsPerRequest(t *testing.T, ts *testServer, n int) float64 {
	t.Helper()
	stats := ts.client(t)
	c := ts.raw(t)
	c.expect("PING\r\n", "+PONG")
	before := infoInt(t, stats, "total_reads_processed")
	for i := range n {
		c.expect(fmt.Sprintf("SET k%d v\r\n", i), "+OK")
	}
	after := infoInt(t, stats, "total_reads_processed")
	return float64(after-before-1) / float64(n) // -1: the second INFO's read
}

// TestReadLoopOneReadPerRequest: a request-reply client costs one read
// system call per request, as in Redis's event loop (readable, then
// read), not a read that finds nothing after each reply and then one that
// finds the request.
func TestReadLoopOneReadPerRequest(t *testing.T) {
	ts := startServer(t)
	const n = 300
	if got := readsPerRequest(t, ts, n); got > 1.2 {
		t.Fatalf("read loop: %.2f reads per request, want about 1", got)
	}
	// The counter does count reads that find nothing: without the loop,
	// each reply is followed by such a read.
	ts.srv.readLoop.Store(false)
	if got := readsPerRequest(t, ts, n); got < 1.5 {
		t.Fatalf("without the read loop: %.2f reads per request, want about 2", got)
	}
	if w := infoInt(t, ts.client(t), "total_writes_processed"); w < 2*n {
		t.Fatalf("total_writes_processed %d after %d replies", w, 2*n)
	}
}

// TestReadLoopPipelineAndBlocking: a pipeline larger than the read buffer
// is read without waiting between reads; a blocking command in the middle
// of a pipeline runs outside the loop, blocks, and the requests behind it
// (already read) run after it is served.
func TestReadLoopPipelineAndBlocking(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	val := strings.Repeat("x", 1000)
	const n = 3000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "SET p%d %s\r\n", i, val)
	}
	go func() { _, _ = c.nc.Write([]byte(b.String())) }() // 3 MB: more than the socket buffers
	for i := range n {
		if got := c.readLine(); got != "+OK" {
			t.Fatalf("reply %d: %q", i, got)
		}
	}
	c.expect("DBSIZE\r\n", ":"+strconv.Itoa(n))

	// BLPOP blocks with GET and PING buffered behind it.
	c.send("BLPOP q 0\r\nGET p7\r\nPING\r\n")
	other, info := ts.raw(t), ts.client(t)
	testutil.WaitFor(t, 5*time.Second, "BLPOP to block", func() bool {
		return infoInt(t, info, "blocked_clients") == 1
	})
	other.expect("RPUSH q job\r\n", ":1")
	for _, want := range []string{"*2", "$1", "q", "$3", "job", "$1000", val, "+PONG"} {
		if got := c.readLine(); got != want {
			t.Fatalf("after BLPOP: %q, want %q", got, want)
		}
	}
	// Blocking commands that do not block, and the loop again.
	c.send("RPUSH q a b\r\nBLPOP q 0\r\nBRPOP q 0\r\nGET p9\r\n")
	for _, want := range []string{":2", "*2", "$1", "q", "$1", "a", "*2", "$1", "q", "$1", "b", "$1000", val} {
		if got := c.readLine(); got != want {
			t.Fatalf("pipelined BLPOP/BRPOP: %q, want %q", got, want)
		}
	}
}

// TestReadLoopClose: a client that closes itself from inside the loop
// (CLIENT KILL of its own id, SHUTDOWN-like paths) does not wait on
// itself, and a client killed while CLIENT PAUSE holds its write is
// closed at once and its write never runs.
func TestReadLoopClose(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send("CLIENT ID\r\n")
	id := strings.TrimPrefix(c.readLine(), ":")
	c.expect("CLIENT KILL ID "+id+" SKIPME no\r\n", ":1")
	_ = c.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Fatalf("after CLIENT KILL of itself: %v, want EOF", err)
	}

	admin := ts.raw(t)
	admin.expect("CLIENT PAUSE 10000 WRITE\r\n", "+OK")
	w := ts.raw(t)
	w.send("CLIENT ID\r\n")
	wid := strings.TrimPrefix(w.readLine(), ":")
	w.send("SET paused 1\r\n")
	// The SET has arrived and waits in the pause (a paused client counts
	// in blocked_clients, as in Redis).
	info := ts.client(t)
	testutil.WaitFor(t, 5*time.Second, "SET held by the pause", func() bool {
		return infoInt(t, info, "blocked_clients") == 1
	})
	start := time.Now()
	admin.expect("CLIENT KILL ID "+wid+"\r\n", ":1")
	_ = w.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := w.br.ReadByte(); err != io.EOF {
		t.Fatalf("killed paused client: %v, want EOF", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("killed paused client closed after %v", d)
	}
	admin.expect("CLIENT UNPAUSE\r\n", "+OK")
	admin.expect("EXISTS paused\r\n", ":0")
	admin.expect("PING\r\n", "+PONG")
}
