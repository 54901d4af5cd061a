package node

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeReplicaConn connects to the master at addr as a replica: handshake,
// PSYNC, the whole RDB (either transfer form), then REPLCONF ACK, after
// which the master streams to it. It returns the connection and the
// stream bytes already read after the RDB.
func fakeReplicaConn(t *testing.T, addr string) (net.Conn, []byte) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(nc)
	line := func() string {
		s, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("fake replica: %v", err)
		}
		return strings.TrimRight(s, "\r\n")
	}
	for _, req := range []string{"PING", "REPLCONF listening-port 7777", "REPLCONF capa eof capa psync2"} {
		fmt.Fprintf(nc, "%s\r\n", req)
		if got := line(); got != "+PONG" && got != "+OK" {
			t.Fatalf("%s: %q", req, got)
		}
	}
	fmt.Fprintf(nc, "PSYNC ? -1\r\n")
	full := line()
	f := strings.Fields(full)
	if len(f) != 3 || f[0] != "+FULLRESYNC" {
		t.Fatalf("PSYNC: %q", full)
	}
	var head string
	for head = line(); head == ""; head = line() { // newlines while the RDB is prepared
	}
	if mark, ok := strings.CutPrefix(head, "$EOF:"); ok {
		var got []byte
		for !bytes.HasSuffix(got, []byte(mark)) {
			b, err := br.ReadByte()
			if err != nil {
				t.Fatalf("fake replica: RDB: %v", err)
			}
			got = append(got, b)
		}
	} else {
		n, err := strconv.Atoi(strings.TrimPrefix(head, "$"))
		if err != nil {
			t.Fatalf("RDB header %q", head)
		}
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Fprintf(nc, "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%s\r\n", len(f[2]), f[2])
	_ = nc.SetDeadline(time.Time{})
	rest := make([]byte, br.Buffered())
	_, _ = io.ReadFull(br, rest)
	return nc, rest
}

// readNow appends to b what the socket holds now, without waiting.
func readNow(t *testing.T, nc net.Conn, b []byte) []byte {
	t.Helper()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var buf [64 << 10]byte
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_DONTWAIT)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if rerr != nil || n <= 0 {
			return b
		}
		b = append(b, buf[:n]...)
	}
}

// TestReplyAfterStream: a write's stream entry is in the replication
// stream (the backlog and every online replica's output) before its reply
// leaves: right after each acknowledgement, INFO's master_repl_offset
// already counts the entry. Writes in MULTI/EXEC and pipelines of writes
// are checked the same way, and the replica receives every entry in
// order.
func TestReplyAfterStream(t *testing.T) {
	ts := startServer(t)
	repl, stream := fakeReplicaConn(t, ts.addr)
	c := ts.raw(t)
	// The replica is online once the master took its ACK: wait for a
	// write to reach it.
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains(stream, []byte("ready")) {
		if time.Now().After(deadline) {
			t.Fatal("stream never reached the fake replica")
		}
		c.expect("SET k ready\r\n", "+OK")
		time.Sleep(10 * time.Millisecond)
		stream = readNow(t, repl, stream)
	}
	offset := func() int64 {
		t.Helper()
		c.send("INFO replication\r\n")
		h := c.readLine()
		n, err := strconv.Atoi(strings.TrimPrefix(h, "$"))
		if err != nil {
			t.Fatalf("INFO: %q", h)
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, body); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(body), "\r\n") {
			if v, ok := strings.CutPrefix(l, "master_repl_offset:"); ok {
				o, _ := strconv.ParseInt(v, 10, 64)
				return o
			}
		}
		t.Fatalf("INFO without master_repl_offset:\n%s", body)
		return 0
	}
	entry := func(args ...string) int64 { return int64(len(respCmd(args...))) }
	const n = 400
	var want []string
	last := offset()
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("v%d", i)
		var grow int64
		switch i % 4 {
		case 0, 1:
			c.expect(fmt.Sprintf("SET k %s\r\n", v), "+OK")
			grow = entry("SET", "k", v)
		case 2: // a transaction
			c.send(fmt.Sprintf("MULTI\r\nSET k %s\r\nEXEC\r\n", v))
			for _, want := range []string{"+OK", "+QUEUED", "*1", "+OK"} {
				if got := c.readLine(); got != want {
					t.Fatalf("MULTI/EXEC %d: got %q, want %q", i, got, want)
				}
			}
			grow = entry("MULTI") + entry("SET", "k", v) + entry("EXEC")
		case 3: // a pipeline: a write, a read, a write
			x := fmt.Sprint("x", i)
			c.send(fmt.Sprintf("SET j %s\r\nGET j\r\nSET k %s\r\n", x, v))
			for _, want := range []string{"+OK", "$" + strconv.Itoa(len(x)), x, "+OK"} {
				if got := c.readLine(); got != want {
					t.Fatalf("pipeline %d: got %q, want %q", i, got, want)
				}
			}
			grow = entry("SET", "j", x) + entry("SET", "k", v)
		}
		now := offset()
		if now < last+grow {
			t.Fatalf("write %d acknowledged with master_repl_offset %d, want at least %d: its entry was not in the stream yet", i, now, last+grow)
		}
		last = now
		want = append(want, "\r\n"+v+"\r\n")
	}
	// Every entry reaches the replica, in order.
	seen := 0
	deadline = time.Now().Add(10 * time.Second)
	for len(want) > 0 && time.Now().Before(deadline) {
		stream = readNow(t, repl, stream)
		for len(want) > 0 {
			k := bytes.Index(stream[seen:], []byte(want[0]))
			if k < 0 {
				break
			}
			seen += k + len(want[0])
			want = want[1:]
		}
		if len(want) > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(want) > 0 {
		t.Fatalf("%d entries never reached the replica (next %q)", len(want), want[0])
	}
}
