// Package script is the Lua 5.1 scripting engine of shardnode, as Redis 7.0
// gives it to EVAL scripts and FUNCTION libraries: the sandboxed
// environment (protected globals, read-only library tables, no os/io,
// loadfile or dofile), the redis.* API, the cjson, cmsgpack, bit and struct
// libraries, and the conversions between Redis replies and Lua values.
//
// The package does not know the server. A script reaches the keyspace only
// through the Host interface the caller implements: Host.Call runs one
// command and returns its RESP reply, which this package converts to Lua
// with Redis's rules. Scripts run one at a time per Engine (the caller
// serialises them for atomicity), so an Engine keeps one Lua state for EVAL
// and one for FUNCTION libraries and reuses them across runs; compiled
// scripts are cached by SHA1.
package script

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/shardis/shardis/internal/resp"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Flags are the flags a script declares in its shebang or a function in
// redis.register_function (Redis's SCRIPT_FLAG_*).
type Flags uint32

const (
	// FlagNoWrites is "no-writes": the script never writes.
	FlagNoWrites Flags = 1 << iota
	// FlagAllowOOM is "allow-oom": the script may run over maxmemory.
	FlagAllowOOM
	// FlagAllowStale is "allow-stale": the script may run on a stale replica.
	FlagAllowStale
	// FlagNoCluster is "no-cluster": the script refuses to run in cluster mode.
	FlagNoCluster
	// FlagAllowCrossSlot is "allow-cross-slot-keys".
	FlagAllowCrossSlot
	// FlagEvalCompat marks an EVAL script without a shebang, which runs
	// with the permissive rules of Redis 6 (SCRIPT_FLAG_EVAL_COMPAT_MODE).
	FlagEvalCompat
)

var flagNames = []struct {
	f    Flags
	name string
}{
	{FlagNoWrites, "no-writes"}, {FlagAllowOOM, "allow-oom"}, {FlagAllowStale, "allow-stale"},
	{FlagNoCluster, "no-cluster"}, {FlagAllowCrossSlot, "allow-cross-slot-keys"},
}

// FlagNames returns the names of f's declared flags, in Redis's order.
func (f Flags) FlagNames() []string {
	var out []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

func flagByName(name string, fold bool) (Flags, bool) {
	for _, n := range flagNames {
		if n.name == name || fold && strings.EqualFold(n.name, name) {
			return n.f, true
		}
	}
	return 0, false
}

// SHA1Hex is the lower-case hex SHA1 of b, a script's name.
func SHA1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Script is a compiled EVAL script.
type Script struct {
	// SHA is the hex SHA1 of Body.
	SHA string
	// Body is the script's source as sent.
	Body []byte
	// Flags are the shebang's flags, or FlagEvalCompat without a shebang.
	Flags Flags
	proto *lua.FunctionProto
	// fn is proto's closure in the EVAL state fnState, made at the
	// script's first run in that state (a new state after SCRIPT FLUSH
	// makes a new one). Used only by Exec, one run at a time.
	fn      *lua.LFunction
	fnState *state
}

// Error is an error reply to send as is: Msg carries the error code
// ("ERR ...", "NOSCRIPT ...") without the leading '-'.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errf(format string, args ...any) *Error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Engine holds the script cache and the Lua states. Its methods may be
// called from any goroutine; Run and CallFunction must not overlap (the
// caller runs one script at a time).
type Engine struct {
	mu      sync.Mutex
	scripts map[string]*Script
	mem     int64
	eval    *state
	fn      *fnEngine
	// fnMu serialises the use of the functions' Lua state (FUNCTION LOAD,
	// RESTORE, FLUSH, FCALL, RDB loading).
	fnMu sync.Mutex
	rand lrand48
	// Log receives redis.log lines (level is one of the Log* constants).
	Log func(level int, msg string)
}

// NewEngine returns an engine with an empty script cache and no libraries.
func NewEngine() *Engine {
	e := &Engine{scripts: make(map[string]*Script)}
	e.Log = func(int, string) {}
	return e
}

// ParseShebang reads an EVAL script's "#!lua flags=..." line, Redis's
// evalExtractShebangFlags: it returns the flags (FlagEvalCompat without a
// shebang) and the shebang's length, which the compiler skips (keeping the
// line feed so line numbers stay right).
func ParseShebang(body []byte) (Flags, int, *Error) {
	if !bytes.HasPrefix(body, []byte("#!")) {
		return FlagEvalCompat, 0, nil
	}
	end := bytes.IndexByte(body, '\n')
	if end < 0 {
		return 0, 0, &Error{"ERR Invalid script shebang"}
	}
	parts, ok := splitArgs(body[:end])
	if !ok || len(parts) == 0 {
		return 0, 0, &Error{"ERR Invalid engine in script shebang"}
	}
	if parts[0] != "#!lua" {
		return 0, 0, errf("ERR Unexpected engine in script shebang: %s", parts[0])
	}
	var f Flags
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, 0, errf("ERR Unknown lua shebang option: %s", p)
		}
		if v == "" {
			continue
		}
		for _, name := range strings.Split(v, ",") {
			fl, ok := flagByName(name, false)
			if !ok {
				return 0, 0, errf("ERR Unexpected flag in script shebang: %s", name)
			}
			f |= fl
		}
	}
	return f, end, nil
}

