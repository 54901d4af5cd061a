package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// maxMsgpackNesting is lua-cmsgpack's LUACMSGPACK_MAX_NESTING: deeper
// tables are encoded as nil, so circular references end.
const maxMsgpackNesting = 16

// openCmsgpack returns the cmsgpack library: pack, unpack, unpack_one and
// unpack_limit, with lua-cmsgpack's encoding choices (the smallest integer
// form, float only when it is exact, tables with keys 1..n as arrays).
func openCmsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		if n == 0 {
			L.ArgError(1, "MessagePack pack needs input.")
		}
		var b []byte
		for i := 1; i <= n; i++ {
			b = mpEncode(b, L.Get(i), 0)
		}
		L.Push(lua.LString(b))
		return 1
	}))
	unpack := func(L *lua.LState, limit, offset int) int {
		s := L.CheckString(1)
		if offset < 0 || offset > len(s) {
			L.ArgError(3, "Start offset greater than input length.")
		}
		d := &mpDecoder{L: L, s: s, i: offset}
		var vals []lua.LValue
		for d.i < len(s) && (limit <= 0 || len(vals) < limit) {
			vals = append(vals, d.value())
		}
		return len(vals) + pushVals(L, vals, d, limit)
	}
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return unpack(L, 0, 0) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		return unpack(L, 1, L.OptInt(2, 0))
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		return unpack(L, L.OptInt(2, 0), L.OptInt(3, 0))
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	return t
}

// pushVals pushes the decoded values; unpack_one and unpack_limit push the
// next offset (-1 at the end) first.
func pushVals(L *lua.LState, vals []lua.LValue, d *mpDecoder, limit int) int {
	extra := 0
	if limit > 0 {
		next := d.i
		if next >= len(d.s) {
			next = -1
		}
		L.Push(lua.LNumber(next))
		extra = 1
	} else if len(vals) == 0 {
		L.ArgError(1, "MessagePack unpack needs input.")
	}
	for _, v := range vals {
		L.Push(v)
	}
	return extra
}

func mpEncode(b []byte, v lua.LValue, level int) []byte {
	switch x := v.(type) {
	case lua.LBool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if f == math.Trunc(f) && !math.IsInf(f, 0) && f >= -9.2233720368547758e18 && f < 9.2233720368547758e18 {
			return mpInt(b, int64(f))
		}
		if float64(float32(f)) == f {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f)))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case lua.LString:
		n := len(x)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = append(b, 0xda)
			b = binary.BigEndian.AppendUint16(b, uint16(n))
		default:
			b = append(b, 0xdb)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		return append(b, x...)
	case *lua.LTable:
		if level == maxMsgpackNesting {
			return append(b, 0xc0)
		}
		if n, ok := mpArrayLen(x); ok {
			b = mpLen(b, n, 0x90, 0xdc, 0xdd, 16)
			for i := 1; i <= n; i++ {
				b = mpEncode(b, x.RawGetInt(i), level+1)
			}
			return b
		}
		n := 0
		forEach(x, func(lua.LValue, lua.LValue) { n++ })
		b = mpLen(b, n, 0x80, 0xde, 0xdf, 16)
		forEach(x, func(k, val lua.LValue) {
			b = mpEncode(b, k, level+1)
			b = mpEncode(b, val, level+1)
		})
		return b
	}
	return append(b, 0xc0)
}

// mpArrayLen is lua-cmsgpack's table_is_an_array: every key a positive
// integer and no holes.
func mpArrayLen(t *lua.LTable) (int, bool) {
	count, maxIdx := 0, 0
	ok := true
	forEach(t, func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || float64(n) < 1 || float64(n) != math.Trunc(float64(n)) {
			ok = false
			return
		}
		count++
		maxIdx = max(maxIdx, int(n))
	})
	return maxIdx, ok && maxIdx == count
}

func mpLen(b []byte, n int, fix, b16, b32 byte, fixMax int) []byte {
	switch {
	case n < fixMax:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		b = append(b, b16)
		return binary.BigEndian.AppendUint16(b, uint16(n))
	}
	b = append(b, b32)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func mpInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n < 128:
			return append(b, byte(n))
		case n <= 0xff:
			return append(b, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= -128:
		return append(b, 0xd0, byte(int8(n)))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

type mpDecoder struct {
	L *lua.LState
	s string
	i int
}

func (d *mpDecoder) need(n int) string {
	if d.i+n > len(d.s) {
		d.L.RaiseError("Missing bytes in input.")
	}
	p := d.s[d.i : d.i+n]
	d.i += n
	return p
}

func (d *mpDecoder) uint(n int) uint64 {
	p := d.need(n)
	var v uint64
	for i := 0; i < n; i++ {
		v = v<<8 | uint64(p[i])
	}
	return v
}

func (d *mpDecoder) value() lua.LValue {
	c := d.need(1)[0]
	switch {
	case c < 0x80:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(d.need(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return d.array(int(c & 0x0f))
	case c&0xf0 == 0x80:
		return d.mapOf(int(c & 0x0f))
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc:
		return lua.LNumber(d.uint(1))
	case 0xcd:
		return lua.LNumber(d.uint(2))
	case 0xce:
		return lua.LNumber(d.uint(4))
	case 0xcf:
		return lua.LNumber(float64(d.uint(8)))
	case 0xd0:
		return lua.LNumber(int8(d.uint(1)))
	case 0xd1:
		return lua.LNumber(int16(d.uint(2)))
	case 0xd2:
		return lua.LNumber(int32(d.uint(4)))
	case 0xd3:
		return lua.LNumber(float64(int64(d.uint(8))))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.uint(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.uint(8)))
	case 0xc4, 0xd9:
		return lua.LString(d.need(int(d.uint(1))))
	case 0xc5, 0xda:
		return lua.LString(d.need(int(d.uint(2))))
	case 0xc6, 0xdb:
		return lua.LString(d.need(int(d.uint(4))))
	case 0xdc:
		return d.array(int(d.uint(2)))
	case 0xdd:
		return d.array(int(d.uint(4)))
	case 0xde:
		return d.mapOf(int(d.uint(2)))
	case 0xdf:
		return d.mapOf(int(d.uint(4)))
	}
	d.L.RaiseError("Bad data format in input.")
	return lua.LNil
}

func (d *mpDecoder) array(n int) lua.LValue {
	t := d.L.CreateTable(min(n, 1<<16), 0)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, d.value())
	}
	return t
}

func (d *mpDecoder) mapOf(n int) lua.LValue {
	t := d.L.NewTable()
	for i := 0; i < n; i++ {
		k := d.value()
		v := d.value()
		if k != lua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}
