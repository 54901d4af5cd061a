package node

import (
	"bytes"
	"encoding/binary"
)

// listValue is a list with two encodings:
//
//   - small lists (at most listPackedMaxLen elements and listPackedMaxBytes
//     bytes) are packed in one byte slice, each element a uvarint length
//     followed by its bytes, like Redis's listpack: a few bytes of overhead
//     per element. Operations scan it (it is small).
//   - larger lists are a deque of elements in a ring buffer, so pushes and
//     pops at both ends are O(1) amortised and LINDEX/LSET are O(1). The
//     buffer grows by doubling and shrinks when less than a quarter full.
//
// A list converts from packed to ring once it outgrows the limits, never
// back. Elements are stored as given (ring) or copied (packed): callers
// clone argument bytes before pushing (args are only valid during a
// command). Slices handed to ForEach/Range/Index callers are only valid
// until the list is next modified; Pop returns a slice the caller owns.
//
// Methods used by persistence and replication: newList, Len, PushBack,
// PushFront, ForEach (head to tail).
type listValue struct {
	large  bool     // ring encoding (else packed)
	packed []byte   // packed encoding: uvarint(len) + bytes per element
	buf    [][]byte // ring buffer
	head   int      // index of the first element in buf
	n      int      // number of elements
}

// Limits of the packed encoding (Redis's list-max-listpack-size -2 is 8 kB
// per node).
const (
	listPackedMaxLen   = 128
	listPackedMaxBytes = 8192
)

// newList returns an empty list.
func newList() *listValue { return &listValue{} }

func (l *listValue) typeName() string { return "list" }

// encoding is what OBJECT ENCODING answers. Redis 7.0 encodes every list
// as a quicklist (of listpacks), whatever its size.
func (l *listValue) encoding() string { return "quicklist" }

func (l *listValue) length() int { return l.n }

// Len returns the number of elements.
func (l *listValue) Len() int { return l.n }

func (l *listValue) clone() typedValue {
	if !l.large {
		return &listValue{packed: bytes.Clone(l.packed), n: l.n}
	}
	c := &listValue{large: true}
	c.grow(l.n)
	l.ForEach(func(v []byte) bool {
		c.PushBack(append([]byte(nil), v...))
		return true
	})
	return c
}

func (l *listValue) memUsage() int64 {
	if !l.large {
		return int64(64 + cap(l.packed))
	}
	sz := int64(64 + 24*len(l.buf))
	l.ForEach(func(v []byte) bool {
		sz += int64(cap(v))
		return true
	})
	return sz
}

// slot returns the buffer slot of the i-th element (0 = head), for
// 0 <= i < len(l.buf).
func (l *listValue) slot(i int) int {
	j := l.head + i
	if j >= len(l.buf) {
		j -= len(l.buf)
	}
	return j
}

// grow makes room for at least extra more elements.
func (l *listValue) grow(extra int) {
	if !l.large {
		return
	}
	need := l.n + extra
	if need <= len(l.buf) {
		return
	}
	l.resize(max(need, 2*len(l.buf), 4))
}

// resize moves the elements into a buffer of size (>= l.n) slots, head at
// slot 0.
func (l *listValue) resize(size int) {
	nb := make([][]byte, size)
	if l.n > 0 {
		end := l.head + l.n
		if end <= len(l.buf) {
			copy(nb, l.buf[l.head:end])
		} else {
			k := copy(nb, l.buf[l.head:])
			copy(nb[k:], l.buf[:end-len(l.buf)])
		}
	}
	l.buf = nb
	l.head = 0
}

// shrink halves the buffer when it is mostly empty.
func (l *listValue) shrink() {
	if len(l.buf) > 16 && l.n < len(l.buf)/4 {
		l.resize(len(l.buf) / 2)
	}
}

// PushBack appends v at the tail.
func (l *listValue) PushBack(v []byte) {
	if !l.large {
		if l.fits(v) {
			l.packed = appendPacked(l.packed, v)
			l.n++
			return
		}
		l.toRing(1)
	}
	l.grow(1)
	l.buf[l.slot(l.n)] = v
	l.n++
}

// PushFront inserts v at the head.
func (l *listValue) PushFront(v []byte) {
	if !l.large {
		if l.fits(v) {
			np := make([]byte, 0, len(l.packed)+len(v)+binary.MaxVarintLen64)
			np = appendPacked(np, v)
			l.packed = append(np, l.packed...)
			l.n++
			return
		}
		l.toRing(1)
	}
	l.grow(1)
	l.head--
	if l.head < 0 {
		l.head += len(l.buf)
	}
	l.buf[l.head] = v
	l.n++
}

// PopFront removes and returns the head element (nil if empty).
func (l *listValue) PopFront() []byte {
	if l.n == 0 {
		return nil
	}
	if !l.large {
		v, next := packedAt(l.packed, 0)
		v = bytes.Clone(v)
		l.packed = l.packed[next:]
		l.n--
		if l.n == 0 {
			l.packed = nil
		}
		return v
	}
	v := l.buf[l.head]
	l.buf[l.head] = nil
	l.head = l.slot(1)
	l.n--
	l.shrink()
	return v
}

// PopBack removes and returns the tail element (nil if empty).
func (l *listValue) PopBack() []byte {
	if l.n == 0 {
		return nil
	}
	if !l.large {
		off := l.packedOffset(l.n - 1)
		v, _ := packedAt(l.packed, off)
		v = bytes.Clone(v)
		l.packed = l.packed[:off]
		l.n--
		if l.n == 0 {
			l.packed = nil
		}
		return v
	}
	i := l.slot(l.n - 1)
	v := l.buf[i]
	l.buf[i] = nil
	l.n--
	l.shrink()
	return v
}

