package value

import (
	"slices"
	"strings"
	"testing"
)

// listOf builds a list from space-separated elements.
func listOf(s string) *List {
	l := NewList()
	for _, f := range strings.Fields(s) {
		l.PushBack([]byte(f))
	}
	return l
}

// elems renders l's elements.
func elems(l *List) string {
	var out []string
	l.ForEach(func(v []byte) bool { out = append(out, string(v)); return true })
	return strings.Join(out, " ")
}

func TestListIndexOf(t *testing.T) {
	l := listOf("a b c b")
	for v, want := range map[string]int{"a": 0, "b": 1, "c": 2, "z": -1} {
		if got := l.IndexOf([]byte(v)); got != want {
			t.Errorf("IndexOf(%q) = %d, want %d", v, got, want)
		}
	}
}

func TestListPositions(t *testing.T) {
	l := listOf("a b c a b c a")
	cases := []struct {
		rank, count, maxlen int64
		want                []int64
	}{
		{1, -1, 0, []int64{0}},
		{2, -1, 0, []int64{3}},
		{-1, -1, 0, []int64{6}},
		{-2, 0, 0, []int64{3, 0}},
		{1, 0, 0, []int64{0, 3, 6}},
		{1, 2, 0, []int64{0, 3}},
		{2, 0, 4, []int64{3}},
		{1, 0, 3, []int64{0}},
		{4, -1, 0, nil},
	}
	for _, tc := range cases {
		if got := l.Positions([]byte("a"), tc.rank, tc.count, tc.maxlen); !slices.Equal(got, tc.want) {
			t.Errorf("Positions(rank %d, count %d, maxlen %d) = %v, want %v", tc.rank, tc.count, tc.maxlen, got, tc.want)
		}
	}
}

func TestListRemoveMatching(t *testing.T) {
	cases := []struct {
		count int64
		n     int64
		after string
	}{
		{0, 3, "b c b c"},
		{2, 2, "b c b c a"},
		{-2, 2, "a b c b c"},
		{-5, 3, "b c b c"},
	}
	for _, tc := range cases {
		l := listOf("a b c a b c a")
		if n := l.RemoveMatching([]byte("a"), tc.count); n != tc.n || elems(l) != tc.after {
			t.Errorf("RemoveMatching(a, %d) = %d %q, want %d %q", tc.count, n, elems(l), tc.n, tc.after)
		}
	}
	l := listOf("x y")
	if n := l.RemoveMatching([]byte("a"), -1); n != 0 || elems(l) != "x y" {
		t.Errorf("RemoveMatching of an absent element = %d %q", n, elems(l))
	}
}

func TestListTrimRange(t *testing.T) {
	cases := []struct {
		start, end int64
		removed    int
		after      string
	}{
		{1, -2, 2, "b c d"},
		{0, -1, 0, "a b c d e"},
		{-100, 1, 3, "a b"},
		{3, 1, 5, ""},
		{5, 10, 5, ""},
	}
	for _, tc := range cases {
		l := listOf("a b c d e")
		if n := l.TrimRange(tc.start, tc.end); n != tc.removed || elems(l) != tc.after {
			t.Errorf("TrimRange(%d, %d) = %d %q, want %d %q", tc.start, tc.end, n, elems(l), tc.removed, tc.after)
		}
	}
}
