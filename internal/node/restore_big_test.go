package node

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/rdb"
	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/testutil"
)

func bigString(n int, seed uint64) []byte { return testutil.RandomBytes(n, seed, 11) }

// rawPayload is the DUMP payload of the string s, uncompressed.
func rawPayload(s []byte) []byte {
	return rdb.Dump(&rdb.Value{Kind: rdb.KindString, Str: s}, false, rdb.Limits{})
}

// readReply reads one reply from the raw connection: a status or error
// line as is, a bulk as its bytes, a null bulk as "(nil)".
func (r *rawConn) readReply() string {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("reading a reply: %v", err)
	}
	line = line[:len(line)-2]
	if line[0] != '$' {
		return line
	}
	n, _ := strconv.Atoi(line[1:])
	if n < 0 {
		return "(nil)"
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(r.br, b); err != nil {
		r.t.Fatalf("reading a bulk of %d: %v", n, err)
	}
	return string(b[:n])
}

// captureRestores records the payload of every RESTORE that decodes one
// until the test ends; the function returns those recorded so far.
func captureRestores(t *testing.T) func() [][]byte {
	var mu sync.Mutex
	var got [][]byte
	h := func(p []byte) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}
	restoreDecodeHook.Store(&h)
	t.Cleanup(func() { restoreDecodeHook.Store(nil) })
	return func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// entryStr returns key's string value in db 0 as stored, under its shard
// lock.
func entryStr(t *testing.T, ts *testServer, key string) []byte {
	t.Helper()
	db := ts.srv.dbs[0]
	sh := &db.Shards[consistent.KeySlot(key)&(keyspace.NumShards-1)]
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	e := db.GetEntry(key)
	if e == nil {
		t.Fatalf("no key %s", key)
	}
	return e.Str
}

// sharesPayload reports whether the value s is the string's bytes inside
// payload p (not a copy).
func sharesPayload(s, p []byte) bool {
	if len(s) == 0 || len(p) < len(s)+10 {
		return false
	}
	return unsafe.Pointer(&s[0]) == unsafe.Pointer(&p[len(p)-10-len(s)])
}

// TestRestoreBigPipelined restores a 1 MiB raw string over a connection
// that pipelines more commands behind it: every reply is right, GET
// returns the exact bytes, and the stored value is the payload
// argument's own memory, not a copy.
func TestRestoreBigPipelined(t *testing.T) {
	ts := startServer(t)
	payloads := captureRestores(t)
	s1, s2 := bigString(1<<20, 1), bigString(1<<20, 2)
	p1, p2 := rawPayload(s1), rawPayload(s2)
	var in []byte
	in = resp.AppendCommand(in, []byte("RESTORE"), []byte("big"), []byte("0"), p1)
	in = resp.AppendCommand(in, []byte("GET"), []byte("big"))
	in = resp.AppendCommand(in, []byte("RESTORE"), []byte("big"), []byte("0"), p2)
	in = resp.AppendCommand(in, []byte("RESTORE"), []byte("big"), []byte("0"), p2, []byte("REPLACE"))
	in = resp.AppendCommand(in, []byte("SET"), []byte("small"), []byte("v"))
	in = resp.AppendCommand(in, []byte("GET"), []byte("small"))
	in = resp.AppendCommand(in, []byte("GET"), []byte("big"))
	r := ts.raw(t)
	go func() { _, _ = r.nc.Write(in) }()
	for i, want := range []string{"+OK", string(s1), "-BUSYKEY Target key name already exists.", "+OK", "+OK", "v", string(s2)} {
		if got := r.readReply(); got != want {
			t.Fatalf("reply %d: %.60q (%d bytes), want %.60q (%d bytes)", i, got, len(got), want, len(want))
		}
	}
	if n := len(payloads()); n != 3 {
		t.Fatalf("%d RESTOREs decoded, want 3", n)
	}
	last := payloads()[2]
	if !bytes.Equal(last, p2) {
		t.Fatal("the payload argument differs from what was sent")
	}
	v := entryStr(t, ts, "big")
	if !bytes.Equal(v, s2) || !sharesPayload(v, last) || cap(v) != len(v) {
		t.Fatalf("the restored value (cap %d) does not share the payload argument's memory", cap(v))
	}
	// More requests on the connection leave the value alone.
	r.send("SET x " + string(bytes.Repeat([]byte("y"), 40000)) + "\r\nPING\r\n")
	r.expect("", "+OK")
	r.expect("", "+PONG")
	if rc := ts.client(t); rc.Get(ctx(t), "big").Val() != string(s2) {
		t.Fatal("the value changed after more requests")
	}
	// A small string is copied.
	small := bigString(1000, 3)
	r.send(string(resp.AppendCommand(nil, []byte("RESTORE"), []byte("sm"), []byte("0"), rawPayload(small))))
	r.expect("", "+OK")
	if v := entryStr(t, ts, "sm"); !bytes.Equal(v, small) || sharesPayload(v, payloads()[3]) {
		t.Fatal("a 1000-byte string shares the payload")
	}
}

