package node

import (
	"slices"
	"strconv"
	"testing"
)

// TestClusterKeysInSlot: GETKEYSINSLOT's and the slot deletion's listing
// come from the keyspace's per-slot index: exact, newest first, bounded by
// count, and empty once the slot's keys are deleted.
func TestClusterKeysInSlot(t *testing.T) {
	s := newBareServer(t)
	db := s.dbs[0]
	set := func(k string) {
		sh := db.KeyShard(k)
		sh.Mu.Lock()
		db.SetString(k, []byte("v"), 0, false)
		sh.Mu.Unlock()
	}
	var want []string
	for i := 0; i < 50; i++ {
		k := "{a}" + strconv.Itoa(i)
		set(k)
		want = append(want, k)
	}
	set("other")
	slot := keySlot("{a}")
	slices.Reverse(want) // newest first
	if got := s.keysInSlot(slot, -1); !slices.Equal(got, want) {
		t.Fatalf("keysInSlot(all) = %v, want %v", got, want)
	}
	if got := s.keysInSlot(slot, 3); !slices.Equal(got, want[:3]) {
		t.Fatalf("keysInSlot(3) = %v, want %v", got, want[:3])
	}
	if n := s.deleteKeysInSlot(slot); n != 50 {
		t.Fatalf("deleteKeysInSlot deleted %d, want 50", n)
	}
	if got := s.keysInSlot(slot, -1); len(got) != 0 || db.CountKeysInSlot(slot) != 0 || db.Size() != 1 {
		t.Fatalf("after deleting the slot: %v listed, count %d, %d keys", got, db.CountKeysInSlot(slot), db.Size())
	}
}
