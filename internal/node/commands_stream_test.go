package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shardis/shardis/internal/node/netio"
)

type xreadResult struct {
	res []redis.XStream
	err error
}

// xreadAsync runs an XREAD or XREADGROUP (args after the command name) on
// its own connection and delivers the result.
func xreadAsync(t *testing.T, ts *testServer, args ...any) <-chan xreadResult {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: ts.addr, DisableIdentity: true, MaxRetries: -1, PoolSize: 1, Protocol: 2})
	t.Cleanup(func() { rc.Close() })
	ch := make(chan xreadResult, 1)
	go func() {
		v, err := rc.Do(ctx(t), args...).Result()
		if err != nil {
			ch <- xreadResult{nil, err}
			return
		}
		ch <- xreadResult{parseXStreams(v), nil}
	}()
	return ch
}

// parseXStreams turns a RESP2 XREAD reply into streams.
func parseXStreams(v any) []redis.XStream {
	var out []redis.XStream
	for _, s := range v.([]any) {
		sl := s.([]any)
		st := redis.XStream{Stream: sl[0].(string)}
		for _, m := range sl[1].([]any) {
			ml := m.([]any)
			msg := redis.XMessage{ID: ml[0].(string), Values: map[string]any{}}
			if fv, ok := ml[1].([]any); ok {
				for i := 0; i+1 < len(fv); i += 2 {
					msg.Values[fv[i].(string)] = fv[i+1]
				}
			}
			st.Messages = append(st.Messages, msg)
		}
		out = append(out, st)
	}
	return out
}

func recvXRead(t *testing.T, ch <-chan xreadResult) xreadResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("blocked reader not served")
		return xreadResult{}
	}
}

func ids(st []redis.XStream) string {
	var b []string
	for _, s := range st {
		for _, m := range s.Messages {
			b = append(b, s.Stream+"/"+m.ID)
		}
	}
	return strings.Join(b, ",")
}

func TestStreamBasics(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc := ts.client(t, proto)
			c := ctx(t)
			rc.FlushAll(c)
			id, err := rc.XAdd(c, &redis.XAddArgs{Stream: "s", Values: []any{"a", "1"}}).Result()
			if err != nil || !strings.HasSuffix(id, "-0") {
				t.Fatalf("XADD * = %q, %v", id, err)
			}
			if id2 := rc.XAdd(c, &redis.XAddArgs{Stream: "s", Values: []any{"a", "2"}}).Val(); id2 <= id && len(id2) == len(id) {
				t.Fatalf("second ID %s not after %s", id2, id)
			}
			if n := rc.XLen(c, "s").Val(); n != 2 {
				t.Fatalf("XLEN = %d", n)
			}
			msgs := rc.XRange(c, "s", "-", "+").Val()
			if len(msgs) != 2 || msgs[0].Values["a"] != "1" || msgs[1].Values["a"] != "2" {
				t.Fatalf("XRANGE = %v", msgs)
			}
			if rev := rc.XRevRangeN(c, "s", "+", "-", 1).Val(); len(rev) != 1 || rev[0].ID != msgs[1].ID {
				t.Fatalf("XREVRANGE COUNT 1 = %v", rev)
			}
			res := rc.XRead(c, &redis.XReadArgs{Streams: []string{"s", "0"}}).Val()
			if len(res) != 1 || res[0].Stream != "s" || len(res[0].Messages) != 2 {
				t.Fatalf("XREAD = %v", res)
			}
			if typ := rc.Type(c, "s").Val(); typ != "stream" {
				t.Fatalf("TYPE = %s", typ)
			}
			if enc := rc.ObjectEncoding(c, "s").Val(); enc != "stream" {
				t.Fatalf("OBJECT ENCODING = %s", enc)
			}
			if m := rc.MemoryUsage(c, "s").Val(); m < 50 || m > 10000 {
				t.Fatalf("MEMORY USAGE = %d", m)
			}
		})
	}
}

// TestStreamReadWithoutBlockIsPlain: XREAD and XREADGROUP without BLOCK
// never block, so they run as plain commands (command.mayBlock): they
// leave the sequencer off, as a GET does; the first read with BLOCK
// turns it on, as any blocking command.
func TestStreamReadWithoutBlockIsPlain(t *testing.T) {
	if !netio.StampsSupported {
		t.Skip("no receive timestamps: the sequencer stays off")
	}
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "1-0", Values: []any{"f", "v"}})
	if err := rc.XGroupCreate(c, "s", "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if res := rc.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Count: 10, Block: -1}).Val(); len(res) != 1 || len(res[0].Messages) != 1 {
		t.Fatalf("XREADGROUP = %v", res)
	}
	if n := rc.XAck(c, "s", "g", "1-0").Val(); n != 1 {
		t.Fatalf("XACK = %d", n)
	}
	if res := rc.XRead(c, &redis.XReadArgs{Streams: []string{"s", "0"}, Block: -1}).Val(); len(res) != 1 {
		t.Fatalf("XREAD = %v", res)
	}
	if ts.srv.seq.On() {
		t.Fatal("the sequencer is on after reads without BLOCK")
	}
	// With BLOCK (and data there, so it does not wait) the read is a
	// blocking command's call.
	if res := rc.XRead(c, &redis.XReadArgs{Streams: []string{"s", "0"}, Block: time.Millisecond}).Val(); len(res) != 1 {
		t.Fatalf("XREAD BLOCK = %v", res)
	}
	if !ts.srv.seq.On() {
		t.Fatal("the sequencer is off after XREAD BLOCK")
	}
}

