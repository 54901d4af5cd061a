package value

import (
	"bytes"
	"maps"
	"slices"
	"strconv"
	"testing"
)

// The fuzz targets read their input as a sequence of operations: one byte
// picks the operation, the next bytes its arguments. Each applies the
// sequence to a value and to a plain Go model (a slice or a map), compares
// them after every operation, and never panics. Small encoding limits make
// the conversions between encodings happen within a short input.

// opReader hands out the fuzz input byte by byte; past the end it reads 0.
type opReader struct{ b []byte }

func (r *opReader) more() bool { return len(r.b) > 0 }

func (r *opReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// elem returns an element: mostly short strings from a small alphabet (so
// operations hit existing members), sometimes an integer (intset), and
// sometimes a long one (past the small encodings' byte limits and, for
// lists, spanning blocks).
func (r *opReader) elem() []byte {
	c := r.byte()
	switch {
	case c < 128:
		return []byte("m" + strconv.Itoa(int(c%24)))
	case c < 200:
		return []byte(strconv.Itoa(int(c) - 160))
	case c < 250:
		return bytes.Repeat([]byte{'a' + c%26}, int(r.byte())+1)
	default:
		return bytes.Repeat([]byte{'L'}, 4000+int(r.byte())*20)
	}
}

func FuzzList(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 3, 2, 0, 3, 1})
	f.Add(bytes.Repeat([]byte{0, 250, 9, 1, 255, 1}, 12))
	f.Add(bytes.Repeat([]byte{0, 5, 1, 7, 6, 2, 3, 4, 7, 8, 9}, 40))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &opReader{in}
		l := NewList()
		var m [][]byte
		for n := 0; r.more() && n < 2000; n++ {
			op := r.byte() % 12
			switch op {
			case 0, 1: // push front / back
				v := r.elem()
				l.Push(v, op == 0)
				if op == 0 {
					m = slices.Insert(m, 0, bytes.Clone(v))
				} else {
					m = append(m, bytes.Clone(v))
				}
			case 2, 3: // pop front / back
				got := l.Pop(op == 2)
				var want []byte
				if len(m) > 0 {
					if op == 2 {
						want, m = m[0], m[1:]
					} else {
						want, m = m[len(m)-1], m[:len(m)-1]
					}
				}
				if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
					t.Fatalf("op %d pop: got %q want %q", n, got, want)
				}
			case 4: // index, negative too
				i := int(int8(r.byte()))
				got, ok := l.Index(i)
				j := i
				if j < 0 {
					j += len(m)
				}
				wok := j >= 0 && j < len(m)
				if ok != wok || (ok && !bytes.Equal(got, m[j])) {
					t.Fatalf("op %d index %d: got %q %v", n, i, got, ok)
				}
			case 5: // set
				i := int(int8(r.byte()))
				v := r.elem()
				ok := l.Set(i, v)
				j := i
				if j < 0 {
					j += len(m)
				}
				wok := j >= 0 && j < len(m)
				if ok != wok {
					t.Fatalf("op %d set %d: %v", n, i, ok)
				}
				if ok {
					m[j] = bytes.Clone(v)
				}
			case 6: // insert at 0..len
				i := int(r.byte()) % (len(m) + 1)
				v := r.elem()
				l.Insert(i, v)
				m = slices.Insert(m, i, bytes.Clone(v))
			case 7: // trim to a clamped range
				if len(m) == 0 {
					break
				}
				s := int(r.byte()) % len(m)
				e := int(r.byte()) % len(m)
				l.Trim(s, e)
				if s > e {
					m = nil
				} else {
					m = m[s : e+1]
				}
			case 8: // filter: drop elements equal to one
				v := r.elem()
				removed := l.Filter(func(_ int, x []byte) bool { return !bytes.Equal(x, v) })
				before := len(m)
				m = slices.DeleteFunc(m, func(x []byte) bool { return bytes.Equal(x, v) })
				if removed != before-len(m) {
					t.Fatalf("op %d filter: removed %d want %d", n, removed, before-len(m))
				}
			case 9: // range
				s, e := int(int8(r.byte())), int(int8(r.byte()))
				var got [][]byte
				l.Range(s, e, func(v []byte) bool { got = append(got, bytes.Clone(v)); return true })
				s, e = max(s, 0), min(e, len(m)-1)
				var want [][]byte
				if s <= e {
					want = m[s : e+1]
				}
				if !equalLists(got, want) {
					t.Fatalf("op %d range %d..%d: got %d elements want %d", n, s, e, len(got), len(want))
				}
			case 10: // reverse range from an index
				s := int(r.byte())
				var got [][]byte
				l.RangeRev(s, func(v []byte) bool { got = append(got, bytes.Clone(v)); return true })
				var want [][]byte
				for i := min(s, len(m)-1); i >= 0; i-- {
					want = append(want, m[i])
				}
				if !equalLists(got, want) {
					t.Fatalf("op %d rangerev %d: got %d elements want %d", n, s, len(got), len(want))
				}
			case 11: // clone is deep and equal
				c := l.Clone().(*List)
				checkList(t, c, m)
				c.PushBack([]byte("clone-only"))
			}
			if l.Len() != len(m) {
				t.Fatalf("op %d (%d): Len %d, model %d", n, op, l.Len(), len(m))
			}
		}
		checkList(t, l, m)
	})
}

