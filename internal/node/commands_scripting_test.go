package node

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shardis/shardis/internal/testutil"
)

func TestEval(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	t.Run("call and conversions", func(t *testing.T) {
		v, err := rc.Eval(c, "redis.call('set', KEYS[1], ARGV[1]); return {redis.call('get', KEYS[1]), 3.7, true, false, {ok='fine'}}", []string{"k"}, "v").Result()
		if err != nil {
			t.Fatal(err)
		}
		want := []any{"v", int64(3), int64(1), nil, "fine"}
		got := v.([]any)
		if len(got) != len(want) {
			t.Fatalf("got %#v", got)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("item %d: got %#v, want %#v", i, got[i], want[i])
			}
		}
	})
	t.Run("EVALSHA and SCRIPT", func(t *testing.T) {
		sha, err := rc.ScriptLoad(c, "return ARGV[1]").Result()
		if err != nil || sha != "bcc9ce1e2d8d4b4fdba2b2f6b1bb68ab22ea1b0c" && len(sha) != 40 {
			t.Fatalf("SCRIPT LOAD: %q %v", sha, err)
		}
		if v, err := rc.EvalSha(c, sha, nil, "x").Result(); err != nil || v != "x" {
			t.Fatalf("EVALSHA: %v %v", v, err)
		}
		if ex, _ := rc.ScriptExists(c, sha, strings.Repeat("0", 40)).Result(); !ex[0] || ex[1] {
			t.Fatalf("SCRIPT EXISTS: %v", ex)
		}
		rc.ScriptFlush(c)
		if _, err := rc.EvalSha(c, sha, nil).Result(); err == nil || err.Error() != errNoScript {
			t.Fatalf("after flush: %v", err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		rc.Set(c, "str", "x", 0)
		_, err := rc.Eval(c, "return redis.call('lpush', KEYS[1], 'a')", []string{"str"}).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE Operation against a key holding the wrong kind of value script: ") {
			t.Fatalf("raised error: %v", err)
		}
		if v, err := rc.Eval(c, "return redis.pcall('lpush', KEYS[1], 'a')['err']", []string{"str"}).Result(); err != nil || !strings.HasPrefix(v.(string), "WRONGTYPE") {
			t.Fatalf("pcall: %v %v", v, err)
		}
		for body, want := range map[string]string{
			"return redis.call('eval', 'return 1', 0)": "ERR This Redis command is not allowed from script",
			"return redis.call('nosuch')":              "ERR Unknown Redis command called from script",
			"return redis.call('get')":                 "ERR Wrong number of args calling Redis command from script",
			"x = 1":                                    "Attempt to modify a readonly table",
		} {
			if _, err := rc.Eval(c, body, nil).Result(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %s", body, err, want)
			}
		}
		if _, err := rc.Eval(c, "return 1", nil, "a").Result(); err != nil {
			t.Fatal(err)
		}
		if err := rc.Do(c, "EVAL", "return 1", 2, "a").Err(); err == nil || err.Error() != "ERR Number of keys can't be greater than number of args" {
			t.Fatalf("numkeys: %v", err)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		err := rc.EvalRO(c, "return redis.call('set', KEYS[1], 'x')", []string{"ro"}).Err()
		if err == nil || !strings.Contains(err.Error(), "Write commands are not allowed from read-only scripts.") {
			t.Fatalf("EVAL_RO write: %v", err)
		}
		err = rc.Eval(c, "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')", []string{"ro"}).Err()
		if err == nil || !strings.Contains(err.Error(), "Write commands are not allowed from read-only scripts.") {
			t.Fatalf("no-writes: %v", err)
		}
		if n, _ := rc.Exists(c, "ro").Result(); n != 0 {
			t.Fatal("a refused write happened")
		}
	})
	t.Run("in MULTI", func(t *testing.T) {
		cmds, err := rc.TxPipelined(c, func(p redis.Pipeliner) error {
			p.Set(c, "m", "1", 0)
			p.Eval(c, "return redis.call('incr', KEYS[1])", []string{"m"})
			p.Eval(c, "return redis.call('incr', 'undeclared')", nil)
			return nil
		})
		if err != nil || cmds[1].(*redis.Cmd).Val() != int64(2) || cmds[2].(*redis.Cmd).Val() != int64(1) {
			t.Fatalf("%v %v", cmds, err)
		}
	})
	t.Run("SELECT inside a script", func(t *testing.T) {
		v, err := rc.Eval(c, "redis.call('select', 5); redis.call('set', 'in5', 'yes'); return redis.call('get', 'in5')", nil).Result()
		if err != nil || v != "yes" {
			t.Fatalf("%v %v", v, err)
		}
		if n, _ := rc.Exists(c, "in5").Result(); n != 0 {
			t.Fatal("the caller's database changed")
		}
		r5 := redis.NewClient(&redis.Options{Addr: ts.addr, DB: 5})
		defer r5.Close()
		if v, _ := r5.Get(c, "in5").Result(); v != "yes" {
			t.Fatalf("db 5: %q", v)
		}
	})
}

// TestScriptAtomicUndeclaredKeys: a script that writes a key it did not
// declare, spins, then writes it again is never seen halfway by another
// client, which reads the key all along.
func TestScriptAtomicUndeclaredKeys(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.Set(c, "shared", "start", 0)
	reader := ts.client(t)
	stop := make(chan struct{})
	var seen sync.Map
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v, err := reader.Get(c, "shared").Result()
			if err == nil {
				seen.Store(v, true)
			}
		}
	}()
	for i := 0; i < 5; i++ {
		err := rc.Eval(c, "redis.call('set', 'shared', 'mid') for i = 1, 200000 do end redis.call('set', 'shared', 'done'..ARGV[1]) return 1", nil, i).Err()
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	seen.Range(func(k, _ any) bool {
		if k == "mid" {
			t.Error("another client saw the script's intermediate write")
		}
		return true
	})
}

