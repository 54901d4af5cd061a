package node

// Point-in-time snapshots without fork (docs/PERSISTENCE.md, "How a
// snapshot is taken").
//
// A snapshot opens with every shard lock held, which fixes its point in
// time; no data is copied then. Each non-empty shard is then copied in
// chunks of chunkBuckets buckets, each chunk exactly once, under the
// shard's lock, by whoever needs it first:
//
//   - the snapshot writer, walking shards and their chunks in order;
//   - a write command, for the chunks holding its keys (snapGuardKeys,
//     called by the dispatcher once the command holds its locks);
//   - shard.insert and shard.remove, for the chunk of the key they add or
//     unlink (this covers the paths outside the dispatcher: active and
//     lazy expiry, eviction, loading);
//   - code that changes a shard wholesale (FLUSHDB, SWAPDB, DEBUG RELOAD,
//     a replica's load, commands that lock every shard, blocked clients
//     being served), through snapGuard, for every chunk not copied yet.
//
// A key's chunk is fixed while a snapshot has its shard pending: the shard
// does not grow or shrink meanwhile (shard.mayGrow), so a key never moves
// between buckets. A shard that was in the middle of a growth (two tables)
// when the snapshot opened is copied as one chunk, whole, on first touch.
// A change to a chunk therefore always comes after the chunk's copy, and
// the file holds the dataset as it was when the snapshot opened, while no
// client pays for more than a chunk (about 250 keys, tens of
// microseconds) per key it writes.

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shardis/shardis/internal/rdb"
)

// chunkBuckets is the number of buckets copied together (about as many
// keys: a shard has at most one key per bucket on average when it is not
// frozen). A copy costs ~110 ns per string key.
const chunkBuckets = 256

const (
	shardPending = iota // some chunks are not copied yet; listed in shard.snaps
	shardCopied         // every chunk is copied
	shardDone           // the writer has taken every chunk
)

// snapshot is an open point-in-time view of the keyspace.
type snapshot struct {
	p      *persistence
	seq    int64
	opened time.Time
	nowMs  int64
	shards map[*shard]*shardCopy
	dbKeys []int64 // keys per db when opened
	dbExp  []int64
	aux    [][2]string
	// started is set by the writer, or by the timer that drops a snapshot
	// whose writer never came (whichever is first).
	started atomic.Bool
	closed  atomic.Bool
	// pending counts the shards still listed in their shard.snaps (not
	// every chunk copied); close unlists them.
	pending atomic.Int64
	// allCopied is set when every shard was copied at opening (SAVE under
	// all locks): the writer then reads copies without locking.
	allCopied bool
	limits    rdb.Limits
	lru       string // "lru", "lfu" or "": what per-key metadata to write
	// background is set for BGSAVE's snapshots: the writer then gives way
	// to clients (pace).
	background bool
}

// shardCopy is one shard's copy in one snapshot. Its fields are guarded
// by the shard's lock (the writer reads a snapshot with allCopied
// without it: nothing else touches it then).
type shardCopy struct {
	sn    *snapshot
	sh    *shard
	db    int
	state int
	// whole is set for a shard that was growing when the snapshot opened:
	// its one chunk is the whole shard (both tables).
	whole bool
	// nb is the number of buckets when the snapshot opened (fixed while
	// pending).
	nb int
	// chunks[k] is chunk k's copy until the writer takes it (nil for a
	// chunk without keys); copied[k] says whether chunk k was copied.
	chunks []*snapBuf
	copied []bool
	left   int // chunks not copied yet
}

// snapBuf is a copy of some keys, built for a cheap copy under the shard
// lock and little GC work: keys and string values are copied into one
// arena and described by pointer-free records, so a copy is a few
// allocations the collector does not scan (only cloned collections hold
// pointers). Buffers are recycled through snapBufs once encoded:
// back-to-back saves allocate next to nothing.
type snapBuf struct {
	recs  []snapRec
	arena []byte
	objs  []typedValue
	ents  []*entry // copyBuckets' scratch, kept empty
	// sink keeps copyBuckets' touching loads from being optimised away
	// (per buffer: copies of different shards run concurrently).
	sink byte
}

