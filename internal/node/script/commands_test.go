package script

import (
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/rdb"
)

func bargs(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestParseNumKeys(t *testing.T) {
	for _, tc := range []struct {
		args  string
		fcall bool
		n     int
		msg   string
	}{
		{"eval s 0", false, 0, ""},
		{"eval s 2 a b c", false, 2, ""},
		{"eval s 3 a b", false, 0, "ERR Number of keys can't be greater than number of args"},
		{"eval s -1", false, 0, "ERR Number of keys can't be negative"},
		{"eval s x", false, 0, errNotInt},
		{"fcall f x", true, 0, "ERR Bad number of keys provided"},
	} {
		n, msg := ParseNumKeys(bargs(tc.args), tc.fcall)
		if n != tc.n || msg != tc.msg {
			t.Errorf("%q: got %d %q, want %d %q", tc.args, n, msg, tc.n, tc.msg)
		}
	}
}

func TestRefusal(t *testing.T) {
	no := func() string { return "" }
	misconf := func() string { return "MISCONF x" }
	yes := func() bool { return true }
	oomCalled := false
	noOOM := func() bool { oomCalled = true; return false }
	for _, tc := range []struct {
		name  string
		flags Flags
		st    RunState
		want  string
	}{
		{"compat ok", FlagEvalCompat, RunState{RO: true, ReadOnlyReplica: true}, ""},
		{"compat stale", FlagEvalCompat, RunState{Stale: true}, "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."},
		{"no-cluster", FlagNoCluster | FlagNoWrites, RunState{Cluster: true}, "ERR Can not run script on cluster, 'no-cluster' flag is set."},
		{"stale", FlagNoWrites, RunState{Stale: true}, "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script."},
		{"allow-stale", FlagNoWrites | FlagAllowStale, RunState{Stale: true}, ""},
		{"readonly replica", 0, RunState{ReadOnlyReplica: true, PersistRefused: no, OutOfMemory: noOOM}, "READONLY Can not run script with write flag on readonly replica"},
		{"readonly replica from master", 0, RunState{ReadOnlyReplica: true, FromMaster: true, PersistRefused: misconf}, ""},
		{"misconf", 0, RunState{PersistRefused: misconf, RO: true}, "MISCONF x"},
		{"ro", 0, RunState{PersistRefused: no, RO: true}, "ERR Can not execute a script with write flag using *_ro command."},
		{"min-replicas", 0, RunState{PersistRefused: no, MinReplicasRefused: yes, OutOfMemory: yes}, "NOREPLICAS Not enough good replicas to write."},
		{"oom", 0, RunState{PersistRefused: no, OutOfMemory: yes}, "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"},
		{"allow-oom", FlagAllowOOM, RunState{PersistRefused: no, OutOfMemory: yes}, ""},
		{"no-writes skips write checks", FlagNoWrites, RunState{RO: true, ReadOnlyReplica: true}, ""},
	} {
		if got := tc.flags.Refusal(&tc.st); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	oomCalled = false
	(FlagNoWrites).Refusal(&RunState{OutOfMemory: noOOM})
	if oomCalled {
		t.Error("OutOfMemory called for a no-writes script")
	}
}

func TestKillRefusal(t *testing.T) {
	for _, tc := range []struct {
		r    *Running
		eval bool
		want string
	}{
		{nil, true, ErrNotBusy},
		{&Running{Eval: true, FromMaster: true}, true, ErrUnkillableMaster},
		{&Running{Eval: true, Wrote: true}, true, ErrUnkillable},
		{&Running{Eval: false}, true, ErrBusyFunction},
		{&Running{Eval: true}, false, ErrBusyEval},
		{&Running{Eval: true}, true, ""},
		{&Running{Eval: false}, false, ""},
	} {
		if got := KillRefusal(tc.r, tc.eval); got != tc.want {
			t.Errorf("%+v eval=%v: got %q, want %q", tc.r, tc.eval, got, tc.want)
		}
	}
}

func TestParseFlushAndDebug(t *testing.T) {
	for _, tc := range []struct {
		args string
		fn   bool
		want string
	}{
		{"script flush", false, ""},
		{"script flush ASYNC", false, ""},
		{"function flush sync", true, ""},
		{"script flush now", false, "ERR SCRIPT FLUSH only support SYNC|ASYNC option"},
		{"function flush now", true, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"},
		{"function flush a b", true, "ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP."},
	} {
		if got := ParseFlush(bargs(tc.args), tc.fn); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestParseFunctionLoadAndList(t *testing.T) {
	code, replace, msg := ParseFunctionLoad(bargs("function load REPLACE body"))
	if string(code) != "body" || !replace || msg != "" {
		t.Errorf("load: %q %v %q", code, replace, msg)
	}
	if _, _, msg := ParseFunctionLoad(bargs("function load nx body")); msg != "ERR Unknown option given: nx" {
		t.Errorf("load option: %q", msg)
	}
	if _, _, msg := ParseFunctionLoad(bargs("function load")); msg != "ERR Function code is missing" {
		t.Errorf("load missing: %q", msg)
	}
	o, msg := ParseFunctionList(bargs("function list withcode libraryname my*"))
	if o != (FunctionList{Pattern: "my*", HavePattern: true, WithCode: true}) || msg != "" {
		t.Errorf("list: %+v %q", o, msg)
	}
	if _, msg := ParseFunctionList(bargs("function list libraryname")); msg != "ERR library name argument was not given" {
		t.Errorf("list no pattern: %q", msg)
	}
	if _, msg := ParseFunctionList(bargs("function list withcode withcode")); msg != "ERR Unknown argument withcode" {
		t.Errorf("list twice: %q", msg)
	}
	libs := []*Library{{Name: "alpha", Code: []byte("c"), Functions: []*Function{{Name: "f", Flags: FlagNoWrites}}}, {Name: "beta"}}
	got := string(AppendFunctionList(nil, 2, libs, FunctionList{Pattern: "ALP*", HavePattern: true, WithCode: true}))
	want := "*1\r\n*8\r\n$12\r\nlibrary_name\r\n$5\r\nalpha\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n" +
		"*6\r\n$4\r\nname\r\n$1\r\nf\r\n$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*1\r\n+no-writes\r\n" +
		"$12\r\nlibrary_code\r\n$1\r\nc\r\n"
	if got != want {
		t.Errorf("list reply:\n got %q\nwant %q", got, want)
	}
	if len(libs) != 2 || libs[1].Name != "beta" {
		t.Error("AppendFunctionList changed its argument")
	}
}

func TestParseFunctionRestore(t *testing.T) {
	payload := rdb.FunctionsPayload([][]byte{[]byte("#!lua name=x\nreturn 1")})
	codes, policy, msg := ParseFunctionRestore([][]byte{[]byte("function"), []byte("restore"), payload, []byte("Replace")})
	if msg != "" || policy != RestoreReplace || len(codes) != 1 {
		t.Fatalf("restore: %q %v %q", codes, policy, msg)
	}
	for _, tc := range []struct {
		args [][]byte
		want string
	}{
		{[][]byte{[]byte("function"), []byte("restore"), payload, []byte("keep")}, "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."},
		{[][]byte{[]byte("function"), []byte("restore"), []byte("junk")}, "ERR DUMP payload version or checksum are wrong"},
		{[][]byte{[]byte("function"), []byte("restore"), payload, []byte("a"), []byte("b")}, "ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP."},
	} {
		if _, _, msg := ParseFunctionRestore(tc.args); msg != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args[2:], msg, tc.want)
		}
	}
}

func TestAppendFunctionStats(t *testing.T) {
	got := string(AppendFunctionStats(nil, 3, &RunningFunction{Name: "f", Args: [][]byte{[]byte("fcall")}, DurationMs: 7}, 1, 2))
	want := "%2\r\n$14\r\nrunning_script\r\n%3\r\n$4\r\nname\r\n$1\r\nf\r\n$7\r\ncommand\r\n*1\r\n$5\r\nfcall\r\n$11\r\nduration_ms\r\n:7\r\n" +
		"$7\r\nengines\r\n%1\r\n$3\r\nLUA\r\n%2\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:2\r\n"
	if got != want {
		t.Errorf("stats:\n got %q\nwant %q", got, want)
	}
}
