package strops

import (
	"bytes"
	"errors"
	"testing"
)

func args(s string) [][]byte { return bytes.Fields([]byte(s)) }

func TestParseSetOptions(t *testing.T) {
	for _, tc := range []struct {
		opts   string
		forSet bool
		flags  int
		expire string
		err    error
	}{
		{"", true, 0, "", nil},
		{"nx ex 10", true, SetNX | SetEX, "10", nil},
		{"XX GET PX 5", true, SetXX | SetGet | SetPX, "5", nil},
		{"EX 1 EX 2", true, SetEX, "2", nil},
		{"EX 1 PX 2", true, 0, "", ErrSyntax},
		{"NX XX", true, 0, "", ErrSyntax},
		{"KEEPTTL EX 1", true, 0, "", ErrSyntax},
		{"EX", true, 0, "", ErrSyntax},
		{"PERSIST", true, 0, "", ErrSyntax},
		{"PERSIST", false, SetPersist, "", nil},
		{"PERSIST EXAT 9", false, 0, "", ErrSyntax},
		{"pxat 9", false, SetPXAT, "9", nil},
		{"NX", false, 0, "", ErrSyntax},
	} {
		o, err := ParseSetOptions(args(tc.opts), tc.forSet)
		if !errors.Is(err, tc.err) || o.Flags != tc.flags || string(o.Expire) != tc.expire {
			t.Errorf("%q forSet=%v: got %+v, %v; want flags %d expire %q, %v", tc.opts, tc.forSet, o, err, tc.flags, tc.expire, tc.err)
		}
	}
}

func TestExpireAt(t *testing.T) {
	const now = 1_000_000
	for _, tc := range []struct {
		arg   string
		flags int
		want  int64
		err   string
	}{
		{"10", SetEX, now + 10_000, ""},
		{"10", SetPX, now + 10, ""},
		{"5000", SetPXAT, 5000, ""},
		{"5", SetEXAT, 5000, ""},
		{"0", SetEX, 0, "ERR invalid expire time in 'set' command"},
		{"-1", SetPX, 0, "ERR invalid expire time in 'set' command"},
		{"9223372036854775", SetEX, 0, "ERR invalid expire time in 'set' command"},
		{"9223372036854775807", SetPX, 0, "ERR invalid expire time in 'set' command"},
		{"x", SetEX, 0, ErrNotInt.Error()},
	} {
		got, err := ExpireAt([]byte(tc.arg), tc.flags, now, "set")
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || got != tc.want {
			t.Errorf("%s flags %d: got %d, %v; want %d, %q", tc.arg, tc.flags, got, err, tc.want, tc.err)
		}
	}
}

func TestIncr(t *testing.T) {
	for _, tc := range []struct {
		cur  []byte
		by   int64
		want int64
		err  error
	}{
		{nil, 1, 1, nil},
		{[]byte("41"), 1, 42, nil},
		{[]byte("-5"), -5, -10, nil},
		{[]byte{}, 1, 0, ErrNotInt},
		{[]byte(" 1"), 1, 0, ErrNotInt},
		{[]byte("01"), 1, 0, ErrNotInt},
		{[]byte("9223372036854775807"), 1, 0, ErrOverflow},
		{[]byte("-9223372036854775808"), -1, 0, ErrOverflow},
		{[]byte("9223372036854775806"), 1, 1<<63 - 1, nil},
	} {
		got, err := Incr(tc.cur, tc.by)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Incr(%q, %d) = %d, %v; want %d, %v", tc.cur, tc.by, got, err, tc.want, tc.err)
		}
	}
	if n, err := ParseIncrement([]byte("5"), true); n != -5 || err != nil {
		t.Errorf("DECRBY 5: %d, %v", n, err)
	}
	if _, err := ParseIncrement([]byte("-9223372036854775808"), true); err != ErrDecrOverflow {
		t.Errorf("DECRBY min: %v", err)
	}
	if n, err := ParseIncrement([]byte("-9223372036854775808"), false); n != -1<<63 || err != nil {
		t.Errorf("INCRBY min: %d, %v", n, err)
	}
}

func TestIncrByFloat(t *testing.T) {
	for _, tc := range []struct {
		cur, incr, want string
		missing         bool
		err             error
	}{
		{"", "1.5", "1.5", true, nil},
		{"10.5", "0.1", "10.6", false, nil},
		{"5.0e3", "2.0e2", "5200", false, nil},
		{"1", "-1", "0", false, nil},
		{"0x10", "1", "17", false, nil},
		{"", "1", "", false, ErrNotFloat},
		{"abc", "1", "", false, ErrNotFloat},
		{"1", " 1", "", false, ErrNotFloat},
		{"1", "nan", "", false, ErrNotFloat},
		{"inf", "1", "", false, ErrNaN},
		{"1", "1e5000", "", false, ErrNotFloat},
	} {
		var cur []byte
		if !tc.missing {
			cur = []byte(tc.cur)
		}
		got, err := IncrByFloat(cur, []byte(tc.incr))
		if string(got) != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%q + %q = %q, %v; want %q, %v", tc.cur, tc.incr, got, err, tc.want, tc.err)
		}
	}
}

