package value

import (
	"bytes"
	"encoding/binary"
)

// List is a list with two encodings:
//
//   - small lists (at most listPackedMaxLen elements and listPackedMaxBytes
//     bytes) are packed in one byte slice, each element a uvarint length
//     followed by its bytes, like Redis's listpack: a few bytes of overhead
//     per element. Operations scan it (it is small).
//   - larger lists are a quicklist (listBlocks): a deque of pointer-free
//     blocks of at most listBlockMax bytes, each packing its elements with
//     a length before and after every element so it can be walked from
//     both ends. Pushes and pops at both ends touch only the end blocks
//     (O(1) amortised, no element is moved); positional operations walk
//     blocks from the nearer end, then scan one block.
//
// A list converts from packed to blocks once it outgrows the limits, never
// back. Push, Insert and Set copy the element's bytes, so callers may pass
// argument bytes. Slices handed to ForEach/Range/RangeRev/Index callers
// and returned by PopView are only valid until the list is next modified
// (blocks are compacted and reused in place); Pop returns a copy the caller
// owns.
//
// Methods used by persistence and replication: NewList, Len, PushBack,
// PushFront, ForEach (head to tail).
type List struct {
	packed []byte      // packed encoding: uvarint(len) + bytes per element
	n      int         // number of elements
	q      *listBlocks // block encoding when non-nil (packed is then nil)
}

// Limits of the packed encoding (Redis's list-max-listpack-size -2 is 8 kB
// per node).
const (
	listPackedMaxLen   = 128
	listPackedMaxBytes = 8192
)

// Block sizes: a block's capacity is a power of two from listBlockMin to
// listBlockMax, except a block holding a single element larger than
// listBlockMax, which is sized to it.
const (
	listBlockMax = 8192
	listBlockMin = 256
)

// listBlocks is the large encoding: a ring of blocks, head to tail.
type listBlocks struct {
	ring  []*listBlock // ring buffer of blocks; len(ring) is a power of two or 0
	head  int          // slot of the first block
	nb    int          // blocks in use
	spare *listBlock   // the last emptied full-size block, reused by the next new block
}

// listBlock holds b.n elements in b.b[start:end]. Each element is
// uvarint(len) + bytes + the uvarint's bytes reversed (so the element
// before an offset can be decoded). The head block of a list is filled
// from its end backwards, the others from their start.
type listBlock struct {
	b          []byte // fixed capacity, len(b) == cap(b)
	start, end int    // used region
	n          int    // elements in the block
}

// NewList returns an empty list.
func NewList() *List { return &List{} }

// TypeName returns "list" (TYPE).
func (l *List) TypeName() string { return "list" }

// Encoding is what OBJECT ENCODING answers. Redis 7.0 encodes every list
// as a quicklist (of listpacks), whatever its size.
func (l *List) Encoding() string { return "quicklist" }

// Length is Len, for the Value interface.
func (l *List) Length() int { return l.n }

// Len returns the number of elements.
func (l *List) Len() int { return l.n }

// Clone returns a deep copy; blocks are copied compactly.
// Clone returns a deep copy in the same encoding (COPY).
func (l *List) Clone() Value {
	if l.q == nil {
		return &List{packed: bytes.Clone(l.packed), n: l.n}
	}
	q := &listBlocks{}
	q.ensureRing(l.q.nb)
	for i := 0; i < l.q.nb; i++ {
		b := l.q.block(i)
		used := b.end - b.start
		nb := &listBlock{b: make([]byte, used), end: used, n: b.n}
		copy(nb.b, b.b[b.start:b.end])
		q.ring[i] = nb
	}
	q.nb = l.q.nb
	return &List{n: l.n, q: q}
}

func (l *List) MemUsage() int64 {
	if l.q == nil {
		return int64(48 + cap(l.packed))
	}
	sz := int64(48 + 64 + 8*len(l.q.ring))
	for i := 0; i < l.q.nb; i++ {
		sz += int64(48 + cap(l.q.block(i).b))
	}
	return sz
}

// ---- entries -----------------------------------------------------------

// entrySize is the bytes an element of n bytes takes in a block.
func entrySize(n int) int { return 2*uvarintLen(n) + n }

