package value

import (
	"math"
	"testing"
)

// TestParseFloat pins string2d's (strtod with a full match) answers, as
// redis-server 7.0 gives them for ZADD scores (checked against it in
// testdata/compat/80-errors.txt).
func TestParseFloat(t *testing.T) {
	cases := []struct {
		in string
		f  float64
		ok bool
	}{
		{"1.5", 1.5, true}, {"-2", -2, true}, {".5", .5, true}, {"5.", 5, true},
		{"0x10", 16, true}, {"0x1.8", 1.5, true}, {"-0X2p1", -4, true}, {"+0x.8", .5, true},
		{"inf", math.Inf(1), true}, {"-Infinity", math.Inf(-1), true}, {"+inf", math.Inf(1), true},
		{"4e-320", 4e-320, true}, {"0e5", 0, true}, {"0x0p9", 0, true},
		{"nan", 0, false}, {"", 0, false}, {" 1", 0, false}, {"\t1", 0, false}, {"1 ", 0, false},
		{"1_0", 0, false}, {"0x1_0", 0, false}, {"0x", 0, false}, {"1e", 0, false},
		{"1e400", 0, false}, {"1e-400", 0, false}, {"0x1p-1080", 0, false}, {"abc", 0, false},
	}
	for _, c := range cases {
		f, ok := ParseFloat([]byte(c.in))
		if ok != c.ok || (ok && f != c.f) {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v, %v", c.in, f, ok, c.f, c.ok)
		}
	}
}
