package script

import (
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// openStruct returns the struct library (Roberto Ierusalimschy's struct,
// as Redis ships it): pack, unpack and size over a format of '<' '>' '='
// '!n' (endianness, alignment), 'x' (padding), 'b' 'B' 'h' 'H' 'l' 'L' 'T'
// 'i[n]' 'I[n]' (integers), 'f' 'd' (floats), 's' (zero-terminated
// string) and 'c[n]' (fixed string; c0 takes its length from the value
// before).
func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

type structFmt struct {
	L      *lua.LState
	f      string
	i      int
	little bool
	align  int
}

func newStructFmt(L *lua.LState, f string) *structFmt {
	return &structFmt{L: L, f: f, little: true, align: 1}
}

// next returns the next option and its size; ok is false at the end.
func (s *structFmt) next() (op byte, size int, ok bool) {
	for s.i < len(s.f) {
		op = s.f[s.i]
		s.i++
		switch op {
		case ' ':
			continue
		case '<':
			s.little = true
			continue
		case '>':
			s.little = false
			continue
		case '=':
			s.little = true
			continue
		case '!':
			s.align = s.num(8)
			continue
		case 'x':
			return op, 1, true
		case 'b', 'B':
			return op, 1, true
		case 'h', 'H':
			return op, 2, true
		case 'l', 'L', 'T':
			return op, 8, true
		case 'i', 'I':
			n := s.num(4)
			if n > 8 {
				s.L.RaiseError("integral size %d is larger than limit of %d", n, 8)
			}
			return op, n, true
		case 'f':
			return op, 4, true
		case 'd':
			return op, 8, true
		case 's':
			return op, 0, true
		case 'c':
			return op, s.num(1), true
		default:
			s.L.RaiseError("invalid format option '%c'", op)
		}
	}
	return 0, 0, false
}

func (s *structFmt) num(def int) int {
	if s.i >= len(s.f) || s.f[s.i] < '0' || s.f[s.i] > '9' {
		return def
	}
	n := 0
	for s.i < len(s.f) && s.f[s.i] >= '0' && s.f[s.i] <= '9' {
		n = n*10 + int(s.f[s.i]-'0')
		s.i++
	}
	return n
}

func (s *structFmt) pad(total, size int) int {
	a := min(size, s.align)
	if a <= 1 || size == 0 || s.f[s.i-1] == 'c' || s.f[s.i-1] == 's' {
		return 0
	}
	return (a - total%a) % a
}

func (s *structFmt) putInt(b []byte, v uint64, size int) []byte {
	buf := make([]byte, size)
	for i := 0; i < size; i++ {
		shift := uint(i * 8)
		var by byte
		if shift < 64 {
			by = byte(v >> shift)
		} else if int64(v) < 0 {
			by = 0xff
		}
		if s.little {
			buf[i] = by
		} else {
			buf[size-1-i] = by
		}
	}
	return append(b, buf...)
}

func structPack(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	arg := 2
	var b []byte
	for {
		op, size, ok := s.next()
		if !ok {
			break
		}
		for n := s.pad(len(b), size); n > 0; n-- {
			b = append(b, 0)
		}
		switch op {
		case 'x':
			b = append(b, 0)
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			f := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if f < 0 {
				v = uint64(int64(f))
			} else {
				v = uint64(f)
			}
			b = s.putInt(b, v, size)
		case 'f':
			v := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			b = s.putInt(b, uint64(v), 4)
		case 'd':
			v := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			b = s.putInt(b, v, 8)
		case 'c', 's':
			str := L.CheckString(arg)
			arg++
			if op == 's' {
				b = append(b, str...)
				b = append(b, 0)
				break
			}
			if size == 0 {
				size = len(str)
			}
			if len(str) < size {
				L.ArgError(arg-1, "string too short")
			}
			b = append(b, str[:size]...)
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func structUnpack(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.ArgError(3, "offset out of range")
	}
	n := 0
	var last lua.LValue = lua.LNil
	for {
		op, size, ok := s.next()
		if !ok {
			break
		}
		pos += s.pad(pos, size)
		if op != 's' && (op != 'c' || size != 0) && pos+size > len(data) {
			L.ArgError(2, "data string too short")
		}
		switch op {
		case 'x':
			pos++
			continue
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			var v uint64
			for i := 0; i < size; i++ {
				var by byte
				if s.little {
					by = data[pos+size-1-i]
				} else {
					by = data[pos+i]
				}
				v = v<<8 | uint64(by)
			}
			var val float64
			if op == 'b' || op == 'h' || op == 'l' || op == 'i' {
				if size < 8 && v&(1<<(uint(size)*8-1)) != 0 {
					v |= ^uint64(0) << (uint(size) * 8)
				}
				val = float64(int64(v))
			} else {
				val = float64(v)
			}
			last = lua.LNumber(val)
			pos += size
		case 'f':
			var v uint32
			if s.little {
				v = binary.LittleEndian.Uint32([]byte(data[pos:]))
			} else {
				v = binary.BigEndian.Uint32([]byte(data[pos:]))
			}
			last = lua.LNumber(math.Float32frombits(v))
			pos += 4
		case 'd':
			var v uint64
			if s.little {
				v = binary.LittleEndian.Uint64([]byte(data[pos:]))
			} else {
				v = binary.BigEndian.Uint64([]byte(data[pos:]))
			}
			last = lua.LNumber(math.Float64frombits(v))
			pos += 8
		case 'c':
			if size == 0 {
				if n == 0 || last.Type() != lua.LTNumber {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(last.(lua.LNumber))
				L.Pop(1)
				n--
				if pos+size > len(data) {
					L.ArgError(2, "data string too short")
				}
			}
			last = lua.LString(data[pos : pos+size])
			pos += size
		case 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				L.RaiseError("unfinished string in data")
			}
			last = lua.LString(data[pos : pos+end])
			pos += end + 1
		}
		L.Push(last)
		n++
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	total := 0
	for {
		op, size, ok := s.next()
		if !ok {
			break
		}
		if op == 's' || op == 'c' && size == 0 {
			L.ArgError(1, "options 'c0' - 's' have undefined sizes")
		}
		total += s.pad(total, size) + size
	}
	L.Push(lua.LNumber(total))
	return 1
}