// putEntry writes v as a block entry at the start of dst, which has room
// for entrySize(len(v)) bytes.
func putEntry(dst, v []byte) {
	k := binary.PutUvarint(dst, uint64(len(v)))
	p := k + copy(dst[k:], v)
	for i := 0; i < k; i++ {
		dst[p+i] = dst[k-1-i]
	}
}

// entryAt decodes the entry at offset off of b and returns its element
// and the offset of the next entry.
func entryAt(b []byte, off int) (v []byte, next int) {
	if c := b[off]; c < 0x80 { // elements shorter than 128 bytes
		s := off + 1
		e := s + int(c)
		return b[s:e:e], e + 1
	}
	return entryAtLong(b, off)
}

// entryAtLong is entryAt for a length of more than one byte.
func entryAtLong(b []byte, off int) (v []byte, next int) {
	n, k := binary.Uvarint(b[off:])
	s := off + k
	e := s + int(n)
	return b[s:e:e], e + k
}

// entryBefore decodes the entry that ends at offset end of b and returns
// its element and its start offset.
func entryBefore(b []byte, end int) (v []byte, start int) {
	if c := b[end-1]; c < 0x80 {
		e := end - 1
		s := e - int(c)
		return b[s:e:e], s - 1
	}
	return entryBeforeLong(b, end)
}

// entryBeforeLong is entryBefore for a length of more than one byte.
func entryBeforeLong(b []byte, end int) (v []byte, start int) {
	var n uint64
	var shift uint
	k := 0
	for {
		k++
		c := b[end-k]
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
		shift += 7
	}
	e := end - k
	s := e - int(n)
	return b[s:e:e], s - k
}

// offset returns the offset of the block's j-th entry (j may be b.n for
// the end), scanning from the nearer end.
func (b *listBlock) offset(j int) int {
	if j <= b.n/2 {
		off := b.start
		for k := 0; k < j; k++ {
			_, off = entryAt(b.b, off)
		}
		return off
	}
	off := b.end
	for k := b.n; k > j; k-- {
		_, off = entryBefore(b.b, off)
	}
	return off
}

// allocBlock returns an empty block with room for need bytes, filled from
// its end when front.
func (q *listBlocks) allocBlock(need int, front bool) *listBlock {
	var b *listBlock
	if s := q.spare; s != nil && need <= len(s.b) {
		b, q.spare = s, nil
		b.n = 0
	} else {
		c := need
		if need <= listBlockMax {
			c = listBlockMin
			for c < need {
				c *= 2
			}
		}
		b = &listBlock{b: make([]byte, c)}
	}
	b.start, b.end = 0, 0
	if front {
		b.start, b.end = len(b.b), len(b.b)
	}
	return b
}

// regrow moves the block's entries into a larger buffer with room for
// need more bytes at the front or the back (used+need <= listBlockMax).
func (b *listBlock) regrow(need int, front bool) {
	used := b.end - b.start
	c := max(2*len(b.b), listBlockMin)
	for c < used+need {
		c *= 2
	}
	c = min(c, listBlockMax)
	nb := make([]byte, c)
	var s int
	if front {
		back := min(len(b.b)-b.end, c-used-need)
		s = c - back - used
	} else {
		s = min(b.start, c-used-need)
	}
	copy(nb[s:], b.b[b.start:b.end])
	b.b, b.start, b.end = nb, s, s+used
}

// ---- block ring --------------------------------------------------------

func (q *listBlocks) slot(i int) int { return (q.head + i) & (len(q.ring) - 1) }

// block returns the i-th block, 0 = head.
func (q *listBlocks) block(i int) *listBlock { return q.ring[q.slot(i)] }

// ensureRing makes room for n blocks, moving the head to slot 0 when the
// ring is reallocated.
func (q *listBlocks) ensureRing(n int) {
	if n <= len(q.ring) {
		return
	}
	size := max(len(q.ring), 4)
	for size < n {
		size *= 2
	}
	nr := make([]*listBlock, size)
	for i := 0; i < q.nb; i++ {
		nr[i] = q.block(i)
	}
	q.ring, q.head = nr, 0
}

