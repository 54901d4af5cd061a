package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFillRoutingIncremental follows one reused Routing through the
// changes that touch it: it reports a change exactly when one happened,
// and always holds what a fill from zero gives.
func TestFillRoutingIncremental(t *testing.T) {
	w := newCluster(t, 4, 3, nil)
	src, dst, spare := w.nodes[0], w.nodes[1], w.nodes[3]
	did := dst.m.MyID()
	r := &Routing{}
	step := func(what string, wantChange bool) {
		t.Helper()
		before := r.Share()
		if got := src.m.FillRouting(r); got != wantChange {
			t.Fatalf("%s: FillRouting reported change=%v, want %v", what, got, wantChange)
		}
		fresh := &Routing{}
		src.m.FillRouting(fresh)
		if !r.Equal(fresh) {
			t.Fatalf("%s: reused routing differs from a full fill", what)
		}
		if err := checkChangedSlots(before, r); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("first fill", true)
	step("nothing happened", false)
	w.run(2 * time.Second)
	step("idle gossip", false)

	idx := func(id string) int32 {
		for i, n := range r.Nodes {
			if n.ID == id {
				return int32(i)
			}
		}
		t.Fatalf("node %s not in the routing", id)
		return -1
	}
	if err := src.m.SetSlot(w.now, "100", "MIGRATING", did); err != nil {
		t.Fatal(err)
	}
	step("SETSLOT MIGRATING", true)
	if r.Migrating(100) != idx(did) {
		t.Fatalf("slot 100 migrating to %d, want %d", r.Migrating(100), idx(did))
	}
	if err := src.m.SetSlot(w.now, "100", "STABLE"); err != nil {
		t.Fatal(err)
	}
	step("SETSLOT STABLE", true)
	if r.Migrating(100) != -1 {
		t.Fatal("slot 100 still migrating")
	}
	// A new config epoch, a peer's learnt by gossip and then my own: a
	// change, with no slot entry touched (checkChangedSlots).
	epochOf := func(id string) uint64 { return r.Nodes[idx(id)].ConfigEpoch }
	res := dst.m.BumpEpoch(w.now)
	w.run(2 * time.Second)
	step("a peer's BUMPEPOCH ("+res+")", strings.HasPrefix(res, "BUMPED"))
	if want := strings.TrimPrefix(strings.TrimPrefix(res, "BUMPED "), "STILL "); fmt.Sprint(epochOf(did)) != want {
		t.Fatalf("peer's config epoch %d in the routing, want %s", epochOf(did), want)
	}
	res = src.m.BumpEpoch(w.now)
	step("my BUMPEPOCH ("+res+")", true)
	if want := "BUMPED " + fmt.Sprint(epochOf(src.m.MyID())); res != want {
		t.Fatalf("BUMPEPOCH said %q, the routing has %q", res, want)
	}
	if err := src.m.SetSlot(w.now, "101", "IMPORTING", did); err == nil {
		t.Fatal("importing a slot I own succeeded")
	}
	step("a refused SETSLOT", false)
	owner := r.Owner(0)
	if err := src.m.DelSlots(w.now, "0"); err != nil {
		t.Fatal(err)
	}
	step("DELSLOTS", true)
	if owner != r.Me || r.Owner(0) != -1 {
		t.Fatalf("slot 0 owner %d then %d, want me (%d) then -1", owner, r.Owner(0), r.Me)
	}
	// A node leaving renumbers the others: every table is rebuilt.
	if err := src.m.Forget(w.now, spare.m.MyID()); err != nil {
		t.Fatal(err)
	}
	step("FORGET", true)
	if len(r.Nodes) != 3 {
		t.Fatalf("%d nodes after FORGET, want 3", len(r.Nodes))
	}
	step("nothing after FORGET", false)
}

func TestSlotBitmapRangesAndAll(t *testing.T) {
	for _, set := range [][]int{
		nil, {0}, {NumSlots - 1}, {0, 1, 2, 7, 8, 9, 15, 16}, {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17},
	} {
		var b SlotBitmap
		for _, s := range set {
			b.Set(s)
		}
		var all []int
		for s := range b.All() {
			all = append(all, s)
		}
		var want [][2]int
		for i, s := range set {
			if i > 0 && set[i-1] == s-1 {
				want[len(want)-1][1] = s
			} else {
				want = append(want, [2]int{s, s})
			}
		}
		if got := b.Ranges(nil); fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(all) != fmt.Sprint(set) && len(set) > 0 {
			t.Fatalf("set %v: Ranges %v (want %v), All %v", set, got, want, all)
		}
	}
	var full SlotBitmap
	for s := 0; s < NumSlots; s++ {
		full.Set(s)
	}
	if got := full.Ranges(nil); len(got) != 1 || got[0] != [2]int{0, NumSlots - 1} {
		t.Fatalf("full bitmap: %v", got)
	}
}

// TestSlotBitmapRangesRandom compares Ranges, which works a 64-bit word
// at a time, with a slot-by-slot scan over random bitmaps of runs of
// every length, so runs start and end at every bit of a word and cross
// word boundaries.
func TestSlotBitmapRangesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 300; round++ {
		var b SlotBitmap
		maxRun := 1 + rng.IntN(200)
		for s, on := 0, rng.IntN(2) == 0; s < NumSlots; on = !on {
			n := 1 + rng.IntN(maxRun)
			for ; n > 0 && s < NumSlots; n, s = n-1, s+1 {
				if on {
					b.Set(s)
				}
			}
		}
		var want [][2]int
		for s := 0; s < NumSlots; s++ {
			if !b.Has(s) {
				continue
			}
			if len(want) > 0 && want[len(want)-1][1] == s-1 {
				want[len(want)-1][1] = s
			} else {
				want = append(want, [2]int{s, s})
			}
		}
		if got := b.Ranges(nil); !slices.Equal(got, want) {
			t.Fatalf("round %d: Ranges %v, want %v", round, got, want)
		}
	}
}

