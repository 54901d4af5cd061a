package stream

import (
	"encoding/binary"
	"sort"
)

// node is a radix tree node of Redis's stream (a listpack there): a
// master entry (its ID and field names) and the node's entries in ID
// order, tombstones included, encoded one after the other in buf, which
// holds no pointer, so that the garbage collector never scans a node's
// entries and an entry of one short field and value costs about 5 bytes.
//
// An entry in buf is
//
//	flags      1 byte: flagDeleted | flagSameFields
//	ms         uvarint: the ID's ms minus the master ID's
//	seq        uvarint: zigzag of the ID's seq minus the master ID's (as int64)
//	nf         uvarint: the number of fields, only without flagSameFields
//	strings    each a uvarint length and its bytes: without flagSameFields
//	           field, value, field, value ...; with it the values of the
//	           master fields, in their order
//
// The bytes of buf below len(buf) never change except an entry's flags
// byte (XDEL and XTRIM set flagDeleted); appends write past len(buf) and
// a node's buffer is replaced, never rewritten, when it shrinks. So the
// field and value slices decoding returns, which alias buf, stay valid and
// unchanged for as long as anyone holds them, as the old per-entry slices
// did.
//
// live, deleted and bytes are the master entry's counters and the size of
// the listpack Redis would hold for the same entries (lpBytes), which
// decides where XADD starts a new node, exactly as redis-server does.
type node struct {
	master ID
	last   ID // the last entry's ID, tombstones included
	// lastOff is the last entry's offset in buf.
	lastOff int32
	// idx holds the offset of every seekStride-th entry (0, 8, 16 ...),
	// so that seek finds an ID with a binary search and at most
	// seekStride-1 entries decoded, not a scan of the node.
	idx []uint32
	// mfields are the master entry's field names, in an allocation of
	// their own (never buf, which an append may move).
	mfields [][]byte
	buf     []byte
	live    int64 // valid entries (the master entry's "count")
	deleted int64 // tombstones (its "deleted")
	bytes   int   // the listpack's size in bytes, as Redis's lpBytes
}

// newNode returns a node whose master entry is id with the given fields
// (copied), its buffer sized for entries of about size bytes each.
func newNode(id ID, fv [][]byte, size int, lim Limits, redisEntry int) *node {
	nd := &node{master: id, last: id}
	total := 0
	for i := 0; i < len(fv); i += 2 {
		total += len(fv[i])
	}
	mb := make([]byte, 0, total)
	nd.mfields = make([][]byte, len(fv)/2)
	for i := 0; i < len(fv); i += 2 {
		at := len(mb)
		mb = append(mb, fv[i]...)
		nd.mfields[i/2] = mb[at:len(mb):len(mb)]
	}
	nd.bytes = lpHeaderSize + lpEndSize + nd.masterSize()
	// Room for the entries the limits let the node take if they are all
	// like this one, within [size, 64 KiB]: one allocation per node in
	// the usual case; seal gives back what an early cut leaves unused.
	k := int64(1 << 20)
	if lim.NodeMaxEntries > 0 {
		k = lim.NodeMaxEntries
	}
	if lim.NodeMaxBytes > 0 && redisEntry > 0 {
		k = min(k, (lim.NodeMaxBytes-int64(nd.bytes))/int64(redisEntry)+1)
	}
	c := int64(size) * max(k, 1)
	c = max(min(c, 1<<16), int64(size))
	nd.buf = make([]byte, 0, c)
	nd.idx = make([]uint32, 0, c/int64(size)/seekStride+1)
	return nd
}

// seekStride is the number of entries per idx element.
const seekStride = 8

// seal gives back a node's spare buffer capacity when no more entries
// will be appended to it (XADD started a new node after it).
func (nd *node) seal() {
	if spare := cap(nd.buf) - len(nd.buf); spare > len(nd.buf)/8 {
		nd.buf = append(make([]byte, 0, len(nd.buf)), nd.buf...)
	}
	if cap(nd.idx) > len(nd.idx) {
		nd.idx = append(make([]uint32, 0, len(nd.idx)), nd.idx...)
	}
}

// count is the number of entries, tombstones included.
func (nd *node) count() int64 { return nd.live + nd.deleted }

// zigzag and unzigzag map int64 to uint64 so small magnitudes are short.
func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// uvarint decodes the uvarint at b[p:] (written by this package, so
// valid) and returns it and the offset after it.
func uvarint(b []byte, p int) (uint64, int) {
	if c := b[p]; c < 0x80 {
		return uint64(c), p + 1
	}
	return uvarintLong(b, p)
}

// uvarintLong is uvarint's case of more than one byte, kept out of line
// (head and fields test the one-byte case themselves and call it only
// for longer ones).
//
//go:noinline
func uvarintLong(b []byte, p int) (uint64, int) {
	v, n := binary.Uvarint(b[p:])
	return v, p + n
}

