package node

import (
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// chainDict is the large encoding shared by hashes ("hashtable") and sets
// ("hashtable"): a chained hash table with power-of-two buckets, like
// Redis's dict. It is used instead of a Go map because it offers what a map
// cannot: a SCAN cursor that survives growth and shrinking (reverse-binary
// bucket order, as dictScan) and cheap fair random elements (as
// dictGetFairRandomKey) for HRANDFIELD, SRANDMEMBER and SPOP, through a
// dense array of its nodes.
type chainDict[V any] struct {
	buckets []*dictNode[V]
	count   int
	// dense holds every node once, in no particular order; a node knows
	// its position (idx) and a delete moves the last node into the hole.
	// It gives uniform random nodes in O(1) and cache-friendly iteration.
	dense []*dictNode[V]
}

// dictNode is one element of a chainDict.
type dictNode[V any] struct {
	next *dictNode[V]
	key  string
	val  V
	idx  uint32 // position in dense
	// hash is the low 32 bits of keyHash(key): it picks the bucket (so a
	// resize never rehashes a key) and lets find skip most key compares.
	hash uint32
}

// newChainDict returns a dict pre-sized for about n elements.
func newChainDict[V any](n int) *chainDict[V] {
	d := &chainDict[V]{}
	if n > 0 {
		d.buckets = make([]*dictNode[V], dictSizeFor(n))
		d.dense = make([]*dictNode[V], 0, n)
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

func (d *chainDict[V]) len() int { return d.count }

// dictHash is the hash a chainDict keeps for key.
func dictHash(key string) uint32 { return uint32(keyHash(key)) }

func (d *chainDict[V]) bucketOf(h uint32) int {
	return int(h & uint32(len(d.buckets)-1))
}

// find returns key's node or nil.
func (d *chainDict[V]) find(key string) *dictNode[V] {
	if d.count == 0 {
		return nil
	}
	return d.findHashed(key, dictHash(key))
}

func (d *chainDict[V]) findHashed(key string, h uint32) *dictNode[V] {
	for n := d.buckets[d.bucketOf(h)]; n != nil; n = n.next {
		if n.hash == h && n.key == key {
			return n
		}
	}
	return nil
}

// findBytes is find without converting key to a string.
func (d *chainDict[V]) findBytes(key []byte) *dictNode[V] {
	return d.find(unsafe.String(unsafe.SliceData(key), len(key)))
}

// upsert returns key's node, inserting a zero-valued one (isNew) if absent.
// key must be an owned string (not aliasing a request buffer).
func (d *chainDict[V]) upsert(key string) (n *dictNode[V], isNew bool) {
	h := dictHash(key)
	if d.count > 0 {
		if n := d.findHashed(key, h); n != nil {
			return n, false
		}
	}
	return d.insertHashed(key, h), true
}

// upsertBytes is upsert for a key that may alias a request buffer: it is
// copied only when inserted.
func (d *chainDict[V]) upsertBytes(key []byte) (n *dictNode[V], isNew bool) {
	k := bstr(key)
	h := dictHash(k)
	if d.count > 0 {
		if n := d.findHashed(k, h); n != nil {
			return n, false
		}
	}
	return d.insertHashed(string(key), h), true
}

// insertHashed adds key, which must be absent and owned, with hash h.
func (d *chainDict[V]) insertHashed(key string, h uint32) *dictNode[V] {
	if d.count >= len(d.buckets) {
		d.resize(max(4, len(d.buckets)*2))
	}
	i := d.bucketOf(h)
	n := &dictNode[V]{next: d.buckets[i], key: key, hash: h}
	d.buckets[i] = n
	d.count++
	n.idx = uint32(len(d.dense))
	d.dense = append(d.dense, n)
	return n
}

// remove deletes key and reports whether it was present.
func (d *chainDict[V]) remove(key string) (V, bool) {
	var zero V
	if d.count == 0 {
		return zero, false
	}
	h := dictHash(key)
	i := d.bucketOf(h)
	var prev *dictNode[V]
	for n := d.buckets[i]; n != nil; n = n.next {
		if n.hash == h && n.key == key {
			if prev == nil {
				d.buckets[i] = n.next
			} else {
				prev.next = n.next
			}
			d.count--
			d.removeDense(n)
			d.maybeShrink()
			return n.val, true
		}
		prev = n
	}
	return zero, false
}

// removeNode deletes n, a node of d.
func (d *chainDict[V]) removeNode(n *dictNode[V]) {
	i := d.bucketOf(n.hash)
	if d.buckets[i] == n {
		d.buckets[i] = n.next
	} else {
		p := d.buckets[i]
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
func (d *chainDict[V]) maybeShrink() {
	if len(d.buckets) > 4 && d.count*10 < len(d.buckets) {
		d.resize(dictSizeFor(max(d.count, 4)))
	}
}

func (d *chainDict[V]) resize(size int) {
	nb := make([]*dictNode[V], size)
	mask := uint32(size - 1)
	for _, n := range d.buckets {
		for n != nil {
			next := n.next
			i := n.hash & mask
			n.next = nb[i]
			nb[i] = n
			n = next
		}
	}
	d.buckets = nb
}

// removeDense takes n out of dense, moving the last node into its place,
// and gives memory back when dense is mostly empty.
func (d *chainDict[V]) removeDense(n *dictNode[V]) {
	last := len(d.dense) - 1
	m := d.dense[last]
	d.dense[n.idx] = m
	m.idx = n.idx
	d.dense[last] = nil
	d.dense = d.dense[:last]
	if cap(d.dense) > 64 && len(d.dense) < cap(d.dense)/4 {
		nd := make([]*dictNode[V], len(d.dense), len(d.dense)*2)
		copy(nd, d.dense)
		d.dense = nd
	}
}

// forEach visits every node until fn returns false. fn must not modify d.
func (d *chainDict[V]) forEach(fn func(n *dictNode[V]) bool) {
	for _, n := range d.dense {
		if !fn(n) {
			return
		}
	}
}

// scan visits the bucket at cursor and returns the next cursor (0 when
// done). Cursors walk bucket indexes in reverse-binary order so that an
// element present for the whole scan is returned at least once even if the
// table grows or shrinks between calls.
func (d *chainDict[V]) scan(cursor uint64, fn func(n *dictNode[V])) uint64 {
	if len(d.buckets) == 0 {
		return 0
	}
	mask := uint64(len(d.buckets) - 1)
	for n := d.buckets[cursor&mask]; n != nil; n = n.next {
		fn(n)
	}
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

// scanCount is the scan loop of Redis's scanGenericCommand for a
// hashtable-encoded collection: it visits buckets from cursor until count
// elements were seen or count*10 buckets were looked at, and returns the
// next cursor.
func (d *chainDict[V]) scanCount(cursor uint64, count int, fn func(n *dictNode[V])) uint64 {
	seen := 0
	visit := func(n *dictNode[V]) { seen++; fn(n) }
	for iter := count * 10; ; iter-- {
		cursor = d.scan(cursor, visit)
		if cursor == 0 || iter <= 0 || seen >= count {
			return cursor
		}
	}
}

// randomNode returns a uniformly random node (nil if empty) in O(1), from
// the dense array: fairer than Redis's dictGetFairRandomKey, which samples
// neighbouring buckets.
func (d *chainDict[V]) randomNode() *dictNode[V] {
	if len(d.dense) == 0 {
		return nil
	}
	return d.dense[rand.IntN(len(d.dense))]
}

// memUsage estimates the bytes the table uses: buckets, nodes and keys.
// Like Redis's MEMORY USAGE it samples a few nodes and extrapolates, so the
// cost does not grow with the size of the table.
func (d *chainDict[V]) memUsage(valBytes func(V) int) int64 {
	const samples = 16
	var sz int64 = 56 + int64(len(d.buckets))*8 + int64(cap(d.dense))*8
	var sampled, bytes int64
	d.forEach(func(n *dictNode[V]) bool {
		bytes += int64(unsafe.Sizeof(*n)) + int64(len(n.key))
		if valBytes != nil {
			bytes += int64(valBytes(n.val))
		}
		sampled++
		return sampled < samples
	})
	if sampled > 0 {
		sz += bytes * int64(d.count) / sampled
	}
	return sz
}

// bstr views b as a string without copying; the string is only valid while
// b is unchanged, so it must never be stored.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// sbytes views s as a read-only byte slice without copying.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