// insertBlock puts b at block position i (0 <= i <= nb), shifting the
// shorter side.
func (q *listBlocks) insertBlock(i int, b *listBlock) {
	q.ensureRing(q.nb + 1)
	if i < q.nb-i {
		q.head = (q.head - 1) & (len(q.ring) - 1)
		for k := 0; k < i; k++ {
			q.ring[q.slot(k)] = q.ring[q.slot(k+1)]
		}
	} else {
		for k := q.nb; k > i; k-- {
			q.ring[q.slot(k)] = q.ring[q.slot(k-1)]
		}
	}
	q.ring[q.slot(i)] = b
	q.nb++
}

// removeBlock unlinks block i, shifting the shorter side, and keeps it as
// the spare when it is full-size (its bytes may still be read by the
// caller until the list is next modified).
func (q *listBlocks) removeBlock(i int) {
	b := q.block(i)
	if i < q.nb-1-i {
		for k := i; k > 0; k-- {
			q.ring[q.slot(k)] = q.ring[q.slot(k-1)]
		}
		q.ring[q.head] = nil
		q.head = q.slot(1)
	} else {
		for k := i; k < q.nb-1; k++ {
			q.ring[q.slot(k)] = q.ring[q.slot(k+1)]
		}
		q.ring[q.slot(q.nb-1)] = nil
	}
	q.nb--
	if len(b.b) == listBlockMax {
		q.spare = b
	}
}

// locate returns the block position, block and index in the block of
// element i (0 <= i < n), walking from the nearer end.
func (q *listBlocks) locate(i, n int) (bi int, b *listBlock, j int) {
	if i < n/2 {
		for bi = 0; ; bi++ {
			b = q.block(bi)
			if i < b.n {
				return bi, b, i
			}
			i -= b.n
		}
	}
	r := n - 1 - i
	for bi = q.nb - 1; ; bi-- {
		b = q.block(bi)
		if r < b.n {
			return bi, b, b.n - 1 - r
		}
		r -= b.n
	}
}

// pushBack appends v to the tail block, growing it or starting a new one.
func (q *listBlocks) pushBack(v []byte) {
	need := entrySize(len(v))
	var t *listBlock
	if q.nb > 0 {
		t = q.block(q.nb - 1)
		if t.end+need > len(t.b) {
			if t.end-t.start+need <= listBlockMax && len(t.b) < listBlockMax {
				t.regrow(need, false)
			} else {
				t = nil
			}
		}
	}
	if t == nil {
		t = q.allocBlock(need, false)
		q.insertBlock(q.nb, t)
	}
	putEntry(t.b[t.end:], v)
	t.end += need
	t.n++
}

// pushFront prepends v to the head block, growing it or starting a new
// one.
func (q *listBlocks) pushFront(v []byte) {
	need := entrySize(len(v))
	var h *listBlock
	if q.nb > 0 {
		h = q.block(0)
		if h.start < need {
			if h.end-h.start+need <= listBlockMax && len(h.b) < listBlockMax {
				h.regrow(need, true)
			} else {
				h = nil
			}
		}
	}
	if h == nil {
		h = q.allocBlock(need, true)
		q.insertBlock(0, h)
	}
	h.start -= need
	putEntry(h.b[h.start:], v)
	h.n++
}

// popFront removes the head element and returns it (aliasing the block).
func (q *listBlocks) popFront() []byte {
	h := q.block(0)
	v, next := entryAt(h.b, h.start)
	h.start = next
	h.n--
	if h.n == 0 {
		q.removeBlock(0)
	}
	return v
}

// popBack removes the tail element and returns it (aliasing the block).
func (q *listBlocks) popBack() []byte {
	t := q.block(q.nb - 1)
	v, s := entryBefore(t.b, t.end)
	t.end = s
	t.n--
	if t.n == 0 {
		q.removeBlock(q.nb - 1)
	}
	return v
}

// replaceBlock replaces block bi by blocks packing elems (which may alias
// the old block: new blocks are fresh allocations).
func (q *listBlocks) replaceBlock(bi int, elems [][]byte) {
	var out []*listBlock
	var cur *listBlock
	for k, v := range elems {
		need := entrySize(len(v))
		if cur == nil || cur.end+need > len(cur.b) {
			// Size the block for the elements that will go in it.
			size := need
			for _, w := range elems[k+1:] {
				s := entrySize(len(w))
				if size+s > listBlockMax {
					break
				}
				size += s
			}
			cur = &listBlock{}
			c := size
			if size <= listBlockMax {
				c = listBlockMin
				for c < size {
					c *= 2
				}
			}
			cur.b = make([]byte, c)
			out = append(out, cur)
		}
		putEntry(cur.b[cur.end:], v)
		cur.end += need
		cur.n++
	}
	q.removeBlock(bi)
	for k, b := range out {
		q.insertBlock(bi+k, b)
	}
}

