package value

import (
	"slices"
	"strconv"
	"testing"
)

// members lists s's members, sorted.
func members(s *Set) []string {
	m := s.Members()
	slices.Sort(m)
	return m
}

func TestSetAlgebra(t *testing.T) {
	a, b, ints := setOf("a", "b", "c"), setOf("b", "c", "d"), setOf("1", "2", "c")
	cases := []struct {
		name string
		got  *Set
		want []string
	}{
		{"union", SUnion([]*Set{a, b, nil}, 512), []string{"a", "b", "c", "d"}},
		{"union of nothing", SUnion([]*Set{nil}, 512), []string{}},
		{"diff", SDiff([]*Set{a, b}, 512), []string{"a"}},
		{"diff with a missing key", SDiff([]*Set{a, nil}, 512), []string{"a", "b", "c"}},
		{"diff of a missing key", SDiff([]*Set{nil, a}, 512), []string{}},
		{"diff with itself", SDiff([]*Set{a, b, a}, 512), []string{}},
		{"diff of ints", SDiff([]*Set{ints, a}, 512), []string{"1", "2"}},
	}
	for _, tc := range cases {
		if g := members(tc.got); !slices.Equal(g, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, g, tc.want)
		}
	}
	var inter []string
	SInter([]*Set{a, b, ints}, func(m []byte) bool { inter = append(inter, string(m)); return true })
	if !slices.Equal(inter, []string{"c"}) {
		t.Errorf("SInter = %v", inter)
	}
	for limit, want := range map[int64]int64{0: 2, 1: 1, 3: 2} {
		if n := SInterCard([]*Set{a, b}, limit); n != want {
			t.Errorf("SInterCard limit %d = %d, want %d", limit, n, want)
		}
	}
	if SUnion([]*Set{setOf("1"), setOf("2")}, 512).Encoding() != "intset" {
		t.Error("a union of integers is not an intset")
	}
}

func TestSetRandomAndPop(t *testing.T) {
	for _, n := range []int{10, 600} { // intset and hashtable
		s := NewSet()
		for i := 0; i < n; i++ {
			s.Add(strconv.Itoa(i))
		}
		if n == 600 {
			s.Add("x") // a hashtable
		}
		size := s.Len()
		for _, count := range []int{1, 2, size / 4, size - 1} {
			seen := map[string]bool{}
			s.RandomDistinct(count, func(m string) {
				if seen[m] || !s.Has(m) {
					t.Errorf("RandomDistinct(%d) gave %q twice or not a member", count, m)
				}
				seen[m] = true
			})
			if len(seen) != count {
				t.Errorf("RandomDistinct(%d) gave %d", count, len(seen))
			}
		}
		draws := 0
		s.RandomRepeats(5*int64(size), func(m []byte) bool {
			if !s.HasB(m) {
				t.Errorf("RandomRepeats gave %q", m)
			}
			draws++
			return draws < 7 // stops when emit says so
		})
		if draws != 7 {
			t.Errorf("RandomRepeats drew %d, want 7", draws)
		}
		for _, count := range []int{1, size / 2, size - 1} { // both SPOP strategies
			c := s.Clone().(*Set)
			var popped []string
			c.PopMany(count, 512, func(m []byte) { popped = append(popped, string(m)) })
			if len(popped) != count || c.Len() != size-count {
				t.Errorf("PopMany(%d) of %d popped %d, left %d", count, size, len(popped), c.Len())
			}
			for _, m := range popped {
				if c.Has(m) || !s.Has(m) {
					t.Errorf("PopMany(%d): %q still in the set or never was", count, m)
				}
			}
		}
	}
}

func TestHashRandom(t *testing.T) {
	for _, n := range []int{10, 300} { // listpack and hashtable
		h := NewHash()
		for i := 0; i < n; i++ {
			h.Set("f"+strconv.Itoa(i), []byte("v"+strconv.Itoa(i)))
		}
		for _, count := range []int{1, 2, n / 4, n - 1} {
			seen := map[string]bool{}
			h.RandomDistinct(count, func(f, v []byte) {
				if seen[string(f)] || "v"+string(f[1:]) != string(v) {
					t.Errorf("RandomDistinct(%d) gave %q=%q", count, f, v)
				}
				seen[string(f)] = true
			})
			if len(seen) != count {
				t.Errorf("RandomDistinct(%d) gave %d", count, len(seen))
			}
		}
		draws := 0
		h.RandomRepeats(1000, func(f, v []byte) bool {
			if got, ok := h.Get(string(f)); !ok || string(got) != string(v) {
				t.Errorf("RandomRepeats gave %q=%q", f, v)
			}
			draws++
			return draws < 3
		})
		if draws != 3 {
			t.Errorf("RandomRepeats drew %d, want 3", draws)
		}
	}
}

func TestZSetRandom(t *testing.T) {
	z := zs(false, "a", 1, "b", 2, "c", 3, "d", 4)
	seen := map[string]bool{}
	z.RandomDistinct(3, func(m string, s float64) {
		if got, ok := z.Score(m); seen[m] || !ok || got != s {
			t.Errorf("RandomDistinct gave %q %v", m, s)
		}
		seen[m] = true
	})
	if len(seen) != 3 {
		t.Errorf("RandomDistinct(3) gave %d", len(seen))
	}
	draws := 0
	z.RandomRepeats(10, func(string, float64) bool { draws++; return true })
	if draws != 10 {
		t.Errorf("RandomRepeats(10) drew %d", draws)
	}
}

func TestRandPlan(t *testing.T) {
	cases := []struct {
		l    int64
		size int
		n    int64
		mode RandMode
	}{
		{1, 10, 1, RandRepeats},
		{-3, 10, 3, RandRepeats},
		{-30, 10, 30, RandRepeats},
		{3, 10, 3, RandDistinct},
		{10, 10, 10, RandAll},
		{99, 10, 10, RandAll},
		{1, 1, 1, RandRepeats},
	}
	for _, tc := range cases {
		if n, mode := RandPlan(tc.l, tc.size); n != tc.n || mode != tc.mode {
			t.Errorf("RandPlan(%d, %d) = %d %d, want %d %d", tc.l, tc.size, n, mode, tc.n, tc.mode)
		}
	}
}
