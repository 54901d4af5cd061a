package bitops

import (
	"errors"

	"github.com/shardis/shardis/internal/node/strops"
	"github.com/shardis/shardis/internal/node/value"
)

// Errors of BITFIELD, in Redis's words.
var (
	// ErrOverflowType refuses an unknown OVERFLOW policy.
	ErrOverflowType = errors.New("ERR Invalid OVERFLOW type specified")
	// ErrFieldType refuses a bad field type.
	ErrFieldType = errors.New("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
	// ErrReadOnly refuses a SET or INCRBY in BITFIELD_RO.
	ErrReadOnly = errors.New("ERR BITFIELD_RO only supports the GET subcommand")
)

// Overflow is BITFIELD's overflow policy.
type Overflow byte

// The overflow policies.
const (
	Wrap Overflow = iota
	Sat
	Fail
)

// Field operations.
const (
	FieldGet  = 'g'
	FieldSet  = 's'
	FieldIncr = 'i'
)

// FieldOp is one GET, SET or INCRBY of a BITFIELD call.
type FieldOp struct {
	// Op is FieldGet, FieldSet or FieldIncr.
	Op byte
	// Offset is the field's first bit.
	Offset int64
	// Bits is the field's width; Signed its signedness.
	Bits   int
	Signed bool
	// Value is SET's value or INCRBY's increment.
	Value int64
	// Overflow is the policy in force for this operation.
	Overflow Overflow
}

// Field is a parsed BITFIELD call.
type Field struct {
	// Ops are the operations in order.
	Ops []FieldOp
	// ReadOnly is true when every operation is a GET.
	ReadOnly bool
	// Highest is the highest bit a SET or INCRBY writes.
	Highest int64
}

// ParseField parses BITFIELD's arguments after the key; limit bounds the
// offsets as in ParseOffset.
func ParseField(args [][]byte, limit int64) (Field, error) {
	f := Field{ReadOnly: true}
	overflow := Wrap
	for j := 0; j < len(args); j++ {
		rem := len(args) - j - 1
		sub := args[j]
		var op byte
		switch {
		case eqFold(sub, "GET") && rem >= 2:
			op = FieldGet
		case eqFold(sub, "SET") && rem >= 3:
			op = FieldSet
		case eqFold(sub, "INCRBY") && rem >= 3:
			op = FieldIncr
		case eqFold(sub, "OVERFLOW") && rem >= 1:
			j++
			switch t := args[j]; {
			case eqFold(t, "WRAP"):
				overflow = Wrap
			case eqFold(t, "SAT"):
				overflow = Sat
			case eqFold(t, "FAIL"):
				overflow = Fail
			default:
				return Field{}, ErrOverflowType
			}
			continue
		default:
			return Field{}, strops.ErrSyntax
		}
		signed, nbits, ok := parseFieldType(args[j+1])
		if !ok {
			return Field{}, ErrFieldType
		}
		off, err := ParseOffset(args[j+2], nbits, limit)
		if err != nil {
			return Field{}, err
		}
		o := FieldOp{Op: op, Offset: off, Bits: nbits, Signed: signed, Overflow: overflow}
		if op != FieldGet {
			f.ReadOnly = false
			f.Highest = max(f.Highest, off+int64(nbits)-1)
			if o.Value, ok = value.ParseInt(args[j+3]); !ok {
				return Field{}, strops.ErrNotInt
			}
			j++
		}
		j += 2
		f.Ops = append(f.Ops, o)
	}
	return f, nil
}

// parseFieldType parses i<bits> (1..64) or u<bits> (1..63).
func parseFieldType(a []byte) (signed bool, n int, ok bool) {
	if len(a) < 2 || (a[0] != 'i' && a[0] != 'u') {
		return false, 0, false
	}
	signed = a[0] == 'i'
	v, ok := value.ParseInt(a[1:])
	if !ok || v < 1 || (signed && v > 64) || (!signed && v > 63) {
		return false, 0, false
	}
	return signed, int(v), true
}

// FieldResult is one operation's reply: Value, or a null when Nil (an
// overflow under FAIL).
type FieldResult struct {
	Value int64
	Nil   bool
}

// Run runs f's operations on p, which must hold f.Highest when f writes
// (Grow); p may be nil for a read-only call on a missing key. grown says
// that p was created or grown for this call, which makes every write a
// change. It returns the replies and the number of changes.
func (f *Field) Run(p []byte, grown bool) (res []FieldResult, changes int) {
	res = make([]FieldResult, 0, len(f.Ops))
	for _, o := range f.Ops {
		if o.Op == FieldGet {
			var buf [9]byte
			byteIdx := o.Offset >> 3
			for i := int64(0); i < 9 && byteIdx+i < int64(len(p)); i++ {
				buf[i] = p[byteIdx+i]
			}
			rel := o.Offset & 7
			if o.Signed {
				res = append(res, FieldResult{Value: getSigned(buf[:], rel, o.Bits)})
			} else {
				res = append(res, FieldResult{Value: int64(getUnsigned(buf[:], rel, o.Bits))})
			}
			continue
		}
		oldv, newv, ret, over := o.write(p)
		if over && o.Overflow == Fail {
			res = append(res, FieldResult{Nil: true})
			continue
		}
		res = append(res, FieldResult{Value: ret})
		setBits(p, o.Offset, o.Bits, uint64(newv))
		if grown || oldv != newv {
			changes++
		}
	}
	return res, changes
}

// write computes a SET or INCRBY on p: the field's old and new values,
// the reply, and whether it overflowed.
func (o *FieldOp) write(p []byte) (oldv, newv, ret int64, over bool) {
	if o.Signed {
		oldv = getSigned(p, o.Offset, o.Bits)
		var wrapped int64
		if o.Op == FieldIncr {
			if over, wrapped = signedOverflow(oldv, o.Value, o.Bits, o.Overflow); over {
				newv = wrapped
			} else {
				newv = oldv + o.Value
			}
			return oldv, newv, newv, over
		}
		newv = o.Value
		if over, wrapped = signedOverflow(newv, 0, o.Bits, o.Overflow); over {
			newv = wrapped
		}
		return oldv, newv, oldv, over
	}
	uold := getUnsigned(p, o.Offset, o.Bits)
	var unew, wrapped uint64
	if o.Op == FieldIncr {
		unew = uold + uint64(o.Value)
		if over, wrapped = unsignedOverflow(uold, o.Value, o.Bits, o.Overflow); over {
			unew = wrapped
		}
		return int64(uold), int64(unew), int64(unew), over
	}
	unew = uint64(o.Value)
	if over, wrapped = unsignedOverflow(unew, 0, o.Bits, o.Overflow); over {
		unew = wrapped
	}
	return int64(uold), int64(unew), int64(uold), over
}

func getUnsigned(p []byte, off int64, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		pos := off + int64(i)
		v = v<<1 | uint64((p[pos>>3]>>(7-uint(pos&7)))&1)
	}
	return v
}

