package script

import (
	"context"
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/resp"
)

// fakeHost answers a few commands the way a server would.
type fakeHost struct {
	calls [][]string
	repl  int
}

func (h *fakeHost) Call(args [][]byte, proto int, out []byte) ([]byte, string) {
	var s []string
	for _, a := range args {
		s = append(s, string(a))
	}
	h.calls = append(h.calls, s)
	switch strings.ToLower(s[0]) {
	case "ping":
		return resp.AppendSimple(out, "PONG"), ""
	case "get":
		if s[1] == "missing" {
			return resp.AppendNull(out, proto), ""
		}
		return resp.AppendBulkString(out, "v:"+s[1]), ""
	case "incr":
		return resp.AppendInt(out, 42), ""
	case "lrange":
		out = resp.AppendArrayLen(out, 2)
		out = resp.AppendBulkString(out, "a")
		return resp.AppendBulkString(out, "b"), ""
	case "hgetall":
		out = resp.AppendMapLen(out, proto, 1)
		out = resp.AppendBulkString(out, "f")
		return resp.AppendBulkString(out, "v"), ""
	case "wrong":
		return resp.AppendError(out, "WRONGTYPE Operation against a key holding the wrong kind of value"), ""
	case "flushall":
		return nil, "This Redis command is not allowed from script"
	}
	return nil, "Unknown Redis command called from script"
}

func (h *fakeHost) SetRepl(f int) { h.repl = f }

func eval(t *testing.T, e *Engine, body string, keys, args []string, proto int) string {
	t.Helper()
	s, err := e.Load([]byte(body))
	if err != nil {
		return "-" + err.Msg + "\r\n"
	}
	run := &Run{Host: &fakeHost{}, Proto: proto, Ctx: context.Background()}
	for _, k := range keys {
		run.Keys = append(run.Keys, []byte(k))
	}
	for _, a := range args {
		run.Args = append(run.Args, []byte(a))
	}
	return string(e.Exec(s, run, nil))
}

