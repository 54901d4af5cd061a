// Package strops holds the logic of the string commands (Redis's
// t_string.c) on plain []byte values: SET's and GETEX's option grammar and
// expire times, the INCR family's arithmetic, INCRBYFLOAT's long double
// arithmetic, GETRANGE/SETRANGE's ranges and LCS. It knows no client, no
// server and no keyspace: the node's handlers look keys up, call these
// functions and write the replies. Errors carry Redis's exact reply text.
package strops

import (
	"errors"
	"strings"

	"github.com/shardis/shardis/internal/node/value"
)

// Errors a string command replies with, in Redis's words.
var (
	// ErrSyntax is Redis's generic syntax error.
	ErrSyntax = errors.New("ERR syntax error")
	// ErrNotInt is the reply to an argument (or value) that is not an integer.
	ErrNotInt = errors.New("ERR value is not an integer or out of range")
	// ErrNotFloat is the reply to an argument (or value) that is not a float.
	ErrNotFloat = errors.New("ERR value is not a valid float")
	// ErrOverflow is INCR's reply when the result leaves int64.
	ErrOverflow = errors.New("ERR increment or decrement would overflow")
	// ErrDecrOverflow is DECRBY's reply to a decrement of -2^63.
	ErrDecrOverflow = errors.New("ERR decrement would overflow")
	// ErrNaN is INCRBYFLOAT's reply when the result is not finite.
	ErrNaN = errors.New("ERR increment would produce NaN or Infinity")
	// ErrTooLong is the reply to a string that would exceed proto-max-bulk-len.
	ErrTooLong = errors.New("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	// ErrOffset is SETRANGE's reply to a negative offset.
	ErrOffset = errors.New("ERR offset is out of range")
)

// eqFold reports whether a equals s, ignoring ASCII case.
func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// parseInt is Redis's string2ll (value.ParseInt).
func parseInt(b []byte) (int64, bool) { return value.ParseInt(b) }

// CheckLength refuses a string of size bytes growing by add bytes beyond
// limit (proto-max-bulk-len); a limit <= 0 means no limit (a master's or
// the AOF's commands).
func CheckLength(size, add, limit int64) error {
	if limit <= 0 {
		return nil
	}
	total := size + add
	if total > limit || total < size || total < add {
		return ErrTooLong
	}
	return nil
}

// ClampRange turns GETRANGE/BITCOUNT-style indexes (negative ones count
// from the end) into an inclusive range of a sequence of n items, clamped
// to it as Redis clamps them (both ends to 0 first, so a range wholly
// before the start selects the first item); empty when nothing is left.
func ClampRange(start, end, n int64) (from, to int64, empty bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end {
		return 0, 0, true
	}
	return start, end, false
}

// GetRange is GETRANGE's slice of s for the inclusive indexes start and
// end (empty, never nil, when the range selects nothing).
func GetRange(s []byte, start, end int64) []byte {
	if start < 0 && end < 0 && start > end {
		return []byte{}
	}
	from, to, empty := ClampRange(start, end, int64(len(s)))
	if empty {
		return []byte{}
	}
	return s[from : to+1]
}

// GrowZero extends b with zero bytes to at least n bytes.
func GrowZero(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	if cap(b) >= n {
		old := len(b)
		b = b[:n]
		clear(b[old:])
		return b
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// ParseOffset parses SETRANGE's offset.
func ParseOffset(arg []byte) (int64, error) {
	offset, ok := parseInt(arg)
	if !ok {
		return 0, ErrNotInt
	}
	if offset < 0 {
		return 0, ErrOffset
	}
	return offset, nil
}

// SetRange writes val into s at offset, zero-padding s as needed, and
// returns the new string (s itself when it had room); s may be nil.
func SetRange(s []byte, offset int64, val []byte) []byte {
	s = GrowZero(s, int(offset)+len(val))
	copy(s[offset:], val)
	return s
}
