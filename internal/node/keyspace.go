package node

import (
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shardis/shardis/internal/consistent"
)

// The keyspace of one database is split into numShards shards, each a
// chained hash table behind its own mutex. A key's shard is its Redis
// Cluster hash slot modulo numShards, so keys with the same {hash tag} share
// a shard and a slot's keys are all in one shard (cheap per-slot listing for
// cluster mode). Commands lock the shards of their keys in (db, shard) order
// before running; see dispatch.go and docs/ARCHITECTURE.md.
const (
	shardBits = 6
	numShards = 1 << shardBits
	numSlots  = 16384
)

var hashSeed = maphash.MakeSeed()

// keyHash is the hash of key in its shard's table (seeded per process).
func keyHash(key string) uint64 { return maphash.String(hashSeed, key) }

// entry is one key of the keyspace.
type entry struct {
	next   *entry
	key    string
	str    []byte // value of a string key
	obj    any    // value of any other type (nil for strings)
	expire int64  // absolute unix time in ms; 0 means no expiry
	lru    uint32 // LRU clock (seconds) or LFU data, see evict.go
	// hash is the low half of keyHash(key), set by shard.insert (it fills
	// the struct's padding): a chain walk skips other keys without
	// touching their bytes, and resize does not rehash.
	hash uint32
}

// shard is a chained hash table with power-of-two buckets. Its SCAN cursor
// walks bucket indexes in reverse-binary order, as Redis's dictScan does, so
// a scan survives growth and shrinking without missing a key that is present
// for the whole scan.
//
// Growth is incremental, as in Redis's dict: when the table is full a table
// twice as large becomes buckets and the old one is drained a few buckets
// per insert (rehashStep), so no single write pays for moving every key of
// the shard (64k keys took ~7 ms, a stall for every client of the shard).
// While old is set, a key is in one of the two tables. Code that walks the
// buckets directly calls finishRehash first.
type shard struct {
	mu       sync.Mutex
	buckets  []*entry
	count    int
	volatile map[string]struct{} // keys that have an expiry
	// masterAccess is set while the master link's command holds the shard
	// on a replica: it sees logically expired keys as alive, as Redis's
	// expireIfNeeded does for the master client (replication_expire.go).
	masterAccess bool
	// view publishes buckets for lock-free prefetching (perf_prefetch.go).
	view atomic.Pointer[bucketView]
	// old is the smaller table being drained into buckets during a growth;
	// its buckets below oldPos are empty already.
	old    []*entry
	oldPos int
	// snaps are the open snapshots that have not copied all of this shard
	// yet (persistence_snapshot.go). While one is listed, the buckets stay
	// where they are (growth waits, shrinking is skipped), so a key stays
	// in the chunk of buckets it had when the snapshot opened; insert and
	// remove first have the key's chunk copied.
	snaps []*shardCopy
}

func (s *shard) find(key string, h uint64) *entry {
	if s.old != nil {
		for e := s.old[h&uint64(len(s.old)-1)]; e != nil; e = e.next {
			if e.hash == uint32(h) && e.key == key {
				return e
			}
		}
	}
	if len(s.buckets) == 0 {
		return nil
	}
	for e := s.buckets[h&uint64(len(s.buckets)-1)]; e != nil; e = e.next {
		if e.hash == uint32(h) && e.key == key {
			return e
		}
	}
	return nil
}

// rehashBuckets is how many old buckets an insert moves during a growth:
// more than one, so the old table is empty long before the new one is
// full.
const rehashBuckets = 4