// compile parses and compiles src under chunk name.
func compile(src []byte, name string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		return nil, err
	}
	return lua.Compile(chunk, name)
}

// Load compiles body and caches it under its SHA1 (SCRIPT LOAD, EVAL).
func (e *Engine) Load(body []byte) (*Script, *Error) {
	sha := SHA1Hex(body)
	e.mu.Lock()
	s := e.scripts[sha]
	e.mu.Unlock()
	if s != nil {
		return s, nil
	}
	flags, skip, perr := ParseShebang(body)
	if perr != nil {
		return nil, perr
	}
	src := body[skip:]
	proto, err := compile(src, "user_script")
	if err != nil {
		return nil, errf("ERR Error compiling script (new function): %s", compileErrText(err))
	}
	// The chunk is a vararg function; Lua 5.1's compatibility "arg" table
	// would be built at every call of a script that mentions arg. Scripts
	// get no arguments that way (KEYS and ARGV are globals), so none.
	proto.IsVarArg &^= lua.VarArgNeedsArg
	s = &Script{SHA: sha, Body: bytes.Clone(body), Flags: flags, proto: proto}
	e.mu.Lock()
	if old := e.scripts[sha]; old != nil {
		s = old
	} else {
		e.scripts[sha] = s
		e.mem += int64(len(body)) + 40
	}
	e.mu.Unlock()
	return s, nil
}

func compileErrText(err error) string {
	msg := err.Error()
	return strings.TrimSpace(strings.ReplaceAll(msg, "\n", " "))
}

// Lookup returns the cached script with this SHA1 (any case), or nil.
func (e *Engine) Lookup(sha string) *Script {
	if len(sha) != 40 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.scripts[strings.ToLower(sha)]
}

// LookupBytes is Lookup for a SHA1 still in a request's buffer: the
// common lower-case name is found without a copy.
func (e *Engine) LookupBytes(sha []byte) *Script {
	if len(sha) != 40 {
		return nil
	}
	e.mu.Lock()
	s := e.scripts[string(sha)]
	e.mu.Unlock()
	if s == nil {
		return e.Lookup(string(sha))
	}
	return s
}

// Flush empties the script cache and resets the EVAL Lua state (SCRIPT
// FLUSH).
func (e *Engine) Flush() {
	e.mu.Lock()
	e.scripts = make(map[string]*Script)
	e.mem = 0
	e.mu.Unlock()
	e.eval = nil
}

// Stats returns the number of cached scripts and their memory.
func (e *Engine) Stats() (n int, mem int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.scripts), e.mem
}

// Host runs the Redis commands a script calls, for one run.
type Host interface {
	// Call runs args as a command of the script's client, replying in
	// RESP version proto (2 or 3) and appending the reply to out. args
	// and their bytes are only valid during the call (the engine reuses
	// them for the next one), as a request's arguments are. A
	// command refused before it runs (unknown, noscript, a write from a
	// read-only script ...) returns refusal, Redis's error text (with or
	// without an "-CODE " prefix), and no reply.
	Call(args [][]byte, proto int, out []byte) (reply []byte, refusal string)
	// SetRepl receives redis.set_repl's flags (ReplAOF|ReplReplica).
	SetRepl(flags int)
}

// Replication flags of redis.set_repl.
const (
	ReplNone    = 0
	ReplAOF     = 1
	ReplReplica = 2
	ReplAll     = ReplAOF | ReplReplica
)

// Log levels of redis.log, Redis's LL_*.
const (
	LogDebug   = 0
	LogVerbose = 1
	LogNotice  = 2
	LogWarning = 3
)