// elems returns the block's elements (aliasing it).
func (b *listBlock) elems() [][]byte {
	out := make([][]byte, 0, b.n+1)
	for off := b.start; off < b.end; {
		var v []byte
		v, off = entryAt(b.b, off)
		out = append(out, v)
	}
	return out
}

// ---- List operations ----------------------------------------------

// PushBack appends a copy of v at the tail.
func (l *List) PushBack(v []byte) {
	if l.q == nil {
		if l.fits(v) {
			l.packed = appendPacked(l.packed, v)
			l.n++
			return
		}
		l.toBlocks()
	}
	l.q.pushBack(v)
	l.n++
}

// PushFront inserts a copy of v at the head.
func (l *List) PushFront(v []byte) {
	if l.q == nil {
		if l.fits(v) {
			np := make([]byte, 0, len(l.packed)+len(v)+binary.MaxVarintLen64)
			np = appendPacked(np, v)
			l.packed = append(np, l.packed...)
			l.n++
			return
		}
		l.toBlocks()
	}
	l.q.pushFront(v)
	l.n++
}

// PopView removes the head (left) or tail element and returns it; the
// slice is only valid until the list is next modified (a reply copies it
// at once). nil if empty.
func (l *List) PopView(left bool) []byte {
	if l.n == 0 {
		return nil
	}
	l.n--
	if l.q != nil {
		if left {
			return l.q.popFront()
		}
		return l.q.popBack()
	}
	var v []byte
	if left {
		var next int
		v, next = packedAt(l.packed, 0)
		l.packed = l.packed[next:]
	} else {
		off := l.packedOffset(l.n)
		v, _ = packedAt(l.packed, off)
		l.packed = l.packed[:off]
	}
	if l.n == 0 {
		l.packed = nil
	}
	return v
}

// PopFront removes and returns the head element (nil if empty); the
// caller owns the slice.
func (l *List) PopFront() []byte { return l.Pop(true) }

// PopBack removes and returns the tail element (nil if empty); the
// caller owns the slice.
func (l *List) PopBack() []byte { return l.Pop(false) }

// Pop removes the head (left) or the tail element and returns a copy.
func (l *List) Pop(left bool) []byte {
	if l.n == 0 {
		return nil
	}
	return bytes.Clone(l.PopView(left))
}

// Push inserts a copy of v at the head (left) or the tail.
func (l *List) Push(v []byte, left bool) {
	if left {
		l.PushFront(v)
	} else {
		l.PushBack(v)
	}
}

// Index returns the i-th element, 0 = head; negative i counts from the
// tail (-1 = last). ok is false when out of range.
func (l *List) Index(i int) (v []byte, ok bool) {
	if i < 0 {
		i += l.n
	}
	if i < 0 || i >= l.n {
		return nil, false
	}
	if l.q == nil {
		v, _ := packedAt(l.packed, l.packedOffset(i))
		return v, true
	}
	_, b, j := l.q.locate(i, l.n)
	v, _ = entryAt(b.b, b.offset(j))
	return v, true
}

// Set replaces the i-th element (negative from the tail) with a copy of v;
// false when out of range.
func (l *List) Set(i int, v []byte) bool {
	if i < 0 {
		i += l.n
	}
	if i < 0 || i >= l.n {
		return false
	}
	if l.q == nil {
		if len(l.packed)+len(v) > listPackedMaxBytes {
			l.toBlocks()
		} else {
			off := l.packedOffset(i)
			_, next := packedAt(l.packed, off)
			np := make([]byte, 0, len(l.packed)+len(v))
			np = append(np, l.packed[:off]...)
			np = appendPacked(np, v)
			l.packed = append(np, l.packed[next:]...)
			return true
		}
	}
	bi, b, j := l.q.locate(i, l.n)
	off := b.offset(j)
	_, next := entryAt(b.b, off)
	if next-off == entrySize(len(v)) {
		putEntry(b.b[off:], v)
		return true
	}
	es := b.elems()
	es[j] = v
	l.q.replaceBlock(bi, es)
	return true
}