// TestStreamApproxTrimWholeNodes: "~" removes only whole nodes of
// stream-node-max-entries entries, as redis-server does.
func TestStreamApproxTrimWholeNodes(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	p := rc.Pipeline()
	for i := 1; i <= 1000; i++ {
		p.XAdd(c, &redis.XAddArgs{Stream: "s", ID: fmt.Sprintf("%d-0", i), Values: []any{"f", i}})
	}
	if _, err := p.Exec(c); err != nil {
		t.Fatal(err)
	}
	if n := rc.XTrimMaxLenApprox(c, "s", 550, 0).Val(); n != 400 {
		t.Fatalf("XTRIM MAXLEN ~ 550 removed %d, want 400 (4 nodes of 100)", n)
	}
	if n := rc.XTrimMinIDApprox(c, "s", "750-0", 0).Val(); n != 300 {
		t.Fatalf("XTRIM MINID ~ 750-0 removed %d, want 300 (the nodes ending before 750)", n)
	}
	if n := rc.XTrimMaxLen(c, "s", 250).Val(); n != 50 {
		t.Fatalf("XTRIM MAXLEN 250 removed %d, want 50", n)
	}
	if first := rc.XRangeN(c, "s", "-", "+", 1).Val(); len(first) != 1 || first[0].ID != "751-0" {
		t.Fatalf("first entry %v", first)
	}
	// The byte limit starts nodes too: 4096 bytes of listpack.
	big := strings.Repeat("x", 1000)
	for i := 1; i <= 10; i++ {
		rc.XAdd(c, &redis.XAddArgs{Stream: "b", ID: fmt.Sprintf("%d-0", i), Values: []any{"f", big}})
	}
	if n := rc.XTrimMaxLenApprox(c, "b", 1, 0).Val(); n != 8 {
		t.Fatalf("XTRIM of 1000-byte entries removed %d, want 8 (redis-server's nodes of 4, 4 and 2 entries)", n)
	}
}

// TestStreamBlockingReaders: blocked XREADs are all served by one XADD, in
// the order they blocked, a reader waiting for a later ID not holding back
// the others; XREADGROUP readers of one group share the new entries.
func TestStreamBlockingReaders(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "1-0", Values: []any{"f", "1"}})
	later := xreadAsync(t, ts, "XREAD", "BLOCK", "0", "STREAMS", "s", "5-0")
	waitBlocked(t, ts, 1)
	a := xreadAsync(t, ts, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	waitBlocked(t, ts, 2)
	b := xreadAsync(t, ts, "XREAD", "BLOCK", "0", "STREAMS", "other", "s", "$", "$")
	waitBlocked(t, ts, 3)
	rc.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "2-0", Values: []any{"f", "2"}})
	for _, ch := range []<-chan xreadResult{a, b} {
		if r := recvXRead(t, ch); r.err != nil || ids(r.res) != "s/2-0" {
			t.Fatalf("reader got %v %v", r.res, r.err)
		}
	}
	waitBlocked(t, ts, 1) // the reader of IDs after 5-0 still waits
	rc.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "6-0", Values: []any{"f", "6"}})
	if r := recvXRead(t, later); r.err != nil || ids(r.res) != "s/6-0" {
		t.Fatalf("later reader got %v %v", r.res, r.err)
	}

	rc.XGroupCreate(c, "s", "g", "$")
	r1 := xreadAsync(t, ts, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
	waitBlocked(t, ts, 1)
	r2 := xreadAsync(t, ts, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
	waitBlocked(t, ts, 2)
	p := rc.TxPipeline()
	p.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "7-0", Values: []any{"f", "7"}})
	p.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "8-0", Values: []any{"f", "8"}})
	if _, err := p.Exec(c); err != nil {
		t.Fatal(err)
	}
	if r := recvXRead(t, r1); r.err != nil || ids(r.res) != "s/7-0" {
		t.Fatalf("first group reader got %v %v", r.res, r.err)
	}
	if r := recvXRead(t, r2); r.err != nil || ids(r.res) != "s/8-0" {
		t.Fatalf("second group reader got %v %v", r.res, r.err)
	}
	if pend := rc.XPending(c, "s", "g").Val(); pend.Count != 2 || pend.Consumers["c1"] != 1 || pend.Consumers["c2"] != 1 {
		t.Fatalf("XPENDING = %+v", pend)
	}
}

