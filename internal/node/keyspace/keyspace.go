// Package keyspace is the node's data: numbered databases (DB), each split
// into NumShards shards, a shard being a chained hash table with
// incremental rehashing and Redis's reverse-binary SCAN cursor behind its
// own mutex; the entries (Entry) with their expiry and LRU/LFU data; the
// bookkeeping of keys with an expiry (active expiry samples it) and
// eviction's sampling; the per-slot key index; the copy-on-write
// snapshot view the RDB and AOF writers walk; and the lock-free prefetch
// hints for pipelines.
//
// It knows no client, no server and no configuration. It reports upward
// through an Observer given at construction (an expired key deleted, a
// key added), and whether lookups delete expired keys (a master) or hide
// them (a replica) is a flag set with Shared.SetHideExpired. Callers lock
// the shards of the keys they touch (Shard.Mu), always in (db, shard)
// order, before calling the DB's methods; the method docs say which locks
// must be held.
package keyspace

import (
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shardis/shardis/internal/consistent"
)

// The keyspace of one database is split into NumShards shards, each a
// chained hash table behind its own mutex. A key's shard is its Redis
// Cluster hash slot modulo NumShards, so keys with the same {hash tag} share
// a shard and a slot's keys are all in one shard (cheap per-slot listing for
// cluster mode). Commands lock the shards of their keys in (db, shard) order
// before running; see the root's dispatch.go and docs/ARCHITECTURE.md.
const (
	// ShardBits is log2 of NumShards.
	ShardBits = 6
	// NumShards is the number of shards of a database.
	NumShards = 1 << ShardBits
	numSlots  = 16384
)

var hashSeed = maphash.MakeSeed()

// KeyHash is the hash of key in its shard's table (seeded per process).
func KeyHash(key string) uint64 { return maphash.String(hashSeed, key) }

// Entry is one key of the keyspace.
//
// Its exported fields are read and written by commands holding the key's
// shard lock; the key itself is fixed once the entry is added.
type Entry struct {
	next   *Entry
	Key    string // the key (set by DB.Add)
	Str    []byte // value of a string key
	Obj    any    // value of any other type (nil for strings): a value.Value
	Expire int64  // absolute unix time in ms; 0 means no expiry (change it with DB.SetExpire)
	LRU    uint32 // LRU clock (seconds) or LFU data (the root's evict.go)
	// hash is the low half of KeyHash(key), set by shard.insert (it fills
	// the struct's padding): a chain walk skips other keys without
	// touching their bytes, and resize does not rehash.
	hash uint32
	// slotPrev and slotNext link the entry into its hash slot's list
	// (slots.go): 16 bytes that take the entry from the 80-byte size
	// class to the 96-byte one (docs/ARCHITECTURE.md, "Memory").
	slotPrev, slotNext *Entry
}

// Shard is a chained hash table with power-of-two buckets. Its SCAN cursor
// walks bucket indexes in reverse-binary order, as Redis's dictScan does, so
// a scan survives growth and shrinking without missing a key that is present
// for the whole scan.
//
// Growth is incremental, as in Redis's dict: when the table is full a table
// twice as large becomes buckets and the old one is drained a few buckets
// per insert (rehashStep), so no single write pays for moving every key of
// the shard (64k keys took ~7 ms, a stall for every client of the shard).
// While old is set, a key is in one of the two tables. Code that walks the
// buckets directly calls FinishRehash first.
type Shard struct {
	// Mu guards the shard and its entries. It must stay the first field:
	// SnapGuard maps a held mutex back to its shard. Callers lock shards
	// in (db, shard) order.
	Mu       sync.Mutex
	buckets  []*Entry
	count    int
	volatile map[string]struct{} // keys that have an expiry
	// masterAccess is set while the master link's command holds the shard
	// on a replica: it sees logically expired keys as alive, as Redis's
	// expireIfNeeded does for the master client (replication_expire.go).
	masterAccess bool
	// view publishes buckets for lock-free prefetching (prefetch.go).
	view atomic.Pointer[bucketView]
	// old is the smaller table being drained into buckets during a growth;
	// its buckets below oldPos are empty already.
	old    []*Entry
	oldPos int
	// snaps are the open snapshots that have not copied all of this shard
	// yet (snapshot.go). While one is listed, the buckets stay
	// where they are (growth waits, shrinking is skipped), so a key stays
	// in the chunk of buckets it had when the snapshot opened; insert and
	// remove first have the key's chunk copied.
	snaps []*shardCopy
	// slots heads the lists of the keys of each hash slot this shard holds
	// (slot>>ShardBits indexes it); nil until the shard's first key.
	slots *[slotsPerShard]*Entry
}