// TestRoutingShareCopyOnWrite: a routing published by Share keeps its
// entries while the routing it was shared from is written again (by hand
// and by FillRouting), and the two share every chunk no write touched.
func TestRoutingShareCopyOnWrite(t *testing.T) {
	r := &Routing{}
	if o, g, i := r.Slot(5); o != -1 || g != -1 || i != -1 {
		t.Fatalf("zero routing's slot 5 = %d %d %d, want -1 -1 -1", o, g, i)
	}
	r.SetSlot(5, 1, 2, -1)
	r.SetSlot(NumSlots-1, 0, -1, 1)
	pub := r.Share()
	r.SetSlot(5, 2, -1, -1)
	if o, g, _ := pub.Slot(5); o != 1 || g != 2 {
		t.Fatalf("published slot 5 = %d %d after a write to its source, want 1 2", o, g)
	}
	if r.Owner(5) != 2 || r.Migrating(5) != -1 {
		t.Fatalf("source slot 5 = %d %d, want 2 -1", r.Owner(5), r.Migrating(5))
	}
	if r.SameChunk(pub, 5) || !r.SameChunk(pub, NumSlots-1) || !r.SameChunk(pub, 1000) {
		t.Fatal("the written chunk is shared, or an unwritten one is not")
	}
	if r.Equal(pub) {
		t.Fatal("routings with different slot 5 are Equal")
	}
	r.SetSlot(5, 1, 2, -1)
	if !r.Equal(pub) {
		t.Fatal("routings with the same entries in different chunks are not Equal")
	}

	// The same through a machine: the fill after a SETSLOT copies only
	// the chunk it writes.
	w := newCluster(t, 3, 3, nil)
	m := w.nodes[0].m
	var scratch Routing
	m.FillRouting(&scratch)
	before := scratch.Share()
	if err := m.SetSlot(w.now, "300", "MIGRATING", w.nodes[1].m.MyID()); err != nil {
		t.Fatal(err)
	}
	if !m.FillRouting(&scratch) {
		t.Fatal("no change after SETSLOT MIGRATING")
	}
	if before.Migrating(300) != -1 || scratch.Migrating(300) < 0 {
		t.Fatalf("slot 300 migrating: published %d, filled %d", before.Migrating(300), scratch.Migrating(300))
	}
	for s := 0; s < NumSlots; s += chunkSlots {
		if shared := scratch.SameChunk(before, s); shared == (s>>chunkShift == 300>>chunkShift) {
			t.Fatalf("chunk of slot %d shared=%v after a SETSLOT of slot 300", s, shared)
		}
	}
}
