package value

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveZSet is the reference model: a sorted slice.
type naiveZSet []ZItem

func (n naiveZSet) sorted() naiveZSet {
	s := slices.Clone(n)
	slices.SortFunc(s, func(a, b ZItem) int {
		if Zless(a.Score, a.Member, b.Score, b.Member) {
			return -1
		}
		if Zless(b.Score, b.Member, a.Score, a.Member) {
			return 1
		}
		return 0
	})
	return s
}

func checkZSet(t *testing.T, z *ZSet, ref map[string]float64) {
	t.Helper()
	var want naiveZSet
	for m, s := range ref {
		want = append(want, ZItem{m, s})
	}
	want = want.sorted()
	if z.Len() != len(want) {
		t.Fatalf("Len %d, want %d", z.Len(), len(want))
	}
	i := 0
	z.ForEach(func(m string, s float64) bool {
		if want[i].Member != m || want[i].Score != s {
			t.Fatalf("ForEach[%d] = %q %v, want %q %v", i, m, s, want[i].Member, want[i].Score)
		}
		i++
		return true
	})
	if i != len(want) {
		t.Fatalf("ForEach visited %d, want %d", i, len(want))
	}
	for r, it := range want {
		got, ok := z.Rank(it.Member)
		if !ok || got != r {
			t.Fatalf("Rank(%q) = %d %v, want %d", it.Member, got, ok, r)
		}
		m, s := z.At(r)
		if m != it.Member || s != it.Score {
			t.Fatalf("At(%d) = %q %v, want %q %v", r, m, s, it.Member, it.Score)
		}
	}
	// Score range counts against the model.
	for k := 0; k < 5; k++ {
		lim := float64(rand.IntN(60) - 30)
		got := z.CountWhile(func(s float64, _ string) bool { return s < lim })
		wantN := 0
		for _, it := range want {
			if it.Score < lim {
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
		z.RangeByRank(a, b, true, func(m string, s float64) bool {
			if want[j].Member != m {
				t.Fatalf("rev range %d..%d at %d: %q, want %q", a, b, j, m, want[j].Member)
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
	for _, lim := range []ZSetLimits{{Entries: 128, Value: 64}, {Entries: 0, Value: 64}, {Entries: 16, Value: 64}} {
		t.Run(fmt.Sprintf("entries=%d", lim.Entries), func(t *testing.T) {
			z := NewZSet()
			ref := map[string]float64{}
			for step := 0; step < 3000; step++ {
				m := fmt.Sprintf("m%d", rand.IntN(300))
				switch op := rand.IntN(10); {
				case op < 6:
					s := float64(rand.IntN(40) - 20)
					_, had := ref[m]
					if isNew := z.Set(m, s, lim); isNew == had {
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
					z.RangeByRank(a, b, false, func(m string, _ float64) bool { gone = append(gone, m); return true })
					if got := z.RemoveRankRange(a, b); got != b-a+1 {
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
			c := z.Clone().(*ZSet)
			checkZSet(t, c, ref)
			if lim.Entries == 16 && len(ref) > 16 && z.Encoding() != "skiplist" {
				t.Fatalf("encoding %s with %d members", z.Encoding(), len(ref))
			}
		})
	}
}

func TestZSetTypeEncoding(t *testing.T) {
	z := NewZSet()
	for i := 0; i < 128; i++ {
		z.Add(fmt.Sprint(i), float64(i))
	}
	if z.Encoding() != "listpack" {
		t.Fatalf("128 members: %s", z.Encoding())
	}
	z.Add("x", 1)
	if z.Encoding() != "skiplist" {
		t.Fatalf("129 members: %s", z.Encoding())
	}
	z2 := NewZSet()
	z2.Add(string(make([]byte, 65)), 1)
	if z2.Encoding() != "skiplist" {
		t.Fatalf("65-byte member: %s", z2.Encoding())
	}
	for i := 0; i < 120; i++ {
		z.Remove(fmt.Sprint(i))
	}
	z.ShrinkIfSmall(defaultZSetLimits)
	if z.Encoding() != "listpack" || z.Len() != 9 {
		t.Fatalf("shrink: %s %d", z.Encoding(), z.Len())
	}
	if s, ok := z.Score("x"); !ok || s != 1 {
		t.Fatalf("Score(x) = %v %v", s, ok)
	}
}

// BenchmarkZSetUpdateScore is redis-benchmark's zadd test in process: a
// skiplist-encoded set of 100k members "element:<12 digits>" with integer
// scores below 100k, each op giving a random member a random new score
// through ZADD's path (dict lookup, then UpdateScore).
func BenchmarkZSetUpdateScore(b *testing.B) {
	const n = 100000
	z := NewZSetLarge()
	members := make([][]byte, n)
	for i := range members {
		members[i] = fmt.Appendf(nil, "element:%012d", i)
		z.Set(string(members[i]), float64(rand.IntN(n)), defaultZSetLimits)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := members[rng.IntN(n)]
		s := float64(rng.IntN(n))
		node := z.Dict.FindBytes(m)
		if node.Val.Score != s {
			z.Zsl.UpdateScore(node.Val, s)
		}
	}
}

// checkSkiplist verifies every link of a large set's skip list against
// want, the members in order: level 0 is want, each level is an ordered
// subsequence whose spans are rank differences, backward links, tail,
// length and level agree, and the dict points at the nodes.
func checkSkiplist(t *testing.T, z *ZSet, want naiveZSet) {
	t.Helper()
	zl := z.Zsl
	if zl.Length != len(want) || z.Dict.len() != len(want) {
		t.Fatalf("length %d, dict %d, want %d", zl.Length, z.Dict.len(), len(want))
	}
	rankOf := map[*SkipNode]int{zl.header: 0}
	var prev *SkipNode
	r := 0
	for x := zl.header.lvl0.forward; x != nil; x = x.lvl0.forward {
		if r >= len(want) {
			t.Fatalf("level 0 longer than %d", len(want))
		}
		if x.member != want[r].Member || x.Score != want[r].Score {
			t.Fatalf("rank %d: %q %v, want %q %v", r+1, x.member, x.Score, want[r].Member, want[r].Score)
		}
		if x.backward != prev {
			t.Fatalf("rank %d (%q): wrong backward link", r+1, x.member)
		}
		if n := z.Dict.find(x.member); n == nil || n.Val != x {
			t.Fatalf("dict entry of %q does not point at its node", x.member)
		}
		r++
		rankOf[x] = r
		prev = x
	}
	if r != len(want) || zl.tail != prev {
		t.Fatalf("level 0 has %d nodes (want %d) or wrong tail", r, len(want))
	}
	if zl.level < 1 || zl.level > zslMaxLevel || (zl.level > 1 && zl.header.lv(zl.level-1).forward == nil) {
		t.Fatalf("level %d with an empty top level", zl.level)
	}
	for i := zl.level; i < zslMaxLevel; i++ {
		if zl.header.lv(i).forward != nil {
			t.Fatalf("header links at level %d >= level %d", i, zl.level)
		}
	}
	for i := 0; i < zl.level; i++ {
		x := zl.header
		for f := x.lv(i).forward; f != nil; x, f = f, f.lv(i).forward {
			rf, ok := rankOf[f]
			if !ok || rf <= rankOf[x] {
				t.Fatalf("level %d: link from rank %d to a node out of order or not at level 0", i, rankOf[x])
			}
			if got := x.lv(i).span; got != rf-rankOf[x] {
				t.Fatalf("level %d: span from rank %d is %d, want %d", i, rankOf[x], got, rf-rankOf[x])
			}
		}
	}
}

// TestSkiplistUpdateModel drives a large set with random score updates
// (moves in both directions, updates that keep the place, equal scores
// ordered by member, ±inf, -0), inserts and removals, and checks the whole
// skip list against a sorted-slice model after every operation, plus Rank
// and At of a few members.
func TestSkiplistUpdateModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		z := NewZSetLarge()
		ref := map[string]float64{}
		scores := []float64{math.Inf(-1), math.Inf(1), -1, 0, math.Copysign(0, -1), 1, 2, 2.5, 3, 7, 1e300}
		score := func() float64 {
			if rng.IntN(3) == 0 {
				return float64(rng.IntN(40)) / 4
			}
			return scores[rng.IntN(len(scores))]
		}
		members := 40 + int(seed)*60
		for step := 0; step < 3000; step++ {
			m := fmt.Sprintf("m%03d", rng.IntN(members))
			cur, had := ref[m]
			switch op := rng.IntN(10); {
			case op < 5:
				s := score()
				if had && rng.IntN(3) == 0 {
					// a small step: often keeps the node's place
					s = math.Nextafter(cur, math.Inf(2*rng.IntN(2)-1))
					if math.IsNaN(s) || math.IsInf(cur, 0) {
						s = score()
					}
				}
				if isNew := z.Set(m, s, ZSetLimits{}); isNew == had {
					t.Fatalf("set(%q) new=%v, had=%v", m, isNew, had)
				}
				if !had || cur != s {
					ref[m] = s
				}
			case op < 8 && had:
				// ZADD's path: the node from the dict, updated directly
				n := z.Dict.find(m)
				s := score()
				if n.Val.Score != s {
					z.Zsl.UpdateScore(n.Val, s)
					ref[m] = s
				}
			default:
				if got := z.Remove(m); got != had {
					t.Fatalf("Remove(%q) = %v, want %v", m, got, had)
				}
				delete(ref, m)
			}
			var want naiveZSet
			for m, s := range ref {
				want = append(want, ZItem{m, s})
			}
			want = want.sorted()
			checkSkiplist(t, z, want)
			for k := 0; k < 3 && len(want) > 0; k++ {
				i := rng.IntN(len(want))
				if got, ok := z.Rank(want[i].Member); !ok || got != i {
					t.Fatalf("step %d: Rank(%q) = %d %v, want %d", step, want[i].Member, got, ok, i)
				}
				if m, s := z.At(i); m != want[i].Member || s != want[i].Score {
					t.Fatalf("step %d: At(%d) = %q %v, want %q %v", step, i, m, s, want[i].Member, want[i].Score)
				}
			}
		}
	}
}
