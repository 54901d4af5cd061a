package script

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Redis's version as scripts see it (redis.REDIS_VERSION and _NUM).
const (
	redisVersion    = "7.0.15"
	redisVersionNum = 0x0007000f
)

const readonlyText = "Attempt to modify a readonly table"

// state is one sandboxed Lua state. real holds the globals (libraries as
// read-only proxies, KEYS, ARGV); env, the state's global table as scripts
// see it, is an empty proxy whose reads fall through to real and whose
// writes fail, as Redis 7.0's read-only global table.
type state struct {
	e    *Engine
	L    *lua.LState
	real *lua.LTable
	env  *lua.LTable
	// envMeta is env's metatable; FUNCTION LOAD points its __index at the
	// load-time API for the length of the load.
	envMeta *lua.LTable
	// ro holds every protected table, for setmetatable and rawset.
	ro map[*lua.LTable]bool
	// roMeta is the __metatable every protected table shows.
	roMeta *lua.LTable
	// run is the invocation in progress (nil outside one): redis.call and
	// friends refuse to run without it.
	run *Run
	// proto is the RESP version of the script's commands (redis.setresp).
	proto int
	// buf is the reply buffer reused by redis.call.
	buf []byte
	// errFn is the pcall error handler that adds source and line.
	errFn *lua.LFunction
	// load is set while FUNCTION LOAD runs a library's code.
	load *loadCtx
	// keys and argv are the EVAL state's KEYS and ARGV (Exec).
	keys, argv argTable
	// cmdArgs, argBuf and argEnd are redis.call's argument vector, the
	// bytes it points into and their ends, reused by every call.
	cmdArgs [][]byte
	argBuf  []byte
	argEnd  []int
	// redisTable is the redis library table (the debugger's redis
	// command calls its call).
	redisTable *lua.LTable
	// dbg is the debugger of the run in progress, nil when not
	// debugging (ExecDebug).
	dbg *Debugger
}

func newState(e *Engine, functions bool) *state {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 200, RegistrySize: 1024, RegistryMaxSize: 1024 * 1024, MinimizeStackMemory: functions})
	st := &state{e: e, L: L, ro: make(map[*lua.LTable]bool), proto: 2}
	st.keys.name, st.argv.name = "KEYS", "ARGV"
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	real := L.G.Global
	st.real = real
	for _, name := range []string{"dofile", "loadfile", "print", "module", "require", "_printregs"} {
		real.RawSetString(name, lua.LNil)
	}
	st.roMeta = L.NewTable()
	st.roMeta.Metatable = st.roMetatable(L.NewTable())
	st.ro[st.roMeta] = true

	real.RawSetString("pcall", L.NewFunction(st.luaPcall))
	real.RawSetString("setmetatable", L.NewFunction(st.luaSetMetatable))
	real.RawSetString("getmetatable", L.NewFunction(luaGetMetatable))
	real.RawSetString("rawset", L.NewFunction(st.luaRawset))
	real.RawSetString("loadstring", L.NewFunction(st.luaLoadString))
	// tostring of a number is Lua 5.1's %.14g (gopher-lua prints the
	// shortest round-trip form).
	baseToString := real.RawGetString("tostring")
	real.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		if n, ok := L.Get(1).(lua.LNumber); ok {
			L.Push(lua.LString(formatLuaNumber(float64(n))))
			return 1
		}
		v := L.CheckAny(1)
		L.Push(baseToString)
		L.Push(v)
		L.Call(1, 1)
		return 1
	}))
	real.RawSetString("load", lua.LNil)

	math := real.RawGetString("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(st.mathRandom))
	math.RawSetString("randomseed", L.NewFunction(st.mathRandomSeed))

	redis := L.NewTable()
	st.registerRedisAPI(redis)
	st.redisTable = redis
	real.RawSetString("redis", st.protect(redis))
	real.RawSetString("cjson", st.protect(openCjson(L)))
	real.RawSetString("cmsgpack", st.protect(openCmsgpack(L)))
	real.RawSetString("bit", st.protect(openBit(L)))
	real.RawSetString("struct", st.protect(openStruct(L)))
	for _, name := range []string{"string", "math", "table", "coroutine"} {
		if t, ok := real.RawGetString(name).(*lua.LTable); ok {
			real.RawSetString(name, st.protect(t))
		}
	}
	// The string metatable's __index is the string library itself: show a
	// protected view of it.
	if smt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		view := L.NewTable()
		view.RawSetString("__index", real.RawGetString("string"))
		smt.RawSetString("__metatable", st.protect(view))
	}

	// Reading a global that does not exist is an error, as Redis's
	// luaSetErrorMetatable.
	realMeta := L.NewTable()
	realMeta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	real.Metatable = realMeta

	env := L.NewTable()
	st.envMeta = st.roMetatable(real)
	env.Metatable = st.envMeta
	st.ro[env] = true
	st.env = env
	real.RawSetString("_G", env)
	L.Env = env
	L.G.Global = env
	st.errFn = L.NewFunction(st.errHandler)
	return st
}

