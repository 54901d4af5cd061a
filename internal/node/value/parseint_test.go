package value

import (
	"strconv"
	"testing"
)

// refParseInt is string2ll's rule written with strconv alone.
func refParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 || b[0] == '+' || (len(b) > 1 && b[0] == '0') || (len(b) > 1 && b[0] == '-' && b[1] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

func TestParseInt(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "00", "01", "-01", "1", "-1", "+1", " 1", "1 ", "12a", "-", "", "999999999999999999",
		"-999999999999999999", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "12345678901234567890", "1e3", "0x10",
	} {
		n, ok := ParseInt([]byte(s))
		rn, rok := refParseInt([]byte(s))
		if n != rn || ok != rok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", s, n, ok, rn, rok)
		}
	}
}

// FuzzParseInt checks the digit loop against strconv on any input.
func FuzzParseInt(f *testing.F) {
	f.Add([]byte("-123"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := ParseInt(b)
		rn, rok := refParseInt(b)
		if n != rn || ok != rok {
			t.Fatalf("ParseInt(%q) = %d, %v; want %d, %v", b, n, ok, rn, rok)
		}
	})
}
