package grammar

import (
	"bytes"
	"slices"
	"testing"
)

// sameKeys reports whether keys are the space-separated names of want.
func sameKeys(keys [][]byte, want string) bool {
	return slices.EqualFunc(keys, argv(want), bytes.Equal)
}

func TestParseMPop(t *testing.T) {
	cases := []struct {
		in     string
		i      int
		keys   string
		second bool
		count  int64
		err    error
	}{
		{"lmpop 2 a b left", 1, "a b", false, 1, nil},
		{"lmpop 1 a RIGHT count 5", 1, "a", true, 5, nil},
		{"blmpop 0 1 a left count 2", 2, "a", false, 2, nil},
		{"lmpop 0 a left", 1, "", false, 0, ErrNumKeys},
		{"lmpop x a left", 1, "", false, 0, ErrNumKeys},
		{"lmpop 3 a left", 1, "", false, 0, ErrSyntax},
		{"lmpop 1 a up", 1, "", false, 0, ErrSyntax},
		{"lmpop 1 a left count 0", 1, "", false, 0, ErrCount},
		{"lmpop 1 a left count", 1, "", false, 0, ErrSyntax},
		{"lmpop 1 a left count 1 count 2", 1, "", false, 0, ErrSyntax},
		{"lmpop 1 a left foo", 1, "", false, 0, ErrSyntax},
	}
	for _, tc := range cases {
		o, err := ParseMPop(argv(tc.in), tc.i, "left", "right")
		if err != tc.err || (err == nil && (!sameKeys(o.Keys, tc.keys) || o.Second != tc.second || o.Count != tc.count)) {
			t.Errorf("ParseMPop(%q) = %q %v %d %v", tc.in, o.Keys, o.Second, o.Count, err)
		}
	}
	if o, err := ParseMPop(argv("zmpop 1 z MAX"), 1, "min", "max"); err != nil || !o.Second {
		t.Errorf("ZMPOP MAX: %+v %v", o, err)
	}
}

func TestParseInterCard(t *testing.T) {
	cases := []struct {
		in    string
		keys  string
		limit int64
		err   error
	}{
		{"sintercard 2 a b", "a b", 0, nil},
		{"sintercard 1 a LIMIT 3", "a", 3, nil},
		{"sintercard 0 a", "", 0, ErrNumKeys},
		{"sintercard 3 a b", "", 0, ErrNumKeysArgs},
		{"sintercard 1 a limit -1", "", 0, ErrLimitNeg},
		{"sintercard 1 a limit", "", 0, ErrSyntax},
		{"sintercard 1 a b", "", 0, ErrSyntax},
	}
	for _, tc := range cases {
		o, err := ParseInterCard(argv(tc.in))
		if err != tc.err || (err == nil && (!sameKeys(o.Keys, tc.keys) || o.Limit != tc.limit)) {
			t.Errorf("ParseInterCard(%q) = %q %d %v", tc.in, o.Keys, o.Limit, err)
		}
	}
}

func TestRandCount(t *testing.T) {
	cases := []struct {
		in    string
		count int64
		with  bool
		err   error
	}{
		{"hrandfield h 5", 5, false, nil},
		{"hrandfield h -5 WITHVALUES", -5, true, nil},
		{"hrandfield h x", 0, false, ErrNotInt},
		{"hrandfield h -9223372036854775808", 0, false, ErrRandRange},
		{"hrandfield h 1 withscores", 0, false, ErrSyntax},
		{"hrandfield h 1 withvalues x", 0, false, ErrSyntax},
		{"hrandfield h -9223372036854770000 withvalues", 0, false, ErrOutOfRange},
		{"hrandfield h 9223372036854770000", 9223372036854770000, false, nil},
	}
	for _, tc := range cases {
		n, with, err := RandCount(argv(tc.in), "withvalues")
		if err != tc.err || (err == nil && (n != tc.count || with != tc.with)) {
			t.Errorf("RandCount(%q) = %d %v %v", tc.in, n, with, err)
		}
	}
	if _, err := SRandCount([]byte("-9223372036854775808")); err != ErrRandRange {
		t.Errorf("SRandCount(MinInt64) = %v", err)
	}
}

func TestSmallParsers(t *testing.T) {
	if _, err := Positive([]byte("-1")); err != ErrPositive {
		t.Errorf("Positive(-1) = %v", err)
	}
	if _, err := Positive([]byte("x")); err != ErrPositive {
		t.Errorf("Positive(x) = %v", err)
	}
	if n, err := Positive([]byte("0")); n != 0 || err != nil {
		t.Errorf("Positive(0) = %d %v", n, err)
	}
	for in, want := range map[string]bool{"LEFT": false, "right": true} {
		if got, err := OneOf([]byte(in), "left", "right"); got != want || err != nil {
			t.Errorf("OneOf(%q) = %v %v", in, got, err)
		}
	}
	if _, err := OneOf([]byte("up"), "left", "right"); err != ErrSyntax {
		t.Errorf("OneOf(up) = %v", err)
	}
	if _, _, err := IntPair([]byte("1"), []byte("a")); err != ErrNotInt {
		t.Errorf("IntPair(1, a) = %v", err)
	}
}

func TestNumKeysPositions(t *testing.T) {
	cases := []struct {
		f    func([][]byte) []int
		in   string
		want []int
	}{
		{NumKeysAt(1), "sintercard 2 a b limit 1", []int{2, 3}},
		{NumKeysAt(1), "sintercard 3 a b", nil},
		{NumKeysAt(1), "sintercard x a", nil},
		{NumKeysAt(2), "eval s 0", nil},
		{NumKeysAt(2), "blmpop 0 1 a left", []int{3}},
		{NumKeysUpTo(2, 1), "zunionstore d 2 a b weights 1 2", []int{1, 3, 4}},
		{NumKeysUpTo(2, 1), "zunionstore d 5 a", []int{1, 3}},
		{NumKeysUpTo(2, 1), "zunionstore d 0 a", []int{1}},
		{NumKeysUpTo(1), "zunion", nil},
	}
	for _, tc := range cases {
		if got := tc.f(argv(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("%q: keys %v, want %v", tc.in, got, tc.want)
		}
	}
}
