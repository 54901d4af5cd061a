package keyspace

// Point-in-time snapshots without fork (docs/PERSISTENCE.md, "How a
// snapshot is taken").
//
// A snapshot opens with every shard lock held, which fixes its point in
// time; no data is copied then. Each non-empty shard is then copied bucket
// by bucket (a bucket is one hash chain), each bucket exactly once, under
// the shard's lock, by whoever needs it first:
//
//   - a write command, for the buckets of its keys (snapGuardKeys, called
//     by the dispatcher once the command holds its locks);
//   - shard.insert and shard.remove, for the bucket of the key they add or
//     unlink (this covers the paths outside the dispatcher: active and
//     lazy expiry, eviction, loading);
//   - code that changes a shard wholesale (FLUSHDB, SWAPDB, DEBUG RELOAD,
//     a replica's load, commands that lock every shard, blocked clients
//     being served), through snapGuard, for every bucket not copied yet;
//   - the snapshot writer, for all the others, walking each shard in
//     chunks of ChunkBuckets buckets (one lock hold per chunk).
//
// What clients copy goes to the shard copy's side buffer, which the writer
// takes and encodes at each chunk; what the writer copies it encodes at
// once. So a write pays for about the keys it writes (its bucket's chain,
// usually one key), and the rest of the copy is the writer's, which
// releases each chunk's buffer once encoded (recycled: a save allocates
// little).
//
// A key's bucket is fixed while a snapshot has its shard pending: the
// shard does not grow or shrink meanwhile (shard.mayGrow), so a key never
// moves between buckets. A shard that was in the middle of a growth (two
// tables) when the snapshot opened is copied whole on first touch. A
// change to a bucket therefore always comes after the bucket's copy, and
// the file holds the dataset as it was when the snapshot opened.

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shardis/shardis/internal/node/value"
)

// Snapshot is an open point-in-time view of a keyspace: the copy-on-write
// state of every shard it covers. A snapshot writer walks it with
// ForEachChunk.
type Snapshot struct {
	shards map[*Shard]*shardCopy
	// pending counts the shards still listed in their shard.snaps (not
	// every bucket copied); release unlists them.
	pending atomic.Int64
	// allCopied is set when every shard was copied at opening (SAVE under
	// all locks): the writer then reads copies without locking.
	allCopied bool
	// Background is set for BGSAVE's snapshots: the writer then keeps the
	// side block pool topped up between chunks (its allocations, not a
	// client's).
	Background bool
}

// OpenSnapshot opens a view of dbs. Every shard lock of dbs must be held.
func OpenSnapshot(dbs []*DB) *Snapshot {
	k := &Snapshot{shards: make(map[*Shard]*shardCopy, len(dbs)*NumShards)}
	for i, db := range dbs {
		for j := range db.Shards {
			k.register(&db.Shards[j], i)
		}
	}
	return k
}

// Release unlists the shards not copied yet (their copies are dropped)
// and frees the side buffers: the view is closed. Takes each shard lock.
func (k *Snapshot) Release() {
	if k.pending.Load() == 0 {
		return // a completed save (or SAVE, which copied everything)
	}
	for sh, sc := range k.shards {
		sh.Mu.Lock()
		if sc.state == shardPending {
			sc.unlist()
		}
		sc.state = shardDone
		releaseChain(sc.side)
		sc.side = nil
		sh.Mu.Unlock()
	}
}

// ReleaseSides frees every shard copy's side buffer (after CopyAllLocked,
// for a view whose writer will not run).
func (k *Snapshot) ReleaseSides() {
	for _, sc := range k.shards {
		releaseChain(sc.side)
		sc.side = nil
	}
}

// SideBlocks returns how many side blocks sh's copy holds and the
// smallest and largest arena capacities among them (-1 if none). sh must
// be locked.
func (k *Snapshot) SideBlocks(sh *Shard) (blocks, minArena, maxArena int) {
	minArena, maxArena = -1, -1
	for b := k.shards[sh].side; b != nil; b = b.older {
		blocks++
		c := cap(b.arena)
		if minArena < 0 || c < minArena {
			minArena = c
		}
		maxArena = max(maxArena, c)
	}
	return blocks, minArena, maxArena
}

