package node

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/testutil"
)

// fakeHandshake plays a master's side of the replica handshake on nc:
// +PONG to PING, +OK to REPLCONF (nothing to REPLCONF ACK), and psync()
// at PSYNC; it returns when psync reports true or the replica hangs up.
func fakeHandshake(nc net.Conn, psync func() (stop bool)) {
	fakeHandshakeAcks(nc, psync, nil)
}

// fakeHandshakeAcks is fakeHandshake that hands the offset of every
// REPLCONF ACK to ack, if not nil.
func fakeHandshakeAcks(nc net.Conn, psync func() (stop bool), ack func(offset string)) {
	br := bufio.NewReader(nc)
	for {
		v, err := resp.ReadValue(br)
		if err != nil || len(v.Elems) == 0 {
			return
		}
		switch strings.ToUpper(v.Elems[0].Str) {
		case "PING":
			nc.Write([]byte("+PONG\r\n"))
		case "REPLCONF":
			if len(v.Elems) > 2 && strings.EqualFold(v.Elems[1].Str, "ACK") {
				if ack != nil {
					ack(v.Elems[2].Str)
				}
				continue // a master does not answer ACKs
			}
			nc.Write([]byte("+OK\r\n"))
		case "PSYNC":
			if psync() {
				return
			}
		}
	}
}

// fakeMaster answers the replica handshake and sends payload after
// +FULLRESYNC, then hangs up. It returns its address and a counter of
// connections.
func fakeMaster(t *testing.T, payload func() []byte) (string, *atomic32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var attempts atomic32
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			attempts.add()
			go func(nc net.Conn) {
				defer nc.Close()
				fakeHandshake(nc, func() bool {
					nc.Write([]byte("+FULLRESYNC " + strings.Repeat("a", 40) + " 100\r\n"))
					nc.Write(payload())
					time.Sleep(50 * time.Millisecond)
					return true
				})
			}(nc)
		}
	}()
	return ln.Addr().String(), &attempts
}

// streamingFakeMaster is a master for one replica: at PSYNC it sends
// +FULLRESYNC (offset 100), the RDB payload rdb and the stream bytes first
// in one write, then second when sendSecond is called. ack, if not nil,
// gets the offset of every REPLCONF ACK.
func streamingFakeMaster(t *testing.T, rdb, first, second []byte, ack func(offset string)) (addr string, sendSecond func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	next := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		fakeHandshakeAcks(nc, func() bool {
			var b []byte
			b = append(b, "+FULLRESYNC "+strings.Repeat("a", 40)+" 100\r\n"...)
			b = append(b, "$"+strconv.Itoa(len(rdb))+"\r\n"...)
			b = append(b, rdb...)
			b = append(b, first...)
			nc.Write(b)
			go func() {
				select {
				case <-next:
					nc.Write(second)
				case <-done:
				}
			}()
			return false
		}, ack)
	}()
	return ln.Addr().String(), func() { close(next) }
}

// emptyRDB returns the RDB file of an empty dataset, for fake masters.
func emptyRDB(t *testing.T) []byte {
	t.Helper()
	var rdb bytes.Buffer
	if err := startServer(t).srv.WriteRDB(&rdb); err != nil {
		t.Fatal(err)
	}
	return rdb.Bytes()
}