// Run is one invocation of a script or function.
type Run struct {
	// Host runs the commands the script calls.
	Host Host
	// Keys and Args are KEYS and ARGV.
	Keys, Args [][]byte
	// Ctx is cancelled to kill the script (SCRIPT KILL, FUNCTION KILL);
	// nil means the script cannot be killed.
	Ctx context.Context
	// Proto is the caller's protocol, for the reply.
	Proto int
	// Name is the script's name in errors: its SHA1 for EVAL (as Redis
	// 7.0 names it there, without the "f_" of its Lua function), or the
	// function's name.
	Name string
	// Killed reports a kill to the caller; it is set when the run ended
	// because Ctx was cancelled.
	Killed bool
	// NoErrorStats is set when the run's error reply repeats an error
	// already counted in the error statistics (a refused command's).
	NoErrorStats bool
}

// killedText is the error a killed script ends with.
const killedText = "ERR Script killed by user with SCRIPT KILL..."

// Exec runs s and appends its reply, converted for run.Proto, to out.
func (e *Engine) Exec(s *Script, run *Run, out []byte) []byte {
	if e.eval == nil {
		e.eval = newState(e, false)
	}
	st := e.eval
	if s.fnState != st {
		s.fn = st.L.NewFunctionFromProto(s.proto)
		s.fn.Env = st.env
		s.fnState = st
	}
	st.keys.fill(st, run.Keys)
	st.argv.fill(st, run.Args)
	if run.Name == "" {
		run.Name = s.SHA
	}
	out = st.call(s.fn, run, nil, out)
	st.keys.reset(st, len(run.Keys))
	st.argv.reset(st, len(run.Args))
	return out
}

// maxReusedArgs bounds the KEYS and ARGV tables kept across runs.
const maxReusedArgs = 256

// argTable is the KEYS or ARGV global of the EVAL state. Its table is
// reused from run to run when the script left it as it was filled (no
// metatable, nothing past the run's items): then nothing of one run can
// be seen by the next, which only sees its own items. A script cannot keep
// a reference to it past its run (globals and library tables are
// read-only), so a table it changed is simply dropped for a new one.
type argTable struct {
	name string
	t    *lua.LTable
	// last holds the values of the previous run's items: an item with the
	// same bytes at the same place (a script called again on its key)
	// reuses its value instead of allocating a new string.
	last []lua.LValue
}

// fill sets the global to a table of items.
func (a *argTable) fill(st *state, items [][]byte) {
	if a.t == nil || len(items) > maxReusedArgs {
		a.t = strArray(st.L, items)
		st.real.RawSetString(a.name, a.t)
		return
	}
	for i, it := range items {
		if i < len(a.last) {
			if s, ok := a.last[i].(lua.LString); ok && string(s) == string(it) {
				a.t.RawSetInt(i+1, a.last[i])
				continue
			}
		}
		v := lua.LValue(lua.LString(it))
		if i < len(a.last) {
			a.last[i] = v
		} else {
			a.last = append(a.last, v)
		}
		a.t.RawSetInt(i+1, v)
	}
}

// reset empties the table of a run of n items for the next run, or drops
// it if the script changed more than its items.
func (a *argTable) reset(st *state, n int) {
	t := a.t
	var after lua.LValue = lua.LNil
	if n > 0 {
		after = lua.LNumber(n)
	}
	if k, _ := t.Next(after); n > maxReusedArgs || k != lua.LNil || t.Metatable != lua.LNil && t.Metatable != nil {
		a.t = nil
		st.real.RawSetString(a.name, lua.LNil)
		return
	}
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, lua.LNil)
	}
}

func strArray(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for _, it := range items {
		t.Append(lua.LString(it))
	}
	return t
}

// lrand48 is the 48-bit linear congruential generator behind Redis's
// math.random (redisLrand48), so a seed gives Redis's sequence.
type lrand48 struct{ x uint64 }

func (r *lrand48) seed(v int32) { r.x = uint64(uint32(v))<<16 | 0x330e }

func (r *lrand48) next() int32 {
	r.x = (0x5deece66d*r.x + 0xb) & (1<<48 - 1)
	return int32(r.x >> 17)
}

// SeedRandom seeds math.random (the caller passes a random seed at start,
// so scripts see random numbers, as in Redis 7.0).
func (e *Engine) SeedRandom(v int32) { e.rand.seed(v) }

// splitArgs splits a shebang line as Redis's sdssplitargs (quotes and
// escapes).
func splitArgs(line []byte) ([]string, bool) {
	args, ok := resp.SplitArgs(line)
	if !ok {
		return nil, false
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out, true
}
