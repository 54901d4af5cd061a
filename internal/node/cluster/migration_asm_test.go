package cluster

import (
	"slices"
	"testing"
	"time"
)

// owner returns the id of slot's owner as sn's machine sees it.
func (sn *simNode) owner(slot int) string {
	ni, ok := sn.m.SlotOwner(slot)
	if !ok {
		return ""
	}
	return ni.ID
}

func deleted(sn *simNode) []int {
	var out []int
	for _, sc := range sn.slotChanges {
		out = append(out, sc.DeleteKeys...)
	}
	return out
}

// TestClaimSlotsFlip: the target claims two slots of the source with one
// epoch bump, saved and fsynced before its PONGs leave; every node,
// source included, rebinds the slots from the PONG, and the source is
// told to delete the keys it held in them.
func TestClaimSlotsFlip(t *testing.T) {
	locals := []*fakeLocal{{keys: map[int]int{3: 5}}, {keys: map[int]int{}}, {keys: map[int]int{}}}
	w := newCluster(t, 3, 3, func(i int, c *Config) { c.Local = locals[i] })
	src, dst, other := w.nodes[0], w.nodes[1], w.nodes[2]
	if src.owner(3) != src.m.MyID() {
		t.Fatalf("slot 3 owned by %s", src.owner(3))
	}
	before := dst.m.CurrentEpoch()
	epoch, err := dst.m.ClaimSlots(w.now, []int{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	if epoch != before+1 || dst.m.Myself().ConfigEpoch != epoch {
		t.Fatalf("epoch %d (current was %d), my config epoch %d", epoch, before, dst.m.Myself().ConfigEpoch)
	}
	rd := dst.m.Ready()
	if !rd.SaveConfig || !rd.Fsync {
		t.Fatalf("claim not saved and fsynced: %+v", rd)
	}
	npong := 0
	for _, s := range rd.Sends {
		if s.Msg.Type == TypePong {
			npong++
		}
	}
	if npong != 2 {
		t.Fatalf("%d PONGs broadcast, want 2", npong)
	}
	if rd.SlotsChanged == nil || !slices.Equal(rd.SlotsChanged.Gained, []int{3, 4}) {
		t.Fatalf("slots changed %+v", rd.SlotsChanged)
	}
	w.apply(dst, rd)
	// pump settles once nothing is in flight: one more collects the
	// Ready that the receivers' last packets produced.
	w.pump()
	w.pump()
	for _, sn := range []*simNode{src, dst, other} {
		for _, s := range []int{3, 4} {
			if sn.owner(s) != dst.m.MyID() {
				t.Fatalf("node %d: slot %d owned by %s", sn.idx, s, sn.owner(s))
			}
		}
		if sn.owner(5) != src.m.MyID() {
			t.Fatalf("node %d: slot 5 moved too", sn.idx)
		}
	}
	if got := deleted(src); !slices.Equal(got, []int{3}) {
		t.Fatalf("source deletes keys of %v, want [3]", got)
	}
	if _, err := dst.m.ClaimSlots(w.now, []int{3}); err == nil {
		t.Fatal("claimed a slot already mine")
	}
}

// TestYieldSlots: the source applies the target's claim it was told
// about with no packet from the target (the bus between them cut); a
// claim no newer than the owner's is ignored.
func TestYieldSlots(t *testing.T) {
	locals := []*fakeLocal{{keys: map[int]int{7: 1}}, {keys: map[int]int{}}, {keys: map[int]int{}}}
	w := newCluster(t, 3, 3, func(i int, c *Config) { c.Local = locals[i] })
	src, dst := w.nodes[0], w.nodes[1]
	w.cutLink(0, 1)
	epoch, err := dst.m.ClaimSlots(w.now, []int{7})
	if err != nil {
		t.Fatal(err)
	}
	w.apply(dst, dst.m.Ready())
	// A stale claim (the target's old epoch) changes nothing.
	if err := src.m.YieldSlots(w.now, dst.m.MyID(), 0, []int{7}); err != nil {
		t.Fatal(err)
	}
	w.apply(src, src.m.Ready())
	if src.owner(7) != src.m.MyID() {
		// Nothing was delivered yet: only the stale claim could move it.
		t.Fatalf("stale claim applied: owner %s", src.owner(7))
	}
	if err := src.m.YieldSlots(w.now, dst.m.MyID(), epoch, []int{7}); err != nil {
		t.Fatal(err)
	}
	rd := src.m.Ready()
	if src.owner(7) != dst.m.MyID() {
		t.Fatalf("slot 7 owned by %s after the yield", src.owner(7))
	}
	if rd.SlotsChanged == nil || !slices.Equal(rd.SlotsChanged.Lost, []int{7}) || !slices.Equal(rd.SlotsChanged.DeleteKeys, []int{7}) {
		t.Fatalf("slots changed %+v", rd.SlotsChanged)
	}
	if !rd.SaveConfig {
		t.Fatal("yield not saved")
	}
	w.apply(src, rd)
	if err := src.m.YieldSlots(w.now, "nosuchnode", epoch, []int{7}); err == nil {
		t.Fatal("yield to an unknown node accepted")
	}
	// Once the bus heals, every node agrees.
	w.healLink(0, 1)
	w.run(3 * time.Second)
	for _, sn := range w.nodes {
		if sn.owner(7) != dst.m.MyID() {
			t.Fatalf("node %d: slot 7 owned by %s", sn.idx, sn.owner(7))
		}
	}
}