// roMetatable returns a metatable that reads through to target and
// refuses writes.
func (st *state) roMetatable(target *lua.LTable) *lua.LTable {
	mt := st.L.NewTable()
	mt.RawSetString("__index", target)
	mt.RawSetString("__newindex", st.L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyText)
		return 0
	}))
	if st.roMeta != nil {
		mt.RawSetString("__metatable", st.roMeta)
	}
	return mt
}

// protect returns a read-only view of t.
func (st *state) protect(t *lua.LTable) *lua.LTable {
	p := st.L.NewTable()
	p.Metatable = st.roMetatable(t)
	st.ro[p] = true
	st.ro[t] = true
	return p
}

func (st *state) luaSetMetatable(L *lua.LState) int {
	if t, ok := L.Get(1).(*lua.LTable); ok && st.ro[t] {
		L.RaiseError(readonlyText)
	}
	L.CheckTypes(2, lua.LTNil, lua.LTTable)
	obj := L.Get(1)
	if obj == lua.LNil {
		L.RaiseError("cannot set metatable to a nil object.")
	}
	if mt, ok := L.GetMetatable(obj).(*lua.LTable); ok && mt.RawGetString("__metatable") != lua.LNil {
		L.RaiseError("cannot change a protected metatable")
	}
	L.SetMetatable(obj, L.Get(2))
	L.SetTop(1)
	return 1
}

func luaGetMetatable(L *lua.LState) int {
	mt := L.GetMetatable(L.CheckAny(1))
	if t, ok := mt.(*lua.LTable); ok {
		if p := t.RawGetString("__metatable"); p != lua.LNil {
			L.Push(p)
			return 1
		}
	}
	L.Push(mt)
	return 1
}

func (st *state) luaRawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if st.ro[t] {
		L.RaiseError(readonlyText)
	}
	L.RawSet(t, L.CheckAny(2), L.CheckAny(3))
	L.SetTop(1)
	return 1
}

func (st *state) luaLoadString(L *lua.LState) int {
	src := L.CheckString(1)
	name := L.OptString(2, src)
	if strings.HasPrefix(src, "\x1bLua") {
		L.Push(lua.LNil)
		L.Push(lua.LString("binary chunks are not allowed"))
		return 2
	}
	proto, err := compile([]byte(src), name)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	fn := L.NewFunctionFromProto(proto)
	fn.Env = st.env
	L.Push(fn)
	return 1
}

// luaPcall is Redis's pcall: an error that is a table with an err field
// is returned as that string, for compatibility with Redis 6.
func (st *state) luaPcall(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(1, "value expected")
	}
	err := L.PCall(n-1, lua.MultRet, nil)
	if err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		var ae *lua.ApiError
		if errors.As(err, &ae) {
			obj = ae.Object
		}
		if st.killed() {
			// A killed script stops: pcall cannot catch the kill.
			L.Error(obj, 0)
		}
		if t, ok := obj.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				obj = s
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

func (st *state) killed() bool {
	return st.run != nil && st.run.Ctx != nil && st.run.Ctx.Err() != nil
}

// errHandler turns any error into Redis's error table and adds where it
// happened: the Lua frame that raised it (the caller of a Go function).
func (st *state) errHandler(L *lua.LState) int {
	errv := L.Get(1)
	t, ok := errv.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+errv.String()))
	}
	for level := 1; level < 4; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What == "G" {
			continue
		}
		if t.RawGetString("source") == lua.LNil {
			t.RawSetString("source", lua.LString("@"+dbg.Source))
			t.RawSetString("line", lua.LString(strconv.Itoa(dbg.CurrentLine)))
		}
		break
	}
	L.Push(t)
	return 1
}

