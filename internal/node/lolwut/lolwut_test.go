package lolwut

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRender(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		args   []string
		prefix string
		suffix string
		lines  int
	}{
		{nil, "Redis ver. 7.0.15\n", "Redis ver. 7.0.15\n", 1},
		{[]string{"VERSION", "5", "1", "1", "1"}, "", "Georg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15\n", 3},
		{[]string{"version", "6", "10", "4"}, "\x1b[", "Plaguemon by hikikomori. Redis ver. 7.0.15\n", 6},
		{[]string{"VERSION", "4294967301"}, "", "Georg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15\n", 0},
	} {
		var args [][]byte
		for _, a := range tc.args {
			args = append(args, []byte(a))
		}
		r, err := Parse(args, "7.0.15")
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		out := r.Render(rng)
		if !strings.HasPrefix(out, tc.prefix) || !strings.HasSuffix(out, tc.suffix) || !utf8.ValidString(out) {
			t.Errorf("%v: %q", tc.args, out)
		}
		if n := strings.Count(out, "\n"); tc.lines > 0 && n != tc.lines {
			t.Errorf("%v: %d lines, want %d", tc.args, n, tc.lines)
		}
	}
	if _, err := Parse([][]byte{[]byte("VERSION"), []byte("x")}, "7.0.15"); err != ErrNotInt {
		t.Errorf("VERSION x: %v", err)
	}
	if _, err := Parse([][]byte{[]byte("VERSION"), []byte("6"), []byte("y")}, "7.0.15"); err != ErrNotInt {
		t.Errorf("size y: %v", err)
	}
}

// The skyline is cols colored cells wide and rows high.
func TestSkylineSize(t *testing.T) {
	out := skyline(rand.New(rand.NewPCG(3, 4)), 7, 3)
	rows := strings.Split(out, "\n")
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, row := range rows {
		if n := strings.Count(row, "\x1b[0m"); n != 7 {
			t.Errorf("row of %d cells: %q", n, row)
		}
	}
}