func (s *Shard) find(key string, h uint64) *Entry {
	if s.old != nil {
		for e := s.old[h&uint64(len(s.old)-1)]; e != nil; e = e.next {
			if e.hash == uint32(h) && e.Key == key {
				return e
			}
		}
	}
	if len(s.buckets) == 0 {
		return nil
	}
	for e := s.buckets[h&uint64(len(s.buckets)-1)]; e != nil; e = e.next {
		if e.hash == uint32(h) && e.Key == key {
			return e
		}
	}
	return nil
}

// rehashBuckets is how many old buckets an insert moves during a growth:
// more than one, so the old table is empty long before the new one is
// full.
const rehashBuckets = 4

func (s *Shard) insert(e *Entry, h uint64) {
	if len(s.snaps) != 0 {
		s.snapTouch(h)
	}
	if s.old != nil {
		s.rehashStep(rehashBuckets)
	}
	if s.count >= len(s.buckets) && s.mayGrow() {
		s.grow()
	}
	i := h & uint64(len(s.buckets)-1)
	e.hash = uint32(h)
	e.next = s.buckets[i]
	s.buckets[i] = e
	s.count++
}

// FrozenLoad is how full a shard may get while an open snapshot keeps
// its buckets in place (chains get longer meanwhile, as in Redis, which
// does not resize while a child process exists); past it the snapshot's
// copy of the shard is completed and the shard grows.
const FrozenLoad = 8

// mayGrow reports whether a full shard may grow now.
func (s *Shard) mayGrow() bool {
	if len(s.snaps) == 0 {
		return true
	}
	if s.count < FrozenLoad*len(s.buckets) {
		return false
	}
	s.snapCopyAll()
	return true
}

// grow starts moving the keys to a table twice as large (a small table is
// rehashed at once).
func (s *Shard) grow() {
	s.FinishRehash()
	n := max(4, len(s.buckets)*2)
	if len(s.buckets) < 1024 {
		s.resize(n)
		return
	}
	s.old, s.oldPos = s.buckets, 0
	s.setBuckets(make([]*Entry, n))
}

// rehashStep moves up to n buckets of the old table (and skips at most
// 10*n empty ones) into buckets.
func (s *Shard) rehashStep(n int) {
	mask := uint64(len(s.buckets) - 1)
	empty := 10 * n
	for n > 0 && s.oldPos < len(s.old) {
		e := s.old[s.oldPos]
		if e == nil {
			s.oldPos++
			if empty--; empty == 0 {
				break
			}
			continue
		}
		for e != nil {
			next := e.next
			i := uint64(e.hash) & mask
			e.next = s.buckets[i]
			s.buckets[i] = e
			e = next
		}
		s.old[s.oldPos] = nil
		s.oldPos++
		n--
	}
	if s.oldPos >= len(s.old) {
		s.old, s.oldPos = nil, 0
	}
}

// FinishRehash completes a growth in progress, so that buckets holds every
// key (for code that walks the buckets).
func (s *Shard) FinishRehash() {
	if s.old != nil {
		s.rehashStep(len(s.old))
		s.old, s.oldPos = nil, 0
	}
}

func (s *Shard) remove(key string, h uint64) *Entry {
	if len(s.snaps) != 0 {
		s.snapTouch(h)
	}
	if e := unlink(s.old, key, h); e != nil {
		return s.removed(e, key)
	}
	if e := unlink(s.buckets, key, h); e != nil {
		return s.removed(e, key)
	}
	return nil
}

// unlink removes key from its chain in table (nil or empty: not there)
// and returns its entry.
func unlink(table []*Entry, key string, h uint64) *Entry {
	if len(table) == 0 {
		return nil
	}
	i := h & uint64(len(table)-1)
	var prev *Entry
	for e := table[i]; e != nil; e = e.next {
		if e.hash == uint32(h) && e.Key == key {
			if prev == nil {
				table[i] = e.next
			} else {
				prev.next = e.next
			}
			return e
		}
		prev = e
	}
	return nil
}

// removed finishes remove for e, already unlinked.
func (s *Shard) removed(e *Entry, key string) *Entry {
	e.next = nil
	s.count--
	if e.Expire != 0 {
		delete(s.volatile, key)
	}
	if len(s.buckets) > 64 && s.count < len(s.buckets)/8 && len(s.snaps) == 0 {
		s.FinishRehash()
		s.resize(len(s.buckets) / 2)
	}
	return e
}

