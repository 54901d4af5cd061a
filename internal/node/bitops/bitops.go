// Package bitops holds the logic of Redis's bit commands (bitops.c) on
// plain []byte strings: offsets, SETBIT/GETBIT, BITCOUNT's and BITPOS's
// ranges, BITOP's operations and BITFIELD's grammar and arithmetic. Bit 0
// is the most significant bit of the first byte. It knows no client, no
// server and no keyspace: the node's handlers look keys up, call these
// functions and write the replies. Errors carry Redis's exact reply text.
package bitops

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"strings"

	"github.com/shardis/shardis/internal/node/strops"
	"github.com/shardis/shardis/internal/node/value"
)

// Errors a bit command replies with, in Redis's words.
var (
	// ErrOffset refuses a bit offset that is not an integer or out of range.
	ErrOffset = errors.New("ERR bit offset is not an integer or out of range")
	// ErrBitValue refuses SETBIT's value other than 0 or 1.
	ErrBitValue = errors.New("ERR bit is not an integer or out of range")
	// ErrBitArg refuses BITPOS's bit other than 0 or 1.
	ErrBitArg = errors.New("ERR The bit argument must be 1 or 0.")
	// ErrNotSingle refuses BITOP NOT with more than one source.
	ErrNotSingle = errors.New("ERR BITOP NOT must be called with a single source key.")
)

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// ParseOffset parses a bit offset (or #N, N*hashBits, when hashBits > 0)
// limited to limit bytes (proto-max-bulk-len; <= 0 for none), as Redis's
// getBitOffsetFromArgument does.
func ParseOffset(arg []byte, hashBits int, limit int64) (int64, error) {
	useHash := hashBits > 0 && len(arg) > 0 && arg[0] == '#'
	if useHash {
		arg = arg[1:]
	}
	off, ok := value.ParseInt(arg)
	if useHash {
		off *= int64(hashBits)
	}
	if !ok || off < 0 || (limit > 0 && off>>3 >= limit) {
		return 0, ErrOffset
	}
	return off, nil
}

// ParseBitValue parses SETBIT's value, 0 or 1.
func ParseBitValue(arg []byte) (byte, error) {
	on, ok := value.ParseInt(arg)
	if !ok || on&^1 != 0 {
		return 0, ErrBitValue
	}
	return byte(on), nil
}

// Grow zero-pads p to hold bit maxBit; grown reports growth.
func Grow(p []byte, maxBit int64) (q []byte, grown bool) {
	q = strops.GrowZero(p, int(maxBit>>3)+1)
	return q, len(q) != len(p)
}

// GetBit returns bit off of p (0 beyond its end).
func GetBit(p []byte, off int64) byte {
	if off>>3 >= int64(len(p)) {
		return 0
	}
	return (p[off>>3] >> (7 - uint(off&7))) & 1
}

// SetBit sets bit off of p (which must hold it) to on and returns the
// bit's previous value.
func SetBit(p []byte, off int64, on byte) (old byte) {
	byteIdx, shift := off>>3, 7-uint(off&7)
	old = (p[byteIdx] >> shift) & 1
	p[byteIdx] = p[byteIdx]&^(1<<shift) | on<<shift
	return old
}

// bitRange converts BITCOUNT/BITPOS start/end (bytes, or bits when isBit)
// into an inclusive bit range of a string of n bytes; empty is true when
// the range holds no bit.
func bitRange(n, start, end int64, isBit bool) (from, to int64, empty bool) {
	total := n
	if isBit {
		total <<= 3
	}
	start, end, empty = strops.ClampRange(start, end, total)
	if empty || isBit {
		return start, end, empty
	}
	return start << 3, end<<3 + 7, false
}

// parseUnit parses BYTE|BIT.
func parseUnit(a []byte) (isBit bool, err error) {
	switch {
	case eqFold(a, "BIT"):
		return true, nil
	case eqFold(a, "BYTE"):
		return false, nil
	}
	return false, strops.ErrSyntax
}

// parseInts parses integer arguments.
func parseInts(args ...[]byte) ([]int64, error) {
	out := make([]int64, len(args))
	for i, a := range args {
		n, ok := value.ParseInt(a)
		if !ok {
			return nil, strops.ErrNotInt
		}
		out[i] = n
	}
	return out, nil
}

// Count is BITCOUNT on the (existing) string p with opts, the arguments
// after the key: [start end [BYTE|BIT]].
func Count(p []byte, opts [][]byte) (int64, error) {
	var from, to int64
	switch len(opts) {
	case 0:
		if len(p) == 0 {
			return 0, nil
		}
		from, to = 0, int64(len(p))*8-1
	case 2, 3:
		se, err := parseInts(opts[0], opts[1])
		if err != nil {
			return 0, err
		}
		start, end := se[0], se[1]
		if start < 0 && end < 0 && start > end {
			return 0, nil
		}
		isBit := false
		if len(opts) == 3 {
			if isBit, err = parseUnit(opts[2]); err != nil {
				return 0, err
			}
		}
		var empty bool
		if from, to, empty = bitRange(int64(len(p)), start, end, isBit); empty {
			return 0, nil
		}
	default:
		return 0, strops.ErrSyntax
	}
	return popcount(p, from, to), nil
}

