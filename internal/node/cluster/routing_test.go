package cluster

import (
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
		if got := src.m.FillRouting(r); got != wantChange {
			t.Fatalf("%s: FillRouting reported change=%v, want %v", what, got, wantChange)
		}
		fresh := &Routing{}
		src.m.FillRouting(fresh)
		if !r.Equal(fresh) {
			t.Fatalf("%s: reused routing differs from a full fill", what)
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
	if r.Migrating[100] != idx(did) {
		t.Fatalf("slot 100 migrating to %d, want %d", r.Migrating[100], idx(did))
	}
	if err := src.m.SetSlot(w.now, "100", "STABLE"); err != nil {
		t.Fatal(err)
	}
	step("SETSLOT STABLE", true)
	if r.Migrating[100] != -1 {
		t.Fatal("slot 100 still migrating")
	}
	if err := src.m.SetSlot(w.now, "101", "IMPORTING", did); err == nil {
		t.Fatal("importing a slot I own succeeded")
	}
	step("a refused SETSLOT", false)
	owner := r.Owner[0]
	if err := src.m.DelSlots(w.now, "0"); err != nil {
		t.Fatal(err)
	}
	step("DELSLOTS", true)
	if owner != r.Me || r.Owner[0] != -1 {
		t.Fatalf("slot 0 owner %d then %d, want me (%d) then -1", owner, r.Owner[0], r.Me)
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
