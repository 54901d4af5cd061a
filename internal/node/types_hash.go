package node

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
)

// hashValue is a Redis hash. Small hashes use a compact "listpack"
// encoding: every field and value packed into one []byte (a 4-byte
// little-endian count, then uvarint(len) field uvarint(len) value ...),
// searched linearly, so a small hash costs two allocations whatever its
// number of fields. A hash with more than hash-max-listpack-entries fields,
// or a field or value longer than hash-max-listpack-value bytes, is
// converted for good to a chainDict ("hashtable"), as Redis converts.
//
// Persistence walks a hash with Len and ForEach and rebuilds one with
// newHash and Set; commands use the []byte variants (getB, setB, delB,
// each) with the server's configured limits.
type hashValue struct {
	lp []byte             // listpack encoding when d == nil; nil when empty
	d  *chainDict[[]byte] // hashtable encoding
}

// hashLimits are the listpack thresholds (hash-max-listpack-entries and
// hash-max-listpack-value).
type hashLimits struct{ entries, value int }

// defaultHashLimits are Redis's defaults, used when no server config is at
// hand.
var defaultHashLimits = hashLimits{entries: 128, value: 64}

// hashLimits reads the thresholds from the server's configuration.
func (s *Server) hashLimits() hashLimits {
	return s.hot().hashLim
}

// newHash returns an empty hash in the listpack encoding.
func newHash() *hashValue { return &hashValue{} }

func (h *hashValue) typeName() string { return "hash" }

func (h *hashValue) encoding() string {
	if h.d != nil {
		return "hashtable"
	}
	return "listpack"
}

func (h *hashValue) length() int { return h.Len() }

// Len returns the number of fields.
func (h *hashValue) Len() int {
	if h.d != nil {
		return h.d.len()
	}
	if len(h.lp) < 4 {
		return 0
	}
	return int(binary.LittleEndian.Uint32(h.lp))
}

func (h *hashValue) clone() typedValue {
	if h.d == nil {
		return &hashValue{lp: bytes.Clone(h.lp)}
	}
	d := newChainDict[[]byte](h.d.len())
	h.d.forEach(func(n *dictNode[[]byte]) bool {
		m, _ := d.upsert(n.key)
		m.val = bytes.Clone(n.val)
		return true
	})
	return &hashValue{d: d}
}

func (h *hashValue) memUsage() int64 {
	if h.d == nil {
		return 16 + 32 + int64(cap(h.lp))
	}
	return 16 + 32 + h.d.memUsage(func(v []byte) int { return 24 + cap(v) })
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
func (h *hashValue) lpFind(field []byte) (start, valOff, end int) {
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

func (h *hashValue) lpSetCount(n int) {
	binary.LittleEndian.PutUint32(h.lp, uint32(n))
}

// lpEntrySize is the number of bytes a field and value take in a listpack.
func lpEntrySize(field, val []byte) int {
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

// reserve makes room for extra more bytes in a listpack without append's
// doubling, so that a small hash keeps no slack: memory per small hash is
// what the issue budgets.
func (h *hashValue) reserve(extra int) {
	if h.d != nil || cap(h.lp)-len(h.lp) >= extra {
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
func (h *hashValue) toDict() {
	if h.d != nil {
		return
	}
	d := newChainDict[[]byte](h.Len())
	h.each(func(f, v []byte) bool {
		n, _ := d.upsert(string(f))
		n.val = bytes.Clone(v)
		return true
	})
	h.d, h.lp = d, nil
}

// ownBytes copies b, never returning nil.
func ownBytes(b []byte) []byte {
	o := make([]byte, len(b))
	copy(o, b)
	return o
}

// ---- command-side API (byte slices) ----------------------------------------

// getB returns field's value. In the listpack encoding the slice aliases
// the hash's storage: use it before the next change to h.
func (h *hashValue) getB(field []byte) ([]byte, bool) {
	if h.d != nil {
		n := h.d.findBytes(field)
		if n == nil {
			return nil, false
		}
		return n.val, true
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
func (lim hashLimits) exceeded(count, fieldLen, valLen int) bool {
	return count > lim.entries || fieldLen > lim.value || valLen > lim.value
}

// setB sets field to val (both copied) and reports whether the field is
// new, converting to the hashtable encoding when lim is exceeded.
func (h *hashValue) setB(field, val []byte, lim hashLimits) (isNew bool) {
	if h.d == nil {
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
					h.reserve(delta)
					h.lp = h.lp[:oldLen+delta]
				}
				copy(h.lp[e+delta:], h.lp[e:oldLen])
				h.lp = h.lp[:oldLen+delta]
				n := binary.PutUvarint(h.lp[vo:], uint64(len(val)))
				copy(h.lp[vo+n:], val)
				return false
			}
			if h.lp == nil {
				h.lp = make([]byte, 4, 4+lpEntrySize(field, val))
			} else {
				h.reserve(lpEntrySize(field, val))
			}
			h.lp = lpAppend(h.lp, field)
			h.lp = lpAppend(h.lp, val)
			h.lpSetCount(count)
			return true
		}
		h.toDict()
	}
	n, isNew := h.d.upsertBytes(field)
	if !isNew && len(n.val) == len(val) && len(val) > 0 {
		// Overwrite in place: no garbage when a field keeps its size
		// (the listpack encoding above does the same).
		copy(n.val, val)
		return false
	}
	n.val = ownBytes(val)
	return isNew
}

// delB removes field and reports whether it was present.
func (h *hashValue) delB(field []byte) bool {
	if h.d != nil {
		_, ok := h.d.remove(bstr(field))
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

// each visits every field and value until fn returns false. The slices
// are only valid during the call and must not be modified; fn must not
// change h.
func (h *hashValue) each(fn func(field, val []byte) bool) {
	if h.d != nil {
		h.d.forEach(func(n *dictNode[[]byte]) bool { return fn(sbytes(n.key), n.val) })
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

// randomField returns a uniformly random field and value (views, as each).
func (h *hashValue) randomField() (field, val []byte) {
	if h.d != nil {
		n := h.d.randomNode()
		return sbytes(n.key), n.val
	}
	k := rand.IntN(h.Len())
	h.each(func(f, v []byte) bool {
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
func (h *hashValue) Get(field string) ([]byte, bool) {
	v, ok := h.getB(sbytes(field))
	if !ok {
		return nil, false
	}
	return bytes.Clone(v), true
}

// Set sets field to val (copied) with Redis's default listpack limits and
// reports whether the field is new.
func (h *hashValue) Set(field string, val []byte) (isNew bool) {
	return h.setB(sbytes(field), val, defaultHashLimits)
}

// Delete removes field and reports whether it was present.
func (h *hashValue) Delete(field string) bool { return h.delB(sbytes(field)) }

// ForEach visits every field until fn returns false; val is only valid
// during the call.
func (h *hashValue) ForEach(fn func(field string, val []byte) bool) {
	h.each(func(f, v []byte) bool { return fn(string(f), v) })
}
