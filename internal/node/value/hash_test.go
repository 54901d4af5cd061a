package value

import (
	"strconv"
	"testing"
)

func TestHashValueListpackAndConversion(t *testing.T) {
	h := NewHash()
	if h.Encoding() != "listpack" || h.Len() != 0 {
		t.Fatalf("new hash: %s %d", h.Encoding(), h.Len())
	}
	for i := 0; i < 128; i++ {
		if !h.Set("f"+strconv.Itoa(i), []byte("v"+strconv.Itoa(i))) {
			t.Fatalf("field %d not new", i)
		}
	}
	if h.Set("f5", []byte("longer-value")) || h.Set("f6", []byte("x")) || h.Set("f7", []byte("v7")) {
		t.Fatal("overwrite reported new")
	}
	if h.Encoding() != "listpack" || h.Len() != 128 {
		t.Fatalf("after 128: %s %d", h.Encoding(), h.Len())
	}
	check := func() {
		t.Helper()
		for i, want := range map[int]string{0: "v0", 5: "longer-value", 6: "x", 7: "v7", 127: "v127"} {
			v, ok := h.Get("f" + strconv.Itoa(i))
			if !ok || string(v) != want {
				t.Fatalf("%s: f%d = %q %v, want %q", h.Encoding(), i, v, ok, want)
			}
		}
	}
	check()
	if !h.Delete("f0") || h.Delete("f0") || h.Len() != 127 {
		t.Fatal("delete")
	}
	h.Set("f0", []byte("v0"))
	check()
	h.Set("f128", []byte("v"))
	if h.Encoding() != "hashtable" || h.Len() != 129 {
		t.Fatalf("after 129: %s %d", h.Encoding(), h.Len())
	}
	check()
	n := 0
	h.ForEach(func(f string, v []byte) bool { n++; return true })
	if n != 129 {
		t.Fatalf("ForEach visited %d", n)
	}
	c := h.Clone().(*Hash)
	h.Delete("f5")
	if v, _ := c.Get("f5"); string(v) != "longer-value" {
		t.Fatal("clone shares storage")
	}

	long := NewHash()
	long.Set("a", make([]byte, 65))
	if long.Encoding() != "hashtable" {
		t.Fatal("long value kept listpack")
	}
	empty := NewHash()
	empty.Set("e", nil)
	if v, ok := empty.Get("e"); !ok || len(v) != 0 {
		t.Fatal("empty value")
	}
	if !empty.Delete("e") || empty.Len() != 0 {
		t.Fatal("delete last")
	}
}

func TestChainDictScanAndRandom(t *testing.T) {
	d := newChainDict[struct{}](0)
	for i := 0; i < 1000; i++ {
		d.upsert(strconv.Itoa(i))
	}
	seen := map[string]int{}
	var cur uint64
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatal("scan does not end")
		}
		cur = d.Scan(cur, func(n *DictNode[struct{}]) { seen[n.Key]++ })
		// Shrink half-way through: elements still present must be seen.
		if steps == 100 {
			for i := 0; i < 950; i++ {
				d.remove(strconv.Itoa(i))
			}
		}
		if cur == 0 {
			break
		}
	}
	for i := 950; i < 1000; i++ {
		if seen[strconv.Itoa(i)] == 0 {
			t.Fatalf("scan missed %d", i)
		}
	}
	hits := map[string]int{}
	for i := 0; i < 5000; i++ {
		hits[d.RandomNode().Key]++
	}
	if len(hits) != 50 {
		t.Fatalf("random hit %d of 50 members", len(hits))
	}
	for k, n := range hits {
		if n < 20 || n > 250 {
			t.Fatalf("member %s drawn %d times of 5000 (expected ~100)", k, n)
		}
	}
}

// TestHashListpackResizeValues rewrites values of every size in place and
// checks every field after each change against a map.
func TestHashListpackResizeValues(t *testing.T) {
	h := NewHash()
	want := map[string]string{}
	for i := 0; i < 20; i++ {
		f := "f" + strconv.Itoa(i)
		h.Set(f, []byte("v"))
		want[f] = "v"
	}
	for round := 0; round < 200; round++ {
		f := "f" + strconv.Itoa(round*7%20)
		v := string(make([]byte, (round*13)%64))
		if round%3 == 0 {
			v = ""
		}
		h.Set(f, []byte(v))
		want[f] = v
		if h.Encoding() != "listpack" || h.Len() != 20 {
			t.Fatalf("round %d: %s %d", round, h.Encoding(), h.Len())
		}
		for k, w := range want {
			if g, ok := h.Get(k); !ok || string(g) != w {
				t.Fatalf("round %d: %s = %q (%v), want %d bytes", round, k, g, ok, len(w))
			}
		}
	}
}
