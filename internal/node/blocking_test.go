package node

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitBlocked waits until n clients are blocked on keys.
func waitBlocked(t *testing.T, ts *testServer, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.srv.blockedOnKeys() != n {
		if time.Now().After(deadline) {
			t.Fatalf("blocked clients = %d, want %d", ts.srv.blockedOnKeys(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type popResult struct {
	vals []string
	err  error
}

// blpopAsync runs BLPOP on its own connection and delivers the result.
func blpopAsync(t *testing.T, ts *testServer, db int, keys ...string) <-chan popResult {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: ts.addr, DB: db, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
	t.Cleanup(func() { rc.Close() })
	ch := make(chan popResult, 1)
	go func() {
		v, err := rc.BLPop(ctx(t), 0, keys...).Result()
		ch <- popResult{v, err}
	}()
	return ch
}

func recvPop(t *testing.T, ch <-chan popResult) popResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("blocked client not served")
		return popResult{}
	}
}

func TestBlockingFIFO(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	var chans []<-chan popResult
	for i := 0; i < 4; i++ {
		chans = append(chans, blpopAsync(t, ts, 0, "q"))
		waitBlocked(t, ts, int64(i+1)) // fixes the blocking order
	}
	if err := rc.RPush(c, "q", "a", "b", "c").Err(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"a", "b", "c"} {
		r := recvPop(t, chans[i])
		if r.err != nil || !reflect.DeepEqual(r.vals, []string{"q", want}) {
			t.Fatalf("client %d got %v %v, want %s", i, r.vals, r.err, want)
		}
	}
	if rc.Exists(c, "q").Val() != 0 {
		t.Fatal("served list not removed")
	}
	waitBlocked(t, ts, 1)
	rc.LPush(c, "q", "d")
	if r := recvPop(t, chans[3]); r.err != nil || r.vals[1] != "d" {
		t.Fatalf("last client got %v %v", r.vals, r.err)
	}
	waitBlocked(t, ts, 0)
}

func TestBlockingTimeout(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		c := ctx(t)
		start := time.Now()
		err := rc.Do(c, "blpop", "none", "0.1").Err()
		if err != redis.Nil {
			t.Fatalf("BLPOP timeout: %v", err)
		}
		if d := time.Since(start); d < 90*time.Millisecond || d > 2*time.Second {
			t.Fatalf("BLPOP timed out after %v", d)
		}
		for _, args := range [][]any{
			{"blmove", "none", "dst", "LEFT", "LEFT", "0.05"},
			{"brpoplpush", "none", "dst", "0.05"},
			{"blmpop", "0.05", "2", "none", "none2", "left"},
			{"brpop", "none", "none2", "0.05"},
		} {
			if err := rc.Do(c, args...).Err(); err != redis.Nil {
				t.Fatalf("%v timeout: %v", args, err)
			}
		}
	}
	waitBlocked(t, ts, 0)
	// The raw replies: RESP2 null array, RESP3 null.
	r := ts.raw(t)
	r.expect("BRPOP none 0.01\r\n", "*-1")
	r.expect("BLMOVE none d LEFT RIGHT 0.01\r\n", "*-1")
}

func TestBlockingMultiExec(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	ch := blpopAsync(t, ts, 0, "list")
	waitBlocked(t, ts, 1)
	_, err := rc.TxPipelined(c, func(p redis.Pipeliner) error {
		p.LPush(c, "list", "a")
		p.LPush(c, "list", "b")
		p.LPush(c, "list", "c")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := recvPop(t, ch); r.err != nil || !reflect.DeepEqual(r.vals, []string{"list", "c"}) {
		t.Fatalf("got %v %v", r.vals, r.err)
	}
	v, err := rc.LRange(c, "list", 0, -1).Result()
	wantListElems(t, v, err, "b", "a")

	// LPUSH + DEL inside MULTI does not wake the client.
	rc.Del(c, "list")
	ch = blpopAsync(t, ts, 0, "list")
	waitBlocked(t, ts, 1)
	_, err = rc.TxPipelined(c, func(p redis.Pipeliner) error {
		p.LPush(c, "list", "a")
		p.Del(c, "list")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rc.LPush(c, "list", "b")
	if r := recvPop(t, ch); r.err != nil || r.vals[1] != "b" {
		t.Fatalf("got %v %v", r.vals, r.err)
	}

	// Inside MULTI a blocking command does not block.
	rc.RPush(c, "x", "1")
	cmds, err := rc.TxPipelined(c, func(p redis.Pipeliner) error {
		p.BLPop(c, 0, "x")
		p.BLPop(c, 0, "x")
		p.BRPopLPush(c, "x", "y", 0)
		return nil
	})
	if err != redis.Nil || len(cmds) != 3 {
		t.Fatalf("MULTI BLPOP: %v", err)
	}
	if v := cmds[0].(*redis.StringSliceCmd).Val(); !reflect.DeepEqual(v, []string{"x", "1"}) {
		t.Fatalf("first BLPOP in MULTI = %v", v)
	}
	if err := cmds[1].Err(); err != redis.Nil {
		t.Fatalf("second BLPOP in MULTI = %v", err)
	}
	if err := cmds[2].Err(); err != redis.Nil {
		t.Fatalf("BRPOPLPUSH in MULTI = %v", err)
	}
}

func TestBlockingAcrossDBs(t *testing.T) {
	ts := startServer(t)
	c := ctx(t)
	ch := blpopAsync(t, ts, 9, "k")
	waitBlocked(t, ts, 1)
	db0 := ts.client(t)
	db0.RPush(c, "k", "zero") // another database: must not serve
	select {
	case r := <-ch:
		t.Fatalf("served from db 0: %v", r)
	case <-time.After(50 * time.Millisecond):
	}
	db9 := redis.NewClient(&redis.Options{Addr: ts.addr, DB: 9, DisableIdentity: true})
	defer db9.Close()
	db9.RPush(c, "k", "nine")
	if r := recvPop(t, ch); r.err != nil || r.vals[1] != "nine" {
		t.Fatalf("got %v %v", r.vals, r.err)
	}
	if db0.LLen(c, "k").Val() != 1 {
		t.Fatal("db 0 list touched")
	}
}

func TestBlockingClientGone(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	// A client that hangs up while blocked is forgotten at once.
	r := ts.raw(t)
	r.send("BLPOP gone 0\r\n")
	waitBlocked(t, ts, 1)
	r.nc.Close()
	waitBlocked(t, ts, 0)
	rc.RPush(c, "gone", "x")
	if n := rc.LLen(c, "gone").Val(); n != 1 {
		t.Fatalf("element taken by a departed client: LLEN = %d", n)
	}
	// A client killed while blocked.
	r2 := ts.raw(t)
	r2.send("BLPOP gone2 0\r\n")
	waitBlocked(t, ts, 1)
	ts.srv.forEachClient(func(cl *Client) {
		if cl.hasFlag(clientBlocked) {
			cl.close()
		}
	})
	waitBlocked(t, ts, 0)
	rc.RPush(c, "gone2", "x")
	if n := rc.LLen(c, "gone2").Val(); n != 1 {
		t.Fatalf("element taken by a killed client: LLEN = %d", n)
	}
}

func TestBlockingUnblock(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.send("BLPOP l 0\r\n")
	waitBlocked(t, ts, 1)
	var id int64
	ts.srv.forEachClient(func(cl *Client) {
		if cl.hasFlag(clientBlocked) {
			id = cl.id
		}
	})
	if !ts.srv.unblockClient(id, false) {
		t.Fatal("unblockClient: not blocked")
	}
	if got := r.readLine(); got != "*-1" {
		t.Fatalf("unblocked reply %q", got)
	}
	r.send("BLMOVE l d LEFT LEFT 0\r\n")
	waitBlocked(t, ts, 1)
	ts.srv.unblockClient(id, true)
	if got := r.readLine(); got != "-UNBLOCKED client unblocked via CLIENT UNBLOCK" {
		t.Fatalf("unblocked reply %q", got)
	}
	waitBlocked(t, ts, 0)
	if ts.srv.unblockClient(id, false) {
		t.Fatal("unblockClient of a non-blocked client")
	}
	// Still usable afterwards.
	r.expect("RPUSH l a\r\n", ":1")
}

func TestBlockingMoveChains(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	move := func(src, dst string) <-chan popResult {
		cl := redis.NewClient(&redis.Options{Addr: ts.addr, DisableIdentity: true, PoolSize: 1})
		t.Cleanup(func() { cl.Close() })
		ch := make(chan popResult, 1)
		go func() {
			v, err := cl.BLMove(ctx(t), src, dst, "RIGHT", "LEFT", 0).Result()
			ch <- popResult{[]string{v}, err}
		}()
		return ch
	}
	t.Run("Linked", func(t *testing.T) {
		a := move("l1{t}", "l2{t}")
		waitBlocked(t, ts, 1)
		b := move("l2{t}", "l3{t}")
		waitBlocked(t, ts, 2)
		rc.RPush(c, "l1{t}", "foo")
		// Served before the pusher got its reply.
		if n := rc.Exists(c, "l1{t}", "l2{t}").Val(); n != 0 {
			t.Fatalf("intermediate lists exist: %d", n)
		}
		v, err := rc.LRange(c, "l3{t}", 0, -1).Result()
		wantListElems(t, v, err, "foo")
		for _, ch := range []<-chan popResult{a, b} {
			if r := recvPop(t, ch); r.err != nil || r.vals[0] != "foo" {
				t.Fatalf("BLMOVE got %v %v", r.vals, r.err)
			}
		}
	})
	t.Run("Circular", func(t *testing.T) {
		a := move("c1{t}", "c2{t}")
		waitBlocked(t, ts, 1)
		b := move("c2{t}", "c1{t}")
		waitBlocked(t, ts, 2)
		rc.RPush(c, "c1{t}", "foo")
		v, err := rc.LRange(c, "c1{t}", 0, -1).Result()
		wantListElems(t, v, err, "foo")
		recvPop(t, a)
		recvPop(t, b)
	})
	t.Run("CircularWithReader", func(t *testing.T) {
		// l1 -> l2 -> l1, and a BLPOP on l1 behind the first mover: the
		// element comes back to l1 after l1 was processed and must still
		// reach the reader.
		a := move("r1{t}", "r2{t}")
		waitBlocked(t, ts, 1)
		p := blpopAsync(t, ts, 0, "r1{t}")
		waitBlocked(t, ts, 2)
		b := move("r2{t}", "r1{t}")
		waitBlocked(t, ts, 3)
		rc.RPush(c, "r1{t}", "foo")
		recvPop(t, a)
		recvPop(t, b)
		if r := recvPop(t, p); r.err != nil || r.vals[1] != "foo" {
			t.Fatalf("BLPOP got %v %v", r.vals, r.err)
		}
		if n := rc.Exists(c, "r1{t}", "r2{t}").Val(); n != 0 {
			t.Fatalf("lists left: %d", n)
		}
	})
	t.Run("ToBLPOP", func(t *testing.T) {
		p := blpopAsync(t, ts, 0, "target{t}")
		waitBlocked(t, ts, 1)
		m := move("src{t}", "target{t}")
		waitBlocked(t, ts, 2)
		rc.RPush(c, "src{t}", "x")
		if r := recvPop(t, m); r.err != nil || r.vals[0] != "x" {
			t.Fatalf("BLMOVE got %v %v", r.vals, r.err)
		}
		if r := recvPop(t, p); r.err != nil || r.vals[1] != "x" {
			t.Fatalf("BLPOP got %v %v", r.vals, r.err)
		}
		if rc.Exists(c, "target{t}").Val() != 0 {
			t.Fatal("target kept")
		}
	})
	t.Run("WrongTypeTarget", func(t *testing.T) {
		rc.Set(c, "bad{t}", "x", 0)
		m := move("w{t}", "bad{t}")
		waitBlocked(t, ts, 1)
		rc.RPush(c, "w{t}", "a", "b")
		if r := recvPop(t, m); r.err == nil || r.err.Error() != errWrongType {
			t.Fatalf("got %v %v", r.vals, r.err)
		}
		v, err := rc.LRange(c, "w{t}", 0, -1).Result()
		wantListElems(t, v, err, "a", "b")
	})
}

// propRecorder records propagated commands.
type propRecorder struct {
	mu   sync.Mutex
	cmds []string
}

func (p *propRecorder) Propagate(db int, cmds [][][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cmd := range cmds {
		s := fmt.Sprint(db)
		for _, a := range cmd {
			s += " " + string(a)
		}
		p.cmds = append(p.cmds, s)
	}
}

func (p *propRecorder) has(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.cmds {
		if c == s {
			return true
		}
	}
	return false
}

func TestBlockingPropagation(t *testing.T) {
	ts := startServer(t)
	p := &propRecorder{}
	ts.srv.AddPropagator(p)
	rc := ts.client(t)
	c := ctx(t)
	// Served at once: propagated as the non-blocking pops.
	rc.RPush(c, "a", "1", "2", "3")
	rc.BLPop(c, 0, "a")
	rc.BLMPop(c, 0, "right", 5, "a")
	rc.RPush(c, "a", "1")
	rc.BRPopLPush(c, "a", "b", 0)
	rc.BLMove(c, "b", "a", "LEFT", "RIGHT", 0)
	for _, want := range []string{"0 LPOP a", "0 RPOP a 2", "0 RPOPLPUSH a b", "0 LMOVE b a LEFT RIGHT"} {
		if !p.has(want) {
			t.Fatalf("missing %q in %q", want, p.cmds)
		}
	}
	rc.Del(c, "a", "b")
	// Served later: the same, from the serving side.
	ch := blpopAsync(t, ts, 0, "x")
	waitBlocked(t, ts, 1)
	rc.RPush(c, "x", "v")
	recvPop(t, ch)
	cl := redis.NewClient(&redis.Options{Addr: ts.addr, DisableIdentity: true, PoolSize: 1})
	defer cl.Close()
	done := make(chan error, 1)
	go func() { done <- cl.BLMove(ctx(t), "y", "z", "RIGHT", "LEFT", 0).Err() }()
	waitBlocked(t, ts, 1)
	rc.RPush(c, "y", "v")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- cl.BLMPop(ctx(t), 0, "left", 3, "m").Err() }()
	waitBlocked(t, ts, 1)
	rc.RPush(c, "m", "1", "2")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0 LPOP x", "0 LMOVE y z right left", "0 LPOP m 2"} {
		if !p.has(want) {
			t.Fatalf("missing %q in %q", want, p.cmds)
		}
	}
}

func TestBlockingRoleChangeDisconnects(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.send("BLPOP l 0\r\n")
	waitBlocked(t, ts, 1)
	ts.srv.disconnectBlockedClients()
	if got := r.readLine(); got != "-"+errUnblockedRole {
		t.Fatalf("reply %q", got)
	}
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.br.ReadByte(); err == nil {
		t.Fatal("connection still open")
	}
	waitBlocked(t, ts, 0)
}