// snapRec is one key of a snapBuf.
type snapRec struct {
	off    int64 // the key's bytes start at arena[off]; a string's value follows
	vlen   int64 // a string value's length
	expire int64
	klen   uint32
	lru    uint32
	obj    int32 // 1 + index in objs for a collection, 0 for a string
}

var snapBufs = sync.Pool{New: func() any { return new(snapBuf) }}

// release recycles b (small enough buffers only).
func (b *snapBuf) release() {
	if b == nil {
		return
	}
	clear(b.objs)
	b.recs, b.arena, b.objs = b.recs[:0], b.arena[:0], b.objs[:0]
	if cap(b.arena) <= 64<<20 && cap(b.recs) <= 1<<20 {
		snapBufs.Put(b)
	}
}

// entry fills se with key k of b; se's key and value alias b.
func (b *snapBuf) entry(k int, se *snapEntry) {
	r := &b.recs[k]
	kb := b.arena[r.off : r.off+int64(r.klen)]
	se.key = unsafe.String(unsafe.SliceData(kb), len(kb))
	se.expire, se.lru, se.str, se.obj = r.expire, r.lru, nil, nil
	if r.obj != 0 {
		se.obj = b.objs[r.obj-1]
	} else {
		end := r.off + int64(r.klen) + r.vlen
		se.str = b.arena[r.off+int64(r.klen) : end : end]
	}
}

// snapEntry is one key as the encoders read it.
type snapEntry struct {
	key    string
	str    []byte
	obj    typedValue
	expire int64
	lru    uint32
}

// register lists a new snapshot's copy of sh (every shard lock held).
func (sn *snapshot) register(sh *shard, db int) {
	sc := &shardCopy{sn: sn, sh: sh, db: db, state: shardCopied}
	sn.shards[sh] = sc
	if sh.count == 0 {
		return // nothing to copy: the writer skips it
	}
	n := 1
	if sh.old != nil {
		sc.whole = true
	} else {
		sc.nb = len(sh.buckets)
		n = max(1, sc.nb/chunkBuckets)
	}
	sc.state, sc.left = shardPending, n
	sc.chunks = make([]*snapBuf, n)
	sc.copied = make([]bool, n)
	sh.snaps = append(sh.snaps, sc)
	sn.pending.Add(1)
}

// chunkOf returns the chunk holding hash h.
func (sc *shardCopy) chunkOf(h uint64) int {
	if sc.whole {
		return 0
	}
	return int(h&uint64(sc.nb-1)) / chunkBuckets
}

