package value

import (
	"bytes"
	"math/rand"
	"strconv"
	"testing"
)

// TestListValueModel checks the block list against a plain slice
// model under random operations.
func TestListValueModel(t *testing.T) {
	t.Run("Packed", func(t *testing.T) { listModel(t, 60, false) })
	t.Run("Blocks", func(t *testing.T) { listModel(t, 0, true) })
	t.Run("Converting", func(t *testing.T) { listModel(t, 0, false) })
}

// listModel runs random operations; maxLen > 0 keeps the list at most that
// long (packed encoding); ring starts in the block encoding.
func listModel(t *testing.T, maxLen int, ring bool) {
	rng := rand.New(rand.NewSource(1))
	l := NewList()
	if ring {
		l.toBlocks()
	}
	var model [][]byte
	check := func(step int) {
		t.Helper()
		if l.Len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, l.Len(), len(model))
		}
		i := 0
		l.ForEach(func(v []byte) bool {
			if !bytes.Equal(v, model[i]) {
				t.Fatalf("step %d: elem %d = %q, want %q", step, i, v, model[i])
			}
			i++
			return true
		})
		if i != len(model) {
			t.Fatalf("step %d: ForEach visited %d", step, i)
		}
	}
	for step := 0; step < 20000; step++ {
		v := []byte(strconv.Itoa(step))
		op := rng.Intn(10)
		if maxLen > 0 && len(model) >= maxLen && (op < 4 || op == 6) {
			op = 5
		}
		switch {
		case op < 2:
			l.PushBack(v)
			model = append(model, v)
		case op < 4:
			l.PushFront(v)
			model = append([][]byte{v}, model...)
		case op == 4:
			got := l.PopFront()
			if len(model) == 0 {
				if got != nil {
					t.Fatal("pop from empty")
				}
				continue
			}
			if !bytes.Equal(got, model[0]) {
				t.Fatalf("PopFront %q want %q", got, model[0])
			}
			model = model[1:]
		case op == 5:
			got := l.PopBack()
			if len(model) == 0 {
				continue
			}
			if !bytes.Equal(got, model[len(model)-1]) {
				t.Fatalf("PopBack %q want %q", got, model[len(model)-1])
			}
			model = model[:len(model)-1]
		case op == 6:
			i := rng.Intn(len(model) + 1)
			l.Insert(i, v)
			model = append(model[:i], append([][]byte{v}, model[i:]...)...)
		case op == 7 && len(model) > 0:
			i := rng.Intn(len(model))
			l.Set(-len(model)+i, v)
			model[i] = v
			got, ok := l.Index(i)
			if !ok || !bytes.Equal(got, v) {
				t.Fatalf("Index %d = %q", i, got)
			}
		case op == 8 && rng.Intn(20) == 0:
			mod := rng.Intn(3) + 2
			n := l.Filter(func(i int, v []byte) bool { return i%mod != 0 })
			nm := keepNotMultiple(model, mod)
			if n != len(model)-len(nm) {
				t.Fatalf("Filter removed %d", n)
			}
			model = nm
		case op == 9 && rng.Intn(30) == 0 && len(model) > 0:
			s := rng.Intn(len(model))
			e := s + rng.Intn(len(model)-s)
			l.Trim(s, e)
			model = append([][]byte(nil), model[s:e+1]...)
		}
		check(step)
	}
	if maxLen > 0 && l.q != nil {
		t.Fatal("small list left the packed encoding")
	}
	if maxLen == 0 && l.q == nil {
		t.Fatal("large list still packed")
	}
	if _, ok := l.Index(l.Len()); ok {
		t.Fatal("Index out of range should fail")
	}
	c := l.Clone().(*List)
	if c.Len() != l.Len() || c.Encoding() != "quicklist" || c.TypeName() != "list" {
		t.Fatal("clone differs")
	}
}

// TestListValueBigElements checks the move to the block encoding when an
// element does not fit the packed one.
func TestListValueBigElements(t *testing.T) {
	big := bytes.Repeat([]byte("x"), listPackedMaxBytes+1)
	for name, op := range map[string]func(l *List){
		"PushBack":  func(l *List) { l.PushBack(big) },
		"PushFront": func(l *List) { l.PushFront(big) },
		"Insert":    func(l *List) { l.Insert(1, big) },
		"Set":       func(l *List) { l.Set(1, big) },
	} {
		l := NewList()
		l.PushBack([]byte("a"))
		l.PushBack([]byte("b"))
		op(l)
		if l.q == nil {
			t.Fatalf("%s: still packed", name)
		}
		found := false
		l.ForEach(func(v []byte) bool {
			found = found || bytes.Equal(v, big)
			return true
		})
		if !found || l.Len() < 2 {
			t.Fatalf("%s: big element lost (len %d)", name, l.Len())
		}
	}
	l := NewList()
	for i := 0; i < listPackedMaxLen; i++ {
		l.PushBack([]byte("e"))
	}
	if l.q != nil {
		t.Fatal("converted before the length limit")
	}
	l.PushFront([]byte("f"))
	if l.q == nil || l.Len() != listPackedMaxLen+1 {
		t.Fatal("not converted past the length limit")
	}
	if v, _ := l.Index(0); string(v) != "f" {
		t.Fatalf("head %q", v)
	}
}

