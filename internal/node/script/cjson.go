package script

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// cjsonConfig is the cjson library's settings (they last as long as the
// Lua state, as in lua-cjson).
type cjsonConfig struct {
	sparseConvert  bool
	sparseRatio    int
	sparseSafe     int
	encodeMaxDepth int
	decodeMaxDepth int
	precision      int
	encodeInvalid  int // 0 off, 1 on, 2 null
	decodeInvalid  bool
	keepBuffer     bool
	null           *lua.LUserData
}

// openCjson returns the cjson library: encode, decode and lua-cjson's
// configuration functions, with lua-cjson's rules (arrays are tables with
// only positive integer keys, an empty table is an object, excessively
// sparse arrays are refused, cjson.null is JSON's null).
func openCjson(L *lua.LState) *lua.LTable {
	cfg := &cjsonConfig{sparseRatio: 2, sparseSafe: 10, encodeMaxDepth: 1000, decodeMaxDepth: 1000, precision: 14, keepBuffer: true, decodeInvalid: true}
	cfg.null = L.NewUserData()
	t := L.NewTable()
	set := func(name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }
	set("encode", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		var b strings.Builder
		cfg.encode(L, &b, L.Get(1), 0)
		L.Push(lua.LString(b.String()))
		return 1
	})
	set("decode", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		d := &jsonDecoder{L: L, cfg: cfg, s: L.CheckString(1)}
		v := d.value(0)
		d.skipSpace()
		if d.i < len(d.s) {
			d.fail("the end")
		}
		L.Push(v)
		return 1
	})
	intOpt := func(p *int, lo, hi int) lua.LGFunction {
		return func(L *lua.LState) int {
			if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
				n := L.CheckInt(1)
				if n < lo || n > hi {
					L.ArgError(1, "expected integer between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi))
				}
				*p = n
			}
			L.Push(lua.LNumber(*p))
			return 1
		}
	}
	boolOpt := func(p *bool) lua.LGFunction {
		return func(L *lua.LState) int {
			if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
				*p = optBool(L, 1)
			}
			L.Push(lua.LBool(*p))
			return 1
		}
	}
	set("encode_max_depth", intOpt(&cfg.encodeMaxDepth, 1, math.MaxInt32))
	set("decode_max_depth", intOpt(&cfg.decodeMaxDepth, 1, math.MaxInt32))
	set("encode_number_precision", intOpt(&cfg.precision, 1, 14))
	set("encode_keep_buffer", boolOpt(&cfg.keepBuffer))
	set("decode_invalid_numbers", boolOpt(&cfg.decodeInvalid))
	set("encode_invalid_numbers", func(L *lua.LState) int {
		if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
			if s, ok := L.Get(1).(lua.LString); ok && s == "null" {
				cfg.encodeInvalid = 2
			} else if optBool(L, 1) {
				cfg.encodeInvalid = 1
			} else {
				cfg.encodeInvalid = 0
			}
		}
		if cfg.encodeInvalid == 2 {
			L.Push(lua.LString("null"))
		} else {
			L.Push(lua.LBool(cfg.encodeInvalid == 1))
		}
		return 1
	})
	set("encode_sparse_array", func(L *lua.LState) int {
		if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
			cfg.sparseConvert = optBool(L, 1)
		}
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
			cfg.sparseRatio = L.CheckInt(2)
		}
		if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
			cfg.sparseSafe = L.CheckInt(3)
		}
		L.Push(lua.LBool(cfg.sparseConvert))
		L.Push(lua.LNumber(cfg.sparseRatio))
		L.Push(lua.LNumber(cfg.sparseSafe))
		return 3
	})
	t.RawSetString("null", cfg.null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

func optBool(L *lua.LState, i int) bool {
	switch v := L.Get(i).(type) {
	case lua.LBool:
		return bool(v)
	case lua.LString:
		return v == "on" || v == "true"
	case lua.LNumber:
		return v != 0
	}
	return false
}

func (cfg *cjsonConfig) encode(L *lua.LState, b *strings.Builder, v lua.LValue, depth int) {
	switch x := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case lua.LNumber:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			switch cfg.encodeInvalid {
			case 0:
				L.RaiseError("Cannot serialise number: must not be NaN or Inf")
			case 2:
				b.WriteString("null")
				return
			}
			switch {
			case math.IsNaN(f):
				b.WriteString("nan")
			case f > 0:
				b.WriteString("inf")
			default:
				b.WriteString("-inf")
			}
			return
		}
		b.WriteString(formatG(f, cfg.precision))
	case lua.LString:
		jsonQuote(b, string(x))
	case *lua.LUserData:
		if x == cfg.null {
			b.WriteString("null")
			return
		}
		L.RaiseError("Cannot serialise userdata: type not supported")
	case *lua.LTable:
		depth++
		if depth > cfg.encodeMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		n := cfg.arrayLength(L, x)
		if n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				cfg.encode(L, b, x.RawGetInt(i), depth)
			}
			b.WriteByte(']')
			return
		}
		b.WriteByte('{')
		first := true
		k, val := x.Next(lua.LNil)
		for k != lua.LNil {
			if !first {
				b.WriteByte(',')
			}
			first = false
			switch kk := k.(type) {
			case lua.LString:
				jsonQuote(b, string(kk))
			case lua.LNumber:
				b.WriteByte('"')
				b.WriteString(formatG(float64(kk), cfg.precision))
				b.WriteByte('"')
			default:
				L.RaiseError("Cannot serialise table: table key must be a number or string")
			}
			b.WriteByte(':')
			cfg.encode(L, b, val, depth)
			k, val = x.Next(k)
		}
		b.WriteByte('}')
	default:
		L.RaiseError("Cannot serialise %s: type not supported", v.Type().String())
	}
}

