package node

import (
	"bytes"
	"math/rand"
	"strconv"
	"testing"
)

// TestListValueModel checks the ring-buffer list against a plain slice
// model under random operations.
func TestListValueModel(t *testing.T) {
	t.Run("Packed", func(t *testing.T) { listModel(t, 60, false) })
	t.Run("Ring", func(t *testing.T) { listModel(t, 0, true) })
	t.Run("Converting", func(t *testing.T) { listModel(t, 0, false) })
}

// listModel runs random operations; maxLen > 0 keeps the list at most that
// long (packed encoding); ring starts in the ring encoding.
func listModel(t *testing.T, maxLen int, ring bool) {
	rng := rand.New(rand.NewSource(1))
	l := newList()
	if ring {
		l.toRing(7) // a buffer size that is not a power of two
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
			var nm [][]byte
			for i, x := range model {
				if i%mod != 0 {
					nm = append(nm, x)
				}
			}
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
	if maxLen > 0 && l.large {
		t.Fatal("small list left the packed encoding")
	}
	if maxLen == 0 && !l.large {
		t.Fatal("large list still packed")
	}
	if _, ok := l.Index(l.Len()); ok {
		t.Fatal("Index out of range should fail")
	}
	c := l.clone().(*listValue)
	if c.Len() != l.Len() || c.encoding() != "quicklist" || c.typeName() != "list" {
		t.Fatal("clone differs")
	}
}

// TestListValueBigElements checks the move to the ring encoding when an
// element does not fit the packed one.
func TestListValueBigElements(t *testing.T) {
	big := bytes.Repeat([]byte("x"), listPackedMaxBytes+1)
	for name, op := range map[string]func(l *listValue){
		"PushBack":  func(l *listValue) { l.PushBack(big) },
		"PushFront": func(l *listValue) { l.PushFront(big) },
		"Insert":    func(l *listValue) { l.Insert(1, big) },
		"Set":       func(l *listValue) { l.Set(1, big) },
	} {
		l := newList()
		l.PushBack([]byte("a"))
		l.PushBack([]byte("b"))
		op(l)
		if !l.large {
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
	l := newList()
	for i := 0; i < listPackedMaxLen; i++ {
		l.PushBack([]byte("e"))
	}
	if l.large {
		t.Fatal("converted before the length limit")
	}
	l.PushFront([]byte("f"))
	if !l.large || l.Len() != listPackedMaxLen+1 {
		t.Fatal("not converted past the length limit")
	}
	if v, _ := l.Index(0); string(v) != "f" {
		t.Fatalf("head %q", v)
	}
}
