package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// registerRedisAPI fills the redis table of an EVAL or FCALL state.
func (st *state) registerRedisAPI(t *lua.LTable) {
	L := st.L
	set := func(name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }
	set("call", func(L *lua.LState) int { return st.redisCall(L, true) })
	set("pcall", func(L *lua.LState) int { return st.redisCall(L, false) })
	registerLog(st, t)
	registerVersion(t)
	set("setresp", st.redisSetResp)
	set("sha1hex", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			return raise(L, "wrong number of arguments")
		}
		L.Push(lua.LString(SHA1Hex([]byte(L.ToString(1)))))
		return 1
	})
	set("error_reply", func(L *lua.LState) int {
		if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
			L.Push(errorTable(L, "wrong number or type of arguments"))
			return 1
		}
		s := L.ToString(1)
		if !strings.HasPrefix(s, "-") {
			s = "-" + s
		}
		L.Push(errorTable(L, s))
		return 1
	})
	set("status_reply", func(L *lua.LState) int {
		if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
			L.Push(errorTable(L, "wrong number or type of arguments"))
			return 1
		}
		r := L.NewTable()
		r.RawSetString("ok", L.Get(1))
		L.Push(r)
		return 1
	})
	set("set_repl", st.redisSetRepl)
	t.RawSetString("REPL_NONE", lua.LNumber(ReplNone))
	t.RawSetString("REPL_AOF", lua.LNumber(ReplAOF))
	t.RawSetString("REPL_SLAVE", lua.LNumber(ReplReplica))
	t.RawSetString("REPL_REPLICA", lua.LNumber(ReplReplica))
	t.RawSetString("REPL_ALL", lua.LNumber(ReplAll))
	// Redis 7.0 always replicates effects: replicate_commands is kept for
	// old scripts and answers true.
	set("replicate_commands", func(L *lua.LState) int { L.Push(lua.LTrue); return 1 })
	// Outside a debugging session these do nothing, as in Redis.
	set("breakpoint", func(L *lua.LState) int { L.Push(lua.LBool(st.dbg.breakpoint())); return 1 })
	set("debug", func(L *lua.LState) int { st.dbg.debugLog(L); return 0 })
	set("acl_check_cmd", st.redisACLCheck)
}

func registerLog(st *state, t *lua.LTable) {
	t.RawSetString("log", st.L.NewFunction(st.redisLog))
	t.RawSetString("LOG_DEBUG", lua.LNumber(LogDebug))
	t.RawSetString("LOG_VERBOSE", lua.LNumber(LogVerbose))
	t.RawSetString("LOG_NOTICE", lua.LNumber(LogNotice))
	t.RawSetString("LOG_WARNING", lua.LNumber(LogWarning))
}

func registerVersion(t *lua.LTable) {
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(redisVersionNum))
	t.RawSetString("REDIS_VERSION", lua.LString(redisVersion))
}

func (st *state) redisLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		return raise(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		if s, isStr := L.Get(1).(lua.LString); isStr {
			if f, err := strconv.ParseFloat(strings.TrimSpace(string(s)), 64); err == nil {
				lv, ok = lua.LNumber(f), true
			}
		}
	}
	if !ok {
		return raise(L, "First argument must be a number (log level).")
	}
	level := int(lv)
	if level < LogDebug || level > LogWarning {
		return raise(L, "Invalid debug level.")
	}
	var b strings.Builder
	for i := 2; i <= n; i++ {
		v := L.Get(i)
		if v.Type() != lua.LTString && v.Type() != lua.LTNumber {
			continue
		}
		if i != 2 {
			b.WriteByte(' ')
		}
		b.WriteString(luaToString(v))
	}
	st.e.Log(level, b.String())
	return 0
}