// SnapGuard completes, in every open snapshot, the copies of the
// shards whose mutexes are held: the caller may change anything in them.
func SnapGuard(held []*sync.Mutex) {
	for _, m := range held {
		// mu is shard's first field: the mutex's address is the shard's.
		sh := (*Shard)(unsafe.Pointer(m))
		if len(sh.snaps) != 0 {
			sh.snapCopyAll()
		}
	}
}

// PendingSnapshots returns how many open snapshots have not copied all
// of s yet. s must be locked.
func (s *Shard) PendingSnapshots() int { return len(s.snaps) }

// KeyCopied reports whether the first pending snapshot of s has copied
// the bucket of key. s must be locked and pending.
func (s *Shard) KeyCopied(key string) bool {
	sc := s.snaps[0]
	return sc.isCopied(sc.bucketOf(KeyHash(key)))
}

// BucketCopied reports whether the first pending snapshot of s has copied
// bucket i. s must be locked and pending.
func (s *Shard) BucketCopied(i int) bool { return s.snaps[0].isCopied(i) }

// Len returns the number of keys in b.
func (b *SnapBuf) Len() int { return len(b.recs) }

// ChunkBuckets is the number of buckets the writer copies under one hold
// of a shard lock (about as many keys: a shard has at most one key per
// bucket on average when it is not frozen). A copy costs ~110 ns per
// string key, so a hold is ~25 µs at most.
const ChunkBuckets = 256

const (
	shardPending = iota // some buckets are not copied yet; listed in shard.snaps
	shardCopied         // every bucket is copied
	shardDone           // the writer has taken everything
)

// shardCopy is one shard's copy in one snapshot. Its fields are guarded
// by the shard's lock (the writer reads a snapshot with allCopied
// without it: nothing else touches it then).
type shardCopy struct {
	sn    *Snapshot
	sh    *Shard
	db    int
	state int
	// whole is set for a shard that was growing when the snapshot opened:
	// it is copied as one unit (bucket 0 stands for both tables).
	whole bool
	// nb is the number of buckets when the snapshot opened (fixed while
	// pending; 1 for a whole copy, 0 for an empty shard).
	nb int
	// copied has bit i set once bucket i is copied.
	copied []uint64
	left   int // buckets not copied yet
	// side holds what writes and snapGuard copied since the writer last
	// took it (nil: nothing): the newest of a chain of blocks (sideBuf).
	side *SnapBuf
}

// SnapBuf is a copy of some keys, built for a cheap copy under the shard
// lock and little GC work: keys and string values are copied into one
// arena and described by pointer-free records, so a copy is a few
// allocations the collector does not scan (only cloned collections hold
// pointers). Buffers are recycled through snapBufs once encoded:
// back-to-back saves allocate next to nothing.
type SnapBuf struct {
	recs  []snapRec
	arena []byte
	objs  []value.Value
	// ents and size are gather's scratch (flush empties ents).
	ents []*Entry
	size int
	// sink keeps flush's touching loads from being optimised away (per
	// buffer: copies of different shards run concurrently).
	sink byte
	// older chains a shard copy's side blocks, newest first.
	older *SnapBuf
}

// snapRec is one key of a SnapBuf.
type snapRec struct {
	off    int64 // the key's bytes start at arena[off]; a string's value follows
	vlen   int64 // a string value's length
	expire int64
	klen   uint32
	lru    uint32
	obj    int32 // 1 + index in objs for a collection, 0 for a string
}

var snapBufs = sync.Pool{New: func() any { return new(SnapBuf) }}

// release recycles b (small enough buffers only).
func (b *SnapBuf) release() {
	if b == nil {
		return
	}
	clear(b.objs)
	b.recs, b.arena, b.objs = b.recs[:0], b.arena[:0], b.objs[:0]
	if cap(b.arena) <= 64<<20 && cap(b.recs) <= 1<<20 {
		snapBufs.Put(b)
	}
}