// resize rehashes every key into a table of n buckets at once.
func (s *Shard) resize(n int) {
	s.FinishRehash()
	nb := make([]*Entry, n)
	mask := uint64(n - 1)
	for _, e := range s.buckets {
		for e != nil {
			next := e.next
			i := uint64(e.hash) & mask
			e.next = nb[i]
			nb[i] = e
			e = next
		}
	}
	s.setBuckets(nb)
}

// Scan visits the bucket at cursor and returns the next cursor (0 when the
// shard is done), walking indexes in reverse-binary order. During a growth
// it visits the cursor's bucket in the old table and every bucket of the
// new table that bucket expands to, as Redis's dictScan does, so the
// guarantee holds across the two tables.
func (s *Shard) Scan(cursor uint64, fn func(e *Entry)) uint64 {
	if len(s.buckets) == 0 {
		return 0
	}
	if s.old == nil {
		mask := uint64(len(s.buckets) - 1)
		for e := s.buckets[cursor&mask]; e != nil; e = e.next {
			fn(e)
		}
		return nextCursor(cursor, mask)
	}
	small, large := s.old, s.buckets
	m0, m1 := uint64(len(small)-1), uint64(len(large)-1)
	for e := small[cursor&m0]; e != nil; e = e.next {
		fn(e)
	}
	for {
		for e := large[cursor&m1]; e != nil; e = e.next {
			fn(e)
		}
		cursor = nextCursor(cursor, m1)
		if cursor&(m0^m1) == 0 {
			return cursor
		}
	}
}

