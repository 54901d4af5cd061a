package clusternode

import (
	"slices"
	"strconv"
	"testing"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// nopObserver ignores the keyspace's reports.
type nopObserver struct{}

func (nopObserver) Expired(int, string)    {}
func (nopObserver) Added(int, string, any) {}

func newDB() *keyspace.DB { return keyspace.NewDB(keyspace.NewShared(nopObserver{}), 0) }

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

// FirstKeySlot is the slot of the first key of a first/last/step range
// or of the movable keys' first position inside the call, -1 without one.
func TestFirstKeySlot(t *testing.T) {
	cases := []struct {
		name  string
		args  [][]byte
		keys  func([][]byte) []int
		first int
		want  int
	}{
		{"one key", args("get", "{a}x"), nil, 1, consistent.KeySlot("a")},
		{"movable", args("eval", "s", "1", "{c}k"), func(a [][]byte) []int { return []int{9, 3} }, 0, consistent.KeySlot("c")},
		{"movable, none inside", args("eval", "s", "0"), func(a [][]byte) []int { return []int{5} }, 0, -1},
		{"no keys", args("ping"), nil, 0, -1},
		{"first past the end", args("set"), nil, 1, -1},
	}
	for _, tc := range cases {
		if got := FirstKeySlot(tc.args, tc.keys, tc.first); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// KeyExists sees a present key, not a missing or an expired one (and
// does not delete the expired one: no touch, no expiry).
func TestKeyExists(t *testing.T) {
	db := newDB()
	for _, k := range []string{"k", "old"} {
		sh := db.KeyShard(k)
		sh.Mu.Lock()
		db.SetString(k, []byte("v"), 0, false)
		sh.Mu.Unlock()
	}
	sh := db.KeyShard("old")
	sh.Mu.Lock()
	db.GetEntry("old").Expire = 1000 // 1 s after 1970
	sh.Mu.Unlock()
	if !KeyExists(db, "k", false, 5000) || KeyExists(db, "missing", false, 5000) || KeyExists(db, "old", false, 5000) {
		t.Fatal("KeyExists: wrong answer")
	}
	if !KeyExists(db, "old", false, 999) {
		t.Fatal("KeyExists: a key before its expiry time is missing")
	}
	if db.Size() != 2 {
		t.Fatalf("KeyExists changed the keyspace: %d keys", db.Size())
	}
}

// KeysInSlot lists a slot's keys from the keyspace's per-slot index:
// exact, newest first, bounded by count; TrimSlots deletes a slot's keys
// with one DEL of them and reports them touched; DeleteSlot deletes
// without one, and leaves the other slots' keys. (The root's
// TestClusterKeysInSlot, of the same listing and deletion, moved here.)
func TestSlotKeys(t *testing.T) {
	db := newDB()
	set := func(k string) {
		sh := db.KeyShard(k)
		sh.Mu.Lock()
		db.SetString(k, []byte("v"), 0, false)
		sh.Mu.Unlock()
	}
	var want []string
	for i := 0; i < 5; i++ {
		k := "{a}" + strconv.Itoa(i)
		set(k)
		want = append([]string{k}, want...)
		set("{b}" + strconv.Itoa(i))
	}
	a, b := consistent.KeySlot("a"), consistent.KeySlot("b")
	if got := KeysInSlot(db, a, -1); !slices.Equal(got, want) {
		t.Fatalf("KeysInSlot(all) = %v, want %v", got, want)
	}
	if got := KeysInSlot(db, a, 2); !slices.Equal(got, want[:2]) {
		t.Fatalf("KeysInSlot(2) = %v", got)
	}
	var dels [][][]byte
	var touched []string
	n := TrimSlots(db, []int{a, 99}, func(del [][]byte) { dels = append(dels, del) }, func(keys []string) { touched = append(touched, keys...) })
	if n != 5 || len(dels) != 1 || len(dels[0]) != 6 || string(dels[0][0]) != "DEL" || len(touched) != 5 {
		t.Fatalf("TrimSlots: %d deleted, DELs %q, touched %v", n, dels, touched)
	}
	if db.CountKeysInSlot(a) != 0 || db.Size() != 5 {
		t.Fatalf("after the trim: %d in the slot, %d keys", db.CountKeysInSlot(a), db.Size())
	}
	touched = nil
	if n := DeleteSlot(db, b, func(k string) { touched = append(touched, k) }); n != 5 || len(touched) != 5 || db.Size() != 0 {
		t.Fatalf("DeleteSlot: %d deleted, touched %v, %d keys left", n, touched, db.Size())
	}
}