// arrayLength is lua-cjson's lua_array_length: the table's largest index
// if every key is a positive integer (0 for an empty table or an object),
// refusing excessively sparse arrays unless they are encoded as objects.
func (cfg *cjsonConfig) arrayLength(L *lua.LState, t *lua.LTable) int {
	maxIdx, items := 0, 0
	k, _ := t.Next(lua.LNil)
	for k != lua.LNil {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			return 0
		}
		if int(n) > maxIdx {
			maxIdx = int(n)
		}
		items++
		k, _ = t.Next(k)
	}
	if cfg.sparseRatio > 0 && maxIdx > items*cfg.sparseRatio && maxIdx > cfg.sparseSafe {
		if !cfg.sparseConvert {
			L.RaiseError("Cannot serialise table: excessively sparse array")
		}
		return 0
	}
	return maxIdx
}

func formatG(f float64, prec int) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	s := strconv.FormatFloat(f, 'g', prec, 64)
	// C's %g writes at least two exponent digits.
	if i := strings.IndexAny(s, "e"); i >= 0 && len(s)-i == 3 {
		s = s[:i+2] + "0" + s[i+2:]
	}
	return s
}

func jsonQuote(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

type jsonDecoder struct {
	L   *lua.LState
	cfg *cjsonConfig
	s   string
	i   int
}

func (d *jsonDecoder) skipSpace() {
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t' || d.s[d.i] == '\n' || d.s[d.i] == '\r') {
		d.i++
	}
}

func (d *jsonDecoder) fail(expected string) {
	found := "invalid token"
	if d.i >= len(d.s) {
		found = "T_END"
	} else {
		switch d.s[d.i] {
		case '{':
			found = "T_OBJ_BEGIN"
		case '}':
			found = "T_OBJ_END"
		case '[':
			found = "T_ARR_BEGIN"
		case ']':
			found = "T_ARR_END"
		case ',':
			found = "T_COMMA"
		case ':':
			found = "T_COLON"
		}
	}
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, d.i+1)
}

func (d *jsonDecoder) value(depth int) lua.LValue {
	d.skipSpace()
	if d.i >= len(d.s) {
		d.fail("value")
	}
	switch c := d.s[d.i]; {
	case c == '{':
		depth++
		if depth > d.cfg.decodeMaxDepth {
			d.L.RaiseError("Found too many nested data structures (%d) at character %d", depth, d.i+1)
		}
		d.i++
		t := d.L.NewTable()
		d.skipSpace()
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return t
		}
		for {
			d.skipSpace()
			if d.i >= len(d.s) || d.s[d.i] != '"' {
				d.fail("object key string")
			}
			k := d.str()
			d.skipSpace()
			if d.i >= len(d.s) || d.s[d.i] != ':' {
				d.fail("colon")
			}
			d.i++
			t.RawSetString(k, d.value(depth))
			d.skipSpace()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == '}' {
				d.i++
				return t
			}
			d.fail("comma or object end")
		}
	case c == '[':
		depth++
		if depth > d.cfg.decodeMaxDepth {
			d.L.RaiseError("Found too many nested data structures (%d) at character %d", depth, d.i+1)
		}
		d.i++
		t := d.L.NewTable()
		d.skipSpace()
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return t
		}
		for n := 1; ; n++ {
			t.RawSetInt(n, d.value(depth))
			d.skipSpace()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == ']' {
				d.i++
				return t
			}
			d.fail("comma or array end")
		}
	case c == '"':
		return lua.LString(d.str())
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return lua.LTrue
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return lua.LFalse
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += 4
		return d.cfg.null
	case c == '-' || c >= '0' && c <= '9' || c == 'i' || c == 'n' || c == 'I' || c == 'N':
		j := d.i
		for j < len(d.s) && strings.IndexByte("+-0123456789.eEinfatyINFATY", d.s[j]) >= 0 {
			j++
		}
		f, err := strconv.ParseFloat(d.s[d.i:j], 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			d.fail("value")
		}
		if (math.IsInf(f, 0) || math.IsNaN(f)) && !d.cfg.decodeInvalid && !strings.ContainsAny(d.s[d.i:j], "eE") {
			d.fail("value")
		}
		d.i = j
		return lua.LNumber(f)
	}
	d.fail("value")
	return lua.LNil
}

func (d *jsonDecoder) str() string {
	d.i++ // opening quote
	var b strings.Builder
	for {
		if d.i >= len(d.s) {
			d.fail("string end")
		}
		c := d.s[d.i]
		if c == '"' {
			d.i++
			return b.String()
		}
		if c != '\\' {
			b.WriteByte(c)
			d.i++
			continue
		}
		d.i++
		if d.i >= len(d.s) {
			d.fail("escape")
		}
		e := d.s[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := d.hex4()
			if r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(d.s[d.i:], `\u`) {
				d.i += 2
				lo := d.hex4()
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			}
			var buf [4]byte
			n := utf8.EncodeRune(buf[:], rune(r))
			b.Write(buf[:n])
		default:
			d.fail("valid escape")
		}
	}
}

func (d *jsonDecoder) hex4() int {
	if d.i+4 > len(d.s) {
		d.fail("unicode escape")
	}
	n, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 32)
	if err != nil {
		d.fail("unicode escape")
	}
	d.i += 4
	return int(n)
}