// checkListBlocks verifies the block encoding's invariants: block counts
// add up, every block decodes to exactly its count both ways, and a block
// holds more than listBlockMax bytes only for a single element.
func checkListBlocks(t *testing.T, l *List) {
	t.Helper()
	q := l.q
	if q == nil {
		return
	}
	total := 0
	for bi := 0; bi < q.nb; bi++ {
		b := q.block(bi)
		if b.n <= 0 || b.start < 0 || b.start >= b.end || b.end > len(b.b) {
			t.Fatalf("block %d/%d: n %d region %d..%d cap %d", bi, q.nb, b.n, b.start, b.end, len(b.b))
		}
		if b.end-b.start > listBlockMax && b.n != 1 {
			t.Fatalf("block %d: %d bytes in %d elements", bi, b.end-b.start, b.n)
		}
		fwd, off := 0, b.start
		for off < b.end {
			_, off = entryAt(b.b, off)
			fwd++
		}
		back, off2 := 0, b.end
		for off2 > b.start {
			_, off2 = entryBefore(b.b, off2)
			back++
		}
		if off != b.end || off2 != b.start || fwd != b.n || back != b.n {
			t.Fatalf("block %d: n %d, forward %d (end %d/%d), backward %d (start %d/%d)", bi, b.n, fwd, off, b.end, back, off2, b.start)
		}
		total += b.n
	}
	if total != l.n {
		t.Fatalf("blocks hold %d elements, list says %d", total, l.n)
	}
}

// TestListBlocksModel runs random list operations, as the list commands
// use them, against a plain [][]byte model: elements of random sizes (from
// empty to larger than a block) so operations cross block boundaries at
// both ends, and every read API (Index, Range, RangeRev, ForEach) checked
// at random positions after each step.
func TestListBlocksModel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxSize int // element sizes are mostly below this
		seed    int64
	}{
		{"Tiny", 4, 1},      // thousands of elements per block
		{"Small", 40, 2},    // hundreds
		{"Medium", 1500, 3}, // a few per block
		{"Mixed", 200, 4},   // with an occasional element larger than a block
		{"Mixed2", 3000, 5},
	} {
		t.Run(tc.name, func(t *testing.T) { listBlocksModel(t, tc.maxSize, tc.seed) })
	}
}