func (st *state) redisSetResp(L *lua.LState) int {
	if st.run == nil {
		return raise(L, "redis.setresp can only be called inside a script invocation")
	}
	if L.GetTop() != 1 {
		return raise(L, "redis.setresp() requires one argument.")
	}
	v := int(L.ToNumber(1))
	if v != 2 && v != 3 {
		return raise(L, "RESP version must be 2 or 3.")
	}
	st.proto = v
	return 0
}

func (st *state) redisSetRepl(L *lua.LState) int {
	if st.run == nil {
		return raise(L, "redis.set_repl can only be called inside a script invocation")
	}
	if L.GetTop() != 1 {
		return raise(L, "redis.set_repl() requires two arguments.")
	}
	f := int(L.ToNumber(1))
	if f&^ReplAll != 0 {
		return raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	st.run.Host.SetRepl(f)
	return 0
}

// ACLChecker is implemented by a Host that can answer redis.acl_check_cmd.
type ACLChecker interface {
	// ACLCheck reports whether the script's user may run args; known is
	// false for an unknown command.
	ACLCheck(args [][]byte) (allowed, known bool)
}

func (st *state) redisACLCheck(L *lua.LState) int {
	if st.run == nil {
		return raise(L, "redis.acl_check_cmd can only be called inside a script invocation")
	}
	args, errMsg := st.luaArgs(L)
	if errMsg != "" {
		return raise(L, errMsg)
	}
	allowed, known := true, true
	if ac, ok := st.run.Host.(ACLChecker); ok {
		allowed, known = ac.ACLCheck(args)
	}
	if !known {
		return raise(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LBool(allowed))
	return 1
}

// luaArgs converts redis.call's arguments: strings as they are, numbers
// with %.17g, anything else is an error. The vector and its bytes are the
// state's, valid until the next call.
func (st *state) luaArgs(L *lua.LState) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	buf, ends := st.argBuf[:0], st.argEnd[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = strconv.AppendFloat(buf, float64(v), 'g', 17, 64)
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
		ends = append(ends, len(buf))
	}
	args := st.cmdArgs[:0]
	start := 0
	for _, end := range ends {
		// A full slice expression: a command appending to one argument
		// cannot write over the next.
		args = append(args, buf[start:end:end])
		start = end
	}
	if cap(buf) <= 64<<10 {
		st.argBuf = buf
	}
	if n <= 1024 {
		st.cmdArgs, st.argEnd = args, ends
	}
	return args, ""
}

// luaToString is lua_tolstring for strings and numbers (Lua's %.14g).
func luaToString(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return formatLuaNumber(float64(n))
	}
	return v.String()
}

// formatLuaNumber formats like Lua 5.1's LUAI_NUMFFORMAT "%.14g".
func formatLuaNumber(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f != f:
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// redisCall is redis.call (raise true) and redis.pcall.
func (st *state) redisCall(L *lua.LState, raiseErr bool) int {
	if st.run == nil {
		return raise(L, "redis.call/pcall can only be called inside a script invocation")
	}
	args, errMsg := st.luaArgs(L)
	if errMsg != "" {
		st.dbg.logError(errMsg)
		if raiseErr {
			return raise(L, errMsg)
		}
		L.Push(errorTable(L, errMsg))
		return 1
	}
	dbg := st.dbg.logging()
	if dbg {
		st.dbg.logCommand(args)
	}
	reply, refusal := st.run.Host.Call(args, st.proto, st.buf[:0])
	if refusal != "" {
		if dbg {
			st.dbg.logError(refusal)
		}
		t := errorTable(L, refusal)
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		if raiseErr {
			L.Error(t, 0)
			return 0
		}
		L.Push(t)
		return 1
	}
	v, _ := parseReply(L, reply, 0)
	if dbg {
		st.dbg.logReply(reply)
	}
	if cap(reply) <= 64<<10 {
		st.buf = reply[:0]
	}
	if raiseErr && len(reply) > 0 && reply[0] == '-' {
		L.Error(v, 0)
		return 0
	}
	L.Push(v)
	return 1
}