// appendString appends a length-prefixed string.
func appendString(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendEntry encodes entry number n (from 0) at the end of buf. With flagSameFields fv
// still holds the fields (equal to the master's) and only values go in.
func (nd *node) appendEntry(n int64, flags byte, id ID, fv [][]byte) {
	nd.lastOff = int32(len(nd.buf))
	if n%seekStride == 0 {
		nd.idx = append(nd.idx, uint32(len(nd.buf)))
	}
	b := append(nd.buf, flags)
	b = binary.AppendUvarint(b, id.Ms-nd.master.Ms)
	b = binary.AppendUvarint(b, zigzag(int64(id.Seq-nd.master.Seq)))
	if flags&flagSameFields != 0 {
		for i := 1; i < len(fv); i += 2 {
			b = appendString(b, fv[i])
		}
	} else {
		b = binary.AppendUvarint(b, uint64(len(fv)/2))
		for _, s := range fv {
			b = appendString(b, s)
		}
	}
	nd.buf = b
	nd.last = id
}

// encodedSize is the size appendEntry gives an entry.
func (nd *node) encodedSize(flags byte, id ID, fv [][]byte) int {
	n := 1 + uvarintLen(id.Ms-nd.master.Ms) + uvarintLen(zigzag(int64(id.Seq-nd.master.Seq)))
	i, step := 0, 1
	if flags&flagSameFields != 0 {
		i, step = 1, 2
	} else {
		n += uvarintLen(uint64(len(fv) / 2))
	}
	for ; i < len(fv); i += step {
		n += uvarintLen(uint64(len(fv[i]))) + len(fv[i])
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// head decodes the entry at off: its ID, flags and the offset of its
// fields.
func (nd *node) head(off int) (id ID, flags byte, p int) {
	b := nd.buf
	flags = b[off]
	// uvarint's one-byte case written out: this runs for every entry a
	// range passes.
	p = off + 2
	ms := uint64(b[off+1])
	if ms >= 0x80 {
		ms, p = uvarintLong(b, off+1)
	}
	seq := uint64(b[p])
	if p++; seq >= 0x80 {
		seq, p = uvarintLong(b, p-1)
	}
	return ID{nd.master.Ms + ms, nd.master.Seq + uint64(unzigzag(seq))}, flags, p
}

// skip returns the offset of the entry after the one whose fields start
// at p.
func (nd *node) skip(p int, flags byte) int {
	b := nd.buf
	n := uint64(len(nd.mfields))
	if flags&flagSameFields == 0 {
		n, p = uvarint(b, p)
		n *= 2
	}
	for ; n > 0; n-- {
		var l uint64
		l, p = uvarint(b, p)
		p += int(l)
	}
	return p
}

// nfields is the number of field and value slices of the entry whose
// fields start at p.
func (nd *node) nfields(p int, flags byte) int {
	if flags&flagSameFields != 0 {
		return 2 * len(nd.mfields)
	}
	n, _ := uvarint(nd.buf, p)
	return 2 * int(n)
}

// fields decodes into dst (of length nfields) the fields and values of
// the entry whose fields start at p, and returns the next entry's offset.
// The slices alias buf (or the master fields).
func (nd *node) fields(p int, flags byte, dst [][]byte) int {
	b := nd.buf
	if flags&flagSameFields != 0 {
		mf := nd.mfields
		_ = dst[2*len(mf)-1]
		for i, f := range mf {
			l := int(b[p])
			if p++; l >= 0x80 {
				var u uint64
				u, p = uvarintLong(b, p-1)
				l = int(u)
			}
			e := p + l
			dst[2*i], dst[2*i+1] = f, b[p:e:e]
			p = e
		}
		return p
	}
	_, p = uvarint(b, p)
	for i := range dst {
		var l uint64
		l, p = uvarint(b, p)
		e := p + int(l)
		dst[i] = b[p:e:e]
		p = e
	}
	return p
}

// seek returns the offset of the first entry whose ID is >= id
// (len(buf) when there is none).
func (nd *node) seek(id ID) int {
	// The last idx element whose entry's ID is < id (none: start at 0).
	i := sort.Search(len(nd.idx), func(i int) bool {
		eid, _, _ := nd.head(int(nd.idx[i]))
		return !eid.Less(id)
	})
	off := 0
	if i > 0 {
		off = int(nd.idx[i-1])
	}
	for off < len(nd.buf) {
		eid, flags, p := nd.head(off)
		if !eid.Less(id) {
			return off
		}
		off = nd.skip(p, flags)
	}
	return off
}

// find returns the offset of entry id (tombstones included).
func (nd *node) find(id ID) (off int, ok bool) {
	for off = nd.seek(id); off < len(nd.buf); {
		eid, flags, p := nd.head(off)
		if eid == id {
			return off, true
		}
		if id.Less(eid) {
			return 0, false
		}
		off = nd.skip(p, flags)
	}
	return 0, false
}

// first is the first entry's ID, tombstones included.
func (nd *node) first() ID {
	id, _, _ := nd.head(0)
	return id
}

// clone copies the node; the copy's buffer is its own, so that flags
// changed in one never show in the other.
func (nd *node) clone() *node {
	c := *nd
	c.buf = append([]byte(nil), nd.buf...)
	c.idx = append([]uint32(nil), nd.idx...)
	return &c
}

// slab hands out field slices to a range's entries: each entry's are its
// own (a caller may keep them), carved from allocations that grow with the
// range rather than one per entry.
type slab struct {
	s    [][]byte
	next int
}

// take returns n fresh slices.
func (sl *slab) take(n int) [][]byte {
	if cap(sl.s)-len(sl.s) < n {
		sl.s = make([][]byte, 0, max(n, sl.next))
		sl.next = min(2*cap(sl.s), 1024)
	}
	l := len(sl.s)
	sl.s = sl.s[:l+n]
	return sl.s[l : l+n : l+n]
}
