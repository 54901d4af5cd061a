package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ldbSend sends a request as a multi-bulk.
func (r *rawConn) ldbSend(args ...string) {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	r.send(b.String())
}

// ldbLogs reads one debugger reply: an array of status lines.
func (r *rawConn) ldbLogs() []string {
	r.t.Helper()
	head := r.readLine()
	if !strings.HasPrefix(head, "*") {
		r.t.Fatalf("debugger reply: got %q, want an array", head)
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil {
		r.t.Fatalf("debugger reply: %q", head)
	}
	out := make([]string, n)
	for i := range out {
		l := r.readLine()
		if !strings.HasPrefix(l, "+") {
			r.t.Fatalf("debugger line %d: got %q, want a status", i, l)
		}
		out[i] = l[1:]
	}
	return out
}

// ldbDo sends a debugger command and returns its logs.
func (r *rawConn) ldbDo(args ...string) []string {
	r.t.Helper()
	r.ldbSend(args...)
	return r.ldbLogs()
}

func wantLogs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

const ldbScript = `redis.call('set', KEYS[1], ARGV[1])
local x = redis.call('get', KEYS[1])
redis.debug('x is', x, {1, 2, 'a'})
local t = {a = 1}
return x`

func TestLdbSyncSession(t *testing.T) {
	ts := startServer(t)
	other := ts.client(t)
	c := ctx(t)
	r := ts.raw(t)
	r.expect("SCRIPT DEBUG SYNC\r\n", "+OK")
	r.ldbSend("EVAL", ldbScript, "1", "k", "v1")
	wantLogs(t, "first stop", r.ldbLogs(), "* Stopped at 1, stop reason = step over", "-> 1   redis.call('set', KEYS[1], ARGV[1])")
	wantLogs(t, "step", r.ldbDo("step"),
		"<redis> set k v1", `<reply> "+OK"`,
		"* Stopped at 2, stop reason = step over", "-> 2   local x = redis.call('get', KEYS[1])")
	wantLogs(t, "print before the local", r.ldbDo("print"), "No local variables in the current context.")
	wantLogs(t, "next", r.ldbDo("n"),
		"<redis> get k", `<reply> "v1"`,
		"* Stopped at 3, stop reason = step over", "-> 3   redis.debug('x is', x, {1, 2, 'a'})")
	wantLogs(t, "print x", r.ldbDo("print", "x"), `<value> "v1"`)
	wantLogs(t, "print all", r.ldbDo("p"), `<value> x = "v1"`)
	wantLogs(t, "print KEYS", r.ldbDo("print", "KEYS"), `<value> {"k"}`)
	wantLogs(t, "print missing", r.ldbDo("print", "nosuch"), "No such variable.")
	wantLogs(t, "break", r.ldbDo("break", "5"), "   4   local t = {a = 1}", "  #5   return x")
	wantLogs(t, "break list", r.ldbDo("b"), "1 breakpoints set:", "  #5   return x")
	wantLogs(t, "bad break", r.ldbDo("b", "99", "x"), "Wrong line number.", "Invalid argument:'x'")
	wantLogs(t, "list", r.ldbDo("list", "3", "1"), "   2   local x = redis.call('get', KEYS[1])", "-> 3   redis.debug('x is', x, {1, 2, 'a'})", "   4   local t = {a = 1}")
	wantLogs(t, "eval", r.ldbDo("eval", "1 +", "1"), "<retval> 2")
	wantLogs(t, "eval statement", r.ldbDo("e", "local y = 3"), "<retval> nil")
	if got := r.ldbDo("eval", "return redis.call('nosuch')"); len(got) != 1 || !strings.HasPrefix(got[0], "<error> ") {
		t.Fatalf("eval error: %q", got)
	}
	wantLogs(t, "redis", r.ldbDo("redis", "GET", "k"), "<redis> GET k", `<reply> "v1"`)
	wantLogs(t, "redis error", r.ldbDo("r", "nosuch"), "<redis> nosuch", "<error> Unknown Redis command called from script")
	wantLogs(t, "maxlen", r.ldbDo("maxlen", "10"), "<value> replies are truncated at 60 bytes.")
	wantLogs(t, "maxlen 0", r.ldbDo("maxlen", "0"), "<value> replies are unlimited.")
	wantLogs(t, "trace", r.ldbDo("trace"), "In top level:", "-> 3   redis.debug('x is', x, {1, 2, 'a'})")
	wantLogs(t, "unknown", r.ldbDo("hello\x00world"), "<error> Unknown Redis Lua debugger command or wrong number of arguments.")
	if h := r.ldbDo("help"); len(h) < 20 || h[0] != "Redis Lua debugger help:" {
		t.Fatalf("help: %q", h)
	}
	wantLogs(t, "continue to the breakpoint", r.ldbDo("continue"),
		`<debug> line 3: "x is", "v1", {1; 2; "a"}`,
		"* Stopped at 5, stop reason = break point", "->#5   return x")
	wantLogs(t, "table repr", r.ldbDo("print", "t"), `<value> {["a"]=1}`)
	wantLogs(t, "end", r.ldbDo("c"), "<endsession>")
	if got := r.readLine(); got != "$2" {
		t.Fatalf("EVAL reply: %q", got)
	}
	if got := r.readLine(); got != "v1" {
		t.Fatalf("EVAL reply: %q", got)
	}
	r.expectClosed(t)
	// Sync mode keeps the changes.
	if v, err := other.Get(c, "k").Result(); err != nil || v != "v1" {
		t.Fatalf("after a sync session: %q %v", v, err)
	}
}

func TestLdbForkedRollsBack(t *testing.T) {
	ts := startServer(t, "notify-keyspace-events", "KEA")
	other := ts.client(t)
	c := ctx(t)
	other.Set(c, "keep", "old", time.Hour)
	other.RPush(c, "list", "a", "b")
	watcher := ts.raw(t)
	watcher.expect("WATCH keep list fresh\r\n", "+OK")
	next := ts.keyEvents(t)
	prop := ts.capturePropagation()
	r := ts.raw(t)
	r.expect("SCRIPT DEBUG YES\r\n", "+OK")
	body := `redis.call('set', 'keep', 'new')
redis.call('rpush', 'list', 'c')
redis.call('lpop', 'list')
redis.call('set', 'fresh', 'x')
redis.call('del', 'keep')
local ok = redis.pcall('flushdb')
local pub = redis.pcall('publish', 'ch', 'm')
return {ok['err'], pub['err'], redis.call('get', 'fresh'), redis.call('exists', 'keep'), redis.call('lrange', 'list', 0, -1)}`
	r.ldbSend("EVAL", body, "0")
	if got := r.ldbLogs(); len(got) != 2 || got[0] != "* Stopped at 1, stop reason = step over" {
		t.Fatalf("first stop: %q", got)
	}
	wantLogs(t, "end", r.ldbDo("c"), "<endsession>")
	want := []string{"*5", "-ERR " + errLdbForked, "-ERR " + errLdbForked, "$1", "x", ":0", "*2", "$1", "b", "$1", "c"}
	for _, w := range want {
		got := r.readLine()
		if strings.HasPrefix(w, "-") {
			// An error inside an array is a bulk of its text here: the
			// script returned the strings.
			w = strings.TrimPrefix(w, "-")
			if got != "$"+strconv.Itoa(len(w)) {
				t.Fatalf("reply: got %q, want the bulk %q", got, w)
			}
			got = r.readLine()
		}
		if got != w {
			t.Fatalf("reply: got %q, want %q", got, w)
		}
	}
	r.expectClosed(t)
	// Nothing of it is left.
	if v, err := other.Get(c, "keep").Result(); err != nil || v != "old" {
		t.Fatalf("keep: %q %v", v, err)
	}
	if ttl := other.TTL(c, "keep").Val(); ttl <= 0 {
		t.Fatalf("keep lost its TTL: %v", ttl)
	}
	if l := other.LRange(c, "list", 0, -1).Val(); strings.Join(l, ",") != "a,b" {
		t.Fatalf("list: %q", l)
	}
	if n := other.Exists(c, "fresh").Val(); n != 0 {
		t.Fatalf("fresh exists after a forked session")
	}
	// No WATCH saw a change, no notification was sent (the first is
	// this marker's), nothing went to replicas or the AOF.
	watcher.expect("MULTI\r\n", "+OK")
	watcher.expect("PING\r\n", "+QUEUED")
	watcher.expect("EXEC\r\n", "*1")
	other.Set(c, "marker", "1", 0)
	expectKeyEvents(t, next, "set marker")
	prop.expect(t, "set marker 1")
}

func TestLdbStopsAndErrors(t *testing.T) {
	ts := startServer(t)
	c := ctx(t)
	other := ts.client(t)
	t.Run("EVALSHA refused", func(t *testing.T) {
		r := ts.raw(t)
		r.expect("SCRIPT DEBUG SYNC\r\n", "+OK")
		r.expect("EVALSHA "+strings.Repeat("a", 40)+" 0\r\n", "-ERR Please use EVAL instead of EVALSHA for debugging")
		r.expect("EVALSHA abc 0\r\n", "-"+errNoScript)
		r.expect("SCRIPT DEBUG maybe\r\n", "-ERR Use SCRIPT DEBUG YES/SYNC/NO")
		r.expect("SCRIPT DEBUG NO\r\n", "+OK")
		r.expect("EVAL \"return 'x'\" 0\r\n", "$1")
	})
	t.Run("pipeline", func(t *testing.T) {
		r := ts.raw(t)
		r.send("PING\r\nSCRIPT DEBUG YES\r\n")
		if r.readLine() != "+PONG" {
			t.Fatal("PING")
		}
		if got := r.readLine(); got != "-ERR SCRIPT DEBUG must be called outside a pipeline" {
			t.Fatalf("pipelined SCRIPT DEBUG: %q", got)
		}
	})
	t.Run("compile error", func(t *testing.T) {
		r := ts.raw(t)
		r.expect("SCRIPT DEBUG YES\r\n", "+OK")
		r.ldbSend("EVAL", "return (", "0")
		wantLogs(t, "end", r.ldbLogs(), "<endsession>")
		if got := r.readLine(); !strings.HasPrefix(got, "-ERR Error compiling script") {
			t.Fatalf("compile error: %q", got)
		}
		r.expectClosed(t)
	})
	t.Run("breakpoint and abort", func(t *testing.T) {
		r := ts.raw(t)
		r.expect("SCRIPT DEBUG SYNC\r\n", "+OK")
		r.ldbSend("EVAL", "local a = redis.breakpoint()\nredis.call('set', 'ab', 'x')\nreturn a", "0")
		r.ldbLogs()
		wantLogs(t, "redis.breakpoint", r.ldbDo("c"), "* Stopped at 2, stop reason = redis.breakpoint() called", "-> 2   redis.call('set', 'ab', 'x')")
		wantLogs(t, "abort", r.ldbDo("abort"), "<endsession>")
		if got := r.readLine(); !strings.HasPrefix(got, "-ERR script aborted for user request") {
			t.Fatalf("abort: %q", got)
		}
		if n := other.Exists(c, "ab").Val(); n != 0 {
			t.Fatal("aborted before the line ran, yet it ran")
		}
	})
	t.Run("stack overflow", func(t *testing.T) {
		r := ts.raw(t)
		r.expect("SCRIPT DEBUG SYNC\r\n", "+OK")
		r.ldbSend("EVAL", "return 'hello'", "0")
		r.ldbLogs()
		args := []string{"redis"}
		for range 100 {
			args = append(args, "test")
		}
		got := r.ldbDo(args...)
		if len(got) != 2 || got[0] != "<redis> test test test test test test test test test test ... (89 more)" || got[1] != "<error> Unknown Redis command called from script" {
			t.Fatalf("100 arguments: %q", got)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		if err := other.ConfigSet(c, "lua-time-limit", "50").Err(); err != nil {
			t.Fatal(err)
		}
		defer other.ConfigSet(c, "lua-time-limit", "5000")
		r := ts.raw(t)
		r.expect("SCRIPT DEBUG SYNC\r\n", "+OK")
		r.ldbSend("EVAL", "local i = 0\nwhile true do end", "0")
		r.ldbLogs()
		wantLogs(t, "timeout", r.ldbDo("c"), "* Stopped at 2, stop reason = timeout reached, infinite loop?", "-> 2   while true do end")
		wantLogs(t, "abort", r.ldbDo("a"), "<endsession>")
		r.readLine()
	})
	t.Run("client gone", func(t *testing.T) {
		r := ts.raw(t)
		r.expect("SCRIPT DEBUG SYNC\r\n", "+OK")
		r.ldbSend("EVAL", "redis.call('set', 'gone', '1')\nredis.call('set', 'gone', '2')", "0")
		r.ldbLogs()
		r.ldbDo("step") // line 1 ran: the script holds the key's lock
		r.nc.Close()
		// The script runs to its end without the client, then the key
		// is free: this GET waits for its locks.
		if v, err := other.Get(c, "gone").Result(); err != nil || v != "2" {
			t.Fatalf("after the client left: %q %v", v, err)
		}
	})
}
