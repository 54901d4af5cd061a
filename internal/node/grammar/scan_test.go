package grammar

import "testing"

func TestParseScan(t *testing.T) {
	cases := []struct {
		in   string
		want Scan
		err  error
	}{
		{"0", Scan{Count: 10}, nil},
		{"17 MATCH a* COUNT 5", Scan{Cursor: 17, Count: 5, Pattern: "a*", Match: true}, nil},
		{"0 match *", Scan{Count: 10, Pattern: "*"}, nil},
		{"0 count 99999999999", Scan{Count: 1 << 30}, nil},
		{"-1", Scan{Cursor: 1<<64 - 1, Count: 10}, nil},
		{"x", Scan{}, ErrInvalidCursor},
		{"0 count 0", Scan{}, ErrSyntax},
		{"0 count x", Scan{}, ErrNotInt},
		{"0 count", Scan{}, ErrSyntax},
		{"0 type string", Scan{}, ErrSyntax},
	}
	for _, tc := range cases {
		o, err := ParseScan(argv(tc.in))
		if err != tc.err || (err == nil && o != tc.want) {
			t.Errorf("ParseScan(%q) = %+v %v; want %+v %v", tc.in, o, err, tc.want, tc.err)
		}
	}
}

func TestCursor(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"", 0, true}, {"0", 0, true}, {"+5", 5, true}, {"-2", 1<<64 - 2, true},
		{"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"+", 0, false}, {"0x1", 0, false},
	}
	for _, tc := range cases {
		if got, ok := Cursor([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("Cursor(%q) = %d %v, want %d %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseScan: no argument list makes the scan grammar panic, and an
// accepted COUNT is within [1, 2^30].
func FuzzParseScan(f *testing.F) {
	for _, s := range []string{"0", "5 match a* count 3", "-1 count 99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := argv(s)
		if len(args) == 0 {
			return
		}
		o, err := ParseScan(args)
		if err == nil && (o.Count < 1 || o.Count > 1<<30) {
			t.Fatalf("%q: count %d", s, o.Count)
		}
	})
}
