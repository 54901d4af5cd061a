// Package stream is Redis 7.0's stream type: entries ordered by ID, kept
// in nodes of at most stream-node-max-entries entries and
// stream-node-max-bytes listpack bytes, each node holding a master entry
// and its entries as Redis's listpacks do (IDs relative to the master ID,
// SAMEFIELDS and DELETED flags, a byte count equal to the listpack's), so
// that approximate trimming removes the same whole nodes as redis-server
// and the nodes serialise to the listpacks of RDB_TYPE_STREAM_LISTPACKS_2;
// plus consumer groups with their pending entries lists. In memory a node
// is one compact, pointer-free byte buffer (see node).
//
// It is pure code: no keyspace, no server, no I/O, no clock. The current
// time (unix ms) is passed in by the caller wherever Redis reads mstime().
// A Stream is not safe for concurrent use: the keyspace's shard lock
// guards it.
package stream

import (
	"errors"
	"math"
	"strconv"
)

// ID is a stream entry ID: milliseconds and sequence number.
type ID struct {
	Ms, Seq uint64
}

// MaxID is the greatest possible ID (+).
var MaxID = ID{math.MaxUint64, math.MaxUint64}

// Compare returns -1, 0 or 1 as a is less than, equal to or greater than b.
func (a ID) Compare(b ID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// Less reports whether a < b.
func (a ID) Less(b ID) bool { return a.Compare(b) < 0 }

// IsZero reports whether the ID is 0-0.
func (a ID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// Incr returns the successor of a; ok is false when a is the last possible
// ID (the result then wraps to 0-0, as Redis's streamIncrID).
func (a ID) Incr() (ID, bool) {
	switch {
	case a.Seq != math.MaxUint64:
		return ID{a.Ms, a.Seq + 1}, true
	case a.Ms != math.MaxUint64:
		return ID{a.Ms + 1, 0}, true
	}
	return ID{}, false
}

// Decr returns the predecessor of a; ok is false when a is 0-0 (the result
// then wraps to the maximal ID, as Redis's streamDecrID).
func (a ID) Decr() (ID, bool) {
	switch {
	case a.Seq != 0:
		return ID{a.Ms, a.Seq - 1}, true
	case a.Ms != 0:
		return ID{a.Ms - 1, math.MaxUint64}, true
	}
	return MaxID, false
}

// String formats the ID as "<ms>-<seq>".
func (a ID) String() string { return string(a.Append(nil)) }

// Append appends "<ms>-<seq>" to b (every XADD and read replies IDs: the
// digits are written back to front into one array, two at a time, and
// appended once).
func (a ID) Append(b []byte) []byte {
	var buf [41]byte // 20 digits, '-', 20 digits
	i := putUint(buf[:], len(buf), a.Seq)
	i--
	buf[i] = '-'
	i = putUint(buf[:], i, a.Ms)
	return append(b, buf[i:]...)
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// putUint writes v in decimal into buf ending before end and returns
// where it starts.
func putUint(buf []byte, end int, v uint64) int {
	i := end
	for v >= 100 {
		q := v / 100
		r := (v - q*100) * 2
		i -= 2
		buf[i], buf[i+1] = digitPairs[r], digitPairs[r+1]
		v = q
	}
	if v >= 10 {
		i -= 2
		buf[i], buf[i+1] = digitPairs[v*2], digitPairs[v*2+1]
		return i
	}
	i--
	buf[i] = byte('0' + v)
	return i
}

// Bytes is the ID as Redis's 128-bit big-endian radix tree key.
func (a ID) Bytes() [16]byte {
	var k [16]byte
	for i := 0; i < 8; i++ {
		k[i] = byte(a.Ms >> (56 - 8*i))
		k[8+i] = byte(a.Seq >> (56 - 8*i))
	}
	return k
}

// IDFromBytes decodes a 16-byte big-endian key.
func IDFromBytes(k []byte) ID {
	var id ID
	for i := 0; i < 8; i++ {
		id.Ms = id.Ms<<8 | uint64(k[i])
		id.Seq = id.Seq<<8 | uint64(k[8+i])
	}
	return id
}

// ErrInvalidID is the error of an ID argument that does not parse; its
// text is Redis's reply.
var ErrInvalidID = errors.New("ERR Invalid stream ID specified as stream command argument")

// ParseOptions tune Parse as Redis's streamGenericParseIDOrReply's
// arguments do.
type ParseOptions struct {
	// MissingSeq is the sequence of an ID given as "<ms>" alone.
	MissingSeq uint64
	// Strict refuses "-" and "+".
	Strict bool
	// AllowSeqStar accepts "<ms>-*" (XADD): the result then has
	// SeqGiven false.
	AllowSeqStar bool
}

// Parse parses an ID argument: "-", "+", "<ms>", "<ms>-<seq>" and, with
// AllowSeqStar, "<ms>-*". seqGiven is false only for "<ms>-*".
func Parse(b []byte, o ParseOptions) (id ID, seqGiven bool, err error) {
	if len(b) > 127 {
		return ID{}, false, ErrInvalidID
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if o.Strict {
			return ID{}, false, ErrInvalidID
		}
		if b[0] == '-' {
			return ID{}, true, nil
		}
		return MaxID, true, nil
	}
	dash := -1
	for i, c := range b {
		if c == '-' {
			dash = i
			break
		}
	}
	msPart, seqPart := b, []byte(nil)
	if dash >= 0 {
		msPart, seqPart = b[:dash], b[dash+1:]
	}
	ms, ok := parseUint(msPart)
	if !ok {
		return ID{}, false, ErrInvalidID
	}
	seq := o.MissingSeq
	seqGiven = true
	if dash >= 0 {
		if o.AllowSeqStar && len(seqPart) == 1 && seqPart[0] == '*' {
			seq, seqGiven = 0, false
		} else if seq, ok = parseUint(seqPart); !ok {
			return ID{}, false, ErrInvalidID
		}
	}
	return ID{ms, seq}, seqGiven, nil
}

// parseUint parses an unsigned decimal as Redis's string2ull: a canonical
// negative integer is refused; anything else goes through strtoull's
// rules (leading spaces, an optional sign, leading zeros; a '-' negates
// modulo 2^64; overflow and trailing characters fail).
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if b[0] == '-' && len(b) > 1 && b[1] >= '1' && b[1] <= '9' {
		canonical := true
		for _, c := range b[1:] {
			if c < '0' || c > '9' {
				canonical = false
				break
			}
		}
		if canonical && len(b) <= 20 {
			if _, err := strconv.ParseInt(string(b), 10, 64); err == nil {
				return 0, false
			}
		}
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}
