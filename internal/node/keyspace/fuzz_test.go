package keyspace

import (
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/consistent"
)

// FuzzKeyspace runs random operation sequences on two databases (adds,
// bulk adds into one {tag} that make a shard grow incrementally, removes,
// expiries, lazy and active expiry, FLUSHDB, SWAPDB, snapshots opened and
// read while keys change) against a plain map model, and checks after
// every operation the key count and the per-slot index of the slots
// touched, and at the end a full SCAN and every slot.
func FuzzKeyspace(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 3, 9, 4, 5, 0, 7})
	f.Add([]byte{2, 3, 2, 4, 6, 1, 5, 0, 8, 1, 8, 0})
	f.Add([]byte{7, 2, 0, 5, 2, 9, 9, 1, 1, 4, 4, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &byteReader{b: in}
		sh := NewShared(nopObserver{})
		dbs := [2]*DB{NewDB(sh, 0), NewDB(sh, 1)}
		models := [2]map[string]int64{{}, {}} // key -> expire
		now := int64(1_000_000)
		var snap *Snapshot
		var snapWant map[string]bool
		bulk := 0
		keyOf := func(c byte) string {
			if c%4 == 0 {
				return "{t}" + strconv.Itoa(int(c))
			}
			return "k" + strconv.Itoa(int(c%64))
		}
		touched := map[int]bool{}
		for n := 0; r.more() && n < 300; n++ {
			d := int(r.next() & 1)
			db, m := dbs[d], models[d]
			switch op := r.next() % 10; op {
			case 0, 1: // add or overwrite
				k := keyOf(r.next())
				exp := int64(0)
				if op == 1 {
					exp = now + int64(r.next()%8) - 3
				}
				lk(db, k)
				db.SetString(k, []byte("v"), exp, false)
				ul(db, k)
				m[k] = exp
				touched[consistent.KeySlot(k)] = true
			case 2: // remove
				k := keyOf(r.next())
				lk(db, k)
				got := db.Remove(k) != nil
				ul(db, k)
				if _, had := m[k]; got != had {
					t.Fatalf("op %d: remove %q = %v, model has it %v", n, k, got, had)
				}
				delete(m, k)
				touched[consistent.KeySlot(k)] = true
			case 3: // bulk add into one slot: the {t} shard grows
				for i := 0; i < 600; i++ {
					k := "{t}b" + strconv.Itoa(bulk)
					bulk++
					lk(db, k)
					db.SetString(k, []byte("v"), 0, false)
					ul(db, k)
					m[k] = 0
				}
				touched[consistent.KeySlot("{t}")] = true
			case 4: // time passes; a lookup expires lazily
				now += int64(r.next() % 4)
				k := keyOf(r.next())
				lk(db, k)
				e := db.Lookup(k, now)
				ul(db, k)
				exp, had := m[k]
				alive := had && (exp == 0 || exp > now)
				if (e != nil) != alive {
					t.Fatalf("op %d: lookup %q at %d = %v, model alive %v", n, k, now, e != nil, alive)
				}
				if had && !alive {
					delete(m, k)
				}
				touched[consistent.KeySlot(k)] = true
			case 5: // active expiry of every shard
				for i := 0; i < NumShards; i++ {
					for range 1000 {
						if sampled, expired := db.ExpireSample(i, now, 20); sampled == 0 || expired == 0 {
							break
						}
					}
				}
				for k, exp := range m {
					if exp != 0 && exp <= now {
						delete(m, k)
						touched[consistent.KeySlot(k)] = true
					}
				}
			case 6: // FLUSHDB
				for k := range m {
					touched[consistent.KeySlot(k)] = true
				}
				held := db.LockAllInto(nil)
				SnapGuard(held) // as the dispatcher does before a whole-database change
				db.Flush()
				UnlockShards(held)
				clear(m)
			case 7: // SWAPDB
				held := dbs[1].LockAllInto(dbs[0].LockAllInto(nil))
				SnapGuard(held)
				dbs[0].SwapContents(dbs[1])
				UnlockShards(held)
				models[0], models[1] = models[1], models[0]
				for _, mm := range models {
					for k := range mm {
						touched[consistent.KeySlot(k)] = true
					}
				}
			case 8: // open a snapshot of database 0, or read and close it
				if snap == nil {
					dbs[0].LockAll()
					snap = OpenSnapshot(dbs[:1])
					dbs[0].UnlockAll()
					snapWant = map[string]bool{}
					for k := range models[0] {
						snapWant[k] = true
					}
					break
				}
				got := map[string]bool{}
				for i := range dbs[0].Shards {
					err := snap.ForEachChunk(&dbs[0].Shards[i], func(b *SnapBuf) error {
						var se SnapEntry
						for j := range b.Len() {
							b.Entry(j, &se)
							got[strings.Clone(se.Key)] = true // se aliases the buffer
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				snap.Release()
				snap = nil
				if !maps.Equal(got, snapWant) {
					t.Fatalf("op %d: the snapshot read %d keys, %d were there at its opening", n, len(got), len(snapWant))
				}
			case 9: // expiry set or cleared on a live key
				k := keyOf(r.next())
				lk(db, k)
				if e := db.GetEntry(k); e != nil {
					exp := int64(0)
					if r.next()&1 == 1 {
						exp = now + 2
					}
					db.SetExpire(e, exp)
					m[k] = exp
				}
				ul(db, k)
			}
			for d := range dbs {
				if got := dbs[d].Size(); got != int64(len(models[d])) {
					t.Fatalf("op %d: db %d holds %d keys, model %d", n, d, got, len(models[d]))
				}
				checkTouched(t, dbs[d], models[d], touched)
			}
			clear(touched)
		}
		if snap != nil {
			snap.Release()
		}
		for d := range dbs {
			checkScan(t, dbs[d], models[d])
			sm := slotModel{}
			for k := range models[d] {
				sm.add(k)
			}
			checkSlots(t, dbs[d], sm)
		}
	})
}

func lk(db *DB, k string) { db.KeyShard(k).Mu.Lock() }
func ul(db *DB, k string) { db.KeyShard(k).Mu.Unlock() }

// checkTouched compares the index of the given slots with the model.
func checkTouched(t *testing.T, db *DB, m map[string]int64, slots map[int]bool) {
	t.Helper()
	for sl := range slots {
		want := map[string]bool{}
		for k := range m {
			if consistent.KeySlot(k) == sl {
				want[k] = true
			}
		}
		if got := db.CountKeysInSlot(sl); got != len(want) {
			t.Fatalf("slot %d: count %d, model %d", sl, got, len(want))
		}
		got := map[string]bool{}
		for _, k := range db.KeysInSlot(sl, len(want)+1) {
			got[k] = true
		}
		if !maps.Equal(got, want) {
			t.Fatalf("slot %d: lists %d keys, model %d", sl, len(got), len(want))
		}
	}
}

// checkScan runs a full SCAN of every shard: each key of the model is
// returned at least once, and nothing else.
func checkScan(t *testing.T, db *DB, m map[string]int64) {
	t.Helper()
	got := map[string]bool{}
	for i := range db.Shards {
		s := &db.Shards[i]
		s.Mu.Lock()
		var cursor uint64
		for n := 0; n == 0 || cursor != 0; n++ {
			cursor = s.Scan(cursor, func(e *Entry) { got[e.Key] = true })
			if n > 1<<20 {
				s.Mu.Unlock()
				t.Fatal("SCAN does not end")
			}
		}
		s.Mu.Unlock()
	}
	for k := range m {
		if !got[k] {
			t.Fatalf("SCAN missed %q", k)
		}
	}
	if len(got) != len(m) {
		t.Fatalf("SCAN returned %d keys, model %d", len(got), len(m))
	}
}

// byteReader hands out the fuzz input; past the end it reads 0.
type byteReader struct{ b []byte }

func (r *byteReader) more() bool { return len(r.b) > 0 }

func (r *byteReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}
