package value

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
)

// Hash is a Redis hash. Small hashes use a compact "listpack"
// encoding: every field and value packed into one []byte (a 4-byte
// little-endian count, then uvarint(len) field uvarint(len) value ...),
// searched linearly, so a small hash costs two allocations whatever its
// number of fields. A hash with more than hash-max-listpack-entries fields,
// or a field or value longer than hash-max-listpack-value bytes, is
// converted for good to a Dict ("hashtable"), as Redis converts.
//
// Persistence walks a hash with Len and ForEach and rebuilds one with
// NewHash and Set; commands use the []byte variants (GetB, SetB, DelB,
// each) with the server's configured limits.
type Hash struct {
	lp []byte // listpack encoding when Dict == nil; nil when empty
	// Dict is the hashtable encoding, nil while the hash is a listpack.
	Dict *Dict[[]byte]
}

// HashLimits are the listpack thresholds (hash-max-listpack-entries and
// hash-max-listpack-value).
type HashLimits struct {
	Entries int // hash-max-listpack-entries
	Value   int // hash-max-listpack-value
}

// defaultHashLimits are Redis's defaults, used when no server config is at
// hand.
var defaultHashLimits = HashLimits{Entries: 128, Value: 64}

// NewHash returns an empty hash in the listpack encoding.
func NewHash() *Hash { return &Hash{} }

// TypeName returns "hash" (TYPE).
func (h *Hash) TypeName() string { return "hash" }

// Encoding returns the OBJECT ENCODING name of the current encoding.
func (h *Hash) Encoding() string {
	if h.Dict != nil {
		return "hashtable"
	}
	return "listpack"
}

// Length is Len, for the Value interface.
func (h *Hash) Length() int { return h.Len() }

// Len returns the number of fields.
func (h *Hash) Len() int {
	if h.Dict != nil {
		return h.Dict.len()
	}
	if len(h.lp) < 4 {
		return 0
	}
	return int(binary.LittleEndian.Uint32(h.lp))
}

// Clone returns a deep copy in the same encoding (COPY).
func (h *Hash) Clone() Value {
	if h.Dict == nil {
		return &Hash{lp: bytes.Clone(h.lp)}
	}
	d := newChainDict[[]byte](h.Dict.len())
	h.Dict.ForEach(func(n *DictNode[[]byte]) bool {
		m, _ := d.upsert(n.Key)
		m.Val = bytes.Clone(n.Val)
		return true
	})
	return &Hash{Dict: d}
}

func (h *Hash) MemUsage() int64 {
	if h.Dict == nil {
		return 16 + 32 + int64(cap(h.lp))
	}
	return 16 + 32 + h.Dict.memUsage(func(v []byte) int { return 24 + cap(v) })
}

// ---- listpack helpers ------------------------------------------------------

// lpNext decodes the string at off and returns it and the offset after it.
func lpNext(lp []byte, off int) ([]byte, int) {
	n, w := binary.Uvarint(lp[off:])
	off += w
	return lp[off : off+int(n)], off + int(n)
}

// lpFind returns the offsets of field's entry (start of the field, start
// of its value's length, end of the entry) or start = -1.
func (h *Hash) lpFind(field []byte) (start, valOff, end int) {
	if len(h.lp) < 4 {
		return -1, 0, 0
	}
	off := 4
	for off < len(h.lp) {
		s := off
		f, o := lpNext(h.lp, off)
		_, e := lpNext(h.lp, o)
		if bytes.Equal(f, field) {
			return s, o, e
		}
		off = e
	}
	return -1, 0, 0
}

func (h *Hash) lpSetCount(n int) {
	binary.LittleEndian.PutUint32(h.lp, uint32(n))
}

// ListpackEntrySize is the number of bytes a field and value take in a listpack.
func ListpackEntrySize(field, val []byte) int {
	return uvarintLen(len(field)) + len(field) + uvarintLen(len(val)) + len(val)
}

func uvarintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

// Reserve makes room for extra more bytes in a listpack without append's
// doubling, so that a small hash keeps no slack: memory per small hash is
// what the issue budgets.
func (h *Hash) Reserve(extra int) {
	if h.Dict != nil || cap(h.lp)-len(h.lp) >= extra {
		return
	}
	if h.lp == nil {
		h.lp = make([]byte, 4, 4+extra)
		return
	}
	nl := make([]byte, len(h.lp), len(h.lp)+extra)
	copy(nl, h.lp)
	h.lp = nl
}

func lpAppend(lp []byte, s []byte) []byte {
	lp = binary.AppendUvarint(lp, uint64(len(s)))
	return append(lp, s...)
}

// toDict converts a listpack hash to the hashtable encoding.
func (h *Hash) toDict() {
	if h.Dict != nil {
		return
	}
	d := newChainDict[[]byte](h.Len())
	h.Each(func(f, v []byte) bool {
		n, _ := d.upsert(string(f))
		n.Val = bytes.Clone(v)
		return true
	})
	h.Dict, h.lp = d, nil
}

// ownBytes copies b, never returning nil.
func ownBytes(b []byte) []byte {
	o := make([]byte, len(b))
	copy(o, b)
	return o
}