// call runs fn with args in a run and appends the reply, or the error, to
// out.
func (st *state) call(fn *lua.LFunction, run *Run, args []lua.LValue, out []byte) []byte {
	L := st.L
	st.run = run
	st.proto = 2
	if run.Ctx != nil {
		L.SetContext(run.Ctx)
	}
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	err := L.PCall(len(args), 1, st.errFn)
	if run.Ctx != nil {
		L.RemoveContext()
		if run.Ctx.Err() != nil {
			run.Killed = true
		}
	}
	if err != nil {
		L.SetTop(0)
		out = appendErrorReply(out, st.errorText(err, run))
	} else {
		v := L.Get(-1)
		L.SetTop(0)
		if t, ok := v.(*lua.LTable); ok && t.RawGetString("ignore_error_stats_update") == lua.LTrue {
			run.NoErrorStats = true
		}
		out = st.toRESP(out, v, run.Proto, 0)
	}
	st.run = nil
	return out
}

// errorText is the error reply of a failed run, Redis's luaCallFunction:
// the error table's err, then " script: <name>, on <source>:<line>.".
func (st *state) errorText(err error, run *Run) string {
	if run.Killed {
		return killedText
	}
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return "ERR Error running script " + run.Name + ", " + err.Error()
	}
	if ae.Type == lua.ApiErrorPanic && ae.Object == lua.LNil {
		return "ERR Error running script " + run.Name + ", " + err.Error()
	}
	t, ok := ae.Object.(*lua.LTable)
	if !ok {
		return "ERR " + ae.Object.String()
	}
	if t.RawGetString("ignore_error_stats_update") == lua.LTrue {
		run.NoErrorStats = true
	}
	msg, _ := t.RawGetString("err").(lua.LString)
	s := string(msg)
	if s == "" {
		s = "ERR unknown error"
	}
	src, ok1 := t.RawGetString("source").(lua.LString)
	line := t.RawGetString("line")
	if ok1 && line != lua.LNil {
		s += " script: " + run.Name + ", on " + string(src) + ":" + line.String() + "."
	}
	return s
}

// appendErrorReply appends an error reply; msg has its code.
func appendErrorReply(out []byte, msg string) []byte {
	msg = strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
	out = append(out, '-')
	out = append(out, msg...)
	return append(out, '\r', '\n')
}

// errorTable is Redis's luaPushErrorBuff: "-CODE msg" keeps its code,
// "msg" gets ERR; the result is a table with an err field.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	var full string
	if strings.HasPrefix(msg, "-") {
		code, rest, ok := strings.Cut(msg[1:], " ")
		if !ok {
			full = "ERR " + strings.Trim(code, "\r\n")
		} else {
			full = code + " " + strings.Trim(rest, "\r\n")
		}
	} else {
		full = "ERR " + strings.Trim(msg, "\r\n")
	}
	t := L.NewTable()
	t.RawSetString("err", lua.LString(full))
	return t
}

// raise raises an error table built from msg.
func raise(L *lua.LState, msg string) int {
	L.Error(errorTable(L, msg), 0)
	return 0
}

var _ = context.Background

const lrand48Max = 1<<31 - 1

// mathRandom is Redis's math.random: Lua 5.1's with redisLrand48.
func (st *state) mathRandom(L *lua.LState) int {
	if st.run == nil {
		L.RaiseError("math.random can only be called inside a script invocation")
	}
	r := float64(st.e.rand.next()%lrand48Max) / float64(lrand48Max)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := checkInt(L, 1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := checkInt(L, 1), checkInt(L, 2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (st *state) mathRandomSeed(L *lua.LState) int {
	if st.run == nil {
		L.RaiseError("math.randomseed can only be called inside a script invocation")
	}
	st.e.rand.seed(int32(checkInt(L, 1)))
	return 0
}

// checkInt is luaL_checkint: a number, or a string that converts to one.
func checkInt(L *lua.LState, i int) int {
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		return int(v)
	case lua.LString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64); err == nil {
			return int(f)
		}
	}
	L.TypeError(i, lua.LTNumber)
	return 0
}