func equalLists(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

func checkList(t *testing.T, l *List, m [][]byte) {
	t.Helper()
	var got [][]byte
	l.ForEach(func(v []byte) bool { got = append(got, bytes.Clone(v)); return true })
	if !equalLists(got, m) {
		t.Fatalf("list holds %d elements, model %d (or they differ)", len(got), len(m))
	}
}

func FuzzHash(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 3, 4, 1, 1, 2, 3})
	f.Add(bytes.Repeat([]byte{0, 7, 9, 0, 220, 80, 1, 1}, 20))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &opReader{in}
		lim := HashLimits{Entries: 6, Value: 16}
		h := NewHash()
		m := map[string]string{}
		for n := 0; r.more() && n < 2000; n++ {
			switch op := r.byte() % 6; op {
			case 0: // set
				k, v := r.elem(), r.elem()
				_, had := m[string(k)]
				if isNew := h.SetB(k, v, lim); isNew == had {
					t.Fatalf("op %d set %q: isNew %v, model had %v", n, k, isNew, had)
				}
				m[string(k)] = string(v)
			case 1: // delete
				k := r.elem()
				_, had := m[string(k)]
				if got := h.DelB(k); got != had {
					t.Fatalf("op %d del %q: %v want %v", n, k, got, had)
				}
				delete(m, string(k))
			case 2: // get
				k := r.elem()
				v, ok := h.GetB(k)
				w, wok := m[string(k)]
				if ok != wok || string(v) != w {
					t.Fatalf("op %d get %q: %q %v want %q %v", n, k, v, ok, w, wok)
				}
			case 3: // random field is a member
				if len(m) == 0 {
					break
				}
				k, v := h.RandomField()
				if w, ok := m[string(k)]; !ok || w != string(v) {
					t.Fatalf("op %d random field %q=%q not in the model", n, k, v)
				}
			case 4: // encoding follows the limits
				if h.Encoding() == "listpack" && len(m) > lim.Entries {
					t.Fatalf("op %d: listpack with %d fields", n, len(m))
				}
			case 5:
				checkHash(t, h.Clone().(*Hash), m)
			}
			if h.Len() != len(m) {
				t.Fatalf("op %d: Len %d, model %d", n, h.Len(), len(m))
			}
		}
		checkHash(t, h, m)
	})
}

func checkHash(t *testing.T, h *Hash, m map[string]string) {
	t.Helper()
	got := map[string]string{}
	h.Each(func(k, v []byte) bool {
		if _, dup := got[string(k)]; dup {
			t.Fatalf("field %q visited twice", k)
		}
		got[string(k)] = string(v)
		return true
	})
	if !maps.Equal(got, m) {
		t.Fatalf("hash %v, model %v", got, m)
	}
}

func FuzzSet(f *testing.F) {
	f.Add([]byte{0, 130, 0, 131, 0, 132, 1, 130, 0, 5})
	f.Add(bytes.Repeat([]byte{0, 140, 0, 150, 2, 140, 0, 3, 4}, 10))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &opReader{in}
		const maxInts = 5
		s := NewSet()
		m := map[string]bool{}
		for n := 0; r.more() && n < 2000; n++ {
			switch op := r.byte() % 6; op {
			case 0:
				v := r.elem()
				if got := s.AddB(v, maxInts); got == m[string(v)] {
					t.Fatalf("op %d add %q: %v, model had %v", n, v, got, m[string(v)])
				}
				m[string(v)] = true
			case 1:
				v := r.elem()
				if got := s.RemB(v); got != m[string(v)] {
					t.Fatalf("op %d rem %q: %v", n, v, got)
				}
				delete(m, string(v))
			case 2:
				v := r.elem()
				if got := s.HasB(v); got != m[string(v)] {
					t.Fatalf("op %d has %q: %v", n, v, got)
				}
			case 3:
				if len(m) == 0 {
					break
				}
				if v := s.RandomMember(); !m[v] {
					t.Fatalf("op %d random member %q not in the model", n, v)
				}
			case 4:
				if len(m) == 0 {
					break
				}
				v := s.PopRandom()
				if !m[v] {
					t.Fatalf("op %d popped %q, not in the model", n, v)
				}
				delete(m, v)
			case 5:
				if s.Encoding() == "intset" {
					if len(m) > maxInts {
						t.Fatalf("op %d: intset with %d members", n, len(m))
					}
					for k := range m {
						if _, ok := ParseInt([]byte(k)); !ok {
							t.Fatalf("op %d: intset holds %q", n, k)
						}
					}
				}
				checkSet(t, s.Clone().(*Set), m)
			}
			if s.Len() != len(m) {
				t.Fatalf("op %d: Len %d, model %d", n, s.Len(), len(m))
			}
		}
		checkSet(t, s, m)
	})
}

