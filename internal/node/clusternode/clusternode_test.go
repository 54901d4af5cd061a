package clusternode

import (
	"slices"
	"strconv"
	"testing"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/redirect"
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

// routing serves every slot from node 0 (me) except those given to node 1.
func routing(other ...int) *cluster.Routing {
	rt := &cluster.Routing{Me: 0, MyMaster: -1, Nodes: []cluster.RouteNode{{ID: "me", IP: "127.0.0.1", Port: 7000}, {ID: "b", IP: "127.0.0.2", Port: 7001}}}
	for i := range rt.Owner {
		rt.Owner[i], rt.Migrating[i], rt.Importing[i] = 0, -1, -1
	}
	for _, s := range other {
		rt.Owner[s] = 1
	}
	return rt
}

// SlotQuery.Keys walks the first/last/step range (last counted from the
// end when negative) or the movable keys, and stops at the first error.
func TestSlotQueryKeys(t *testing.T) {
	db := newDB()
	cases := []struct {
		name              string
		args              [][]byte
		keys              func([][]byte) []int
		first, last, step int
		want              string
		slot              int
	}{
		{"one key", args("get", "{a}x"), nil, 1, 1, 1, "", consistent.KeySlot("a")},
		{"pairs", args("mset", "{a}1", "v", "{a}2", "v"), nil, 1, -1, 2, "", consistent.KeySlot("a")},
		{"cross slot", args("mset", "{a}1", "v", "{b}2", "v"), nil, 1, -1, 2, redirect.ErrCrossSlot, consistent.KeySlot("a")},
		{"values skipped", args("mset", "{a}1", "{b}", "{a}2", "{c}"), nil, 1, -1, 2, "", consistent.KeySlot("a")},
		{"movable", args("eval", "s", "1", "{c}k"), func(a [][]byte) []int { return []int{3, 9} }, 0, 0, 0, "", consistent.KeySlot("c")},
		{"no keys", args("ping"), nil, 0, 0, 0, "", -1},
	}
	for _, tc := range cases {
		q := SlotQuery{Query: redirect.NewQuery(routing(), false), DB: db}
		if got := q.Keys(tc.args, tc.keys, tc.first, tc.last, tc.step); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if tc.slot >= 0 && (!q.HaveKeys || q.Slot != tc.slot) {
			t.Errorf("%s: slot %d (have keys %v), want %d", tc.name, q.Slot, q.HaveKeys, tc.slot)
		}
		if tc.slot < 0 && q.HaveKeys {
			t.Errorf("%s: keys fed", tc.name)
		}
		if got := FirstKeySlot(tc.args, tc.keys, tc.first); got != tc.slot {
			t.Errorf("%s: FirstKeySlot %d, want %d", tc.name, got, tc.slot)
		}
	}
}

// A key of a migrating slot is looked up: present, the node serves it;
// missing, ASK to the target.
func TestSlotQueryMigratingExists(t *testing.T) {
	db := newDB()
	slot := consistent.KeySlot("k")
	rt := routing()
	rt.Migrating[slot] = 1
	sh := db.KeyShard("k")
	sh.Mu.Lock()
	db.SetString("k", []byte("v"), 0, false)
	sh.Mu.Unlock()
	for _, tc := range []struct {
		key  string
		want redirect.Outcome
	}{{"k", redirect.Serve}, {"{k}missing", redirect.Ask}} {
		q := SlotQuery{Query: redirect.NewQuery(rt, false), DB: db}
		if msg := q.Keys(args("get", tc.key), nil, 1, 1, 1); msg != "" {
			t.Fatalf("%s: %q", tc.key, msg)
		}
		if out, _, _ := q.Decide(redirect.Request{Name: "get"}); out != tc.want {
			t.Errorf("%s: outcome %v, want %v", tc.key, out, tc.want)
		}
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
