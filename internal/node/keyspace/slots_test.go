package keyspace

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/shardis/shardis/internal/consistent"
)

// slotModel is what the per-slot index must list: the keys of each slot.
type slotModel map[int]map[string]bool

func (m slotModel) add(key string) {
	sl := consistent.KeySlot(key)
	if m[sl] == nil {
		m[sl] = map[string]bool{}
	}
	m[sl][key] = true
}

func (m slotModel) del(key string) { delete(m[consistent.KeySlot(key)], key) }

// checkSlots compares every slot of db with the model: the count, the
// listing through KeysInSlot, and ForEachInSlot.
func checkSlots(t *testing.T, db *DB, m slotModel) {
	t.Helper()
	for sl := 0; sl < NumSlots; sl++ {
		want := m[sl]
		if got := db.CountKeysInSlot(sl); got != len(want) {
			t.Fatalf("slot %d: count %d, want %d", sl, got, len(want))
		}
		if len(want) == 0 {
			if ks := db.KeysInSlot(sl, 10); len(ks) != 0 {
				t.Fatalf("slot %d: lists %v, want none", sl, ks)
			}
			continue
		}
		got := map[string]bool{}
		for _, k := range db.KeysInSlot(sl, len(want)+10) {
			if got[k] {
				t.Fatalf("slot %d lists %q twice", sl, k)
			}
			got[k] = true
		}
		if !maps.Equal(got, want) {
			t.Fatalf("slot %d: lists %d keys, want %d (%v)", sl, len(got), len(want), slices.Sorted(maps.Keys(want))[:min(5, len(want))])
		}
		if ks := db.KeysInSlot(sl, 1); len(ks) != 1 || !want[ks[0]] {
			t.Fatalf("slot %d: KeysInSlot(1) = %v", sl, ks)
		}
	}
}

func newTestDB(obs Observer) *DB {
	if obs == nil {
		obs = nopObserver{}
	}
	return NewDB(NewShared(obs), 0)
}

func lockedAdd(db *DB, key string, expire int64) {
	sh := &db.Shards[ShardOf(key)]
	sh.Mu.Lock()
	db.AddString([]byte(key), []byte("v"), expire)
	sh.Mu.Unlock()
}

func lockedRemove(db *DB, key string) bool {
	sh := &db.Shards[ShardOf(key)]
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	return db.Remove(key) != nil
}

// TestSlotIndexGrowthAndShrink keeps the listing exact while one shard
// grows through several incremental rehashes ({tag} keys: one slot) and
// shrinks again, with keys of other slots around.
func TestSlotIndexGrowthAndShrink(t *testing.T) {
	db := newTestDB(nil)
	m := slotModel{}
	for i := 0; i < 3000; i++ { // spread over many slots
		k := "k" + strconv.Itoa(i)
		lockedAdd(db, k, 0)
		m.add(k)
	}
	tag := db.Shards[ShardOf("{t}")].NumBuckets()
	grew := false
	for i := 0; i < 20000; i++ { // one slot, past several growths
		k := "{t}" + strconv.Itoa(i)
		lockedAdd(db, k, 0)
		m.add(k)
		if i%2500 == 0 {
			sh := &db.Shards[ShardOf("{t}")]
			sh.Mu.Lock()
			grew = grew || sh.Growing()
			sh.Mu.Unlock()
			checkSlots(t, db, m)
		}
	}
	if !grew || db.Shards[ShardOf("{t}")].NumBuckets() <= tag {
		t.Fatalf("the {t} shard did not grow incrementally (%d buckets)", db.Shards[ShardOf("{t}")].NumBuckets())
	}
	checkSlots(t, db, m)
	big := db.Shards[ShardOf("{t}")].NumBuckets()
	for i := 0; i < 19900; i++ { // shrink
		k := "{t}" + strconv.Itoa(i)
		if !lockedRemove(db, k) {
			t.Fatalf("%s missing", k)
		}
		m.del(k)
	}
	if n := db.Shards[ShardOf("{t}")].NumBuckets(); n >= big {
		t.Fatalf("the {t} shard did not shrink (%d buckets, was %d)", n, big)
	}
	checkSlots(t, db, m)
	if n := db.CountKeysInSlot(consistent.KeySlot("{t}")); n != 100 {
		t.Fatalf("{t} holds %d keys, want 100", n)
	}
}

// TestSlotIndexFlushAndSwap: FLUSHDB empties every slot, SWAPDB exchanges
// the listings with the data.
func TestSlotIndexFlushAndSwap(t *testing.T) {
	sh := NewShared(nopObserver{})
	a, b := NewDB(sh, 0), NewDB(sh, 1)
	ma, mb := slotModel{}, slotModel{}
	for i := 0; i < 2000; i++ {
		ka, kb := fmt.Sprint("a", i), fmt.Sprint("{b}", i%50, "-", i)
		lockedAdd(a, ka, 0)
		ma.add(ka)
		lockedAdd(b, kb, 0)
		mb.add(kb)
	}
	a.LockAll()
	b.LockAll()
	a.SwapContents(b)
	b.UnlockAll()
	a.UnlockAll()
	checkSlots(t, a, mb)
	checkSlots(t, b, ma)
	// The swapped lists stay live: changes after the swap show.
	lockedAdd(a, "{b}new", 0)
	mb.add("{b}new")
	lockedRemove(b, "a7")
	ma.del("a7")
	checkSlots(t, a, mb)
	checkSlots(t, b, ma)
	a.LockAll()
	a.Flush()
	a.UnlockAll()
	checkSlots(t, a, slotModel{})
	lockedAdd(a, "after", 0)
	checkSlots(t, a, slotModel{consistent.KeySlot("after"): {"after": true}})
}

