package strops

import (
	"bytes"
	"math/big"

	"github.com/shardis/shardis/internal/node/value"
)

// ParseIncrement parses INCRBY's increment or, when decr is true, DECRBY's
// decrement, returning the amount to add.
func ParseIncrement(arg []byte, decr bool) (int64, error) {
	n, ok := parseInt(arg)
	if !ok {
		return 0, ErrNotInt
	}
	if !decr {
		return n, nil
	}
	if n == -1<<63 {
		return 0, ErrDecrOverflow
	}
	return -n, nil
}

// Incr is the INCR family's arithmetic: the integer in cur (nil for a
// missing key, which counts as 0) plus by, or ErrNotInt / ErrOverflow.
// It is small enough to inline into INCR's handler.
func Incr(cur []byte, by int64) (int64, error) {
	n, ok := int64(0), true
	if cur != nil {
		n, ok = value.ParseInt(cur)
	}
	sum := n + by
	switch {
	case !ok:
		return 0, ErrNotInt
	case (sum < n) != (by < 0): // wrapped around
		return 0, ErrOverflow
	}
	return sum, nil
}

// LongDoublePrec is the significand precision of the x87 80-bit long
// double Redis computes INCRBYFLOAT and HINCRBYFLOAT with; big.Float at
// this precision rounds like it does.
const LongDoublePrec = 64

// ParseLongDouble parses a number as Redis's string2ld (strtold) does: no
// surrounding spaces, no NaN, no digit separators, no 0b/0o prefixes (only
// decimal and 0x hexadecimal floats), inf allowed, no overflow or
// underflow of a long double.
func ParseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= 5*1024 {
		return nil, false
	}
	s := string(b)
	body := s
	if body[0] == '+' || body[0] == '-' {
		body = body[1:]
	}
	if eqFold([]byte(body), "inf") || eqFold([]byte(body), "infinity") {
		return new(big.Float).SetInf(s[0] == '-'), true
	}
	base := 10
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		base = 0 // hexadecimal float, as strtold reads it
		body = body[2:]
	}
	for i := 0; i < len(body); i++ {
		ch := body[i]
		ok := ch >= '0' && ch <= '9' || ch == '.' || ch == '+' || ch == '-'
		if base == 10 {
			ok = ok || ch == 'e' || ch == 'E'
		} else {
			ok = ok || ch >= 'a' && ch <= 'f' || ch >= 'A' && ch <= 'F' || ch == 'p' || ch == 'P'
		}
		if !ok {
			return nil, false
		}
	}
	f, _, err := big.ParseFloat(s, base, LongDoublePrec, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	if f.Sign() != 0 && (LongDoubleOverflows(f) || f.MantExp(nil) < -16444) {
		return nil, false // ERANGE
	}
	return f, true
}

// FormatLongDouble renders v as Redis's ld2string in human mode: %.17Lf
// with trailing zeros (and a trailing point) removed, never "-0".
func FormatLongDouble(v *big.Float) []byte {
	b := v.Append(nil, 'f', 17)
	if bytes.IndexByte(b, '.') >= 0 {
		b = bytes.TrimRight(b, "0")
		b = bytes.TrimSuffix(b, []byte("."))
	}
	if string(b) == "-0" {
		b = []byte("0")
	}
	return b
}

// LongDoubleOverflows reports whether f is beyond the long double range.
func LongDoubleOverflows(f *big.Float) bool {
	return f.IsInf() || f.MantExp(nil) > 16384
}

// IncrByFloat is INCRBYFLOAT's arithmetic: the number in cur (nil for a
// missing key, 0) plus incr, rendered as Redis renders it.
func IncrByFloat(cur, incr []byte) ([]byte, error) {
	n := new(big.Float).SetPrec(LongDoublePrec)
	if cur != nil {
		v, ok := ParseLongDouble(cur)
		if !ok {
			return nil, ErrNotFloat
		}
		n = v
	}
	by, ok := ParseLongDouble(incr)
	if !ok {
		return nil, ErrNotFloat
	}
	if n.IsInf() || by.IsInf() {
		return nil, ErrNaN
	}
	sum := new(big.Float).SetPrec(LongDoublePrec).SetMode(big.ToNearestEven).Add(n, by)
	if LongDoubleOverflows(sum) {
		return nil, ErrNaN
	}
	return FormatLongDouble(sum), nil
}