// TestRestoreBigInMulti: RESTORE queued in MULTI runs inside EXEC (its
// decoding under the locks, on the queue's copy, the value copied).
func TestRestoreBigInMulti(t *testing.T) {
	ts := startServer(t)
	payloads := captureRestores(t)
	s := bigString(300<<10, 4)
	p := rawPayload(s)
	r := ts.raw(t)
	r.expect("MULTI\r\n", "+OK")
	r.send(string(resp.AppendCommand(nil, []byte("RESTORE"), []byte("m"), []byte("0"), p)))
	r.expect("", "+QUEUED")
	r.expect("GET m\r\n", "+QUEUED")
	r.send("EXEC\r\n")
	if got := r.readReply(); got != "*2" {
		t.Fatalf("EXEC: %q", got)
	}
	if got := r.readReply(); got != "+OK" {
		t.Fatalf("RESTORE in EXEC: %q", got)
	}
	if got := r.readReply(); got != string(s) {
		t.Fatalf("GET in EXEC: %d bytes", len(got))
	}
	if p := payloads(); len(p) != 1 || sharesPayload(entryStr(t, ts, "m"), p[0]) {
		t.Fatal("RESTORE in EXEC kept the queued payload's memory")
	}
}

// TestRestoreErrorPrecedence: Redis's order of RESTORE's errors (option,
// BUSYKEY, TTL, payload), for small payloads and big ones (decoded before
// the lock), plain and inside MULTI/EXEC.
func TestRestoreErrorPrecedence(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	rc.Set(ctx(t), "have", "x", 0)
	for _, size := range []int{5, 100 << 10} {
		good := rawPayload(bigString(size, 5))
		badSum := bytes.Clone(good)
		badSum[len(badSum)-1] ^= 1
		// A checksum that matches a body that does not decode.
		body := append([]byte{rdb.TypeString, 0x80, 0, 0x10, 0, 0}, bigString(size, 6)...)
		badBody := binary2payload(body)
		cases := []struct {
			args []string
			want string
		}{
			{[]string{"have", "-1", string(badSum), "FOO"}, "-ERR syntax error"},
			{[]string{"have", "-1", string(badSum)}, "-BUSYKEY Target key name already exists."},
			{[]string{"have", "abc", string(good)}, "-BUSYKEY Target key name already exists."},
			{[]string{"new", "-1", string(badSum)}, "-ERR Invalid TTL value, must be >= 0"},
			{[]string{"new", "abc", string(badSum)}, "-ERR value is not an integer or out of range"},
			{[]string{"new", "0", string(badSum)}, "-ERR DUMP payload version or checksum are wrong"},
			{[]string{"new", "0", string(badBody)}, "-ERR Bad data format"},
			{[]string{"new", "0", string(badSum), "IDLETIME", "-1"}, "-ERR Invalid IDLETIME value, must be >= 0"},
			{[]string{"have", "0", string(good), "REPLACE"}, "+OK"},
			{[]string{"new", "0", string(good)}, "+OK"},
		}
		for _, multi := range []bool{false, true} {
			r := ts.raw(t)
			for _, tc := range cases {
				rc.Del(ctx(t), "new")
				rc.Set(ctx(t), "have", "x", 0)
				args := [][]byte{[]byte("RESTORE")}
				for _, a := range tc.args {
					args = append(args, []byte(a))
				}
				if multi {
					r.expect("MULTI\r\n", "+OK")
					r.send(string(resp.AppendCommand(nil, args...)))
					r.expect("", "+QUEUED")
					r.send("EXEC\r\n")
					if got := r.readReply(); got != "*1" {
						t.Fatalf("EXEC: %q", got)
					}
				} else {
					r.send(string(resp.AppendCommand(nil, args...)))
				}
				if got := r.readReply(); got != tc.want {
					t.Fatalf("size %d, multi %v, RESTORE %.30q...: %q, want %q", size, multi, tc.args, got, tc.want)
				}
			}
		}
	}
}