// linkedPair starts a master and a replica of it, and waits for the link.
func linkedPair(t *testing.T) (master, replica *testServer, mc, rc *redis.Client) {
	t.Helper()
	// Tests of the pair use DEBUG (SLEEP, SET-ACTIVE-EXPIRE) on either side.
	master, replica = startServer(t, "enable-debug-command", "yes"), startServer(t, "enable-debug-command", "yes")
	mc, rc = master.client(t), replica.client(t)
	h, p := hostPort(master.addr)
	if err := rc.Do(ctx(t), "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, rc)
	return master, replica, mc, rc
}

// replicaOfAddr starts a node and makes it a replica of addr.
func replicaOfAddr(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rc := startServer(t).client(t)
	h, p := hostPort(addr)
	if err := rc.Do(ctx(t), "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	return rc
}

// TestReplicationStreamingLoadCut: a replica with an empty dataset loads
// the master's RDB while it arrives (into staging databases); a transfer
// cut half-way, or a payload with bytes after the RDB's end, leaves the
// dataset empty: no key of the partial payload is ever visible.
func TestReplicationStreamingLoadCut(t *testing.T) {
	src := startServer(t)
	sc := src.client(t)
	for i := 0; i < 2000; i++ {
		sc.Set(ctx(t), fmt.Sprintf("key:%d", i), i, 0)
	}
	var rdbBytes bytes.Buffer
	if err := src.srv.WriteRDB(&rdbBytes); err != nil {
		t.Fatal(err)
	}
	full := rdbBytes.Bytes()
	half := full[:len(full)/2]
	mark := strings.Repeat("m", 40)
	cases := []struct {
		name    string
		payload []byte
	}{
		{"len cut", append([]byte("$"+strconv.Itoa(len(full))+"\r\n"), half...)},
		{"eof cut", append([]byte("$EOF:"+mark+"\r\n"), half...)},
		{"len trailing bytes", append(append([]byte("$"+strconv.Itoa(len(full)+3)+"\r\n"), full...), "xyz"...)},
		{"eof trailing bytes", append(append(append([]byte("$EOF:"+mark+"\r\n"), full...), "xyz"...), mark...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr, attempts := fakeMaster(t, func() []byte { return tc.payload })
			replica := startServer(t)
			rc := replica.client(t)
			h, p := hostPort(addr)
			if err := rc.Do(ctx(t), "REPLICAOF", h, p).Err(); err != nil {
				t.Fatal(err)
			}
			testutil.WaitFor(t, 10*time.Second, "three sync attempts", func() bool { return attempts.get() >= 3 })
			if n := rc.DBSize(ctx(t)).Val(); n != 0 {
				t.Fatalf("replica shows %d keys of a broken transfer", n)
			}
			if got := replInfoField(t, rc, "master_link_status"); got != "down" {
				t.Fatalf("master_link_status = %q", got)
			}
		})
	}
	// The whole payload in the EOF form loads.
	t.Run("eof whole", func(t *testing.T) {
		addr, _ := fakeMaster(t, func() []byte { return append(append([]byte("$EOF:"+mark+"\r\n"), full...), mark...) })
		replica := startServer(t)
		rc := replica.client(t)
		h, p := hostPort(addr)
		if err := rc.Do(ctx(t), "REPLICAOF", h, p).Err(); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, "2000 keys loaded", func() bool { return rc.DBSize(ctx(t)).Val() == 2000 })
		if got := rc.Get(ctx(t), "key:1999").Val(); got != "1999" {
			t.Fatalf("key:1999 = %q", got)
		}
	})
}

// TestReplicationRepeatedStreamingFullSync: a replica with
// repl-diskless-load swapdb full-syncs twice on one link from a disk-based
// master ($len form): each transfer's byte count starts at zero (a count
// carried over from the first made every later full sync fail).
func TestReplicationRepeatedStreamingFullSync(t *testing.T) {
	master := startServer(t, "repl-diskless-sync", "no", "repl-backlog-size", "16384")
	replica := startServer(t, "repl-diskless-load", "swapdb", "enable-debug-command", "yes")
	mc, rc := master.client(t), replica.client(t)
	c := ctx(t)
	fill(t, mc, "a", 20)
	h, p := hostPort(master.addr)
	if err := rc.Do(c, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, rc)
	// Overflow the backlog, then cut the link: the next sync is full.
	big := strings.Repeat("x", 4096)
	for i := 0; i < 20; i++ {
		mc.Set(c, "big:"+strconv.Itoa(i), big, 0)
	}
	testutil.WaitFor(t, 10*time.Second, "replica caught up", func() bool {
		return replInfoField(t, mc, "master_repl_offset") == replInfoField(t, rc, "master_repl_offset")
	})
	// The replica is frozen (DEBUG SLEEP) with its link cut while the
	// master writes past its backlog, so it cannot continue partially.
	done := make(chan error, 1)
	go func() {
		_, err := rc.TxPipelined(c, func(p redis.Pipeliner) error {
			p.Do(c, "CLIENT", "KILL", "TYPE", "master")
			p.Do(c, "DEBUG", "SLEEP", "0.5")
			return nil
		})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	for i := 20; i < 40; i++ {
		mc.Set(c, "big:"+strconv.Itoa(i), big, 0)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, "second full sync done", func() bool {
		return replInfoField(t, mc, "sync_full") == "2" && replInfoField(t, rc, "master_link_status") == "up"
	})
	sameDataset(t, mc, rc)
}

// TestReplicationStreamBytesBehindPayload: commands the master sends in
// the same write as the end of the RDB payload are held by the handshake's
// reader when the stream starts; they are applied first, then the stream
// read from the socket (raw reads, conn_raw.go), and slave_repl_offset
// counts both.
func TestReplicationStreamBytesBehindPayload(t *testing.T) {
	rdb := emptyRDB(t)
	first := resp.AppendCommandStrings(nil, "SELECT", "0")
	first = resp.AppendCommandStrings(first, "SET", "a", "1")
	first = resp.AppendCommandStrings(first, "SET", "b", "2")
	second := resp.AppendCommandStrings(nil, "SET", "c", "3")
	addr, sendSecond := streamingFakeMaster(t, rdb, first, second, nil)
	rc := replicaOfAddr(t, addr)
	c := ctx(t)
	testutil.WaitFor(t, 10*time.Second, "a and b applied", func() bool { return rc.Exists(ctx(t), "a", "b").Val() == 2 })
	sendSecond()
	testutil.WaitFor(t, 10*time.Second, "c applied", func() bool { return rc.Get(ctx(t), "c").Val() == "3" })
	want := strconv.Itoa(100 + len(first) + len(second))
	if got := replInfoField(t, rc, "slave_repl_offset"); got != want {
		t.Fatalf("slave_repl_offset = %s, want %s", got, want)
	}
	if got := rc.Get(c, "a").Val() + rc.Get(c, "b").Val(); got != "12" {
		t.Fatalf("a, b = %q", got)
	}
}

// TestReplicationStreamBatchesAndReadOffset: a stream whose commands
// arrive many to a write is applied in order across batches (keyed
// commands parsed ahead and prefetched, replication_replica.go), with
// SELECT, MULTI/EXEC and a GETACK between them; and slave_read_repl_offset
// counts bytes read but not applied yet (a command cut in two), as Redis's
// does, while slave_repl_offset counts applied commands only.
func TestReplicationStreamBatchesAndReadOffset(t *testing.T) {
	rdb := emptyRDB(t)
	var first []byte
	first = resp.AppendCommandStrings(first, "SELECT", "0")
	for i := 0; i < 200; i++ {
		first = resp.AppendCommandStrings(first, "SET", "k"+strconv.Itoa(i%50), strconv.Itoa(i))
	}
	first = resp.AppendCommandStrings(first, "RPUSH", "l", "a", "b")
	first = resp.AppendCommandStrings(first, "SELECT", "1")
	first = resp.AppendCommandStrings(first, "SET", "k0", "db1")
	first = resp.AppendCommandStrings(first, "MULTI")
	first = resp.AppendCommandStrings(first, "INCR", "n")
	first = resp.AppendCommandStrings(first, "INCR", "n")
	first = resp.AppendCommandStrings(first, "EXEC")
	first = resp.AppendCommandStrings(first, "SET", "last", "1")
	first = resp.AppendCommandStrings(first, "REPLCONF", "GETACK", "*")
	cut := resp.AppendCommandStrings(nil, "SET", "cut", "done")
	const headLen = 9 // "*3\r\n$3\r\nS": read, not a whole command
	acks := make(chan string, 16)
	addr, sendRest := streamingFakeMaster(t, rdb, append(first, cut[:headLen]...), cut[headLen:], func(off string) {
		select {
		case acks <- off:
		default:
		}
	})
	rc := replicaOfAddr(t, addr)
	c := ctx(t)
	applied := int64(100 + len(first))
	wantAck := strconv.FormatInt(applied, 10)
	for deadline := time.After(10 * time.Second); ; {
		select {
		case a := <-acks:
			if a != wantAck {
				continue // the once-a-second ACK may come first
			}
		case <-deadline:
			t.Fatalf("no REPLCONF ACK %s after the GETACK", wantAck)
		}
		break
	}
	testutil.WaitFor(t, 10*time.Second, "the cut command's head read", func() bool {
		return replInfoField(t, rc, "slave_read_repl_offset") == strconv.FormatInt(applied+headLen, 10)
	})
	if got := replInfoField(t, rc, "slave_repl_offset"); got != wantAck {
		t.Fatalf("slave_repl_offset = %s with a command half read, want %s", got, wantAck)
	}
	for i := 0; i < 50; i++ {
		want := strconv.Itoa(150 + i)
		if got := rc.Get(c, "k"+strconv.Itoa(i)).Val(); got != want {
			t.Fatalf("k%d = %q, want %q (the stream's last write)", i, got, want)
		}
	}
	if got := rc.LRange(c, "l", 0, -1).Val(); strings.Join(got, ",") != "a,b" {
		t.Fatalf("l = %v", got)
	}
	r1 := redis.NewClient(&redis.Options{Addr: rc.Options().Addr, DB: 1})
	t.Cleanup(func() { r1.Close() })
	if got := r1.MGet(c, "k0", "n", "last").Val(); fmt.Sprint(got) != "[db1 2 1]" {
		t.Fatalf("db 1: k0, n, last = %v", got)
	}
	sendRest()
	testutil.WaitFor(t, 10*time.Second, "the cut command applied", func() bool { return r1.Get(ctx(t), "cut").Val() == "done" })
	end := strconv.FormatInt(applied+int64(len(cut)), 10)
	if a, b := replInfoField(t, rc, "slave_read_repl_offset"), replInfoField(t, rc, "slave_repl_offset"); a != end || b != end {
		t.Fatalf("read, applied offsets = %s, %s, want %s both", a, b, end)
	}
}

// TestWriteStreamNowPartial: writeStreamNow, a client writing a replica's
// pending stream before its reply, never waits for the socket: with more
// pending than the socket takes it returns after a short write, and the
// rest reaches the replica in order, written by flushPending.
func TestWriteStreamNowPartial(t *testing.T) {
	ts := startServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(ts.srv, nc)
	if c.raw == nil {
		t.Skip("no raw I/O on this connection")
	}
	c.setFlag(clientReplica, true)
	t.Cleanup(c.close)
	const size = 32 << 20 // more than loopback socket buffers hold
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i % 251)
	}
	c.pmu.Lock()
	c.pending = append([]byte(nil), want...)
	c.pmu.Unlock()
	done := make(chan struct{})
	go func() { c.writeStreamNow(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writeStreamNow waited for the socket")
	}
	if n := ts.srv.stats.netOutput.Load(); n <= 0 || n >= size {
		t.Fatalf("writeStreamNow wrote %d of %d bytes, want a short write", n, size)
	}
	_ = peer.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, size)
	if _, err := io.ReadFull(peer, got); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < size && got[i] == want[i] {
			i++
		}
		t.Fatalf("stream differs from byte %d on", i)
	}
}
