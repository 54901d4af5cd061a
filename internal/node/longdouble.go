package node

import (
	"bytes"
	"math/big"
)

// longDoublePrec is the significand precision of the x87 80-bit long
// double Redis computes INCRBYFLOAT and HINCRBYFLOAT with; big.Float at
// this precision rounds like it does.
const longDoublePrec = 64

// parseLongDouble parses a number as Redis's string2ld (strtold) does: no
// surrounding spaces, no NaN, no digit separators, no 0b/0o prefixes (only
// decimal and 0x hexadecimal floats), inf allowed, no overflow or
// underflow of a long double.
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= 5*1024 {
		return nil, false
	}
	s := string(b)
	body := s
	if body[0] == '+' || body[0] == '-' {
		body = body[1:]
	}
	switch {
	case eqFold([]byte(body), "inf") || eqFold([]byte(body), "infinity"):
		f := new(big.Float).SetInf(s[0] == '-')
		return f, true
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
	f, _, err := big.ParseFloat(s, base, longDoublePrec, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	if f.Sign() != 0 && (longDoubleOverflows(f) || f.MantExp(nil) < -16444) {
		return nil, false // ERANGE
	}
	return f, true
}

// formatLongDouble renders v as Redis's ld2string in human mode: %.17Lf
// with trailing zeros (and a trailing point) removed, never "-0".
func formatLongDouble(v *big.Float) []byte {
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

// longDoubleOverflows reports whether f is beyond the long double range.
func longDoubleOverflows(f *big.Float) bool {
	return f.IsInf() || f.MantExp(nil) > 16384
}