// Entry fills se with key k of b; se's key and value alias b.
func (b *SnapBuf) Entry(k int, se *SnapEntry) {
	r := &b.recs[k]
	kb := b.arena[r.off : r.off+int64(r.klen)]
	se.Key = unsafe.String(unsafe.SliceData(kb), len(kb))
	se.Expire, se.LRU, se.Str, se.Obj = r.expire, r.lru, nil, nil
	if r.obj != 0 {
		se.Obj = b.objs[r.obj-1]
	} else {
		end := r.off + int64(r.klen) + r.vlen
		se.Str = b.arena[r.off+int64(r.klen) : end : end]
	}
}

// SnapEntry is one key as the encoders read it.
type SnapEntry struct {
	Key    string      // the key
	Str    []byte      // a string's value (nil for a collection)
	Obj    value.Value // a collection's deep copy (nil for a string)
	Expire int64       // absolute unix ms, 0: none
	LRU    uint32      // the entry's LRU/LFU data
}

// register lists a new snapshot's copy of sh (every shard lock held).
func (sn *Snapshot) register(sh *Shard, db int) {
	sc := &shardCopy{sn: sn, sh: sh, db: db, state: shardCopied}
	sn.shards[sh] = sc
	if sh.count == 0 {
		return // nothing to copy: the writer skips it
	}
	if sh.old != nil {
		sc.whole, sc.nb = true, 1
	} else {
		sc.nb = len(sh.buckets)
	}
	sc.state, sc.left = shardPending, sc.nb
	sc.copied = make([]uint64, (sc.nb+63)/64)
	sh.snaps = append(sh.snaps, sc)
	sn.pending.Add(1)
}

// bucketOf returns the bucket holding hash h.
func (sc *shardCopy) bucketOf(h uint64) int {
	if sc.whole {
		return 0
	}
	return int(h & uint64(sc.nb-1))
}

// isCopied reports whether bucket i is copied.
func (sc *shardCopy) isCopied(i int) bool {
	return sc.copied[i>>6]&(1<<(i&63)) != 0
}

// chunks is the number of chunks the writer walks.
func (sc *shardCopy) chunks() int {
	return (sc.nb + ChunkBuckets - 1) / ChunkBuckets
}

// gatherBucket adds bucket i (not copied yet) to b's pending entries and
// marks it copied; the shard is locked. When it was the last one, the
// shard is unlisted: it may resize again.
func (sc *shardCopy) gatherBucket(b *SnapBuf, i int) {
	sh := sc.sh
	if sc.whole {
		sh.FinishRehash()
		for _, e := range sh.buckets {
			b.gather(e)
		}
	} else {
		if len(sh.buckets) != sc.nb {
			// Growth and shrinking wait while the shard is pending: a
			// change of size would move keys between buckets.
			panic("node: a snapshot's pending shard was resized")
		}
		b.gather(sh.buckets[i])
	}
	sc.copied[i>>6] |= 1 << (i & 63)
	if sc.left--; sc.left == 0 {
		sc.unlist()
		sc.state = shardCopied
	}
}

// copyBucket copies bucket i (not copied yet) into the side buffer; the
// shard is locked.
func (sc *shardCopy) copyBucket(i int) {
	if !sc.whole && sc.sh.buckets[i] == nil {
		sc.gatherBucket(nil, i) // nothing to copy: just mark it
		return
	}
	b := sc.sideBuf()
	sc.gatherBucket(b, i)
	b.flush()
}

// Side buffers are chains of blocks of a fixed size (SideArena bytes of
// keys and values, SideRecs records), so a client's copy never grows a
// buffer by reallocating it: a doubling of a shard's side buffer (up to
// hundreds of kB while the writer had not reached the shard) copied it
// and faulted in fresh pages under the shard lock, 0.1-2 ms for the one
// client that hit it (scripts/bench-bgsave.sh, 2026-11-30: ~170 such
// stalls per save of 1M keys).
const (
	// SideArena is a side block's bytes of keys and values.
	SideArena = 16 << 10
	// SideRecs is a side block's number of records.
	SideRecs = 256
	// sideSlack is the room a block must have left to take another
	// bucket (usually one small key); a bigger bucket grows the block.
	sideSlack = 1 << 10
)