// Pop removes the head (left) or the tail element.
func (l *listValue) Pop(left bool) []byte {
	if left {
		return l.PopFront()
	}
	return l.PopBack()
}

// Push inserts v at the head (left) or the tail.
func (l *listValue) Push(v []byte, left bool) {
	if left {
		l.PushFront(v)
	} else {
		l.PushBack(v)
	}
}

// Index returns the i-th element, 0 = head; negative i counts from the
// tail (-1 = last). ok is false when out of range.
func (l *listValue) Index(i int) (v []byte, ok bool) {
	if i < 0 {
		i += l.n
	}
	if i < 0 || i >= l.n {
		return nil, false
	}
	if !l.large {
		v, _ := packedAt(l.packed, l.packedOffset(i))
		return v, true
	}
	return l.buf[l.slot(i)], true
}

// Set replaces the i-th element (negative from the tail); false when out
// of range.
func (l *listValue) Set(i int, v []byte) bool {
	if i < 0 {
		i += l.n
	}
	if i < 0 || i >= l.n {
		return false
	}
	if !l.large {
		if len(l.packed)+len(v) > listPackedMaxBytes {
			l.toRing(0)
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
	l.buf[l.slot(i)] = v
	return true
}

// Insert puts v at position i (0 <= i <= Len), shifting the shorter side.
func (l *listValue) Insert(i int, v []byte) {
	if i <= 0 {
		l.PushFront(v)
		return
	}
	if i >= l.n {
		l.PushBack(v)
		return
	}
	if !l.large {
		if l.fits(v) {
			off := l.packedOffset(i)
			np := make([]byte, 0, len(l.packed)+len(v)+binary.MaxVarintLen64)
			np = append(np, l.packed[:off]...)
			np = appendPacked(np, v)
			l.packed = append(np, l.packed[off:]...)
			l.n++
			return
		}
		l.toRing(1)
	}
	l.grow(1)
	if i < l.n/2 {
		// Shift the first i elements one slot to the left.
		l.head--
		if l.head < 0 {
			l.head += len(l.buf)
		}
		for k := 0; k < i; k++ {
			l.buf[l.slot(k)] = l.buf[l.slot(k+1)]
		}
	} else {
		for k := l.n; k > i; k-- {
			l.buf[l.slot(k)] = l.buf[l.slot(k-1)]
		}
	}
	l.buf[l.slot(i)] = v
	l.n++
}

// Range calls fn for elements start..end (inclusive, 0-based, already
// clamped to the list) in order; fn returns false to stop.
func (l *listValue) Range(start, end int, fn func(v []byte) bool) {
	if start < 0 {
		start = 0
	}
	if end >= l.n {
		end = l.n - 1
	}
	if !l.large {
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
	for i := start; i <= end; i++ {
		if !fn(l.buf[l.slot(i)]) {
			return
		}
	}
}

// RangeRev calls fn for elements from index start down to 0 (tail-first
// walks); fn returns false to stop.
func (l *listValue) RangeRev(start int, fn func(v []byte) bool) {
	if start >= l.n {
		start = l.n - 1
	}
	if !l.large {
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
	for i := start; i >= 0; i-- {
		if !fn(l.buf[l.slot(i)]) {
			return
		}
	}
}

// ForEach calls fn for every element from head to tail; fn returns false
// to stop.
func (l *listValue) ForEach(fn func(v []byte) bool) {
	if l.n > 0 {
		l.Range(0, l.n-1, fn)
	}
}

// Filter keeps the elements for which keep returns true, in order, and
// returns how many were removed. keep is called once per element, head to
// tail.
func (l *listValue) Filter(keep func(i int, v []byte) bool) int {
	if !l.large {
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
	w := 0
	for r := 0; r < l.n; r++ {
		v := l.buf[l.slot(r)]
		if keep(r, v) {
			l.buf[l.slot(w)] = v
			w++
		}
	}
	removed := l.n - w
	for k := w; k < l.n; k++ {
		l.buf[l.slot(k)] = nil
	}
	l.n = w
	l.shrink()
	return removed
}

// Trim keeps only elements start..end (inclusive, already clamped so that
// 0 <= start <= end < Len), or empties the list when start > end.
func (l *listValue) Trim(start, end int) {
	if start > end || start >= l.n {
		*l = listValue{}
		return
	}
	if !l.large {
		from, to := l.packedOffset(start), l.packedOffset(end+1)
		l.packed = bytes.Clone(l.packed[from:to])
		l.n = end - start + 1
		return
	}
	for l.n > end+1 {
		l.PopBack()
	}
	for k := 0; k < start; k++ {
		l.PopFront()
	}
}

// ---- packed encoding -------------------------------------------------------

// packable reports whether pushing v keeps the packed encoding, which
// copies v (callers may then push argument bytes without cloning them).
func (l *listValue) packable(v []byte) bool { return !l.large && l.fits(v) }

// reserve makes room in the packed bytes for vs, so a multi-element push
// allocates once and exactly.
func (l *listValue) reserve(vs [][]byte) {
	if l.large {
		l.grow(len(vs))
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
func (l *listValue) fits(v []byte) bool {
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
func (l *listValue) packedOffset(i int) int {
	off := 0
	for k := 0; k < i; k++ {
		_, off = packedAt(l.packed, off)
	}
	return off
}

// toRing converts a packed list to the ring encoding with room for extra
// more elements. The elements keep pointing into the packed bytes, which
// are never written again.
func (l *listValue) toRing(extra int) {
	buf := make([][]byte, max(l.n+extra, 4))
	off := 0
	for i := 0; i < l.n; i++ {
		buf[i], off = packedAt(l.packed, off)
	}
	l.buf, l.head, l.large, l.packed = buf, 0, true, nil
}