func (s *shard) insert(e *entry, h uint64) {
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

// frozenLoad is how full a shard may get while an open snapshot keeps
// its buckets in place (chains get longer meanwhile, as in Redis, which
// does not resize while a child process exists); past it the snapshot's
// copy of the shard is completed and the shard grows.
const frozenLoad = 8

// mayGrow reports whether a full shard may grow now.
func (s *shard) mayGrow() bool {
	if len(s.snaps) == 0 {
		return true
	}
	if s.count < frozenLoad*len(s.buckets) {
		return false
	}
	s.snapCopyAll()
	return true
}

// grow starts moving the keys to a table twice as large (a small table is
// rehashed at once).
func (s *shard) grow() {
	s.finishRehash()
	n := max(4, len(s.buckets)*2)
	if len(s.buckets) < 1024 {
		s.resize(n)
		return
	}
	s.old, s.oldPos = s.buckets, 0
	s.setBuckets(make([]*entry, n))
}

// rehashStep moves up to n buckets of the old table (and skips at most
// 10*n empty ones) into buckets.
func (s *shard) rehashStep(n int) {
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

// finishRehash completes a growth in progress, so that buckets holds every
// key (for code that walks the buckets).
func (s *shard) finishRehash() {
	if s.old != nil {
		s.rehashStep(len(s.old))
		s.old, s.oldPos = nil, 0
	}
}

func (s *shard) remove(key string, h uint64) *entry {
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
func unlink(table []*entry, key string, h uint64) *entry {
	if len(table) == 0 {
		return nil
	}
	i := h & uint64(len(table)-1)
	var prev *entry
	for e := table[i]; e != nil; e = e.next {
		if e.hash == uint32(h) && e.key == key {
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
func (s *shard) removed(e *entry, key string) *entry {
	e.next = nil
	s.count--
	if e.expire != 0 {
		delete(s.volatile, key)
	}
	if len(s.buckets) > 64 && s.count < len(s.buckets)/8 && len(s.snaps) == 0 {
		s.finishRehash()
		s.resize(len(s.buckets) / 2)
	}
	return e
}

// resize rehashes every key into a table of n buckets at once.
func (s *shard) resize(n int) {
	s.finishRehash()
	nb := make([]*entry, n)
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

// scan visits the bucket at cursor and returns the next cursor (0 when the
// shard is done), walking indexes in reverse-binary order. During a growth
// it visits the cursor's bucket in the old table and every bucket of the
// new table that bucket expands to, as Redis's dictScan does, so the
// guarantee holds across the two tables.
func (s *shard) scan(cursor uint64, fn func(e *entry)) uint64 {
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

func (s *shard) setVolatile(key string, on bool) {
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

// ksShared is what the databases of one node share: the observer and
// the expiry mode.
type ksShared struct {
	obs Observer
	// hideExpired is set on a replica (and during a CLIENT PAUSE): lookups
	// hide expired keys instead of deleting them, and active expiry stops.
	hideExpired atomic.Bool
}

// newKSShared returns the state the databases of one node share; obs
// receives their reports.
func newKSShared(obs Observer) *ksShared { return &ksShared{obs: obs} }

// setHideExpired switches lookups between deleting expired keys (false, a
// master) and hiding them (true, a replica or a paused node).
func (k *ksShared) setHideExpired(on bool) { k.hideExpired.Store(on) }

// hidesExpired reports whether lookups hide expired keys instead of
// deleting them.
func (k *ksShared) hidesExpired() bool { return k.hideExpired.Load() }

// DB is one numbered database.
type DB struct {
	id      int
	shared  *ksShared
	shards  [numShards]shard
	keys    atomic.Int64 // number of keys, for DBSIZE and INFO keyspace
	expires atomic.Int64 // number of keys with an expiry
	// slotKeys counts keys per hash slot (cluster mode, COUNTKEYSINSLOT).
	slotKeys [numSlots]atomic.Int32
	avgTTL   atomic.Int64
	// staged marks a replica's staging database, loaded during a full
	// sync and swapped in at its end: its keys are not visible yet, so
	// adding one wakes no client and sends no event.
	staged bool
}

// newDB returns an empty database number id of the node whose databases
// share sh.
func newDB(sh *ksShared, id int) *DB {
	return &DB{id: id, shared: sh}
}

// shardOf returns the index of key's shard: its hash slot modulo numShards.
func shardOf(key string) int { return consistent.KeySlot(key) & (numShards - 1) }

// lockAll locks every shard, in index order.
func (db *DB) lockAll() {
	for i := range db.shards {
		db.shards[i].mu.Lock()
	}
}

// unlockAll unlocks every shard.
func (db *DB) unlockAll() {
	for i := range db.shards {
		db.shards[i].mu.Unlock()
	}
}

// getEntry finds key without checking expiry. The key's shard must be
// locked.
func (db *DB) getEntry(key string) *entry {
	return db.shards[shardOf(key)].find(key, keyHash(key))
}

// expired reports whether e has expired at now.
func (e *entry) expired(now int64) bool { return e.expire != 0 && e.expire <= now }

// lookup returns the live entry for key, deleting it first if it has
// expired (on a master; a replica only hides it, see setHideExpired).
// The key's shard must be locked.
func (db *DB) lookup(key string, now int64) *entry {
	e := db.getEntry(key)
	if e == nil {
		return nil
	}
	if e.expired(now) {
		if !db.shared.hideExpired.Load() {
			db.expireEntry(key)
		} else if db.shards[shardOf(key)].masterAccess {
			return e
		}
		return nil
	}
	// Every access refreshes the LRU clock (OBJECT IDLETIME, eviction).
	if lru := uint32(now / 1000); e.lru != lru {
		e.lru = lru
	}
	return e
}

// expireEntry deletes an expired key and tells replicas and the AOF, as
// Redis does by propagating a DEL.
func (db *DB) expireEntry(key string) {
	if db.remove(key) == nil {
		return
	}
	db.shared.obs.Expired(db.id, key)
}

// add inserts a new key (which must not exist) and returns its entry.
func (db *DB) add(key string, e *entry) {
	e.key = key
	sl := consistent.KeySlot(key)
	sh := &db.shards[sl&(numShards-1)]
	sh.insert(e, keyHash(key))
	if e.expire != 0 {
		sh.setVolatile(key, true)
		db.expires.Add(1)
	}
	db.keys.Add(1)
	db.slotKeys[sl].Add(1)
	if db.staged {
		return
	}
	db.shared.obs.Added(db.id, key, e.obj)
}

// remove deletes key and returns its entry, or nil.
func (db *DB) remove(key string) *entry {
	sl := consistent.KeySlot(key)
	e := db.shards[sl&(numShards-1)].remove(key, keyHash(key))
	if e != nil {
		if e.expire != 0 {
			db.expires.Add(-1)
		}
		db.keys.Add(-1)
		db.slotKeys[sl].Add(-1)
	}
	return e
}

// setExpire sets (ms > 0) or clears (ms == 0) the expiry of a live entry.
func (db *DB) setExpire(e *entry, ms int64) {
	if (e.expire != 0) == (ms != 0) {
		e.expire = ms
		return
	}
	sh := &db.shards[shardOf(e.key)]
	if ms != 0 {
		db.expires.Add(1)
		sh.setVolatile(e.key, true)
	} else {
		db.expires.Add(-1)
		sh.setVolatile(e.key, false)
	}
	e.expire = ms
}

// setString stores a string value at key, replacing any old value and,
// unless keepTTL, its expiry. The key's shard must be locked.
func (db *DB) setString(key string, val []byte, expire int64, keepTTL bool) *entry {
	e := db.getEntry(key)
	if e == nil {
		e = &entry{str: val, expire: expire}
		db.add(key, e)
		return e
	}
	e.str, e.obj = val, nil
	if !keepTTL {
		db.setExpire(e, expire)
	}
	return e
}

// setObject stores a non-string value at key, replacing any old value and
// its expiry.
func (db *DB) setObject(key string, obj any) *entry {
	e := db.getEntry(key)
	if e == nil {
		e = &entry{obj: obj}
		db.add(key, e)
		return e
	}
	e.str, e.obj = nil, obj
	db.setExpire(e, 0)
	return e
}

// size returns the number of keys, including expired ones not yet removed.
func (db *DB) size() int64 { return db.keys.Load() }

// flush removes every key. All shards must be locked.
func (db *DB) flush() {
	for i := range db.shards {
		sh := &db.shards[i]
		sh.setBuckets(nil)
		sh.old, sh.oldPos = nil, 0
		sh.count = 0
		sh.volatile = nil
	}
	hadKeys := db.keys.Swap(0) != 0
	db.expires.Store(0)
	if hadKeys { // an empty database has all-zero slot counts already
		for i := range db.slotKeys {
			db.slotKeys[i].Store(0)
		}
	}
}

// swapContents exchanges the data of two databases (SWAPDB). Both must be
// fully locked.
func (db *DB) swapContents(o *DB) {
	for i := range db.shards {
		a, b := &db.shards[i], &o.shards[i]
		a.finishRehash()
		b.finishRehash()
		ab, bb := a.buckets, b.buckets
		a.setBuckets(bb)
		b.setBuckets(ab)
		a.count, b.count = b.count, a.count
		a.volatile, b.volatile = b.volatile, a.volatile
	}
	k, ok := db.keys.Load(), o.keys.Load()
	db.keys.Store(ok)
	o.keys.Store(k)
	k, ok = db.expires.Load(), o.expires.Load()
	db.expires.Store(ok)
	o.expires.Store(k)
	for i := range db.slotKeys {
		a, b := db.slotKeys[i].Load(), o.slotKeys[i].Load()
		db.slotKeys[i].Store(b)
		o.slotKeys[i].Store(a)
	}
}

// forEachShardLocked calls fn for each shard with its lock held.
func (db *DB) forEachShardLocked(fn func(sh *shard)) {
	for i := range db.shards {
		sh := &db.shards[i]
		sh.mu.Lock()
		fn(sh)
		sh.mu.Unlock()
	}
}

// len returns the number of keys in the shard, expired ones not yet
// removed included. The shard must be locked.
func (s *shard) len() int { return s.count }

// numBuckets returns the size of the shard's (new) table.
func (s *shard) numBuckets() int { return len(s.buckets) }

// growing reports whether an incremental growth is in progress (two
// tables).
func (s *shard) growing() bool { return s.old != nil }

// setMasterAccess makes lookups see logically expired keys as alive while
// the master link's command holds the shard on a replica.
func (s *shard) setMasterAccess(on bool) { s.masterAccess = on }

// forEach calls fn for every entry of the shard until fn returns false;
// a growth in progress is completed first. The shard must be locked.
func (s *shard) forEach(fn func(e *entry) bool) {
	s.finishRehash()
	for _, e := range s.buckets {
		for ; e != nil; e = e.next {
			if !fn(e) {
				return
			}
		}
	}
}

// walk calls fn for every entry of both tables without changing the
// shard (a growth in progress stays in progress). The shard must be
// locked.
func (s *shard) walk(fn func(e *entry)) {
	for _, table := range [][]*entry{s.old, s.buckets} {
		for _, e := range table {
			for ; e != nil; e = e.next {
				fn(e)
			}
		}
	}
}

// randomEntry returns a random entry of the shard, or nil if it is empty.
// The shard must be locked.
func (s *shard) randomEntry() *entry {
	if s.count == 0 || len(s.buckets) == 0 {
		return nil
	}
	s.finishRehash()
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

// presize gives an empty database's shards room for about n keys.
func (db *DB) presize(n uint64) {
	per := n / numShards
	if per < 4 || per > 1<<26 {
		return
	}
	b := 1 << bits.Len64(per) // above per: no growth at the expected count
	for i := range db.shards {
		if sh := &db.shards[i]; sh.count == 0 && len(sh.buckets) < b {
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
func (s *shard) setBuckets(nb []*entry) {
	s.buckets = nb
	if len(nb) == 0 {
		s.view.Store(nil)
		return
	}
	s.view.Store(&bucketView{base: unsafe.Pointer(&nb[0]), mask: uint64(len(nb) - 1)})
}