// binary2payload wraps an RDB value body in a DUMP footer.
func binary2payload(body []byte) []byte {
	p := append(bytes.Clone(body), byte(rdb.Version), byte(rdb.Version>>8))
	return append(p, crcLE(p)...)
}

// TestRestoreDecodesOutsideTheShardLock holds a RESTORE of a big payload
// in its decoding (restoreDecodeHook) and reads another key of the same
// shard meanwhile: the GET is served while the RESTORE is still decoding,
// so the decoding holds no shard lock.
func TestRestoreDecodesOutsideTheShardLock(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	if err := rc.Set(ctx(t), "{tag}other", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if consistent.KeySlot("{tag}other") != consistent.KeySlot("{tag}big") {
		t.Fatal("the keys are not in one slot")
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := func([]byte) {
		close(started)
		<-release
	}
	restoreDecodeHook.Store(&h)
	t.Cleanup(func() { restoreDecodeHook.Store(nil) })
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	s := bigString(2<<20, 7)
	r := ts.raw(t)
	go func() {
		_, _ = r.nc.Write(resp.AppendCommand(nil, []byte("RESTORE"), []byte("{tag}big"), []byte("0"), rawPayload(s)))
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the RESTORE never started decoding")
	}
	// The RESTORE is inside its decoding until release: a GET of the same
	// shard must be answered now.
	got := make(chan string, 1)
	go func() {
		v, err := rc.Get(ctx(t), "{tag}other").Result()
		got <- fmt.Sprint(v, err)
	}()
	select {
	case v := <-got:
		if v != "v<nil>" {
			t.Fatalf("GET: %s", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a GET of the same shard waited for the decoding RESTORE")
	}
	close(release)
	released = true
	if reply := r.readReply(); reply != "+OK" {
		t.Fatalf("RESTORE: %q", reply)
	}
	if rc.Get(ctx(t), "{tag}big").Val() != string(s) {
		t.Fatal("restored value differs")
	}
}

// TestRestoreBigPropagated: a big RESTORE reaches a replica intact, with
// a relative TTL (propagated as ABSTTL) and without one, and the replica
// forwards it as read to its own replica.
func TestRestoreBigPropagated(t *testing.T) {
	master, replica, mc, rc := linkedPair(t)
	sub := replicaOfAddr(t, replica.addr)
	waitLinkUp(t, sub)
	s1, s2 := bigString(1<<20, 8), bigString(600<<10, 9)
	r := master.raw(t)
	r.send(string(resp.AppendCommand(nil, []byte("RESTORE"), []byte("p1"), []byte("0"), rawPayload(s1))))
	r.expect("", "+OK")
	r.send(string(resp.AppendCommand(nil, []byte("RESTORE"), []byte("p2"), []byte("3600000"), rawPayload(s2))))
	r.expect("", "+OK")
	testutil.WaitFor(t, 15*time.Second, "the replica to have both keys", func() bool {
		return rc.Exists(ctx(t), "p1", "p2").Val() == 2
	})
	if rc.Get(ctx(t), "p1").Val() != string(s1) || rc.Get(ctx(t), "p2").Val() != string(s2) {
		t.Fatal("the replica's values differ")
	}
	if ttl := rc.PTTL(ctx(t), "p2").Val(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Fatalf("replica's TTL %v", ttl)
	}
	if mc.Get(ctx(t), "p1").Val() != string(s1) {
		t.Fatal("the master's value differs")
	}
	testutil.WaitFor(t, 15*time.Second, "the sub-replica to have both keys", func() bool {
		return sub.Exists(ctx(t), "p1", "p2").Val() == 2
	})
	if sub.Get(ctx(t), "p1").Val() != string(s1) || sub.Get(ctx(t), "p2").Val() != string(s2) {
		t.Fatal("the sub-replica's values differ")
	}
}

// TestRestoreBigAOF: a big RESTORE is in the AOF intact: a restart loads
// the same bytes.
func TestRestoreBigAOF(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir, "appendonly", "yes")
	s := bigString(1<<20, 10)
	r := a.raw(t)
	r.send(string(resp.AppendCommand(nil, []byte("RESTORE"), []byte("a"), []byte("3600000"), rawPayload(s))))
	r.expect("", "+OK")
	r.send(string(resp.AppendCommand(nil, []byte("RESTORE"), []byte("b"), []byte("0"), rawPayload(s[:500<<10]))))
	r.expect("", "+OK")
	stopServer(t, a)
	b := startServerIn(t, dir, "appendonly", "yes")
	bc := b.client(t)
	if bc.Get(ctx(t), "a").Val() != string(s) || bc.Get(ctx(t), "b").Val() != string(s[:500<<10]) {
		t.Fatal("values loaded from the AOF differ")
	}
}

// TestBigArgumentsStoredIntact pipelines, on one connection, writes of
// distinct 40 KiB values with the commands that store their arguments:
// big bulks have buffers of their own that the reader reuses once the
// command kept nothing (resp.Reader.Recycle), so a command that stored
// an argument without copying it would read back another value.
func TestBigArgumentsStoredIntact(t *testing.T) {
	ts := startServer(t)
	const n = 6
	vals := make([][]byte, 0, 16*n)
	val := func() []byte {
		v := bigString(40<<10, uint64(len(vals)+100))
		vals = append(vals, v)
		return v
	}
	b := func(s string) []byte { return []byte(s) }
	var cmds [][][]byte
	for i := 0; i < n; i++ {
		k := func(p string) []byte { return b(fmt.Sprintf("%s:%d", p, i)) }
		cmds = append(cmds,
			[][]byte{b("SET"), k("set"), val()},
			[][]byte{b("MSET"), k("mset1"), val(), k("mset2"), val()},
			[][]byte{b("SETEX"), k("setex"), b("1000"), val()},
			[][]byte{b("APPEND"), k("append"), val()},
			[][]byte{b("SETRANGE"), k("setrange"), b("0"), val()},
			[][]byte{b("HSET"), k("hash"), b("f"), val()},
			[][]byte{b("RPUSH"), k("list"), val(), val()},
			[][]byte{b("LSET"), k("list"), b("0"), val()},
			[][]byte{b("SADD"), k("set2"), val()},
			[][]byte{b("ZADD"), k("zset"), b("1"), val()},
			[][]byte{b("XADD"), k("stream"), b("1-1"), b("f"), val()},
		)
	}
	var in []byte
	for _, c := range cmds {
		in = resp.AppendCommand(in, c...)
	}
	r := ts.raw(t)
	go func() { _, _ = r.nc.Write(in) }()
	for range cmds {
		if reply := r.readReply(); reply[0] == '-' {
			t.Fatalf("reply %q", reply)
		}
	}
	rc := ts.client(t)
	c := ctx(t)
	j := 0
	next := func() string { v := vals[j]; j++; return string(v) }
	check := func(what, got string) {
		t.Helper()
		if want := next(); got != want {
			t.Fatalf("%s: %d bytes that differ from the value written", what, len(got))
		}
	}
	for i := 0; i < n; i++ {
		k := func(p string) string { return fmt.Sprintf("%s:%d", p, i) }
		check("SET", rc.Get(c, k("set")).Val())
		check("MSET 1", rc.Get(c, k("mset1")).Val())
		check("MSET 2", rc.Get(c, k("mset2")).Val())
		check("SETEX", rc.Get(c, k("setex")).Val())
		check("APPEND", rc.Get(c, k("append")).Val())
		check("SETRANGE", rc.Get(c, k("setrange")).Val())
		check("HSET", rc.HGet(c, k("hash"), "f").Val())
		l := rc.LRange(c, k("list"), 0, -1).Val()
		next() // replaced by LSET
		check("RPUSH", l[1])
		check("LSET", l[0])
		check("SADD", rc.SMembers(c, k("set2")).Val()[0])
		check("ZADD", rc.ZRange(c, k("zset"), 0, -1).Val()[0])
		check("XADD", fmt.Sprint(rc.XRange(c, k("stream"), "-", "+").Val()[0].Values["f"]))
	}
}