// TestSlotIndexSnapshot changes keys of a shard while an open snapshot
// keeps its buckets frozen (and copies them on first touch): the listing
// stays exact, and the snapshot still reads the opening's keys.
func TestSlotIndexSnapshot(t *testing.T) {
	db := newTestDB(nil)
	m := slotModel{}
	for i := 0; i < 1500; i++ {
		k := "{s}" + strconv.Itoa(i)
		lockedAdd(db, k, 0)
		m.add(k)
	}
	db.LockAll()
	sn := OpenSnapshot([]*DB{db})
	db.UnlockAll()
	for i := 0; i < 1500; i += 2 {
		k := "{s}" + strconv.Itoa(i)
		lockedRemove(db, k)
		m.del(k)
	}
	for i := 0; i < 3000; i++ { // past the frozen shard's growth limit
		k := "{s}x" + strconv.Itoa(i)
		lockedAdd(db, k, 0)
		m.add(k)
	}
	checkSlots(t, db, m)
	sh := &db.Shards[ShardOf("{s}")]
	n := 0
	if err := sn.ForEachChunk(sh, func(b *SnapBuf) error { n += b.Len(); return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 1500 {
		t.Fatalf("the snapshot read %d keys of the shard, want the 1500 of its opening", n)
	}
	sn.Release()
	checkSlots(t, db, m)
}

// expiredObserver records the keys reported expired.
type expiredObserver struct {
	nopObserver
	expired []string
}

func (o *expiredObserver) Expired(_ int, key string) { o.expired = append(o.expired, key) }

// TestSlotIndexExpiry: keys deleted by a lookup and by active expiry
// leave their slot's list; a replica (hiding expired keys) keeps them.
func TestSlotIndexExpiry(t *testing.T) {
	obs := &expiredObserver{}
	db := newTestDB(obs)
	m := slotModel{}
	const now = 1_000_000
	for i := 0; i < 400; i++ {
		k := "{e}" + strconv.Itoa(i)
		exp := int64(0)
		if i%2 == 0 {
			exp = now - 1 // already expired at now
		}
		lockedAdd(db, k, exp)
		m.add(k)
	}
	db.shared.SetHideExpired(true) // a replica hides, never deletes
	sh := &db.Shards[ShardOf("{e}")]
	sh.Mu.Lock()
	if e := db.Lookup("{e}0", now); e != nil {
		t.Fatal("a replica's lookup returned an expired key")
	}
	sh.Mu.Unlock()
	checkSlots(t, db, m)
	db.shared.SetHideExpired(false)
	sh.Mu.Lock()
	db.Lookup("{e}0", now) // lazy expiry deletes it
	sh.Mu.Unlock()
	m.del("{e}0")
	checkSlots(t, db, m)
	for range 100 {
		if _, expired := db.ExpireSample(ShardOf("{e}"), now, 20); expired == 0 {
			break
		}
	}
	for i := 0; i < 400; i += 2 {
		m.del("{e}" + strconv.Itoa(i))
	}
	checkSlots(t, db, m)
	if len(obs.expired) != 200 {
		t.Fatalf("%d keys reported expired, want 200", len(obs.expired))
	}
}

// TestForEachInSlotRemoving: slot migration removes each key it visits.
func TestForEachInSlotRemoving(t *testing.T) {
	db := newTestDB(nil)
	for i := 0; i < 300; i++ {
		lockedAdd(db, "{m}"+strconv.Itoa(i), 0)
	}
	lockedAdd(db, "other", 0)
	slot := consistent.KeySlot("{m}")
	sh := &db.Shards[SlotShard(slot)]
	sh.Mu.Lock()
	seen := 0
	db.ForEachInSlot(slot, func(e *Entry) bool {
		seen++
		db.Remove(e.Key)
		return true
	})
	sh.Mu.Unlock()
	if seen != 300 || db.CountKeysInSlot(slot) != 0 || db.Size() != 1 {
		t.Fatalf("visited %d, %d left in the slot, %d keys in the db", seen, db.CountKeysInSlot(slot), db.Size())
	}
	checkSlots(t, db, slotModel{consistent.KeySlot("other"): {"other": true}})
	if got := db.KeysInSlot(-1, 5); got != nil {
		t.Fatalf("slot -1: %v", got)
	}
	if got := db.CountKeysInSlot(NumSlots); got != 0 {
		t.Fatalf("slot %d: %d", NumSlots, got)
	}
}