func TestEvalReplies(t *testing.T) {
	e := NewEngine()
	e.SeedRandom(1)
	cases := []struct {
		name, body string
		keys, args []string
		proto      int
		want       string
	}{
		{"string", "return 'hello'", nil, nil, 2, "$5\r\nhello\r\n"},
		{"float truncated", "return 3.99", nil, nil, 2, ":3\r\n"},
		{"negative float", "return -3.99", nil, nil, 2, ":-3\r\n"},
		{"true", "return true", nil, nil, 2, ":1\r\n"},
		{"false", "return false", nil, nil, 2, "$-1\r\n"},
		{"nil", "return nil", nil, nil, 2, "$-1\r\n"},
		{"array stops at nil", "return {1,2,nil,4}", nil, nil, 2, "*2\r\n:1\r\n:2\r\n"},
		{"ok", "return {ok='fine'}", nil, nil, 2, "+fine\r\n"},
		{"err", "return {err='MYERR bad'}", nil, nil, 2, "-MYERR bad\r\n"},
		{"error_reply", "return redis.error_reply('My Error')", nil, nil, 2, "-My Error\r\n"},
		{"status_reply", "return redis.status_reply('OKAY')", nil, nil, 2, "+OKAY\r\n"},
		{"keys argv", "return {KEYS[1], ARGV[1], #KEYS, #ARGV}", []string{"k"}, []string{"a", "b"}, 2, "*4\r\n$1\r\nk\r\n$1\r\na\r\n:1\r\n:2\r\n"},
		{"call get", "return redis.call('get', KEYS[1])", []string{"x"}, nil, 2, "$3\r\nv:x\r\n"},
		{"call nil is false", "return redis.call('get','missing') == false", nil, nil, 2, ":1\r\n"},
		{"call status", "return redis.call('ping')", nil, nil, 2, "+PONG\r\n"},
		{"call status table", "return redis.call('ping').ok", nil, nil, 2, "$4\r\nPONG\r\n"},
		{"call array", "return redis.call('lrange','l',0,-1)", nil, nil, 2, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{"call int", "return redis.call('incr','x') + 1", nil, nil, 2, ":43\r\n"},
		{"call error raises", "redis.call('wrong')", nil, nil, 2, "-WRONGTYPE Operation against a key holding the wrong kind of value script: f_a0ffe0a6a1bd7b7a17f7ad8d80e26df6dba2bdb7, on @user_script:1.\r\n"},
		{"pcall error is a table", "return redis.pcall('wrong')['err']", nil, nil, 2, "$65\r\nWRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"unknown command", "return redis.pcall('nosuch')", nil, nil, 2, "-ERR Unknown Redis command called from script\r\n"},
		{"bad argument", "return redis.pcall('get', {})", nil, nil, 2, "-ERR Lua redis lib command arguments must be strings or integers\r\n"},
		{"number argument", "return redis.call('get', 1.5)", nil, nil, 2, "$5\r\nv:1.5\r\n"},
		{"sha1hex", "return redis.sha1hex('Pizza & Mandolino')", nil, nil, 2, "$40\r\n74822d82031af7493c20eefa13bd07ec4fada82f\r\n"},
		{"resp3 map", "redis.setresp(3); return redis.call('hgetall','h')", nil, nil, 3, "%1\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{"resp2 map as array", "redis.setresp(3); return redis.call('hgetall','h')", nil, nil, 2, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{"resp3 true", "redis.setresp(3); return true", nil, nil, 3, "#t\r\n"},
		{"double", "return {double=3.5}", nil, nil, 3, ",3.5\r\n"},
		{"version", "return redis.REDIS_VERSION", nil, nil, 2, "$6\r\n7.0.15\r\n"},
		{"cjson", "return cjson.encode({a={1,2,'x'}})", nil, nil, 2, "$15\r\n{\"a\":[1,2,\"x\"]}\r\n"},
		{"cjson decode", "return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')", nil, nil, 2, "$26\r\n0 -5000 -1 0.0003 1023.2 0\r\n"},
		{"bit", "return {bit.band(5,3), bit.bor(1,2,4,8,16,32,64,128), bit.tohex(255, 4), bit.lshift(1, 31)}", nil, nil, 2, "*4\r\n:1\r\n:255\r\n$4\r\n00ff\r\n:-2147483648\r\n"},
		{"cmsgpack double", "local e = cmsgpack.pack(0.1); local h = '' for i = 1, #e do h = h .. string.format('%02x', string.byte(e, i)) end return h", nil, nil, 2, "$18\r\ncb3fb999999999999a\r\n"},
		{"cmsgpack int64", "local e = cmsgpack.pack(-1099511627776); local h = '' for i = 1, #e do h = h .. string.format('%02x', string.byte(e, i)) end return h", nil, nil, 2, "$18\r\nd3ffffff0000000000\r\n"},
		{"cmsgpack round trip", "local t = cmsgpack.unpack(cmsgpack.pack({1,2,{a='b'}})); return {t[1], t[2], t[3].a}", nil, nil, 2, "*3\r\n:1\r\n:2\r\n$1\r\nb\r\n"},
		{"struct", "local s = struct.pack('>HB', 258, 3); local a, b, n = struct.unpack('>HB', s); return {#s, a, b, n}", nil, nil, 2, "*4\r\n:3\r\n:258\r\n:3\r\n:4\r\n"},
		{"undeclared global read", "return a", nil, nil, 2, "-ERR user_script:1: Script attempted to access nonexistent global variable 'a' script: f_9bc9ee5bc9d4e4d7d76ec3bf7e31b6bd8bcd1bd6, on @user_script:1.\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := eval(t, e, tc.body, tc.keys, tc.args, tc.proto)
			if tc.name == "undeclared global read" || tc.name == "call error raises" {
				// The SHA in the expected text is of the body; compare
				// the shape.
				want := tc.want[:strings.Index(tc.want, " script: ")]
				if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "on @user_script:1.\r\n") {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSandbox(t *testing.T) {
	e := NewEngine()
	for _, body := range []string{
		"a = 10",
		"setmetatable(_G, {})",
		"local g = getmetatable(_G); g.__index = {}",
		"redis = function() return 1 end",
		"_G = {}",
		"_G.x = 1",
		"rawset(_G, 'x', 1)",
		"redis.call = function() return 1 end",
		"cjson.encode = function() return 1 end",
		"cmsgpack.pack = function() return 1 end",
		"bit.lshift = function() return 1 end",
		"string.upper = nil",
		"getmetatable('').__index.upper = nil",
		"loadstring('x = 1')()",
	} {
		got := eval(t, e, body, nil, nil, 2)
		if !strings.Contains(got, "Attempt to modify a readonly table") {
			t.Errorf("%s: got %q", body, got)
		}
	}
	for _, name := range []string{"loadfile", "dofile", "print", "os", "io"} {
		got := eval(t, e, "return "+name+"('x')", nil, nil, 2)
		if !strings.Contains(got, "Script attempted to access nonexistent global variable '"+name+"'") {
			t.Errorf("%s: got %q", name, got)
		}
	}
	if got := eval(t, e, "local x = 1; return x", nil, nil, 2); got != ":1\r\n" {
		t.Fatalf("locals: %q", got)
	}
}

func TestShebang(t *testing.T) {
	for _, tc := range []struct {
		body  string
		flags Flags
		err   string
	}{
		{"return 1", FlagEvalCompat, ""},
		{"#!lua\nreturn 1", 0, ""},
		{"#!lua flags=no-writes,allow-oom\nreturn 1", FlagNoWrites | FlagAllowOOM, ""},
		{"#!lua flags=bad\nreturn 1", 0, "ERR Unexpected flag in script shebang: bad"},
		{"#!python\nreturn 1", 0, "ERR Unexpected engine in script shebang: #!python"},
		{"#!lua name=x\nreturn 1", 0, "ERR Unknown lua shebang option: name=x"},
		{"#!lua", 0, "ERR Invalid script shebang"},
	} {
		f, _, err := ParseShebang([]byte(tc.body))
		if tc.err != "" {
			if err == nil || err.Msg != tc.err {
				t.Errorf("%q: err %v, want %s", tc.body, err, tc.err)
			}
			continue
		}
		if err != nil || f != tc.flags {
			t.Errorf("%q: flags %v err %v, want %v", tc.body, f, err, tc.flags)
		}
	}
}

func TestKill(t *testing.T) {
	e := NewEngine()
	s, _ := e.Load([]byte("local i = 0 while true do i = i + 1 pcall(function() end) end"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run := &Run{Host: &fakeHost{}, Proto: 2, Ctx: ctx}
	got := string(e.Exec(s, run, nil))
	if !run.Killed || !strings.Contains(got, "Script killed by user") {
		t.Fatalf("killed %v reply %q", run.Killed, got)
	}
}

func TestFunctions(t *testing.T) {
	e := NewEngine()
	name, err := e.FunctionLoad([]byte("#!lua name=mylib\nredis.register_function('f1', function(keys, args) return {keys[1], args[1]} end)\nredis.register_function{function_name='f2', callback=function() return redis.call('ping') end, flags={'no-writes'}}"), false, true)
	if err != nil || name != "mylib" {
		t.Fatalf("load: %v %v", name, err)
	}
	f := e.Function("f1")
	if f == nil {
		t.Fatal("f1 missing")
	}
	run := &Run{Host: &fakeHost{}, Proto: 2, Keys: [][]byte{[]byte("k")}, Args: [][]byte{[]byte("a")}}
	if got := string(e.CallFunction(f, run, nil)); got != "*2\r\n$1\r\nk\r\n$1\r\na\r\n" {
		t.Fatalf("f1: %q", got)
	}
	if f2 := e.Function("f2"); f2 == nil || f2.Flags != FlagNoWrites {
		t.Fatalf("f2: %+v", f2)
	}
	if _, err := e.FunctionLoad([]byte("#!lua name=mylib\nredis.register_function('f3', function() end)"), false, true); err == nil || err.Msg != "ERR Library 'mylib' already exists" {
		t.Fatalf("dup: %v", err)
	}
	if _, err := e.FunctionLoad([]byte("#!lua name=other\nredis.register_function('f1', function() end)"), false, true); err == nil || err.Msg != "ERR Function f1 already exists" {
		t.Fatalf("func dup: %v", err)
	}
	for body, want := range map[string]string{
		"#!lua name=x\nredis.call('ping')":               "attempted to access nonexistent global variable 'call'",
		"#!lua name=x\nlocal a = math.floor(1)":          "attempted to access nonexistent global variable 'math'",
		"#!lua name=x\nreturn 1":                         "ERR No functions registered",
		"#!lua name=x\nwhile true do end":                "FUNCTION LOAD timeout",
		"#!lua name=x\nredis.register_function('f')":     "only applicable to Lua table",
		"#!lua name=x\nredis.register_function()":        "wrong number of arguments to redis.register_function",
		"#!lua name=b-d\nredis.register_function('f')":   "Library names can only contain",
		"#!bad_engine name=x\nredis.register_function()": "Engine 'bad_engine' not found",
	} {
		_, err := e.FunctionLoad([]byte(body), false, true)
		if err == nil || !strings.Contains(err.Msg, want) {
			t.Errorf("%q: %v, want %s", body, err, want)
		}
	}
}

// TestKeysArgvFreshEachRun checks that the KEYS and ARGV tables the
// engine reuses show each run only its own items, whatever the previous
// run did to them.
func TestKeysArgvFreshEachRun(t *testing.T) {
	e := NewEngine()
	show := "return {#KEYS, #ARGV, tostring(KEYS[1]), tostring(KEYS[5]), tostring(ARGV[4]), tostring(rawget(KEYS, 'x')), tostring(getmetatable(ARGV))}"
	cases := []struct {
		name, dirty string
	}{
		{"untouched", "return 1"},
		{"extra item", "KEYS[5] = 'stale'; ARGV[4] = 'stale'; return 1"},
		{"string field", "KEYS.x = 'stale'; return 1"},
		{"metatable", "setmetatable(ARGV, {}); return 1"},
		{"items cleared", "KEYS[1] = nil; ARGV[1] = nil; return 1"},
		{"removed", "table.remove(KEYS, 1); return 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, e, tc.dirty, []string{"a", "b", "c", "d"}, []string{"x", "y", "z"}, 2); got != ":1\r\n" {
				t.Fatalf("dirtying run: %q", got)
			}
			want := "*7\r\n:1\r\n:0\r\n$1\r\nk\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n"
			if got := eval(t, e, show, []string{"k"}, nil, 2); got != want {
				t.Fatalf("next run sees %q, want %q", got, want)
			}
		})
	}
}

// TestRedisCallArgsNotShared checks that redis.call's reused argument
// buffer gives each call its own bytes and caps each argument, so a host
// appending to one cannot change the next.
func TestRedisCallArgsNotShared(t *testing.T) {
	e := NewEngine()
	h := &appendHost{}
	s, _ := e.Load([]byte("redis.call('x', 'aa', 12.5, 'bb'); return redis.call('x', 'c')"))
	out := e.Exec(s, &Run{Host: h, Proto: 2}, nil)
	if string(out) != "+OK\r\n" {
		t.Fatalf("reply %q", out)
	}
	want := "[x! aa! 12.5! bb!] [x! c!]"
	if got := strings.Join(h.seen, " "); got != want {
		t.Fatalf("host saw %s, want %s", got, want)
	}
}

// appendHost appends to every argument it gets, as a command writing into
// its arguments might, and records what it saw.
type appendHost struct{ seen []string }

func (h *appendHost) Call(args [][]byte, proto int, out []byte) ([]byte, string) {
	for i := range args {
		args[i] = append(args[i], '!')
	}
	var parts []string
	for _, a := range args {
		parts = append(parts, string(a))
	}
	h.seen = append(h.seen, "["+strings.Join(parts, " ")+"]")
	return resp.AppendSimple(out, "OK"), ""
}

func (h *appendHost) SetRepl(int) {}

// TestKeysReusedValues checks the reuse of a previous run's item values:
// the same bytes give the same string, other bytes a new one.
func TestKeysReusedValues(t *testing.T) {
	e := NewEngine()
	for _, keys := range [][]string{{"a", ""}, {"a", ""}, {"b", "a"}, {"", "a"}, {"b"}} {
		want := ""
		for _, k := range keys {
			want += k + ","
		}
		got := eval(t, e, "local s = '' for i = 1, #KEYS do s = s .. KEYS[i] .. ',' end return s", keys, nil, 2)
		if got != resp2Bulk(want) {
			t.Fatalf("keys %q: got %q", keys, got)
		}
	}
}

func resp2Bulk(s string) string { return string(resp.AppendBulkString(nil, s)) }
