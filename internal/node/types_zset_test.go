package node

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveZSet is the reference model: a sorted slice.
type naiveZSet []zitem

func (n naiveZSet) sorted() naiveZSet {
	s := slices.Clone(n)
	slices.SortFunc(s, func(a, b zitem) int {
		if zless(a.score, a.member, b.score, b.member) {
			return -1
		}
		if zless(b.score, b.member, a.score, a.member) {
			return 1
		}
		return 0
	})
	return s
}

func checkZSet(t *testing.T, z *zsetValue, ref map[string]float64) {
	t.Helper()
	var want naiveZSet
	for m, s := range ref {
		want = append(want, zitem{m, s})
	}
	want = want.sorted()
	if z.Len() != len(want) {
		t.Fatalf("Len %d, want %d", z.Len(), len(want))
	}
	i := 0
	z.ForEach(func(m string, s float64) bool {
		if want[i].member != m || want[i].score != s {
			t.Fatalf("ForEach[%d] = %q %v, want %q %v", i, m, s, want[i].member, want[i].score)
		}
		i++
		return true
	})
	if i != len(want) {
		t.Fatalf("ForEach visited %d, want %d", i, len(want))
	}
	for r, it := range want {
		got, ok := z.Rank(it.member)
		if !ok || got != r {
			t.Fatalf("Rank(%q) = %d %v, want %d", it.member, got, ok, r)
		}
		m, s := z.At(r)
		if m != it.member || s != it.score {
			t.Fatalf("At(%d) = %q %v, want %q %v", r, m, s, it.member, it.score)
		}
	}
	// Score range counts against the model.
	for k := 0; k < 5; k++ {
		lim := float64(rand.IntN(60) - 30)
		got := z.countWhile(func(s float64, _ string) bool { return s < lim })
		wantN := 0
		for _, it := range want {
			if it.score < lim {
				wantN++
			}
		}
		if got != wantN {
			t.Fatalf("countWhile(< %v) = %d, want %d", lim, got, wantN)
		}
	}
	// Reverse range over a random window.
	if len(want) > 0 {
		a, b := rand.IntN(len(want)), rand.IntN(len(want))
		if a > b {
			a, b = b, a
		}
		j := b
		z.rangeByRank(a, b, true, func(m string, s float64) bool {
			if want[j].member != m {
				t.Fatalf("rev range %d..%d at %d: %q, want %q", a, b, j, m, want[j].member)
			}
			j--
			return true
		})
		if j != a-1 {
			t.Fatalf("rev range %d..%d stopped at %d", a, b, j)
		}
	}
}

func TestZSetTypeRandomized(t *testing.T) {
	for _, lim := range []zsetLimits{{entries: 128, value: 64}, {entries: 0, value: 64}, {entries: 16, value: 64}} {
		t.Run(fmt.Sprintf("entries=%d", lim.entries), func(t *testing.T) {
			z := newZSet()
			ref := map[string]float64{}
			for step := 0; step < 3000; step++ {
				m := fmt.Sprintf("m%d", rand.IntN(300))
				switch op := rand.IntN(10); {
				case op < 6:
					s := float64(rand.IntN(40) - 20)
					_, had := ref[m]
					if isNew := z.set(m, s, lim); isNew == had {
						t.Fatalf("set(%q) new=%v, had=%v", m, isNew, had)
					}
					ref[m] = s
				case op < 9:
					_, had := ref[m]
					if got := z.Remove(m); got != had {
						t.Fatalf("Remove(%q) = %v, want %v", m, got, had)
					}
					delete(ref, m)
				default:
					n := z.Len()
					if n == 0 {
						continue
					}
					a, b := rand.IntN(n), rand.IntN(n)
					if a > b {
						a, b = b, a
					}
					var gone []string
					z.rangeByRank(a, b, false, func(m string, _ float64) bool { gone = append(gone, m); return true })
					if got := z.removeRankRange(a, b); got != b-a+1 {
						t.Fatalf("removeRankRange(%d,%d) = %d", a, b, got)
					}
					for _, m := range gone {
						delete(ref, m)
					}
				}
				if step%97 == 0 {
					checkZSet(t, z, ref)
				}
			}
			checkZSet(t, z, ref)
			c := z.clone().(*zsetValue)
			checkZSet(t, c, ref)
			if lim.entries == 16 && len(ref) > 16 && z.encoding() != "skiplist" {
				t.Fatalf("encoding %s with %d members", z.encoding(), len(ref))
			}
		})
	}
}

func TestZSetTypeEncoding(t *testing.T) {
	z := newZSet()
	for i := 0; i < 128; i++ {
		z.Add(fmt.Sprint(i), float64(i))
	}
	if z.encoding() != "listpack" {
		t.Fatalf("128 members: %s", z.encoding())
	}
	z.Add("x", 1)
	if z.encoding() != "skiplist" {
		t.Fatalf("129 members: %s", z.encoding())
	}
	z2 := newZSet()
	z2.Add(string(make([]byte, 65)), 1)
	if z2.encoding() != "skiplist" {
		t.Fatalf("65-byte member: %s", z2.encoding())
	}
	for i := 0; i < 120; i++ {
		z.Remove(fmt.Sprint(i))
	}
	z.shrinkIfSmall(defaultZSetLimits)
	if z.encoding() != "listpack" || z.Len() != 9 {
		t.Fatalf("shrink: %s %d", z.encoding(), z.Len())
	}
	if s, ok := z.Score("x"); !ok || s != 1 {
		t.Fatalf("Score(x) = %v %v", s, ok)
	}
}