// ---- command-side API (byte slices) ----------------------------------------

// GetB returns field's value. In the listpack encoding the slice aliases
// the hash's storage: use it before the next change to h.
func (h *Hash) GetB(field []byte) ([]byte, bool) {
	if h.Dict != nil {
		n := h.Dict.FindBytes(field)
		if n == nil {
			return nil, false
		}
		return n.Val, true
	}
	s, vo, _ := h.lpFind(field)
	if s < 0 {
		return nil, false
	}
	v, _ := lpNext(h.lp, vo)
	return v, true
}

// exceeded reports whether a hash of count fields holding a field of
// fieldLen and a value of valLen bytes needs the hashtable encoding.
func (lim HashLimits) exceeded(count, fieldLen, valLen int) bool {
	return count > lim.Entries || fieldLen > lim.Value || valLen > lim.Value
}

// SetB sets field to val (both copied) and reports whether the field is
// new, converting to the hashtable encoding when lim is exceeded.
func (h *Hash) SetB(field, val []byte, lim HashLimits) (isNew bool) {
	if h.Dict == nil {
		s, vo, e := h.lpFind(field)
		count := h.Len()
		if s < 0 {
			count++
		}
		if !lim.exceeded(count, len(field), len(val)) {
			if s >= 0 {
				old, _ := lpNext(h.lp, vo)
				if len(old) == len(val) {
					copy(old, val)
					return false
				}
				// Resize the value in place, moving the tail (copy is a
				// memmove), growing the buffer to the exact size if needed.
				newVal := uvarintLen(len(val)) + len(val)
				delta := vo + newVal - e
				oldLen := len(h.lp)
				if delta > 0 {
					h.Reserve(delta)
					h.lp = h.lp[:oldLen+delta]
				}
				copy(h.lp[e+delta:], h.lp[e:oldLen])
				h.lp = h.lp[:oldLen+delta]
				n := binary.PutUvarint(h.lp[vo:], uint64(len(val)))
				copy(h.lp[vo+n:], val)
				return false
			}
			if h.lp == nil {
				h.lp = make([]byte, 4, 4+ListpackEntrySize(field, val))
			} else {
				h.Reserve(ListpackEntrySize(field, val))
			}
			h.lp = lpAppend(h.lp, field)
			h.lp = lpAppend(h.lp, val)
			h.lpSetCount(count)
			return true
		}
		h.toDict()
	}
	n, isNew := h.Dict.upsertBytes(field)
	if !isNew && len(n.Val) == len(val) && len(val) > 0 {
		// Overwrite in place: no garbage when a field keeps its size
		// (the listpack encoding above does the same).
		copy(n.Val, val)
		return false
	}
	n.Val = ownBytes(val)
	return isNew
}

// DelB removes field and reports whether it was present.
func (h *Hash) DelB(field []byte) bool {
	if h.Dict != nil {
		_, ok := h.Dict.remove(bstr(field))
		return ok
	}
	s, _, e := h.lpFind(field)
	if s < 0 {
		return false
	}
	n := h.Len() - 1
	if n == 0 {
		h.lp = nil
		return true
	}
	h.lp = append(h.lp[:s], h.lp[e:]...)
	h.lpSetCount(n)
	return true
}

// Each visits every field and value until fn returns false. The slices
// are only valid during the call and must not be modified; fn must not
// change h.
func (h *Hash) Each(fn func(field, val []byte) bool) {
	if h.Dict != nil {
		h.Dict.ForEach(func(n *DictNode[[]byte]) bool { return fn(sbytes(n.Key), n.Val) })
		return
	}
	if len(h.lp) < 4 {
		return
	}
	for off := 4; off < len(h.lp); {
		var f, v []byte
		f, off = lpNext(h.lp, off)
		v, off = lpNext(h.lp, off)
		if !fn(f, v) {
			return
		}
	}
}

// RandomField returns a uniformly random field and value (views, as each).
func (h *Hash) RandomField() (field, val []byte) {
	if h.Dict != nil {
		n := h.Dict.RandomNode()
		return sbytes(n.Key), n.Val
	}
	k := rand.IntN(h.Len())
	h.Each(func(f, v []byte) bool {
		if k == 0 {
			field, val = f, v
			return false
		}
		k--
		return true
	})
	return field, val
}

// ---- persistence API (strings) ---------------------------------------------

// Get returns field's value (a copy).
func (h *Hash) Get(field string) ([]byte, bool) {
	v, ok := h.GetB(sbytes(field))
	if !ok {
		return nil, false
	}
	return bytes.Clone(v), true
}

// Set sets field to val (copied) with Redis's default listpack limits and
// reports whether the field is new.
func (h *Hash) Set(field string, val []byte) (isNew bool) {
	return h.SetB(sbytes(field), val, defaultHashLimits)
}

// Delete removes field and reports whether it was present.
func (h *Hash) Delete(field string) bool { return h.DelB(sbytes(field)) }

// ForEach visits every field until fn returns false; val is only valid
// during the call.
func (h *Hash) ForEach(fn func(field string, val []byte) bool) {
	h.Each(func(f, v []byte) bool { return fn(string(f), v) })
}