// copyChunk copies chunk k (not copied yet); the shard is locked. When it
// was the last one, the shard is unlisted: it may grow again.
func (sc *shardCopy) copyChunk(k int) {
	sh := sc.sh
	var b *snapBuf
	if sc.whole {
		sh.finishRehash()
		b = copyBuckets(sh.buckets, sh.count)
	} else {
		if len(sh.buckets) != sc.nb {
			// Growth and shrinking wait while the shard is pending: a
			// change of size would move keys between chunks.
			panic("node: a snapshot's pending shard was resized")
		}
		lo := k * chunkBuckets
		b = copyBuckets(sh.buckets[lo:min(lo+chunkBuckets, sc.nb)], 2*chunkBuckets)
	}
	sc.chunks[k], sc.copied[k] = b, true
	if sc.left--; sc.left == 0 {
		sc.unlist()
		sc.state = shardCopied
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

// copyRest copies every chunk of sc not copied yet; the shard is locked.
func (sc *shardCopy) copyRest() {
	for k := range sc.copied {
		if sc.state != shardPending {
			return
		}
		if !sc.copied[k] {
			sc.copyChunk(k)
		}
	}
}

// snapTouch copies, into every snapshot that has s pending, the chunk
// holding hash h: the key is about to change, be added or be removed. The
// shard is locked.
func (s *shard) snapTouch(h uint64) {
	for i := 0; i < len(s.snaps); {
		sc := s.snaps[i]
		if k := sc.chunkOf(h); !sc.copied[k] {
			sc.copyChunk(k)
			if sc.state != shardPending {
				continue // unlisted: s.snaps[i] is another one now
			}
		}
		i++
	}
}

// snapCopyAll completes every open snapshot's copy of s; the shard is
// locked.
func (s *shard) snapCopyAll() {
	for len(s.snaps) > 0 {
		s.snaps[0].copyRest()
	}
}

// copyBuckets copies the entries of buckets (about want of them) into a
// buffer from the pool.
//
// Clients pay for this copy when they touch a chunk first, so it is built
// for speed: the entries are gathered first, then copied in groups whose
// key and value bytes are touched in one tight loop of independent loads
// beforehand, so their cache misses overlap instead of coming one after
// another (as perf_prefetch.go does for pipelines).
func copyBuckets(buckets []*entry, want int) *snapBuf {
	b := snapBufs.Get().(*snapBuf)
	ents := b.ents[:0]
	if cap(ents) < want {
		ents = make([]*entry, 0, want)
	}
	size := 0
	for _, e := range buckets {
		for ; e != nil; e = e.next {
			ents = append(ents, e)
			size += len(e.key) + len(e.str)
		}
	}
	if len(ents) == 0 {
		b.ents = ents
		b.release()
		return nil
	}
	if cap(b.recs) < len(ents) {
		b.recs = make([]snapRec, 0, len(ents))
	}
	if cap(b.arena) < size {
		b.arena = make([]byte, 0, size)
	}
	const group = 16
	var sink byte
	for i := 0; i < len(ents); i += group {
		g := ents[i:min(i+group, len(ents))]
		for _, e := range g {
			if len(e.str) > 0 {
				sink ^= e.str[0]
			}
			sink ^= e.key[0]
		}
		for _, e := range g {
			r := snapRec{off: int64(len(b.arena)), expire: e.expire, klen: uint32(len(e.key)), lru: e.lru}
			if e.obj == nil {
				b.arena = append(append(b.arena, e.key...), e.str...)
				r.vlen = int64(len(e.str))
			} else if tv, ok := e.obj.(typedValue); ok {
				b.arena = append(b.arena, e.key...)
				b.objs = append(b.objs, tv.clone())
				r.obj = int32(len(b.objs))
			} else {
				continue
			}
			b.recs = append(b.recs, r)
		}
	}
	b.sink += sink
	clear(ents)
	b.ents = ents[:0]
	return b
}

// openLocked opens a snapshot. Every shard lock must be held.
func (p *persistence) openLocked() *snapshot {
	s := p.srv
	sn := &snapshot{p: p, seq: p.snapSeq.Add(1), opened: time.Now(), shards: make(map[*shard]*shardCopy, len(s.dbs)*numShards)}
	sn.nowMs = sn.opened.UnixMilli()
	for i, db := range s.dbs {
		sn.dbKeys = append(sn.dbKeys, db.size())
		sn.dbExp = append(sn.dbExp, db.expires.Load())
		for j := range db.shards {
			sn.register(&db.shards[j], i)
		}
	}
	sn.limits = rdb.Limits{
		HashEntries: int(s.cfg.Int("hash-max-listpack-entries")), HashValue: int(s.cfg.Int("hash-max-listpack-value")),
		ZSetEntries: int(s.cfg.Int("zset-max-listpack-entries")), ZSetValue: int(s.cfg.Int("zset-max-listpack-value")),
		SetIntsetEntries: int(s.cfg.Int("set-max-intset-entries")), ListNodeBytes: 8192,
	}
	switch pol := s.cfg.Get("maxmemory-policy"); {
	case strings.HasSuffix(pol, "-lru"):
		sn.lru = "lru"
	case strings.HasSuffix(pol, "-lfu"):
		sn.lru = "lfu"
	}
	sn.aux = p.auxFields(sn.opened)
	p.snapMu.Lock()
	old := *p.snaps.Load()
	nw := append(append([]*snapshot(nil), old...), sn)
	p.snaps.Store(&nw)
	p.snapMu.Unlock()
	// A snapshot whose writer never runs (a replica that went away before
	// the transfer) must not keep its shards frozen and copied forever.
	time.AfterFunc(2*time.Minute, func() {
		if sn.started.CompareAndSwap(false, true) {
			sn.close()
		}
	})
	return sn
}

// close unregisters the snapshot; shards it has not copied yet are
// unlisted (their copies dropped).
func (sn *snapshot) close() {
	if sn.closed.Swap(true) {
		return
	}
	p := sn.p
	p.snapMu.Lock()
	old := *p.snaps.Load()
	nw := make([]*snapshot, 0, len(old))
	for _, o := range old {
		if o != sn {
			nw = append(nw, o)
		}
	}
	p.snaps.Store(&nw)
	p.snapMu.Unlock()
	if sn.pending.Load() == 0 {
		return // a completed save (or SAVE, which copied everything)
	}
	for sh, sc := range sn.shards {
		sh.mu.Lock()
		if sc.state == shardPending {
			sc.unlist()
		}
		sc.state = shardDone
		for k, b := range sc.chunks {
			b.release()
			sc.chunks[k] = nil
		}
		sh.mu.Unlock()
	}
}

// snapGuard completes, in every open snapshot, the copies of the held
// shards: the caller may change anything in them (commands that lock a
// whole database or every shard, blocked clients being served, loads).
func (s *Server) snapGuard(held []*sync.Mutex) {
	for _, m := range held {
		// mu is shard's first field: the mutex's address is the shard's.
		sh := (*shard)(unsafe.Pointer(m))
		if len(sh.snaps) != 0 {
			sh.snapCopyAll()
		}
	}
}

// snapOpen reports whether a snapshot is open (a cheap check before
// snapGuardKeys).
func (s *Server) snapOpen() bool {
	return s.persist != nil && len(*s.persist.snaps.Load()) != 0
}

// snapGuardKeys copies, in every open snapshot, the chunks holding the
// keys of a write command about to run (its locks are held, in the
// client's current database). The dispatcher calls it for write commands
// while a snapshot is open; commands that lock whole databases were
// guarded when they locked.
func (c *Client) snapGuardKeys(cmd *command, args [][]byte) {
	if cmd.flags&(flagLockAll|flagLockDB) != 0 {
		return
	}
	db := c.srv.dbs[c.db]
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				db.snapTouchKey(bstr(args[p]))
			}
		}
		return
	}
	if cmd.first <= 0 {
		return
	}
	last := cmd.last
	if last < 0 {
		last = len(args) + last
	}
	last = min(last, len(args)-1)
	for i := cmd.first; i <= last; i += max(cmd.step, 1) {
		db.snapTouchKey(bstr(args[i]))
	}
}