func listBlocksModel(t *testing.T, maxSize int, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	l := NewList()
	var model [][]byte
	elem := func(step int) []byte {
		n := rng.Intn(maxSize + 1)
		if rng.Intn(200) == 0 {
			n = listBlockMax + rng.Intn(3000) // its own block
		}
		v := make([]byte, n)
		for i := range v {
			v[i] = byte('a' + (step+i)%26)
		}
		if len(v) >= 4 {
			copy(v, strconv.Itoa(step%10000))
		}
		return v
	}
	check := func(step int, what string) {
		t.Helper()
		if l.Len() != len(model) {
			t.Fatalf("step %d (%s): len %d, want %d", step, what, l.Len(), len(model))
		}
		checkListBlocks(t, l)
		i := 0
		l.ForEach(func(v []byte) bool {
			if !bytes.Equal(v, model[i]) {
				t.Fatalf("step %d (%s): elem %d = %.20q, want %.20q", step, what, i, v, model[i])
			}
			i++
			return true
		})
		if i != len(model) {
			t.Fatalf("step %d (%s): ForEach visited %d of %d", step, what, i, len(model))
		}
		if len(model) == 0 {
			return
		}
		for k := 0; k < 3; k++ {
			p := rng.Intn(len(model))
			if v, ok := l.Index(p); !ok || !bytes.Equal(v, model[p]) {
				t.Fatalf("step %d (%s): Index(%d) = %.20q", step, what, p, v)
			}
			if v, ok := l.Index(p - len(model)); !ok || !bytes.Equal(v, model[p]) {
				t.Fatalf("step %d (%s): Index(%d) = %.20q", step, what, p-len(model), v)
			}
		}
		s := rng.Intn(len(model))
		e := s + rng.Intn(min(len(model)-s, 400))
		j := s
		l.Range(s, e, func(v []byte) bool {
			if !bytes.Equal(v, model[j]) {
				t.Fatalf("step %d (%s): Range(%d,%d)[%d] = %.20q, want %.20q", step, what, s, e, j, v, model[j])
			}
			j++
			return true
		})
		if j != e+1 {
			t.Fatalf("step %d (%s): Range(%d,%d) visited %d", step, what, s, e, j-s)
		}
		j = e
		stop := max(0, e-300)
		l.RangeRev(e, func(v []byte) bool {
			if !bytes.Equal(v, model[j]) {
				t.Fatalf("step %d (%s): RangeRev(%d)[%d] = %.20q, want %.20q", step, what, e, j, v, model[j])
			}
			j--
			return j >= stop
		})
		if j != stop-1 && !(stop == 0 && j == -1) {
			t.Fatalf("step %d (%s): RangeRev(%d) stopped at %d", step, what, e, j)
		}
	}
	for step := 0; step < 6000; step++ {
		op := rng.Intn(20)
		// Keep the list growing on average, with phases that drain it.
		if (step/1500)%2 == 1 && op < 8 {
			op += 8
		}
		var what string
		switch {
		case op < 4:
			what = "PushBack"
			for k := rng.Intn(4); k >= 0; k-- {
				v := elem(step)
				l.PushBack(v)
				model = append(model, v)
			}
		case op < 8:
			what = "PushFront"
			for k := rng.Intn(4); k >= 0; k-- {
				v := elem(step)
				l.PushFront(v)
				model = append([][]byte{v}, model...)
			}
		case op < 11:
			what = "Pop"
			left := rng.Intn(2) == 0
			for k := rng.Intn(3); k >= 0; k-- {
				var got []byte
				if rng.Intn(2) == 0 {
					got = l.PopView(left)
				} else {
					got = l.Pop(left)
				}
				if len(model) == 0 {
					if got != nil {
						t.Fatalf("step %d: pop from empty list gave %q", step, got)
					}
					break
				}
				want := model[len(model)-1]
				if left {
					want = model[0]
					model = model[1:]
				} else {
					model = model[:len(model)-1]
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("step %d: pop(left=%v) = %.20q, want %.20q", step, left, got, want)
				}
			}
		case op < 13:
			what = "Insert" // LINSERT
			i := rng.Intn(len(model) + 1)
			v := elem(step)
			l.Insert(i, v)
			model = append(model[:i:i], append([][]byte{v}, model[i:]...)...)
		case op < 15 && len(model) > 0:
			what = "Set" // LSET
			i := rng.Intn(len(model))
			v := elem(step)
			if rng.Intn(2) == 0 {
				v = bytes.Repeat([]byte{'s'}, len(model[i])) // same size: in place
			}
			if !l.Set(i-len(model)*rng.Intn(2), v) {
				t.Fatalf("step %d: Set(%d) failed", step, i)
			}
			model[i] = v
		case op == 15 && rng.Intn(4) == 0:
			what = "Filter" // LREM
			mod := rng.Intn(6) + 2
			n := l.Filter(func(i int, v []byte) bool { return i%mod != 0 })
			nm := keepNotMultiple(model, mod)
			if n != len(model)-len(nm) {
				t.Fatalf("step %d: Filter removed %d, want %d", step, n, len(model)-len(nm))
			}
			model = nm
		case op == 16 && rng.Intn(8) == 0 && len(model) > 0:
			what = "Trim" // LTRIM
			s := rng.Intn(len(model)/4 + 1)
			e := len(model) - 1 - rng.Intn(len(model)/4+1)
			if e < s {
				e = s
			}
			l.Trim(s, e)
			model = append([][]byte(nil), model[s:e+1]...)
		case op == 17 && rng.Intn(10) == 0:
			what = "clone"
			c := l.Clone().(*List)
			// The clone is deep: changing it leaves l as it was.
			for c.Len() > 0 {
				c.PopFront()
			}
			c.PushBack([]byte("clone"))
			if v, _ := c.Index(0); string(v) != "clone" {
				t.Fatalf("step %d: clone head %q", step, v)
			}
		default:
			what = "read"
		}
		check(step, what)
	}
	if l.q == nil {
		t.Fatal("list never left the packed encoding")
	}
}

// TestListPopViewAliasing checks that a popped element stays intact while
// later pops empty and recycle its block (the reply copies it before the
// next modification, but popRangeReply pops many in a row).
func TestListPopViewAliasing(t *testing.T) {
	l := NewList()
	var model [][]byte
	for i := 0; i < 20000; i++ {
		v := []byte(strconv.Itoa(i))
		l.PushBack(v)
		model = append(model, v)
	}
	for i := 0; l.Len() > 0; i++ {
		left := i%3 != 0
		var want []byte
		if left {
			want, model = model[0], model[1:]
		} else {
			want, model = model[len(model)-1], model[:len(model)-1]
		}
		got := l.PopView(left)
		if !bytes.Equal(got, want) {
			t.Fatalf("pop %d: %q, want %q", i, got, want)
		}
	}
	// Pushes after the list drained reuse the spare block.
	for i := 0; i < 5000; i++ {
		l.PushFront([]byte(strconv.Itoa(i)))
	}
	if v, _ := l.Index(0); string(v) != "4999" {
		t.Fatalf("head %q", v)
	}
	checkListBlocks(t, l)
}

// keepNotMultiple is the model of Filter(i%mod != 0): the elements whose
// index is not a multiple of mod.
func keepNotMultiple(model [][]byte, mod int) [][]byte {
	var nm [][]byte
	for i, x := range model {
		if i%mod != 0 {
			nm = append(nm, x)
		}
	}
	return nm
}