// TestStreamBlockingGroupErrors: a blocked XREADGROUP is unblocked with an
// error when its key is deleted, overwritten or flushed, or its group is
// destroyed; inside MULTI, BLOCK does not block.
func TestStreamBlockingGroupErrors(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	cases := []struct {
		name, want string
		do         func()
	}{
		{"DEL", "UNBLOCKED the stream key no longer exists", func() { rc.Del(c, "s") }},
		{"SET", "UNBLOCKED the stream key no longer exists", func() { rc.Set(c, "s", "x", 0) }},
		{"FLUSHALL", "UNBLOCKED the stream key no longer exists", func() { rc.FlushAll(c) }},
		{"DESTROY", "NOGROUP the consumer group this client was blocked on no longer exists", func() { rc.XGroupDestroy(c, "s", "g") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc.Del(c, "s")
			rc.XGroupCreateMkStream(c, "s", "g", "$")
			ch := xreadAsync(t, ts, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
			waitBlocked(t, ts, 1)
			tc.do()
			if r := recvXRead(t, ch); r.err == nil || r.err.Error() != tc.want {
				t.Fatalf("got %v %v, want %q", r.res, r.err, tc.want)
			}
		})
	}
	t.Run("MULTI", func(t *testing.T) {
		p := rc.TxPipeline()
		p.Do(c, "XREAD", "BLOCK", "0", "STREAMS", "nokey", "$")
		cmds, _ := p.Exec(c)
		if err := cmds[0].Err(); err != redis.Nil {
			t.Fatalf("XREAD BLOCK in MULTI: %v", err)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		start := time.Now()
		if err := rc.Do(c, "XREAD", "BLOCK", "50", "STREAMS", "nokey", "$").Err(); err != redis.Nil {
			t.Fatalf("XREAD BLOCK 50: %v", err)
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("returned after %v", d)
		}
	})
}

// TestStreamPropagation: replicas and the AOF receive what Redis sends:
// XADD with the generated ID, approximate trims made exact, XREADGROUP as
// XCLAIM per delivered entry (and XGROUP SETID / CREATECONSUMER with
// NOACK), nothing for a read of the consumer's history.
func TestStreamPropagation(t *testing.T) {
	ts := startServer(t, "stream-node-max-entries", "2")
	p := ts.capturePropagation()
	rc := ts.client(t)
	c := ctx(t)
	rc.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "1-*", Values: []any{"f", "v"}})
	rc.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "1-5", Values: []any{"f", "v"}})
	rc.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "2-0", MaxLen: 1, Approx: true, Values: []any{"f", "v"}})
	rc.XGroupCreate(c, "s", "g", "0")
	rc.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "alice", Streams: []string{"s", ">"}})
	rc.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "alice", Streams: []string{"s", "0"}})
	rc.XAdd(c, &redis.XAddArgs{Stream: "s", ID: "3-0", Values: []any{"f", "v"}})
	rc.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "bob", Streams: []string{"s", ">"}, NoAck: true})
	p.mu.Lock()
	lines := append([]string(nil), p.lines...)
	p.mu.Unlock()
	for i, l := range lines {
		// Delivery times are the clock's: compare the rest.
		if f := strings.Fields(l); len(f) > 7 && f[0] == "XCLAIM" {
			f[7] = "T"
			lines[i] = strings.Join(f, " ")
		}
	}
	want := []string{
		"xadd s 1-0 f v", // the generated ID replaces 1-*
		"xadd s 1-5 f v",
		"xadd s maxlen = 1 2-0 f v", // ~ made exact
		"xgroup create s g 0",
		"XCLAIM s g alice 0 2-0 TIME T RETRYCOUNT 1 FORCE JUSTID LASTID 2-0",
		"xadd s 3-0 f v",
		"XGROUP CREATECONSUMER s g bob",
		"XGROUP SETID s g 3-0 ENTRIESREAD 4",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("propagated:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestStreamAOFRewrite: a rewritten AOF (commands, no RDB preamble)
// rebuilds streams with their groups and counters (the consumers' seen
// times are the load's, as with redis-server).
func TestStreamAOFRewrite(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir, "appendonly", "yes", "aof-use-rdb-preamble", "no", "enable-debug-command", "yes")
	ac := a.client(t, 2)
	writeStreams(t, ac, "a:")
	before := map[string]string{}
	for _, k := range streamKeys(t, ac) {
		before[k] = streamState(t, ac, k, false)
	}
	c := ctx(t)
	if err := ac.BgRewriteAOF(c).Err(); err != nil {
		t.Fatal(err)
	}
	waitRewrite(t, ac)
	if err := ac.Do(c, "DEBUG", "LOADAOF").Err(); err != nil {
		t.Fatal(err)
	}
	for k, want := range before {
		if got := streamState(t, ac, k, false); got != want {
			t.Fatalf("%s after the rewritten AOF:\n%s\nwant\n%s", k, got, want)
		}
	}
}

// waitRewrite waits for a background AOF rewrite to end.
func waitRewrite(t *testing.T, rc *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info := rc.Info(ctx(t), "persistence").Val()
		if strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("AOF rewrite did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