func getSigned(p []byte, off int64, n int) int64 {
	v := getUnsigned(p, off, n)
	if n < 64 && v&(1<<(n-1)) != 0 {
		v |= ^uint64(0) << n
	}
	return int64(v)
}

func setBits(p []byte, off int64, n int, v uint64) {
	for i := 0; i < n; i++ {
		b := byte(v>>(n-1-i)) & 1
		pos := off + int64(i)
		shift := 7 - uint(pos&7)
		p[pos>>3] = p[pos>>3]&^(1<<shift) | b<<shift
	}
}

// overflowed is the result of an overflow under policy: the wrapped
// value, the saturated one (sat), or 0 for FAIL (which discards it).
func overflowed[T int64 | uint64](policy Overflow, wrap func() T, sat T) (bool, T) {
	switch policy {
	case Wrap:
		return true, wrap()
	case Sat:
		return true, sat
	}
	return true, 0
}

// unsignedOverflow is Redis's checkUnsignedBitfieldOverflow: whether
// value+incr leaves the n-bit range, and the wrapped or saturated result.
func unsignedOverflow(value uint64, incr int64, n int, policy Overflow) (bool, uint64) {
	maxv := uint64(1)<<n - 1
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	wrap := func() uint64 { return (value + uint64(incr)) & maxv }
	switch {
	case value > maxv || (incr > 0 && incr > maxIncr):
		return overflowed(policy, wrap, maxv)
	case incr < 0 && incr < minIncr:
		return overflowed(policy, wrap, 0)
	}
	return false, 0
}

// signedOverflow is Redis's checkSignedBitfieldOverflow.
func signedOverflow(value, incr int64, n int, policy Overflow) (bool, int64) {
	maxv := int64(1<<63 - 1)
	if n < 64 {
		maxv = int64(1)<<(n-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	wrap := func() int64 {
		r := uint64(value) + uint64(incr)
		if n < 64 {
			mask := ^uint64(0) << n
			if r&(1<<(n-1)) != 0 {
				r |= mask
			} else {
				r &^= mask
			}
		}
		return int64(r)
	}
	switch {
	case value > maxv || (n != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
		return overflowed(policy, wrap, maxv)
	case value < minv || (n != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
		return overflowed(policy, wrap, minv)
	}
	return false, 0
}
