package script

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/resp"
	lua "github.com/yuin/gopher-lua"
)

// parseReply converts one RESP2/RESP3 reply at the start of b to a Lua
// value with Redis's rules (redisProtocolToLuaType) and returns the rest.
// Integers become numbers, bulk strings strings, a null bulk or null array
// false, a status {ok=...}, an error {err=...}, an array a table; RESP3
// adds map {map={...}}, set {set={k=true}}, null nil, booleans, double
// {double=n}, big number {big_number=s} and verbatim
// {verbatim_string={format=..., string=...}}; attributes are skipped.
func parseReply(L *lua.LState, b []byte, depth int) (lua.LValue, []byte) {
	if len(b) == 0 {
		return lua.LNil, b
	}
	line, rest := cutLine(b[1:])
	switch b[0] {
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return lua.LNumber(n), rest
	case '$', '=':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return lua.LFalse, rest
		}
		data := rest[:n]
		rest = rest[n+2:]
		if b[0] == '=' {
			t := L.NewTable()
			v := L.NewTable()
			format, text := "txt", data
			if len(data) >= 4 && data[3] == ':' {
				format, text = string(data[:3]), data[4:]
			}
			v.RawSetString("format", lua.LString(format))
			v.RawSetString("string", lua.LString(text))
			t.RawSetString("verbatim_string", v)
			return t, rest
		}
		return lua.LString(data), rest
	case '+':
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(line))
		return t, rest
	case '-', '!':
		msg := string(line)
		if b[0] == '!' {
			n, _ := strconv.Atoi(msg)
			msg = string(rest[:n])
			rest = rest[n+2:]
		}
		// The command's error is counted in the error statistics when it
		// is replied: the script's own error reply, if it ends with it,
		// is not counted again (Redis's redisProtocolToLuaType_Error).
		t := errorTable(L, "-"+msg)
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		return t, rest
	case '*', '~', '>':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return lua.LFalse, rest
		}
		t := L.CreateTable(n, 0)
		var v lua.LValue
		if b[0] == '~' {
			set := L.NewTable()
			for i := 0; i < n; i++ {
				v, rest = parseReply(L, rest, depth+1)
				set.RawSet(v, lua.LTrue)
			}
			t.RawSetString("set", set)
			return t, rest
		}
		for i := 0; i < n; i++ {
			v, rest = parseReply(L, rest, depth+1)
			t.RawSetInt(i+1, v)
		}
		return t, rest
	case '%', '|':
		n, _ := strconv.Atoi(string(line))
		m := L.NewTable()
		var k, v lua.LValue
		for i := 0; i < n; i++ {
			k, rest = parseReply(L, rest, depth+1)
			v, rest = parseReply(L, rest, depth+1)
			m.RawSet(k, v)
		}
		if b[0] == '|' {
			// Attributes are not shown to scripts: the reply follows.
			return parseReply(L, rest, depth)
		}
		t := L.NewTable()
		t.RawSetString("map", m)
		return t, rest
	case '_':
		return lua.LNil, rest
	case '#':
		return lua.LBool(len(line) > 0 && line[0] == 't'), rest
	case ',':
		t := L.NewTable()
		t.RawSetString("double", lua.LNumber(parseDouble(string(line))))
		return t, rest
	case '(':
		t := L.NewTable()
		t.RawSetString("big_number", lua.LString(line))
		return t, rest
	}
	return lua.LNil, nil
}

func parseDouble(s string) float64 {
	switch strings.ToLower(s) {
	case "inf", "+inf":
		return math.Inf(1)
	case "-inf":
		return math.Inf(-1)
	case "nan", "-nan":
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

func cutLine(b []byte) (line, rest []byte) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return b, nil
	}
	return b[:i], b[i+2:]
}

// toRESP appends v as a reply to a client speaking proto, Redis's
// luaReplyToRedisReply: strings are bulk strings, numbers integers
// (truncated), true 1 (RESP2) and false nil, a table with err/ok a reply of
// that type, RESP3's double/big_number/verbatim_string/map/set fields
// their types, any other table an array up to its first nil.
func (st *state) toRESP(out []byte, v lua.LValue, proto, depth int) []byte {
	switch x := v.(type) {
	case lua.LString:
		return resp.AppendBulkString(out, string(x))
	case lua.LBool:
		if st.proto == 2 {
			if x {
				return resp.AppendInt(out, 1)
			}
			return resp.AppendNull(out, proto)
		}
		return resp.AppendBool(out, proto, bool(x))
	case lua.LNumber:
		return resp.AppendInt(out, luaToInt(float64(x)))
	case *lua.LTable:
		if depth > 1000 {
			return appendErrorReply(out, "ERR reached lua stack limit")
		}
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			return appendErrorReply(out, string(e))
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			return resp.AppendSimple(out, strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
		}
		if d, ok := x.RawGetString("double").(lua.LNumber); ok {
			return resp.AppendDouble(out, proto, float64(d))
		}
		if s, ok := x.RawGetString("big_number").(lua.LString); ok {
			return resp.AppendBigNumber(out, proto, strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
		}
		if vt, ok := x.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, ok1 := vt.RawGetString("format").(lua.LString)
			s, ok2 := vt.RawGetString("string").(lua.LString)
			if ok1 && ok2 {
				return resp.AppendVerbatim(out, proto, string(f), string(s))
			}
		}
		if m, ok := x.RawGetString("map").(*lua.LTable); ok {
			var body []byte
			n := 0
			forEach(m, func(k, val lua.LValue) {
				body = st.toRESP(body, k, proto, depth+1)
				body = st.toRESP(body, val, proto, depth+1)
				n++
			})
			out = resp.AppendMapLen(out, proto, n)
			return append(out, body...)
		}
		if s, ok := x.RawGetString("set").(*lua.LTable); ok {
			var body []byte
			n := 0
			forEach(s, func(k, _ lua.LValue) {
				body = st.toRESP(body, k, proto, depth+1)
				n++
			})
			out = resp.AppendSetLen(out, proto, n)
			return append(out, body...)
		}
		n := 0
		for x.RawGetInt(n+1) != lua.LNil {
			n++
		}
		out = resp.AppendArrayLen(out, n)
		for i := 1; i <= n; i++ {
			out = st.toRESP(out, x.RawGetInt(i), proto, depth+1)
		}
		return out
	}
	return resp.AppendNull(out, proto)
}

// luaToInt is C's (long long) cast of a Lua number.
func luaToInt(f float64) int64 {
	if f != f {
		return math.MinInt64
	}
	if f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(f)
}

// forEach calls cb for every pair of t in next()'s order (pairs' order),
// which is stable; gopher-lua's ForEach walks Go maps in random order.
func forEach(t *lua.LTable, cb func(k, v lua.LValue)) {
	k, v := t.Next(lua.LNil)
	for k != lua.LNil {
		cb(k, v)
		k, v = t.Next(k)
	}
}