// nextCursor increments the reversed bits of cursor under mask.
func nextCursor(cursor, mask uint64) uint64 {
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

func (s *Shard) setVolatile(key string, on bool) {
	if on {
		if s.volatile == nil {
			s.volatile = make(map[string]struct{})
		}
		s.volatile[key] = struct{}{}
	} else if s.volatile != nil {
		delete(s.volatile, key)
	}
}

// Observer is how the keyspace reports upward, to the server that owns
// it. Its methods are called with the key's shard locked.
type Observer interface {
	// Expired is called after a lookup or active expiry deleted an
	// expired key (the server propagates a DEL, notifies "expired" and
	// touches WATCH).
	Expired(db int, key string)
	// Added is called after a new key was added to a database that is not
	// staged (the server wakes clients blocked on it and notifies "new").
	Added(db int, key string, obj any)
}

// Shared is what the databases of one node share: the observer and
// the expiry mode.
type Shared struct {
	obs Observer
	// hideExpired is set on a replica (and during a CLIENT PAUSE): lookups
	// hide expired keys instead of deleting them, and active expiry stops.
	hideExpired atomic.Bool
}

// NewShared returns the state the databases of one node share; obs
// receives their reports.
func NewShared(obs Observer) *Shared { return &Shared{obs: obs} }

// SetHideExpired switches lookups between deleting expired keys (false, a
// master) and hiding them (true, a replica or a paused node).
func (k *Shared) SetHideExpired(on bool) { k.hideExpired.Store(on) }

// DB is one numbered database.
type DB struct {
	ID     int // the database number (SELECT)
	shared *Shared
	// Shards are the database's shards; key's is Shards[ShardOf(key)].
	Shards  [NumShards]Shard
	keys    atomic.Int64 // number of keys, for DBSIZE and INFO keyspace
	Expires atomic.Int64 // number of keys with an expiry (read without locks)
	// slotKeys counts keys per hash slot (cluster mode, COUNTKEYSINSLOT).
	slotKeys [numSlots]atomic.Int32
	// AvgTTL is INFO keyspace's avg_ttl (ms), kept by the server.
	AvgTTL atomic.Int64
	// Staged marks a replica's staging database, loaded during a full
	// sync and swapped in at its end: its keys are not visible yet, so
	// adding one wakes no client and sends no event.
	Staged bool
}

// NewDB returns an empty database number id of the node whose databases
// share sh.
func NewDB(sh *Shared, id int) *DB {
	return &DB{ID: id, shared: sh}
}

// ShardOf returns the index of key's shard: its hash slot modulo NumShards.
func ShardOf(key string) int { return consistent.KeySlot(key) & (NumShards - 1) }

// KeyShard returns the shard that holds key.
func (db *DB) KeyShard(key string) *Shard { return &db.Shards[ShardOf(key)] }

// LockAll locks every shard, in index order.
func (db *DB) LockAll() {
	for i := range db.Shards {
		db.Shards[i].Mu.Lock()
	}
}

// LockAllInto locks every shard, in index order, and appends their
// mutexes to held.
func (db *DB) LockAllInto(held []*sync.Mutex) []*sync.Mutex {
	for i := range db.Shards {
		m := &db.Shards[i].Mu
		m.Lock()
		held = append(held, m)
	}
	return held
}

// UnlockAll unlocks every shard.
func (db *DB) UnlockAll() {
	for i := range db.Shards {
		db.Shards[i].Mu.Unlock()
	}
}

// GetEntry finds key without checking expiry. The key's shard must be
// locked.
func (db *DB) GetEntry(key string) *Entry {
	return db.Shards[ShardOf(key)].find(key, KeyHash(key))
}

// Expired reports whether e has expired at now.
func (e *Entry) Expired(now int64) bool { return e.Expire != 0 && e.Expire <= now }

// Lookup returns the live entry for key, deleting it first if it has
// expired (on a master; a replica only hides it, see SetHideExpired).
// The key's shard must be locked.
func (db *DB) Lookup(key string, now int64) *Entry {
	e := db.GetEntry(key)
	if e == nil {
		return nil
	}
	if e.Expired(now) {
		if !db.shared.hideExpired.Load() {
			db.ExpireEntry(key)
		} else if db.Shards[ShardOf(key)].masterAccess {
			return e
		}
		return nil
	}
	// Every access refreshes the LRU clock (OBJECT IDLETIME, eviction).
	if lru := uint32(now / 1000); e.LRU != lru {
		e.LRU = lru
	}
	return e
}

// ExpireEntry deletes an expired key and tells replicas and the AOF, as
// Redis does by propagating a DEL.
func (db *DB) ExpireEntry(key string) {
	if db.Remove(key) == nil {
		return
	}
	db.shared.obs.Expired(db.ID, key)
}

// Add inserts a new key (which must not exist) and returns its entry.
func (db *DB) Add(key string, e *Entry) {
	e.Key = key
	sl := consistent.KeySlot(key)
	sh := &db.Shards[sl&(NumShards-1)]
	sh.insert(e, KeyHash(key))
	if e.Expire != 0 {
		sh.setVolatile(key, true)
		db.Expires.Add(1)
	}
	db.keys.Add(1)
	db.slotKeys[sl].Add(1)
	sh.slotLink(e, sl)
	if db.Staged {
		return
	}
	db.shared.obs.Added(db.ID, key, e.Obj)
}

// Remove deletes key and returns its entry, or nil.
func (db *DB) Remove(key string) *Entry {
	sl := consistent.KeySlot(key)
	sh := &db.Shards[sl&(NumShards-1)]
	e := sh.remove(key, KeyHash(key))
	if e != nil {
		if e.Expire != 0 {
			db.Expires.Add(-1)
		}
		db.keys.Add(-1)
		db.slotKeys[sl].Add(-1)
		sh.slotUnlink(e, sl)
	}
	return e
}

// SetExpire sets (ms > 0) or clears (ms == 0) the expiry of a live entry.
func (db *DB) SetExpire(e *Entry, ms int64) {
	if (e.Expire != 0) == (ms != 0) {
		e.Expire = ms
		return
	}
	sh := &db.Shards[ShardOf(e.Key)]
	if ms != 0 {
		db.Expires.Add(1)
		sh.setVolatile(e.Key, true)
	} else {
		db.Expires.Add(-1)
		sh.setVolatile(e.Key, false)
	}
	e.Expire = ms
}

// SetString stores a string value at key, replacing any old value and,
// unless keepTTL, its expiry. The key's shard must be locked.
func (db *DB) SetString(key string, val []byte, expire int64, keepTTL bool) *Entry {
	e := db.GetEntry(key)
	if e == nil {
		e = &Entry{Str: val, Expire: expire}
		db.Add(key, e)
		return e
	}
	e.Str, e.Obj = val, nil
	if !keepTTL {
		db.SetExpire(e, expire)
	}
	return e
}

// SetObject stores a non-string value at key, replacing any old value and
// its expiry.
func (db *DB) SetObject(key string, obj any) *Entry {
	e := db.GetEntry(key)
	if e == nil {
		e = &Entry{Obj: obj}
		db.Add(key, e)
		return e
	}
	e.Str, e.Obj = nil, obj
	db.SetExpire(e, 0)
	return e
}

// Size returns the number of keys, including expired ones not yet removed.
func (db *DB) Size() int64 { return db.keys.Load() }

// Flush removes every key. All shards must be locked.
func (db *DB) Flush() {
	for i := range db.Shards {
		sh := &db.Shards[i]
		sh.setBuckets(nil)
		sh.old, sh.oldPos = nil, 0
		sh.count = 0
		sh.volatile = nil
		sh.slots = nil
	}
	hadKeys := db.keys.Swap(0) != 0
	db.Expires.Store(0)
	if hadKeys { // an empty database has all-zero slot counts already
		for i := range db.slotKeys {
			db.slotKeys[i].Store(0)
		}
	}
}

// SwapContents exchanges the data of two databases (SWAPDB). Both must be
// fully locked.
func (db *DB) SwapContents(o *DB) {
	for i := range db.Shards {
		a, b := &db.Shards[i], &o.Shards[i]
		a.FinishRehash()
		b.FinishRehash()
		ab, bb := a.buckets, b.buckets
		a.setBuckets(bb)
		b.setBuckets(ab)
		a.count, b.count = b.count, a.count
		a.volatile, b.volatile = b.volatile, a.volatile
		a.slots, b.slots = b.slots, a.slots
	}
	k, ok := db.keys.Load(), o.keys.Load()
	db.keys.Store(ok)
	o.keys.Store(k)
	k, ok = db.Expires.Load(), o.Expires.Load()
	db.Expires.Store(ok)
	o.Expires.Store(k)
	for i := range db.slotKeys {
		a, b := db.slotKeys[i].Load(), o.slotKeys[i].Load()
		db.slotKeys[i].Store(b)
		o.slotKeys[i].Store(a)
	}
}

// forEachShardLocked calls fn for each shard with its lock held.
func (db *DB) forEachShardLocked(fn func(sh *Shard)) {
	for i := range db.Shards {
		sh := &db.Shards[i]
		sh.Mu.Lock()
		fn(sh)
		sh.Mu.Unlock()
	}
}

// Len returns the number of keys in the shard, expired ones not yet
// removed included. The shard must be locked.
func (s *Shard) Len() int { return s.count }

// NumBuckets returns the size of the shard's (new) table.
func (s *Shard) NumBuckets() int { return len(s.buckets) }

// Growing reports whether an incremental growth is in progress (two
// tables).
func (s *Shard) Growing() bool { return s.old != nil }

// SetMasterAccess makes lookups see logically expired keys as alive while
// the master link's command holds the shard on a replica.
func (s *Shard) SetMasterAccess(on bool) { s.masterAccess = on }

// ForEach calls fn for every entry of the shard until fn returns false;
// a growth in progress is completed first. The shard must be locked.
func (s *Shard) ForEach(fn func(e *Entry) bool) {
	s.FinishRehash()
	for _, e := range s.buckets {
		for ; e != nil; e = e.next {
			if !fn(e) {
				return
			}
		}
	}
}

// Walk calls fn for every entry of both tables without changing the
// shard (a growth in progress stays in progress). The shard must be
// locked.
func (s *Shard) Walk(fn func(e *Entry)) {
	for _, table := range [][]*Entry{s.old, s.buckets} {
		for _, e := range table {
			for ; e != nil; e = e.next {
				fn(e)
			}
		}
	}
}

// RandomEntry returns a random entry of the shard, or nil if it is empty.
// The shard must be locked.
func (s *Shard) RandomEntry() *Entry {
	if s.count == 0 || len(s.buckets) == 0 {
		return nil
	}
	s.FinishRehash()
	n := len(s.buckets)
	start := rand.IntN(n)
	for i := 0; i < n; i++ {
		head := s.buckets[(start+i)%n]
		if head == nil {
			continue
		}
		l := 0
		for e := head; e != nil; e = e.next {
			l++
		}
		e := head
		for k := rand.IntN(l); k > 0; k-- {
			e = e.next
		}
		return e
	}
	return nil
}

// Presize gives an empty database's shards room for about n keys.
func (db *DB) Presize(n uint64) {
	per := n / NumShards
	if per < 4 || per > 1<<26 {
		return
	}
	b := 1 << bits.Len64(per) // above per: no growth at the expected count
	for i := range db.Shards {
		if sh := &db.Shards[i]; sh.count == 0 && len(sh.buckets) < b {
			sh.resize(b)
		}
	}
}

// bucketView is a shard's bucket array as prefetching sees it.
type bucketView struct {
	base unsafe.Pointer // &buckets[0]
	mask uint64
}

// setBuckets replaces the shard's bucket array. The shard must be locked.
func (s *Shard) setBuckets(nb []*Entry) {
	s.buckets = nb
	if len(nb) == 0 {
		s.view.Store(nil)
		return
	}
	s.view.Store(&bucketView{base: unsafe.Pointer(&nb[0]), mask: uint64(len(nb) - 1)})
}

// entrySize is the size of an Entry (a Go size class: see
// docs/ARCHITECTURE.md, "Memory").
const entrySize = unsafe.Sizeof(Entry{})