func checkSet(t *testing.T, s *Set, m map[string]bool) {
	t.Helper()
	got := map[string]bool{}
	s.Each(func(v []byte) bool {
		if got[string(v)] {
			t.Fatalf("member %q visited twice", v)
		}
		got[string(v)] = true
		return true
	})
	if !maps.Equal(got, m) {
		t.Fatalf("set %v, model %v", got, m)
	}
}

func FuzzZSet(f *testing.F) {
	f.Add([]byte{0, 1, 5, 0, 2, 3, 1, 1, 2, 2, 3, 0, 4})
	f.Add(bytes.Repeat([]byte{0, 3, 7, 0, 220, 10, 9, 5, 1, 6, 0, 2}, 12))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &opReader{in}
		lim := ZSetLimits{Entries: 5, Value: 16}
		z := NewZSet()
		m := map[string]float64{}
		for n := 0; r.more() && n < 2000; n++ {
			switch op := r.byte() % 8; op {
			case 0: // add or update
				k := string(r.elem())
				sc := float64(int8(r.byte())) / 4
				_, had := m[k]
				if isNew := z.Set(k, sc, lim); isNew == had {
					t.Fatalf("op %d set %q: isNew %v, had %v", n, k, isNew, had)
				}
				m[k] = sc
			case 1:
				k := string(r.elem())
				_, had := m[k]
				if got := z.Remove(k); got != had {
					t.Fatalf("op %d remove %q: %v", n, k, got)
				}
				delete(m, k)
			case 2: // score and rank
				k := string(r.elem())
				sc, ok := z.Score(k)
				w, wok := m[k]
				if ok != wok || sc != w {
					t.Fatalf("op %d score %q: %v %v want %v %v", n, k, sc, ok, w, wok)
				}
				rank, rok := z.Rank(k)
				if rok != wok {
					t.Fatalf("op %d rank %q: %v", n, k, rok)
				}
				if rok {
					if mm, ms := z.At(rank); mm != k || ms != w {
						t.Fatalf("op %d At(Rank(%q)) = %q %v", n, k, mm, ms)
					}
				}
			case 3: // range by rank, both directions
				if len(m) == 0 {
					break
				}
				s, e := int(r.byte())%len(m), int(r.byte())%len(m)
				rev := r.byte()&1 == 1
				var got []ZItem
				z.RangeByRank(s, e, rev, func(mb string, sc float64) bool {
					got = append(got, ZItem{Member: mb, Score: sc})
					return true
				})
				want := sortedModel(m)
				if s <= e {
					want = want[s : e+1]
				} else {
					want = nil
				}
				if rev {
					slices.Reverse(want)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("op %d range %d..%d rev %v: %v want %v", n, s, e, rev, got, want)
				}
			case 4: // remove a rank range
				if len(m) == 0 {
					break
				}
				s, e := int(r.byte())%len(m), int(r.byte())%len(m)
				want := sortedModel(m)
				removed := z.RemoveRankRange(s, e)
				if s > e {
					if removed != 0 {
						t.Fatalf("op %d removed %d of an empty range", n, removed)
					}
					break
				}
				if removed != e-s+1 {
					t.Fatalf("op %d remove ranks %d..%d: %d", n, s, e, removed)
				}
				for _, it := range want[s : e+1] {
					delete(m, it.Member)
				}
			case 5: // count below a score
				lt := float64(int8(r.byte())) / 4
				got := z.CountWhile(func(sc float64, _ string) bool { return sc < lt })
				want := 0
				for _, sc := range m {
					if sc < lt {
						want++
					}
				}
				if got != want {
					t.Fatalf("op %d count < %v: %d want %d", n, lt, got, want)
				}
			case 6:
				if z.IsSmall() && len(m) > lim.Entries {
					t.Fatalf("op %d: small encoding with %d members", n, len(m))
				}
				checkZSet2(t, z.Clone().(*ZSet), m)
			case 7:
				z.ShrinkIfSmall(lim)
			}
			if z.Len() != len(m) {
				t.Fatalf("op %d: Len %d, model %d", n, z.Len(), len(m))
			}
		}
		checkZSet2(t, z, m)
	})
}

// sortedModel returns the model's members in (score, member) order.
func sortedModel(m map[string]float64) []ZItem {
	out := make([]ZItem, 0, len(m))
	for k, v := range m {
		out = append(out, ZItem{Member: k, Score: v})
	}
	slices.SortFunc(out, func(a, b ZItem) int {
		if Zless(a.Score, a.Member, b.Score, b.Member) {
			return -1
		}
		if Zless(b.Score, b.Member, a.Score, a.Member) {
			return 1
		}
		return 0
	})
	return out
}

func checkZSet2(t *testing.T, z *ZSet, m map[string]float64) {
	t.Helper()
	var got []ZItem
	z.ForEach(func(mb string, sc float64) bool {
		got = append(got, ZItem{Member: mb, Score: sc})
		return true
	})
	if want := sortedModel(m); !slices.Equal(got, want) {
		t.Fatalf("zset %v, model %v", got, want)
	}
	for i := range got {
		if r, ok := z.Rank(got[i].Member); !ok || r != i {
			t.Fatalf("rank of %q = %d %v, want %d", got[i].Member, r, ok, i)
		}
	}
}
