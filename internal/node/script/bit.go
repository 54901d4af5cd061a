package script

import (
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// openBit returns the bit library (LuaBitOp's API, as Redis ships it):
// operations on 32-bit signed integers.
func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	arg := func(L *lua.LState, i int) uint32 {
		return tobit(float64(L.CheckNumber(i)))
	}
	ret := func(L *lua.LState, v uint32) int {
		L.Push(lua.LNumber(int32(v)))
		return 1
	}
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, arg(L, i))
			}
			return ret(L, v)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, arg(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^arg(L, 1)) },
		"band":  fold(func(a, b uint32) uint32 { return a & b }),
		"bor":   fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":  fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return ret(L, arg(L, 1)<<(arg(L, 2)&31))
		},
		"rshift": func(L *lua.LState) int {
			return ret(L, arg(L, 1)>>(arg(L, 2)&31))
		},
		"arshift": func(L *lua.LState) int {
			return ret(L, uint32(int32(arg(L, 1))>>(arg(L, 2)&31)))
		},
		"rol": func(L *lua.LState) int {
			v, n := arg(L, 1), arg(L, 2)&31
			return ret(L, v<<n|v>>((32-n)&31))
		},
		"ror": func(L *lua.LState) int {
			v, n := arg(L, 1), arg(L, 2)&31
			return ret(L, v>>n|v<<((32-n)&31))
		},
		"bswap": func(L *lua.LState) int {
			v := arg(L, 1)
			return ret(L, v>>24|(v>>8)&0xff00|(v&0xff00)<<8|v<<24)
		},
		"tohex": func(L *lua.LState) int {
			v := arg(L, 1)
			n := int32(8)
			if L.GetTop() >= 2 {
				n = int32(arg(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[v&15]
				v >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// tobit normalises a number to 32 bits as LuaBitOp does (adding 2^52+2^51
// and taking the low word), which wraps large values modulo 2^32.
func tobit(f float64) uint32 {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	f = math.Round(f)
	m := math.Mod(f, 4294967296)
	if m < 0 {
		m += 4294967296
	}
	return uint32(m)
}

var _ = fmt.Sprint