func TestScriptBusyAndKill(t *testing.T) {
	ts := startServer(t, "busy-reply-threshold", "50")
	rc := ts.client(t)
	other := ts.client(t)
	c := ctx(t)
	waitBusy := func() {
		t.Helper()
		testutil.WaitFor(t, 5*time.Second, "PING answers BUSY", func() bool {
			err := other.Ping(c).Err()
			return err != nil && strings.HasPrefix(err.Error(), "BUSY ")
		})
	}
	done := make(chan error, 1)
	go func() { done <- rc.Eval(c, "while true do end", nil).Err() }()
	waitBusy()
	if err := other.Do(c, "FUNCTION", "KILL").Err(); err == nil || err.Error() != errBusyEval {
		t.Fatalf("FUNCTION KILL on an eval: %v", err)
	}
	if err := other.ScriptKill(c).Err(); err != nil {
		t.Fatalf("SCRIPT KILL: %v", err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "Script killed by user with SCRIPT KILL...") {
			t.Fatalf("killed script replied %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the script was not killed")
	}
	if err := other.Ping(c).Err(); err != nil {
		t.Fatalf("PING after the kill: %v", err)
	}
	if err := other.ScriptKill(c).Err(); err == nil || err.Error() != errNotBusy {
		t.Fatalf("SCRIPT KILL with no script: %v", err)
	}
	// A script that wrote cannot be killed.
	go func() {
		// Runs for ARGV[1] microseconds by the server's clock, well past
		// the threshold however fast the machine is.
		done <- rc.Eval(c, `redis.call('set', KEYS[1], 'x')
local t = redis.call('TIME')
local start = tonumber(t[1]) * 1000000 + tonumber(t[2])
while true do
  t = redis.call('TIME')
  if tonumber(t[1]) * 1000000 + tonumber(t[2]) - start > tonumber(ARGV[1]) then break end
end
return 1`, []string{"w"}, 1000000).Err()
	}()
	waitBusy()
	if err := other.ScriptKill(c).Err(); err == nil || err.Error() != errUnkillable {
		t.Fatalf("SCRIPT KILL after a write: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the writing script: %v", err)
	}
	if v, _ := other.Get(c, "w").Result(); v != "x" {
		t.Fatalf("w = %q", v)
	}
}

func TestFunctions(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	lib := "#!lua name=counters\nredis.register_function('bump', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)\nredis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}"
	if name, err := rc.FunctionLoad(c, lib).Result(); err != nil || name != "counters" {
		t.Fatalf("FUNCTION LOAD: %q %v", name, err)
	}
	if v, err := rc.FCall(c, "bump", []string{"n"}, 5).Result(); err != nil || v != int64(5) {
		t.Fatalf("FCALL: %v %v", v, err)
	}
	if v, err := rc.FCallRO(c, "PEEK", []string{"n"}).Result(); err != nil || v != "5" {
		t.Fatalf("FCALL_RO: %v %v", v, err)
	}
	if err := rc.FCallRO(c, "bump", []string{"n"}, 1).Err(); err == nil || !strings.Contains(err.Error(), "Can not execute a script with write flag using *_ro command.") {
		t.Fatalf("FCALL_RO of a writing function: %v", err)
	}
	if err := rc.FunctionLoad(c, lib).Err(); err == nil || err.Error() != "ERR Library 'counters' already exists" {
		t.Fatalf("reload: %v", err)
	}
	libs, err := rc.FunctionList(c, redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil || len(libs) != 1 || libs[0].Name != "counters" || len(libs[0].Functions) != 2 || libs[0].Code != lib {
		t.Fatalf("FUNCTION LIST: %+v %v", libs, err)
	}
	dump, err := rc.FunctionDump(c).Result()
	if err != nil {
		t.Fatal(err)
	}
	rc.FunctionFlush(c)
	if err := rc.FCall(c, "bump", []string{"n"}, 1).Err(); err == nil || err.Error() != "ERR Function not found" {
		t.Fatalf("after flush: %v", err)
	}
	if err := rc.FunctionRestore(c, dump).Err(); err != nil {
		t.Fatalf("RESTORE: %v", err)
	}
	if v, err := rc.FCall(c, "bump", []string{"n"}, 1).Result(); err != nil || v != int64(6) {
		t.Fatalf("after restore: %v %v", v, err)
	}
	if err := rc.FunctionRestore(c, dump).Err(); err == nil || err.Error() != "ERR Library counters already exists" {
		t.Fatalf("RESTORE APPEND over an existing library: %v", err)
	}
}

// TestFunctionDumpWithRedis: FUNCTION DUMP payloads go both ways between
// redis-server and shardnode (redis-cli --cluster add-node copies
// functions so).
func TestFunctionDumpWithRedis(t *testing.T) {
	rs := testutil.StartRedis(t)
	rr := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rr.Close()
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	if err := rr.FunctionLoad(c, "#!lua name=fromredis\nredis.register_function('hello', function() return 'from redis' end)").Err(); err != nil {
		t.Fatal(err)
	}
	dump, err := rr.FunctionDump(c).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.FunctionRestore(c, dump).Err(); err != nil {
		t.Fatalf("shardnode RESTORE of redis-server's DUMP: %v", err)
	}
	if v, err := rc.FCall(c, "hello", nil).Result(); err != nil || v != "from redis" {
		t.Fatalf("FCALL: %v %v", v, err)
	}
	if err := rc.FunctionLoad(c, "#!lua name=fromnode\nredis.register_function('hi', function() return 'from shardnode' end)").Err(); err != nil {
		t.Fatal(err)
	}
	dump, err = rc.FunctionDump(c).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rr.Do(c, "FUNCTION", "RESTORE", dump, "REPLACE").Err(); err != nil {
		t.Fatalf("redis-server RESTORE of shardnode's DUMP: %v", err)
	}
	if v, err := rr.FCall(c, "hi", nil).Result(); err != nil || v != "from shardnode" {
		t.Fatalf("FCALL on redis-server: %v %v", v, err)
	}
}

// TestScriptEffectsReachReplica: a script's writes, declared keys or not,
// random values included, and FUNCTION LOAD reach a redis-server replica.
func TestScriptEffectsReachReplica(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	_, port, _ := strings.Cut(ts.addr, ":")
	rs := testutil.StartRedis(t, "--replicaof", "127.0.0.1 "+port)
	rr := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rr.Close()
	testutil.WaitFor(t, 15*time.Second, "replica link up", func() bool {
		info, _ := rr.Info(c, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	for i := 0; i < 3; i++ {
		err := rc.Eval(c, "redis.call('set', KEYS[1], tostring(math.random())) redis.call('rpush', 'undeclared', ARGV[1]) return redis.call('incr', 'count')", []string{"rand"}, i).Err()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.FunctionLoad(c, "#!lua name=r\nredis.register_function('f', function() return redis.call('set', 'fromf', '1') end)").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.FCall(c, "f", nil).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "replica caught up", func() bool {
		v, _ := rr.Get(c, "fromf").Result()
		return v == "1"
	})
	for _, k := range []string{"rand", "count"} {
		want, _ := rc.Get(c, k).Result()
		if got, _ := rr.Get(c, k).Result(); got != want {
			t.Fatalf("%s: replica %q, master %q", k, got, want)
		}
	}
	if l, _ := rr.LRange(c, "undeclared", 0, -1).Result(); strings.Join(l, ",") != "0,1,2" {
		t.Fatalf("undeclared on the replica: %v", l)
	}
	if libs, _ := rr.FunctionList(c, redis.FunctionListQuery{}).Result(); len(libs) != 1 || libs[0].Name != "r" {
		t.Fatalf("replica's libraries: %+v", libs)
	}
}

// TestScriptEffectsSurviveRestart: a script's effects and the function
// libraries survive an AOF reload and an RDB reload.
func TestScriptEffectsSurviveRestart(t *testing.T) {
	for _, mode := range []string{"aof", "aof-commands", "rdb"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			var directives []string
			switch mode {
			case "aof":
				directives = []string{"appendonly", "yes", "appendfsync", "always"}
			case "aof-commands":
				directives = []string{"appendonly", "yes", "appendfsync", "always", "aof-use-rdb-preamble", "no"}
			}
			var rnd string
			t.Run("write", func(t *testing.T) {
				a := startServerIn(t, dir, directives...)
				rc := a.client(t)
				c := ctx(t)
				if err := rc.FunctionLoad(c, "#!lua name=keep\nredis.register_function('two', function() return 2 end)").Err(); err != nil {
					t.Fatal(err)
				}
				if mode == "aof-commands" {
					// The rewritten AOF holds the libraries as FUNCTION LOAD.
					if err := rc.BgRewriteAOF(c).Err(); err != nil {
						t.Fatal(err)
					}
					testutil.WaitFor(t, 10*time.Second, "rewrite done", func() bool {
						info, _ := rc.Info(c, "persistence").Result()
						return strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0")
					})
				}
				v, err := rc.Eval(c, "local r = tostring(math.random()) redis.call('set', 'r', r) redis.call('hset', 'h', 'f', r) return r", nil).Result()
				if err != nil {
					t.Fatal(err)
				}
				rnd = v.(string)
				if mode == "rdb" {
					if err := rc.Save(c).Err(); err != nil {
						t.Fatal(err)
					}
				}
			})
			b := startServerIn(t, dir, directives...)
			rc := b.client(t)
			c := ctx(t)
			if v, _ := rc.Get(c, "r").Result(); v != rnd {
				t.Fatalf("r after reload: %q, want %q", v, rnd)
			}
			if v, _ := rc.HGet(c, "h", "f").Result(); v != rnd {
				t.Fatalf("h after reload: %q, want %q", v, rnd)
			}
			if v, err := rc.FCall(c, "two", nil).Result(); err != nil || v != int64(2) {
				t.Fatalf("function after reload: %v %v", v, err)
			}
		})
	}
}

// TestFunctionsFromRedisRDB: a redis-server dump.rdb with a library loads.
func TestFunctionsFromRedisRDB(t *testing.T) {
	rs := testutil.StartRedis(t)
	rr := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rr.Close()
	c := ctx(t)
	if err := rr.FunctionLoad(c, "#!lua name=rlib\nredis.register_function('rf', function(k) return redis.call('get', k[1]) end)").Err(); err != nil {
		t.Fatal(err)
	}
	rr.Set(c, "x", "42", 0)
	if err := rr.Save(c).Err(); err != nil {
		t.Fatal(err)
	}
	ts := startServerIn(t, rs.Dir)
	rc := ts.client(t)
	if v, err := rc.FCall(c, "rf", []string{"x"}).Result(); err != nil || v != "42" {
		t.Fatalf("FCALL of redis-server's library: %v %v", v, err)
	}
}

var _ = errors.New
var _ = strconv.Itoa

// TestScriptSortByConstantIsOrdered: SORT BY a constant of a set inside a
// script sorts the members (ALPHA), as Redis forces it there so that a
// script's result does not depend on a set's internal order.
func TestScriptSortByConstantIsOrdered(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	members := []interface{}{"z", "c", "a", "b", "y", "x"}
	for i := 0; i < 200; i++ {
		members = append(members, fmt.Sprint("m", i))
	}
	rc.SAdd(c, "s", members...)
	got, err := rc.Eval(c, "return redis.call('sort', KEYS[1], 'by', 'nosort')", []string{"s"}).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !sort.StringsAreSorted(got) || len(got) != len(members) {
		t.Fatalf("SORT BY nosort in a script: %d members, sorted %v", len(got), sort.StringsAreSorted(got))
	}
}

// A script's declared flags are the command's flags for the checks that
// come before it runs (Redis's evalGetCommandFlags): over maxmemory, a
// script with a shebang and no no-writes/allow-oom flag is refused OOM
// with the generic error, and so is a function without them.
func TestScriptDeclaredFlagsBeforeRun(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	if err := rc.FunctionLoad(c, "#!lua name=fl\nredis.register_function('w', function() return 1 end)\nredis.register_function{function_name='r', callback=function() return 1 end, flags={'no-writes'}}").Err(); err != nil {
		t.Fatal(err)
	}
	sha, err := rc.ScriptLoad(c, "#!lua\nreturn 1").Result()
	if err != nil {
		t.Fatal(err)
	}
	// Queued before the limit, refused at EXEC as a whole.
	tx := ts.raw(t)
	tx.expect("MULTI\r\n", "+OK")
	tx.ldbSend("EVAL", "#!lua\nreturn 1", "0")
	if got := tx.readLine(); got != "+QUEUED" {
		t.Fatalf("EVAL in MULTI: %q", got)
	}
	if err := rc.ConfigSet(c, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer rc.ConfigSet(c, "maxmemory", "0")
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	tx.expect("EXEC\r\n", "-EXECABORT Transaction discarded because of: "+oom)
	for _, tc := range []struct {
		args []any
		want string // "" for the reply 1
	}{
		{[]any{"EVAL", "#!lua\nreturn 1", 0}, oom},
		{[]any{"EVALSHA", sha, 0}, oom},
		{[]any{"FCALL", "w", 0}, oom},
		{[]any{"EVAL", "#!lua flags=no-writes\nreturn 1", 0}, ""},
		{[]any{"EVAL", "#!lua flags=allow-oom\nreturn 1", 0}, ""},
		{[]any{"EVAL", "return 1", 0}, ""},
		{[]any{"FCALL", "r", 0}, ""},
	} {
		v, err := rc.Do(c, tc.args...).Result()
		if tc.want == "" {
			if err != nil || v != int64(1) {
				t.Errorf("%q: %v %v, want 1", tc.args, v, err)
			}
		} else if err == nil || err.Error() != tc.want {
			t.Errorf("%q: %v %v, want %s", tc.args, v, err, tc.want)
		}
	}
}
