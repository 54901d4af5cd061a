package node

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// txConn is a raw connection that queues a transaction, then sends EXEC
// and reads EXEC's reply on a goroutine.
type txConn struct {
	c     *Client // the server's side of the connection
	r     *rawConn
	reply chan string
}

// queueTx WATCHes the keys, if any, sends MULTI and queues the commands
// (inline, one a line) on a new connection.
func queueTx(t *testing.T, ts *testServer, watch []string, cmds ...string) *txConn {
	t.Helper()
	r := ts.raw(t)
	r.send("CLIENT ID\r\n")
	id, err := strconv.ParseInt(strings.TrimPrefix(r.readLine(), ":"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	e := &txConn{c: ts.srv.lookupClient(id), r: r, reply: make(chan string, 1)}
	if e.c == nil {
		t.Fatalf("client %d not found", id)
	}
	if len(watch) > 0 {
		r.expect("WATCH "+strings.Join(watch, " ")+"\r\n", "+OK")
	}
	r.expect("MULTI\r\n", "+OK")
	for _, cmd := range cmds {
		r.expect(cmd+"\r\n", "+QUEUED")
	}
	return e
}

// exec sends EXEC; its reply arrives on e.reply.
func (e *txConn) exec(t *testing.T) *txConn {
	t.Helper()
	_ = e.r.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	e.r.send("EXEC\r\n")
	go func() {
		b, err := readReplyRaw(e.r.br)
		if err != nil {
			b = append(b, "read error: "+err.Error()...)
		}
		e.reply <- string(b)
	}()
	return e
}

// startExec queues the commands and sends EXEC.
func startExec(t *testing.T, ts *testServer, cmds ...string) *txConn {
	t.Helper()
	return queueTx(t, ts, nil, cmds...).exec(t)
}

// replOffset is the master_repl_offset an INFO replication text holds.
func replOffset(t *testing.T, info string) int64 {
	t.Helper()
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "master_repl_offset:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no master_repl_offset in %q", info)
	return 0
}

// withReplica connects a replica to ts, so that the master's
// master_repl_offset moves with its writes.
func withReplica(t *testing.T, ts *testServer) {
	t.Helper()
	rep := startServer(t)
	host, port, _ := strings.Cut(ts.addr, ":")
	if err := rep.client(t).Do(ctx(t), "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	rc := ts.client(t)
	testutil.WaitFor(t, 10*time.Second, "the replica online", func() bool {
		return strings.Contains(rc.Info(ctx(t), "replication").Val(), "connected_slaves:1")
	})
}

// TestClientPauseInMultiWaitsForWritesInFlight: MULTI / CLIENT PAUSE
// WRITE / INFO replication / EXEC, the sequence Redis's documentation
// gives for reading a final offset, waits for a write past the pause
// check (here waiting for its key's shard lock, which the test holds)
// before the transaction runs: the INFO in EXEC's reply counts the write,
// as it does in Redis, which runs one command at a time.
func TestClientPauseInMultiWaitsForWritesInFlight(t *testing.T) {
	ts := startServer(t)
	s := ts.srv
	rc := ts.client(t)
	withReplica(t, ts)
	release := holdKeyShard(t, s, "k")
	before := replOffset(t, rc.Info(ctx(t), "replication").Val())
	setDone := make(chan error, 1)
	wc, wctx := ts.client(t), ctx(t)
	go func() { setDone <- wc.Set(wctx, "k", "v", 0).Err() }()
	testutil.WaitFor(t, 10*time.Second, "the SET in flight", func() bool { return s.inflightWrites.Load() == 1 })

	e := startExec(t, ts, "CLIENT PAUSE 20000 WRITE", "INFO replication")
	// Either EXEC replies (with the SET still waiting for its lock: the
	// bug) or it waits for the write (parked while it does).
	var early string
	testutil.WaitFor(t, 10*time.Second, "EXEC to reply or wait for the write", func() bool {
		select {
		case early = <-e.reply:
			return true
		default:
			return e.c.hasFlag(clientParked)
		}
	})
	if early != "" {
		t.Fatalf("EXEC replied %q while a write was in flight", early)
	}
	release()
	var reply string
	select {
	case reply = <-e.reply:
	case <-time.After(10 * time.Second):
		t.Fatal("EXEC did not reply after the write ended")
	}
	if !strings.HasPrefix(reply, "*2\r\n+OK\r\n$") {
		t.Fatalf("EXEC: %q", reply)
	}
	if got := replOffset(t, reply); got <= before {
		t.Fatalf("master_repl_offset %d in the transaction, %d before the SET: the write is not in it", got, before)
	}
	if err := <-setDone; err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "no write in flight", func() bool { return s.inflightWrites.Load() == 0 })
}

// TestClientPauseWaitsForExecInFlight: an EXEC whose transaction writes
// is a write in flight: CLIENT PAUSE waits for it (here waiting for its
// key's shard lock, which the test holds), and the offset it leaves
// counts the transaction.
func TestClientPauseWaitsForExecInFlight(t *testing.T) {
	ts := startServer(t)
	s := ts.srv
	rc := ts.client(t)
	withReplica(t, ts)
	release := holdKeyShard(t, s, "k")
	before := replOffset(t, rc.Info(ctx(t), "replication").Val())
	e := startExec(t, ts, "SET k v")
	testutil.WaitFor(t, 10*time.Second, "the EXEC in flight", func() bool { return s.inflightWrites.Load() == 1 })

	p := startPause(t, ts, "20000 WRITE")
	var early string
	testutil.WaitFor(t, 10*time.Second, "CLIENT PAUSE to reply or wait for the EXEC", func() bool {
		select {
		case early = <-p.reply:
			return true
		default:
			return p.c.hasFlag(clientParked)
		}
	})
	if early != "" {
		t.Fatalf("CLIENT PAUSE replied %q while an EXEC was in flight", early)
	}
	release()
	select {
	case r := <-p.reply:
		if r != "+OK" {
			t.Fatalf("CLIENT PAUSE: %q", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CLIENT PAUSE did not reply after the EXEC ended")
	}
	if after := replOffset(t, rc.Info(ctx(t), "replication").Val()); after <= before {
		t.Fatalf("master_repl_offset %d when CLIENT PAUSE replied, %d before the EXEC: the transaction is not in it", after, before)
	}
	if r := <-e.reply; r != "*1\r\n+OK\r\n" {
		t.Fatalf("EXEC: %q", r)
	}
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestPausingExecsOneAfterTheOther: two EXECs that write and pause, both
// past the pause check together (here both waiting in the sequencer
// behind a write the test holds on its shard lock), do not wait for each
// other's writes: one runs, and its pause holds the other until CLIENT
// UNPAUSE, as Redis, which runs them one after the other, would.
func TestPausingExecsOneAfterTheOther(t *testing.T) {
	ts := startServer(t)
	s := ts.srv
	rc := ts.client(t)
	// A blocking command turns the sequencer on (sequence.go); EXEC is
	// sequenced.
	if err := rc.Do(ctx(t), "BLPOP", "nothing", "0.01").Err(); err != redis.Nil {
		t.Fatalf("BLPOP on an empty list: %v", err)
	}
	if !s.seq.On() {
		t.Fatal("the sequencer is off after a blocking command")
	}
	release := holdKeyShard(t, s, "x")
	setDone := make(chan error, 1)
	wc, wctx := ts.client(t), ctx(t)
	go func() { setDone <- wc.Set(wctx, "x", "1", 0).Err() }()
	testutil.WaitFor(t, 10*time.Second, "the SET in flight", func() bool { return s.inflightWrites.Load() == 1 })
	a := startExec(t, ts, "SET a 1", "CLIENT PAUSE 20000 WRITE")
	testutil.WaitFor(t, 10*time.Second, "the first EXEC in flight", func() bool { return s.inflightWrites.Load() == 2 })
	b := startExec(t, ts, "SET b 1", "CLIENT PAUSE 20000 WRITE")
	testutil.WaitFor(t, 10*time.Second, "the second EXEC in flight", func() bool { return s.inflightWrites.Load() == 3 })
	release()
	if err := <-setDone; err != nil {
		t.Fatalf("SET: %v", err)
	}

	want := "*2\r\n+OK\r\n+OK\r\n"
	var second *txConn
	select {
	case r := <-a.reply:
		second = b
		if r != want {
			t.Fatalf("first EXEC: %q", r)
		}
	case r := <-b.reply:
		second = a
		if r != want {
			t.Fatalf("second EXEC, replying first: %q", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("neither EXEC replied: each waits for the other's writes")
	}
	testutil.WaitFor(t, 10*time.Second, "the other EXEC held by the pause", func() bool { return s.pause.Waiting() == 1 })
	select {
	case r := <-second.reply:
		t.Fatalf("the other EXEC ran during the first one's pause: %q", r)
	default:
	}
	if n := s.inflightWrites.Load(); n != 0 {
		t.Fatalf("%d writes in flight with the other EXEC held", n)
	}
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-second.reply:
		if r != want {
			t.Fatalf("the other EXEC: %q", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other EXEC did not run after CLIENT UNPAUSE")
	}
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestAbortedExecUndoesItsPause: a WATCHed key written by a write in
// flight, which the EXEC's pause waits for, aborts the transaction; its
// CLIENT PAUSE never ran, so no pause is left.
func TestAbortedExecUndoesItsPause(t *testing.T) {
	ts := startServer(t)
	s := ts.srv
	rc := ts.client(t)
	e := queueTx(t, ts, []string{"k"}, "CLIENT PAUSE 20000 WRITE")
	release := holdKeyShard(t, s, "k")
	setDone := make(chan error, 1)
	wc, wctx := ts.client(t), ctx(t)
	go func() { setDone <- wc.Set(wctx, "k", "v", 0).Err() }()
	testutil.WaitFor(t, 10*time.Second, "the SET in flight", func() bool { return s.inflightWrites.Load() == 1 })
	e.exec(t)
	testutil.WaitFor(t, 10*time.Second, "the EXEC waiting for the write", func() bool { return e.c.hasFlag(clientParked) })
	if !s.pause.On() {
		t.Fatal("no pause while the EXEC waits for the write")
	}
	release()
	select {
	case r := <-e.reply:
		if r != "*-1\r\n" {
			t.Fatalf("EXEC: %q, want the null array of a WATCH abort", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("EXEC did not reply after the write ended")
	}
	if err := <-setDone; err != nil {
		t.Fatalf("SET: %v", err)
	}
	if s.pause.On() {
		t.Fatal("the aborted transaction's pause is still on")
	}
	if err := rc.Set(ctx(t), "k2", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestClientPauseWriteByDeclaredScriptFlags: CLIENT PAUSE WRITE holds a
// script by the flags it declares, as Redis's scriptFlagsToCmdFlags: a
// no-writes script (EVAL, EVALSHA, FCALL, and one queued in MULTI) runs,
// a script declaring flags without no-writes, or none at all (EVAL's own
// may-replicate flag), is held until CLIENT UNPAUSE.
func TestClientPauseWriteByDeclaredScriptFlags(t *testing.T) {
	ts := startServer(t)
	s := ts.srv
	rc := ts.client(t)
	c := ctx(t)
	const ro = "#!lua flags=no-writes\nreturn 'ro'"
	sha, err := rc.ScriptLoad(c, ro).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(c, "FUNCTION", "LOAD", "REPLACE", "#!lua name=pt\nredis.register_function{function_name='ptro', callback=function() return 'fro' end, flags={'no-writes'}}").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(c, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.pause.Unpause() })
	wc := ts.client(t)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"EVAL", ro, 0}, "ro"},
		{[]any{"EVALSHA", sha, 0}, "ro"},
		{[]any{"FCALL", "ptro", 0}, "fro"},
	} {
		got, err := wc.Do(c, tc.args...).Text()
		if err != nil || got != tc.want {
			t.Fatalf("%v under CLIENT PAUSE WRITE: %q, %v", tc.args[0], got, err)
		}
	}
	tx := queueTx(t, ts, nil, "EVALSHA "+sha+" 0").exec(t)
	select {
	case r := <-tx.reply:
		if r != "*1\r\n$2\r\nro\r\n" {
			t.Fatalf("EXEC of a no-writes script: %q", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("EXEC of a no-writes script held by CLIENT PAUSE WRITE")
	}

	held := make(chan string, 2)
	hc1, hc2 := ts.client(t), ts.client(t)
	go func() { held <- hc1.Eval(c, "#!lua\nreturn 'w'", nil).Val().(string) }()
	go func() { held <- hc2.Eval(c, "return 'compat'", nil).Val().(string) }()
	testutil.WaitFor(t, 10*time.Second, "both writing scripts held", func() bool { return s.pause.Waiting() == 2 })
	if err := rc.Do(c, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case v := <-held:
			got[v] = true
		case <-time.After(10 * time.Second):
			t.Fatal("a held script did not run after CLIENT UNPAUSE")
		}
	}
	if !got["w"] || !got["compat"] {
		t.Fatalf("scripts after UNPAUSE: %v", got)
	}
}