// Insert puts a copy of v at position i (0 <= i <= Len).
func (l *List) Insert(i int, v []byte) {
	if i <= 0 {
		l.PushFront(v)
		return
	}
	if i >= l.n {
		l.PushBack(v)
		return
	}
	if l.q == nil {
		if l.fits(v) {
			off := l.packedOffset(i)
			np := make([]byte, 0, len(l.packed)+len(v)+binary.MaxVarintLen64)
			np = append(np, l.packed[:off]...)
			np = appendPacked(np, v)
			l.packed = append(np, l.packed[off:]...)
			l.n++
			return
		}
		l.toBlocks()
	}
	bi, b, j := l.q.locate(i, l.n)
	need := entrySize(len(v))
	if b.end+need <= len(b.b) {
		// Room after the block's entries: move the tail of the block.
		off := b.offset(j)
		copy(b.b[off+need:], b.b[off:b.end])
		putEntry(b.b[off:], v)
		b.end += need
		b.n++
	} else {
		es := b.elems()
		es = append(es[:j+1], es[j:]...)
		es[j] = v
		l.q.replaceBlock(bi, es)
	}
	l.n++
}

// Range calls fn for elements start..end (inclusive, 0-based, clamped to
// the list) in order; fn returns false to stop.
func (l *List) Range(start, end int, fn func(v []byte) bool) {
	if start < 0 {
		start = 0
	}
	if end >= l.n {
		end = l.n - 1
	}
	if start > end {
		return
	}
	if l.q == nil {
		off := 0
		for i := 0; i <= end; i++ {
			v, next := packedAt(l.packed, off)
			off = next
			if i >= start && !fn(v) {
				return
			}
		}
		return
	}
	bi, b, j := l.q.locate(start, l.n)
	off := b.offset(j)
	k := end - start + 1
	for {
		buf, bend := b.b[:b.end], b.end
		for off < bend {
			var v []byte
			if c := buf[off]; c < 0x80 { // entryAt's common case, inline
				s := off + 1
				e := s + int(c)
				v, off = buf[s:e:e], e+1
			} else {
				v, off = entryAtLong(buf, off)
			}
			if !fn(v) {
				return
			}
			if k--; k == 0 {
				return
			}
		}
		bi++
		b = l.q.block(bi)
		off = b.start
	}
}

// RangeRev calls fn for elements from index start down to 0 (tail-first
// walks); fn returns false to stop.
func (l *List) RangeRev(start int, fn func(v []byte) bool) {
	if start >= l.n {
		start = l.n - 1
	}
	if start < 0 {
		return
	}
	if l.q == nil {
		var offs [listPackedMaxLen]int
		off := 0
		for i := 0; i <= start; i++ {
			offs[i] = off
			_, off = packedAt(l.packed, off)
		}
		for i := start; i >= 0; i-- {
			v, _ := packedAt(l.packed, offs[i])
			if !fn(v) {
				return
			}
		}
		return
	}
	bi, b, j := l.q.locate(start, l.n)
	off := b.offset(j + 1)
	k := start + 1
	for {
		buf, bstart := b.b, b.start
		for off > bstart {
			var v []byte
			if c := buf[off-1]; c < 0x80 { // entryBefore's common case, inline
				e := off - 1
				s := e - int(c)
				v, off = buf[s:e:e], s-1
			} else {
				v, off = entryBeforeLong(buf, off)
			}
			if !fn(v) {
				return
			}
			if k--; k == 0 {
				return
			}
		}
		bi--
		b = l.q.block(bi)
		off = b.end
	}
}

// ForEach calls fn for every element from head to tail; fn returns false
// to stop.
func (l *List) ForEach(fn func(v []byte) bool) {
	if l.n > 0 {
		l.Range(0, l.n-1, fn)
	}
}

