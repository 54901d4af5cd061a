package value

import (
	"hash/maphash"
	"strconv"
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

// ParseFloat parses b as a Redis float argument (string2d): inf and -inf
// allowed, NaN, leading or trailing spaces and more than 5000 bytes not.
func ParseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5000 {
		return 0, false
	}
	if b[0] == ' ' || b[len(b)-1] == ' ' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, false
	}
	if f != f {
		return 0, false
	}
	return f, true
}