// sideBuf returns the side block to copy into, starting a new one when
// the current one is nearly full; the shard is locked.
func (sc *shardCopy) sideBuf() *SnapBuf {
	b := sc.side
	if b != nil && cap(b.arena)-len(b.arena) >= sideSlack && cap(b.recs)-len(b.recs) >= 4 {
		return b
	}
	var nb *SnapBuf
	select {
	case nb = <-sideFree:
	default:
		nb = newSideBlock()
	}
	nb.older = b
	sc.side = nb
	return nb
}

// sideFree holds side blocks made ready by the writer (topUpSide), so
// that clients rarely allocate one: a fresh block's pages fault in on
// first use, 0.1-0.3 ms on this project's VM, under the shard lock.
var sideFree = make(chan *SnapBuf, 64)

// newSideBlock returns an empty side block with its full capacity.
func newSideBlock() *SnapBuf {
	b := snapBufs.Get().(*SnapBuf)
	if cap(b.arena) < SideArena {
		b.arena = make([]byte, 0, SideArena)
	}
	if cap(b.recs) < SideRecs {
		b.recs = make([]snapRec, 0, SideRecs)
	}
	return b
}

// topUpSide refills sideFree to half its capacity; the writer calls it
// between chunks, so the allocations are its own and not a client's.
func topUpSide() {
	for len(sideFree) < cap(sideFree)/2 {
		select {
		case sideFree <- newSideBlock():
		default:
			return
		}
	}
}

// releaseChain recycles b and the older blocks chained behind it.
func releaseChain(b *SnapBuf) {
	for b != nil {
		next := b.older
		b.older = nil
		b.release()
		b = next
	}
}

// unlist removes sc from its shard's open snapshots.
func (sc *shardCopy) unlist() {
	sh := sc.sh
	for i, o := range sh.snaps {
		if o == sc {
			last := len(sh.snaps) - 1
			sh.snaps[i] = sh.snaps[last]
			sh.snaps[last] = nil
			sh.snaps = sh.snaps[:last]
			break
		}
	}
	if len(sh.snaps) == 0 {
		sh.snaps = nil
	}
	sc.sn.pending.Add(-1)
}

// copyRange gathers every bucket of [lo, hi) not copied yet into b (nil:
// the side buffer, bucket by bucket) and returns b; the shard is locked.
func (sc *shardCopy) copyRange(b *SnapBuf, lo, hi int) *SnapBuf {
	for w := lo >> 6; w<<6 < hi && sc.state == shardPending; w++ {
		free := ^sc.copied[w]
		for free != 0 && sc.state == shardPending {
			i := w<<6 | bits.TrailingZeros64(free)
			free &= free - 1
			if i < lo || i >= hi {
				continue
			}
			if b == nil {
				sc.copyBucket(i)
			} else {
				sc.gatherBucket(b, i)
			}
		}
	}
	if b != nil {
		b.flush()
	}
	return b
}

// copyRest copies every bucket of sc not copied yet into the side buffer;
// the shard is locked.
func (sc *shardCopy) copyRest() {
	sc.copyRange(nil, 0, sc.nb)
}

// snapTouch copies, into every snapshot that has s pending, the bucket
// holding hash h: the key is about to change, be added or be removed. The
// shard is locked.
func (s *Shard) snapTouch(h uint64) {
	for i := 0; i < len(s.snaps); {
		sc := s.snaps[i]
		if k := sc.bucketOf(h); !sc.isCopied(k) {
			sc.copyBucket(k)
			if sc.state != shardPending {
				continue // unlisted: s.snaps[i] is another one now
			}
		}
		i++
	}
}

// snapCopyAll completes every open snapshot's copy of s; the shard is
// locked.
func (s *Shard) snapCopyAll() {
	for len(s.snaps) > 0 {
		s.snaps[0].copyRest()
	}
}

// gather adds the entries of chain e to b's pending entries.
func (b *SnapBuf) gather(e *Entry) {
	for ; e != nil; e = e.next {
		b.ents = append(b.ents, e)
		b.size += len(e.Key) + len(e.Str)
	}
}