// ParseBit parses BITPOS's bit argument.
func ParseBit(arg []byte) (byte, error) {
	bit, ok := value.ParseInt(arg)
	if !ok {
		return 0, strops.ErrNotInt
	}
	if bit != 0 && bit != 1 {
		return 0, ErrBitArg
	}
	return byte(bit), nil
}

// Pos is BITPOS for bit on the (existing) string p with opts, the
// arguments after the bit: [start [end [BYTE|BIT]]].
func Pos(p []byte, bit byte, opts [][]byte) (int64, error) {
	n := int64(len(p))
	from, to := int64(0), n*8-1
	endGiven := false
	switch len(opts) {
	case 0:
	case 1, 2, 3:
		start, ok := value.ParseInt(opts[0])
		if !ok {
			return 0, strops.ErrNotInt
		}
		isBit := false
		if len(opts) == 3 {
			var err error
			if isBit, err = parseUnit(opts[2]); err != nil {
				return 0, err
			}
		}
		end := int64(-1)
		if len(opts) >= 2 {
			if end, ok = value.ParseInt(opts[1]); !ok {
				return 0, strops.ErrNotInt
			}
			endGiven = true
		}
		var empty bool
		if from, to, empty = bitRange(n, start, end, isBit); empty {
			return -1, nil
		}
	default:
		return 0, strops.ErrSyntax
	}
	if from > to {
		return -1, nil
	}
	pos := findBit(p, from, to, bit)
	if pos == -1 && bit == 0 && !endGiven {
		// Without an explicit end the string is seen as padded with
		// zeros: the first clear bit is right after the (byte) range.
		pos = (to>>3 + 1) << 3
	}
	return pos, nil
}

// popcount counts the set bits of p in the inclusive bit range.
func popcount(p []byte, from, to int64) int64 {
	var n int64
	i := from
	for ; i <= to && i&7 != 0; i++ {
		n += int64(p[i>>3]>>(7-uint(i&7))) & 1
	}
	for ; i+63 <= to; i += 64 {
		n += int64(bits.OnesCount64(binary.BigEndian.Uint64(p[i>>3:])))
	}
	for ; i+7 <= to; i += 8 {
		n += int64(bits.OnesCount8(p[i>>3]))
	}
	for ; i <= to; i++ {
		n += int64(p[i>>3]>>(7-uint(i&7))) & 1
	}
	return n
}

// findBit returns the first bit equal to bit in the inclusive range, or -1.
func findBit(p []byte, from, to int64, bit byte) int64 {
	get := func(i int64) byte { return (p[i>>3] >> (7 - uint(i&7))) & 1 }
	i := from
	for ; i <= to && i&7 != 0; i++ {
		if get(i) == bit {
			return i
		}
	}
	for ; i+63 <= to; i += 64 {
		w := binary.BigEndian.Uint64(p[i>>3:])
		if bit == 0 {
			w = ^w
		}
		if w != 0 {
			return i + int64(bits.LeadingZeros64(w))
		}
	}
	for ; i+7 <= to; i += 8 {
		b := p[i>>3]
		if bit == 0 {
			b = ^b
		}
		if b != 0 {
			return i + int64(bits.LeadingZeros8(b))
		}
	}
	for ; i <= to; i++ {
		if get(i) == bit {
			return i
		}
	}
	return -1
}

// Op is a BITOP operation.
type Op byte

// The BITOP operations.
const (
	OpAnd Op = iota
	OpOr
	OpXor
	OpNot
)

// ParseOp parses BITOP's operation for nsrc source keys.
func ParseOp(op []byte, nsrc int) (Op, error) {
	var o Op
	switch {
	case eqFold(op, "AND"):
		o = OpAnd
	case eqFold(op, "OR"):
		o = OpOr
	case eqFold(op, "XOR"):
		o = OpXor
	case eqFold(op, "NOT"):
		o = OpNot
	default:
		return 0, strops.ErrSyntax
	}
	if o == OpNot && nsrc != 1 {
		return 0, ErrNotSingle
	}
	return o, nil
}

// Apply computes op over srcs (nil for a missing key), as long as the
// longest source; nil when every source is empty.
func Apply(op Op, srcs [][]byte) []byte {
	maxLen := 0
	for _, s := range srcs {
		maxLen = max(maxLen, len(s))
	}
	if maxLen == 0 {
		return nil
	}
	res := make([]byte, maxLen)
	switch op {
	case OpNot:
		for i, b := range srcs[0] {
			res[i] = ^b
		}
	case OpAnd:
		copy(res, srcs[0])
		for _, s := range srcs[1:] {
			for i := range res {
				if i < len(s) {
					res[i] &= s[i]
				} else {
					res[i] = 0
				}
			}
		}
	default:
		for _, s := range srcs {
			for i, b := range s {
				if op == OpXor {
					res[i] ^= b
				} else {
					res[i] |= b
				}
			}
		}
	}
	return res
}
