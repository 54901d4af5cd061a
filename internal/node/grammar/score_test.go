package grammar

import (
	"math"
	"testing"

	"github.com/shardis/shardis/internal/node/value"
)

// TestScoreSmallInt checks ZADD's integer fast path against the float
// parser it bypasses.
func TestScoreSmallInt(t *testing.T) {
	for _, in := range []string{"0", "-0", "000000012345", "-000000099999", "7", "-7",
		"999999999999999", "-999999999999999", "1234567890123456", "", "-", "1e3", "1.5", "+5", " 5", "5 ", "--1", "12a"} {
		f, ok := Score([]byte(in))
		g, gok := value.ParseFloat([]byte(in))
		if ok != gok || f != g || math.Signbit(f) != math.Signbit(g) {
			t.Errorf("Score(%q) = %v %v, float parser %v %v", in, f, ok, g, gok)
		}
		if _, fast := smallInt([]byte(in)); fast && len(in) > 16 {
			t.Errorf("%q took the fast path", in)
		}
	}
}

func TestScoreHex(t *testing.T) {
	for in, want := range map[string]float64{"0x10": 16, "-0x10": -16, "0x1p4": 16, "0X1A": 26} {
		if f, ok := Score([]byte(in)); !ok || f != want {
			t.Errorf("Score(%q) = %v %v, want %v", in, f, ok, want)
		}
	}
}

func TestScoreRange(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		min, max string
		want     value.ScoreRange
		err      error
	}{
		{"1", "2", value.ScoreRange{Min: 1, Max: 2}, nil},
		{"(1", "(2", value.ScoreRange{Min: 1, Max: 2, MinEx: true, MaxEx: true}, nil},
		{"-inf", "+inf", value.ScoreRange{Min: -inf, Max: inf}, nil},
		{" 1", "", value.ScoreRange{Min: 1, Max: 0}, nil}, // strtod: leading space, empty is 0
		{"0x10", "1e999", value.ScoreRange{Min: 16, Max: inf}, nil},
		{"nan", "1", value.ScoreRange{}, ErrZMinMaxFloat},
		{"1", "(", value.ScoreRange{Min: 1, MaxEx: true}, nil},
		{"1", "x", value.ScoreRange{}, ErrZMinMaxFloat},
		{"[1", "2", value.ScoreRange{}, ErrZMinMaxFloat},
	}
	for _, tc := range cases {
		r, err := ScoreRange([]byte(tc.min), []byte(tc.max))
		if err != tc.err || (err == nil && r != tc.want) {
			t.Errorf("ScoreRange(%q, %q) = %+v, %v; want %+v, %v", tc.min, tc.max, r, err, tc.want, tc.err)
		}
	}
}

func TestLexRange(t *testing.T) {
	cases := []struct {
		min, max string
		want     value.LexRange
		err      error
	}{
		{"-", "+", value.LexRange{Min: value.LexBound{Inf: -1}, Max: value.LexBound{Inf: 1}}, nil},
		{"[a", "(b", value.LexRange{Min: value.LexBound{S: "a"}, Max: value.LexBound{S: "b", Ex: true}}, nil},
		{"[", "(", value.LexRange{Min: value.LexBound{}, Max: value.LexBound{Ex: true}}, nil},
		{"a", "+", value.LexRange{}, ErrZMinMaxLex},
		{"-x", "+", value.LexRange{}, ErrZMinMaxLex},
		{"", "+", value.LexRange{}, ErrZMinMaxLex},
	}
	for _, tc := range cases {
		r, err := LexRange([]byte(tc.min), []byte(tc.max))
		if err != tc.err || (err == nil && r != tc.want) {
			t.Errorf("LexRange(%q, %q) = %+v, %v; want %+v, %v", tc.min, tc.max, r, err, tc.want, tc.err)
		}
	}
}