// snapTouchKey copies the chunk holding key, if its shard is pending in a
// snapshot. The key's shard must be locked.
func (db *DB) snapTouchKey(key string) {
	sh := &db.shards[shardOf(key)]
	if len(sh.snaps) != 0 {
		sh.snapTouch(keyHash(key))
	}
}

// copyAllLocked copies every pending shard now; every shard lock must be
// held. The writer then reads the copies without locking.
func (sn *snapshot) copyAllLocked() {
	for _, sc := range sn.shards {
		if sc.state == shardPending {
			sc.copyRest()
		}
	}
	sn.allCopied = true
}

// takeChunk returns chunk k of sh's copy (copying it first if needed; nil
// when it has no keys) and whether the shard has more chunks. The caller
// releases the buffer once it is encoded.
func (sn *snapshot) takeChunk(sh *shard, k int) (*snapBuf, bool) {
	sc := sn.shards[sh]
	if !sn.allCopied {
		sh.mu.Lock()
		defer sh.mu.Unlock()
	}
	if k >= len(sc.chunks) {
		return nil, false
	}
	if sc.state == shardPending && !sc.copied[k] {
		sc.copyChunk(k)
	}
	b := sc.chunks[k]
	sc.chunks[k] = nil
	more := k+1 < len(sc.chunks)
	if !more && !sn.allCopied {
		sc.state = shardDone
	}
	return b, more
}

// forEachChunk passes the copies of sh's chunks, in order, to fn, and
// releases each once fn returns.
func (sn *snapshot) forEachChunk(sh *shard, fn func(b *snapBuf) error) error {
	for k, more := 0, true; more; k++ {
		var b *snapBuf
		b, more = sn.takeChunk(sh, k)
		if b == nil {
			continue
		}
		err := fn(b)
		b.release()
		if err != nil {
			return err
		}
	}
	return nil
}
