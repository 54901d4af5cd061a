package value

import (
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// Dict is the large encoding shared by hashes ("hashtable") and sets
// ("hashtable"): a chained hash table with power-of-two buckets, like
// Redis's dict. It is used instead of a Go map because it offers what a map
// cannot: a SCAN cursor that survives growth and shrinking (reverse-binary
// bucket order, as dictScan) and cheap fair random elements (as
// dictGetFairRandomKey) for HRANDFIELD, SRANDMEMBER and SPOP, through a
// dense array of its nodes.
type Dict[V any] struct {
	// Buckets are the chains, indexed by BucketOf; read directly only by
	// the pipelined prefetch and SCAN-style walks.
	Buckets []*DictNode[V]
	count   int
	// dense holds every node once, in no particular order; a node knows
	// its position (idx) and a delete moves the last node into the hole.
	// It gives uniform random nodes in O(1) and cache-friendly iteration.
	dense []*DictNode[V]
}

// DictNode is one element of a Dict.
type DictNode[V any] struct {
	next *DictNode[V]
	// Key is the field or member; Val its value (struct{} for sets).
	Key string
	Val V
	idx uint32 // position in dense
	// Hash is the low 32 bits of DictHash(key): it picks the bucket (so a
	// resize never rehashes a key) and lets find skip most key compares.
	Hash uint32
}

// newChainDict returns a dict pre-sized for about n elements.
func newChainDict[V any](n int) *Dict[V] {
	d := &Dict[V]{}
	if n > 0 {
		d.Buckets = make([]*DictNode[V], dictSizeFor(n))
		d.dense = make([]*DictNode[V], 0, n)
	}
	return d
}

// dictSizeFor is the smallest power of two ≥ n (at least 4).
func dictSizeFor(n int) int {
	if n <= 4 {
		return 4
	}
	return 1 << bits.Len(uint(n-1))
}

func (d *Dict[V]) len() int { return d.count }

// BucketOf returns the index of the bucket for hash h (of DictHash).
func (d *Dict[V]) BucketOf(h uint32) int {
	return int(h & uint32(len(d.Buckets)-1))
}

// find returns key's node or nil.
func (d *Dict[V]) find(key string) *DictNode[V] {
	if d.count == 0 {
		return nil
	}
	return d.findHashed(key, DictHash(key))
}

func (d *Dict[V]) findHashed(key string, h uint32) *DictNode[V] {
	for n := d.Buckets[d.BucketOf(h)]; n != nil; n = n.next {
		if n.Hash == h && n.Key == key {
			return n
		}
	}
	return nil
}

// FindBytes is find without converting key to a string.
func (d *Dict[V]) FindBytes(key []byte) *DictNode[V] {
	return d.find(unsafe.String(unsafe.SliceData(key), len(key)))
}

// upsert returns key's node, inserting a zero-valued one (isNew) if absent.
// key must be an owned string (not aliasing a request buffer).
func (d *Dict[V]) upsert(key string) (n *DictNode[V], isNew bool) {
	h := DictHash(key)
	if d.count > 0 {
		if n := d.findHashed(key, h); n != nil {
			return n, false
		}
	}
	return d.insertHashed(key, h), true
}

// upsertBytes is upsert for a key that may alias a request buffer: it is
// copied only when inserted.
func (d *Dict[V]) upsertBytes(key []byte) (n *DictNode[V], isNew bool) {
	k := bstr(key)
	h := DictHash(k)
	if d.count > 0 {
		if n := d.findHashed(k, h); n != nil {
			return n, false
		}
	}
	return d.insertHashed(string(key), h), true
}

// insertHashed adds key, which must be absent and owned, with hash h.
func (d *Dict[V]) insertHashed(key string, h uint32) *DictNode[V] {
	if d.count >= len(d.Buckets) {
		d.resize(max(4, len(d.Buckets)*2))
	}
	i := d.BucketOf(h)
	n := &DictNode[V]{next: d.Buckets[i], Key: key, Hash: h}
	d.Buckets[i] = n
	d.count++
	n.idx = uint32(len(d.dense))
	d.dense = append(d.dense, n)
	return n
}

// remove deletes key and reports whether it was present.
func (d *Dict[V]) remove(key string) (V, bool) {
	var zero V
	if d.count == 0 {
		return zero, false
	}
	h := DictHash(key)
	i := d.BucketOf(h)
	var prev *DictNode[V]
	for n := d.Buckets[i]; n != nil; n = n.next {
		if n.Hash == h && n.Key == key {
			if prev == nil {
				d.Buckets[i] = n.next
			} else {
				prev.next = n.next
			}
			d.count--
			d.removeDense(n)
			d.maybeShrink()
			return n.Val, true
		}
		prev = n
	}
	return zero, false
}

// removeNode deletes n, a node of d.
func (d *Dict[V]) removeNode(n *DictNode[V]) {
	i := d.BucketOf(n.Hash)
	if d.Buckets[i] == n {
		d.Buckets[i] = n.next
	} else {
		p := d.Buckets[i]
		for p.next != n {
			p = p.next
		}
		p.next = n.next
	}
	d.count--
	d.removeDense(n)
	d.maybeShrink()
}

// maybeShrink halves the table while it is less than 10% full, as Redis's
// htNeedsResize/dictResize do after deletions.
func (d *Dict[V]) maybeShrink() {
	if len(d.Buckets) > 4 && d.count*10 < len(d.Buckets) {
		d.resize(dictSizeFor(max(d.count, 4)))
	}
}

func (d *Dict[V]) resize(size int) {
	nb := make([]*DictNode[V], size)
	mask := uint32(size - 1)
	for _, n := range d.Buckets {
		for n != nil {
			next := n.next
			i := n.Hash & mask
			n.next = nb[i]
			nb[i] = n
			n = next
		}
	}
	d.Buckets = nb
}

// removeDense takes n out of dense, moving the last node into its place,
// and gives memory back when dense is mostly empty.
func (d *Dict[V]) removeDense(n *DictNode[V]) {
	last := len(d.dense) - 1
	m := d.dense[last]
	d.dense[n.idx] = m
	m.idx = n.idx
	d.dense[last] = nil
	d.dense = d.dense[:last]
	if cap(d.dense) > 64 && len(d.dense) < cap(d.dense)/4 {
		nd := make([]*DictNode[V], len(d.dense), len(d.dense)*2)
		copy(nd, d.dense)
		d.dense = nd
	}
}

// ForEach visits every node until fn returns false. fn must not modify d.
func (d *Dict[V]) ForEach(fn func(n *DictNode[V]) bool) {
	for _, n := range d.dense {
		if !fn(n) {
			return
		}
	}
}

// Scan visits the bucket at cursor and returns the next cursor (0 when
// done). Cursors walk bucket indexes in reverse-binary order so that an
// element present for the whole scan is returned at least once even if the
// table grows or shrinks between calls.
func (d *Dict[V]) Scan(cursor uint64, fn func(n *DictNode[V])) uint64 {
	if len(d.Buckets) == 0 {
		return 0
	}
	mask := uint64(len(d.Buckets) - 1)
	for n := d.Buckets[cursor&mask]; n != nil; n = n.next {
		fn(n)
	}
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

// ScanCount is the scan loop of Redis's scanGenericCommand for a
// hashtable-encoded collection: it visits buckets from cursor until count
// elements were seen or count*10 buckets were looked at, and returns the
// next cursor.
func (d *Dict[V]) ScanCount(cursor uint64, count int, fn func(n *DictNode[V])) uint64 {
	seen := 0
	visit := func(n *DictNode[V]) { seen++; fn(n) }
	for iter := count * 10; ; iter-- {
		cursor = d.Scan(cursor, visit)
		if cursor == 0 || iter <= 0 || seen >= count {
			return cursor
		}
	}
}

// RandomNode returns a uniformly random node (nil if empty) in O(1), from
// the dense array: fairer than Redis's dictGetFairRandomKey, which samples
// neighbouring buckets.
func (d *Dict[V]) RandomNode() *DictNode[V] {
	if len(d.dense) == 0 {
		return nil
	}
	return d.dense[rand.IntN(len(d.dense))]
}

// memUsage estimates the bytes the table uses: buckets, nodes and keys.
// Like Redis's MEMORY USAGE it samples a few nodes and extrapolates, so the
// cost does not grow with the size of the table.
func (d *Dict[V]) memUsage(valBytes func(V) int) int64 {
	const samples = 16
	var sz int64 = 56 + int64(len(d.Buckets))*8 + int64(cap(d.dense))*8
	var sampled, bytes int64
	d.ForEach(func(n *DictNode[V]) bool {
		bytes += int64(unsafe.Sizeof(*n)) + int64(len(n.Key))
		if valBytes != nil {
			bytes += int64(valBytes(n.Val))
		}
		sampled++
		return sampled < samples
	})
	if sampled > 0 {
		sz += bytes * int64(d.count) / sampled
	}
	return sz
}
