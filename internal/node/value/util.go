package value

import (
	"hash/maphash"
	"strconv"
	"strings"
	"unsafe"
)

// MaxPrefetch bounds the members PrefetchZSetMembers loads at once.
const MaxPrefetch = 64

var dictSeed = maphash.MakeSeed()

// DictHash is the hash a Dict keeps for key (the low half of a seeded
// maphash): it picks the bucket, and a chain walk compares it first.
func DictHash(key string) uint32 { return uint32(maphash.String(dictSeed, key)) }

// ParseInt parses b as Redis's string2ll does: an optional '-', decimal
// digits without leading zeros (a lone "0" aside), no '+', no spaces, at
// most 20 bytes, within int64. It decides the intset encoding, so it is
// the one integer test of the node.
//
// Up to 18 digits cannot overflow and are summed in a loop (INCR parses
// its value with it on every call); longer numbers go to strconv.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if b[0] == '+' || (len(b) > 1 && b[0] == '0') || (len(b) > 1 && b[0] == '-' && b[1] == '0') {
		return 0, false
	}
	d := b
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		n, err := strconv.ParseInt(string(b), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, ch := range d {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	if b[0] == '-' {
		n = -n
	}
	return n, true
}

// bstr views b as a string without copying; the string is only valid while
// b is unchanged, so it must never be stored.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// sbytes views s as a read-only byte slice without copying.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// ParseFloat parses b as a Redis float argument, as string2d (strtod with
// a full match) accepts it: decimal and C hexadecimal floats ("0x10",
// "0x1.8p3": the binary exponent is optional, as for strtod), inf,
// infinity and their signed forms; refused are NaN, a leading space
// (isspace), anything strtod would not consume (trailing bytes, Go's
// digit separators "_"), an overflow to ±inf and an underflow to zero
// (strtod's ERANGE), and more than 5000 bytes.
func ParseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5000 || isCSpace(b[0]) {
		return 0, false
	}
	for _, c := range b {
		if c == '_' {
			return 0, false
		}
	}
	s := string(b)
	hex := isHexFloat(s)
	if hex && !strings.ContainsAny(s, "pP") {
		s += "p0"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f {
		return 0, false
	}
	if f == 0 && nonZeroMantissa(s, hex) {
		return 0, false // underflow: strtod's ERANGE with a zero result
	}
	return f, true
}

// isCSpace is C's isspace.
func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// isHexFloat reports whether s, after its sign, starts with 0x or 0X.
func isHexFloat(s string) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
}

// nonZeroMantissa reports whether the mantissa of the float text s (its
// digits before the exponent) has a digit other than zero.
func nonZeroMantissa(s string, hex bool) bool {
	if hex {
		s = s[strings.IndexAny(s, "xX")+1:]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case !hex && (c == 'e' || c == 'E'), hex && (c == 'p' || c == 'P'):
			return false
		case c >= '1' && c <= '9', hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
			return true
		}
	}
	return false
}