// Filter keeps the elements for which keep returns true, in order, and
// returns how many were removed. keep is called once per element, head to
// tail.
func (l *List) Filter(keep func(i int, v []byte) bool) int {
	if l.q == nil {
		np := make([]byte, 0, len(l.packed))
		off, kept := 0, 0
		for r := 0; r < l.n; r++ {
			v, next := packedAt(l.packed, off)
			if keep(r, v) {
				np = append(np, l.packed[off:next]...)
				kept++
			}
			off = next
		}
		removed := l.n - kept
		l.packed, l.n = np, kept
		if kept == 0 {
			l.packed = nil
		}
		return removed
	}
	// Compact every block in place (an entry only moves towards its
	// block's start, after keep has seen it), then drop the empty blocks
	// and merge a block into the previous one when it fits there.
	q := l.q
	idx, kept := 0, 0
	var out []*listBlock
	for bi := 0; bi < q.nb; bi++ {
		b := q.block(bi)
		w, n := b.start, 0
		for off := b.start; off < b.end; {
			v, next := entryAt(b.b, off)
			if keep(idx, v) {
				w += copy(b.b[w:], b.b[off:next])
				n++
			}
			idx++
			off = next
		}
		b.end, b.n = w, n
		kept += n
		if n == 0 {
			continue
		}
		if len(out) > 0 {
			p := out[len(out)-1]
			if used := b.end - b.start; p.end+used <= len(p.b) {
				copy(p.b[p.end:], b.b[b.start:b.end])
				p.end += used
				p.n += n
				continue
			}
		}
		out = append(out, b)
	}
	removed := l.n - kept
	l.n = kept
	clear(q.ring)
	q.head, q.nb = 0, 0
	q.ensureRing(len(out))
	copy(q.ring, out)
	q.nb = len(out)
	return removed
}

// Trim keeps only elements start..end (inclusive, already clamped so that
// 0 <= start <= end < Len), or empties the list when start > end.
func (l *List) Trim(start, end int) {
	if start > end || start >= l.n {
		*l = List{}
		return
	}
	if l.q == nil {
		from, to := l.packedOffset(start), l.packedOffset(end+1)
		l.packed = bytes.Clone(l.packed[from:to])
		l.n = end - start + 1
		return
	}
	q := l.q
	// Drop whole blocks, then entries, from the tail, then the head.
	for drop := l.n - 1 - end; drop > 0; {
		t := q.block(q.nb - 1)
		if t.n <= drop {
			drop -= t.n
			q.removeBlock(q.nb - 1)
			continue
		}
		t.end = t.offset(t.n - drop)
		t.n -= drop
		drop = 0
	}
	for drop := start; drop > 0; {
		h := q.block(0)
		if h.n <= drop {
			drop -= h.n
			q.removeBlock(0)
			continue
		}
		h.start = h.offset(drop)
		h.n -= drop
		drop = 0
	}
	l.n = end - start + 1
}

// ---- packed encoding -------------------------------------------------------

// Reserve makes room in the packed bytes for vs, so a multi-element push
// allocates once and exactly.
func (l *List) Reserve(vs [][]byte) {
	if l.q != nil {
		return
	}
	extra := 0
	for _, v := range vs {
		extra += len(v) + uvarintLen(len(v))
	}
	if cap(l.packed)-len(l.packed) >= extra || len(l.packed)+extra > listPackedMaxBytes || l.n+len(vs) > listPackedMaxLen {
		return
	}
	np := make([]byte, len(l.packed), len(l.packed)+extra)
	copy(np, l.packed)
	l.packed = np
}

// fits reports whether v can be added to the packed encoding.
func (l *List) fits(v []byte) bool {
	return l.n < listPackedMaxLen && len(l.packed)+len(v)+binary.MaxVarintLen64 <= listPackedMaxBytes
}

func appendPacked(p, v []byte) []byte {
	p = binary.AppendUvarint(p, uint64(len(v)))
	return append(p, v...)
}

// packedAt decodes the element at byte offset off and returns it and the
// offset of the next one.
func packedAt(p []byte, off int) (v []byte, next int) {
	n, k := binary.Uvarint(p[off:])
	start := off + k
	end := start + int(n)
	return p[start:end:end], end
}

// packedOffset returns the byte offset of the i-th element (i may be n for
// the end).
func (l *List) packedOffset(i int) int {
	off := 0
	for k := 0; k < i; k++ {
		_, off = packedAt(l.packed, off)
	}
	return off
}

// toBlocks converts a packed list to the block encoding.
func (l *List) toBlocks() {
	q := &listBlocks{}
	off := 0
	for i := 0; i < l.n; i++ {
		var v []byte
		v, off = packedAt(l.packed, off)
		q.pushBack(v)
	}
	l.q, l.packed = q, nil
}