// flush copies b's pending entries into its records and arena.
//
// Clients pay for the copies of what they touch first, and the writer
// copies under the shard lock, so this is built for speed: the key and
// value bytes of a group of entries are touched in one tight loop of
// independent loads beforehand, so their cache misses overlap instead of
// coming one after another (as perf_prefetch.go does for pipelines).
func (b *SnapBuf) flush() {
	ents := b.ents
	if len(ents) == 0 {
		return
	}
	if n := len(b.recs) + len(ents); cap(b.recs) < n {
		b.recs = append(make([]snapRec, 0, max(n, 2*cap(b.recs))), b.recs...)
	}
	if n := len(b.arena) + b.size; cap(b.arena) < n {
		b.arena = append(make([]byte, 0, max(n, 2*cap(b.arena))), b.arena...)
	}
	const group = 16
	var sink byte
	for i := 0; i < len(ents); i += group {
		g := ents[i:min(i+group, len(ents))]
		if len(g) > 1 {
			for _, e := range g {
				if len(e.Str) > 0 {
					sink ^= e.Str[0]
				}
				sink ^= e.Key[0]
			}
		}
		for _, e := range g {
			r := snapRec{off: int64(len(b.arena)), expire: e.Expire, klen: uint32(len(e.Key)), lru: e.LRU}
			if e.Obj == nil {
				b.arena = append(append(b.arena, e.Key...), e.Str...)
				r.vlen = int64(len(e.Str))
			} else if tv, ok := e.Obj.(value.Value); ok {
				b.arena = append(b.arena, e.Key...)
				b.objs = append(b.objs, tv.Clone())
				r.obj = int32(len(b.objs))
			} else {
				continue
			}
			b.recs = append(b.recs, r)
		}
	}
	b.sink += sink
	clear(ents)
	b.ents, b.size = ents[:0], 0
}

// SnapTouchKey copies the bucket holding key, if its shard is pending in a
// snapshot. The key's shard must be locked.
func (db *DB) SnapTouchKey(key string) {
	sh := &db.Shards[ShardOf(key)]
	if len(sh.snaps) != 0 {
		sh.snapTouch(KeyHash(key))
	}
}

// CopyAllLocked copies every pending shard now; every shard lock must be
// held. The writer then reads the copies without locking.
func (sn *Snapshot) CopyAllLocked() {
	for _, sc := range sn.shards {
		if sc.state == shardPending {
			sc.copyRest()
		}
	}
	sn.allCopied = true
}

// takeChunk copies what is left of chunk k of sh's copy and takes the
// side buffer (either may be nil), and reports whether the shard has more
// chunks. The caller releases the buffers once they are encoded.
func (sn *Snapshot) takeChunk(sh *Shard, k int) (own, side *SnapBuf, more bool) {
	sc := sn.shards[sh]
	if !sn.allCopied {
		sh.Mu.Lock()
		defer sh.Mu.Unlock()
	}
	n := sc.chunks()
	if k >= n {
		return nil, nil, false
	}
	if sc.state == shardPending {
		lo := k * ChunkBuckets
		own = sc.copyRange(snapBufs.Get().(*SnapBuf), lo, min(lo+ChunkBuckets, sc.nb))
		if len(own.recs) == 0 {
			own.release()
			own = nil
		}
	}
	side, sc.side = sc.side, nil
	more = k+1 < n
	if !more && !sn.allCopied {
		sc.state = shardDone
	}
	return own, side, more
}

// ForEachChunk passes the copies of sh's keys, a chunk at a time, to fn,
// and releases each once fn returns.
func (sn *Snapshot) ForEachChunk(sh *Shard, fn func(b *SnapBuf) error) error {
	for k, more := 0, true; more; k++ {
		if sn.Background {
			topUpSide()
		}
		own, side, m := sn.takeChunk(sh, k)
		more = m
		var err error
		if own != nil {
			err = fn(own)
			own.release()
		}
		for b := side; b != nil && err == nil; {
			if len(b.recs) != 0 {
				err = fn(b)
			}
			next := b.older
			b.older = nil
			b.release()
			b = next
			side = next
		}
		if err != nil {
			releaseChain(side)
			return err
		}
	}
	return nil
}