func TestRanges(t *testing.T) {
	s := []byte("Hello World")
	for _, tc := range []struct {
		start, end int64
		want       string
	}{
		{0, 3, "Hell"}, {-3, -1, "rld"}, {5, 3, ""}, {5, 5000, " World"}, {-5000, 1, "He"},
		{-1, -5, ""}, {20, 30, ""},
	} {
		if got := GetRange(s, tc.start, tc.end); string(got) != tc.want || got == nil {
			t.Errorf("GetRange(%d, %d) = %q, want %q", tc.start, tc.end, got, tc.want)
		}
	}
	if got := SetRange([]byte("Hello"), 7, []byte("W")); !bytes.Equal(got, []byte("Hello\x00\x00W")) {
		t.Errorf("SetRange: %q", got)
	}
	if got := SetRange(nil, 2, []byte("x")); !bytes.Equal(got, []byte("\x00\x00x")) {
		t.Errorf("SetRange(nil): %q", got)
	}
	if _, err := ParseOffset([]byte("-1")); err != ErrOffset {
		t.Errorf("ParseOffset(-1): %v", err)
	}
	if err := CheckLength(10, 5, 12); err != ErrTooLong {
		t.Errorf("CheckLength over: %v", err)
	}
	if err := CheckLength(10, 5, 0); err != nil {
		t.Errorf("CheckLength unlimited: %v", err)
	}
	if err := CheckLength(1<<62, 1<<62+1<<61, 1<<63-1); err != ErrTooLong {
		t.Errorf("CheckLength wrap: %v", err)
	}
}

func TestLCS(t *testing.T) {
	a, b := []byte("ohmytext"), []byte("mynewtext")
	r, err := LCS(a, b, LCSOptions{}, 1<<20)
	if err != nil || string(r.Seq) != "mytext" || r.Len != 6 {
		t.Fatalf("LCS: %+v, %v", r, err)
	}
	r, _ = LCS(a, b, LCSOptions{Idx: true}, 1<<20)
	want := []LCSMatch{{4, 7, 5, 8}, {2, 3, 0, 1}}
	if len(r.Matches) != len(want) || r.Matches[0] != want[0] || r.Matches[1] != want[1] {
		t.Errorf("IDX matches %+v, want %+v", r.Matches, want)
	}
	r, _ = LCS(a, b, LCSOptions{Idx: true, MinMatchLen: 4}, 1<<20)
	if len(r.Matches) != 1 || r.Matches[0] != want[0] {
		t.Errorf("MINMATCHLEN 4: %+v", r.Matches)
	}
	if _, err := LCS(a, b, LCSOptions{}, 100); err != ErrLCSMemory {
		t.Errorf("limit: %v", err)
	}
	for _, tc := range []struct {
		opts string
		err  error
	}{
		{"LEN IDX", ErrLCSLenAndIdx}, {"MINMATCHLEN", ErrSyntax}, {"MINMATCHLEN x", ErrNotInt}, {"FOO", ErrSyntax},
		{"idx minmatchlen -3 withmatchlen", nil},
	} {
		if _, err := ParseLCSOptions(args(tc.opts)); err != tc.err {
			t.Errorf("%q: %v, want %v", tc.opts, err, tc.err)
		}
	}
}

// FuzzLCS checks that the subsequence is common to both inputs and that
// every match is an equal pair of ranges.
func FuzzLCS(f *testing.F) {
	f.Add([]byte("ohmytext"), []byte("mynewtext"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if len(a) > 200 || len(b) > 200 {
			return
		}
		r, err := LCS(a, b, LCSOptions{Idx: true}, 1<<30)
		if err != nil || len(r.Seq) != r.Len {
			t.Fatalf("%+v, %v", r, err)
		}
		for _, s := range [][]byte{a, b} {
			i := 0
			for _, ch := range s {
				if i < len(r.Seq) && r.Seq[i] == ch {
					i++
				}
			}
			if i != len(r.Seq) {
				t.Fatalf("%q is not a subsequence of %q", r.Seq, s)
			}
		}
		for _, m := range r.Matches {
			if !bytes.Equal(a[m.AStart:m.AEnd+1], b[m.BStart:m.BEnd+1]) {
				t.Fatalf("match %+v differs", m)
			}
		}
	})
}

func TestSetPropagation(t *testing.T) {
	join := func(p [][]byte) string { return string(bytes.Join(p, []byte(" "))) }
	if got := join(SetPropagation([]byte("k"), []byte("v"), args("EX 10"), 12345, true)); got != "SET k v PXAT 12345" {
		t.Errorf("expire: %q", got)
	}
	if got := join(SetPropagation([]byte("k"), []byte("v"), args("NX get KEEPTTL"), 0, false)); got != "SET k v NX KEEPTTL" {
		t.Errorf("GET: %q", got)
	}
}

func TestLCSAppendIdx(t *testing.T) {
	r, _ := LCS([]byte("ohmytext"), []byte("mynewtext"), LCSOptions{Idx: true, MinMatchLen: 4}, 1<<20)
	want := "*4\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n"
	if got := string(r.AppendIdx(nil, 2, true)); got != want {
		t.Errorf("RESP2: %q", got)
	}
	if got := string(r.AppendIdx(nil, 3, false)); got[:4] != "%2\r\n" {
		t.Errorf("RESP3: %q", got)
	}
}
