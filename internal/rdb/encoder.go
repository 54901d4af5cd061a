package rdb

import (
	"encoding/binary"
	"io"
	"math"
	"slices"
	"strconv"
)

// Options control how values are written.
type Options struct {
	// Compress stores strings longer than 20 bytes LZF-compressed when that
	// saves space (rdbcompression).
	Compress bool
	// Checksum writes the CRC64 trailer (rdbchecksum); without it the
	// trailer is zero, which readers accept as "not checked".
	Checksum bool
	// Limits choose the small encodings; zero means DefaultLimits.
	Limits Limits
}

// Encoder writes an RDB stream. Errors are sticky: check Err or the error
// of Finish.
type Encoder struct {
	w    io.Writer
	buf  []byte
	crc  uint64
	opt  Options
	err  error
	size int64
}

const flushAt = 64 << 10

// NewEncoder returns an encoder writing to w.
func NewEncoder(w io.Writer, opt Options) *Encoder {
	if opt.Limits == (Limits{}) {
		opt.Limits = DefaultLimits
	}
	return &Encoder{w: w, opt: opt, buf: make([]byte, 0, flushAt+1024)}
}

// Err returns the first write error.
func (e *Encoder) Err() error { return e.err }

// Written returns the number of bytes produced so far.
func (e *Encoder) Written() int64 { return e.size + int64(len(e.buf)) }

func (e *Encoder) maybeFlush() {
	if len(e.buf) >= flushAt {
		e.Flush()
	}
}

// Flush writes buffered bytes to the underlying writer.
func (e *Encoder) Flush() error {
	if e.err != nil || len(e.buf) == 0 {
		return e.err
	}
	if e.opt.Checksum {
		e.crc = UpdateCRC(e.crc, e.buf)
	}
	n, err := e.w.Write(e.buf)
	e.size += int64(n)
	if err != nil {
		e.err = err
	}
	e.buf = e.buf[:0]
	return e.err
}

// Header writes the magic "REDIS0010".
func (e *Encoder) Header() {
	e.buf = append(e.buf, "REDIS0010"...)
}

// Aux writes an auxiliary field. Values that are integers are stored
// integer-encoded, as Redis does.
func (e *Encoder) Aux(key, val string) {
	e.buf = append(e.buf, OpAux)
	e.buf = appendString(e.buf, []byte(key), false)
	e.buf = appendString(e.buf, []byte(val), false)
	e.maybeFlush()
}

// SelectDB writes a SELECTDB opcode.
func (e *Encoder) SelectDB(db int) {
	e.buf = append(e.buf, OpSelectDB)
	e.buf = appendLen(e.buf, uint64(db))
}

// ResizeDB writes the RESIZEDB hint.
func (e *Encoder) ResizeDB(size, expires uint64) {
	e.buf = append(e.buf, OpResizeDB)
	e.buf = appendLen(e.buf, size)
	e.buf = appendLen(e.buf, expires)
}

// KeyMeta is the per-key metadata written before a value.
type KeyMeta struct {
	ExpireMs int64 // absolute unix ms, 0 = none
	Idle     int64 // seconds of idle time (LRU policies), -1 = not written
	Freq     int   // LFU counter (LFU policies), -1 = not written
}

// Key writes one key with its metadata and value.
func (e *Encoder) Key(key []byte, meta KeyMeta, v *Value) {
	if meta.ExpireMs != 0 {
		e.buf = append(e.buf, OpExpireMs)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(meta.ExpireMs))
	}
	if meta.Idle >= 0 {
		e.buf = append(e.buf, OpIdle)
		e.buf = appendLen(e.buf, uint64(meta.Idle))
	}
	if meta.Freq >= 0 {
		e.buf = append(e.buf, OpFreq, byte(meta.Freq))
	}
	e.buf = append(e.buf, valueType(v, e.opt.Limits))
	e.buf = appendString(e.buf, key, e.opt.Compress)
	e.buf = appendValueBody(e.buf, v, e.opt.Compress, e.opt.Limits, e.maybeFlush2)
	e.maybeFlush()
}

// maybeFlush2 lets long values flush while they are written.
func (e *Encoder) maybeFlush2(b []byte) []byte {
	e.buf = b
	e.maybeFlush()
	return e.buf
}

// Finish writes EOF and the checksum trailer and flushes.
func (e *Encoder) Finish() error {
	e.buf = append(e.buf, OpEOF)
	if err := e.Flush(); err != nil {
		return err
	}
	var crc uint64
	if e.opt.Checksum {
		crc = e.crc
	}
	e.buf = binary.LittleEndian.AppendUint64(e.buf, crc)
	n, err := e.w.Write(e.buf)
	e.size += int64(n)
	e.buf = e.buf[:0]
	if err != nil {
		e.err = err
	}
	return e.err
}

// ---- primitives ------------------------------------------------------------

func appendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		b = append(b, 0x80)
		return binary.BigEndian.AppendUint32(b, uint32(n))
	}
	b = append(b, 0x81)
	return binary.BigEndian.AppendUint64(b, n)
}

// lenSize is the size of appendLen's encoding of n.
func lenSize(n uint64) int {
	switch {
	case n < 1<<6:
		return 1
	case n < 1<<14:
		return 2
	case n <= math.MaxUint32:
		return 5
	}
	return 9
}

// appendString writes a string object: integer-encoded when it is the
// canonical form of an int32, LZF-compressed when longer than 20 bytes and
// compression helps, raw otherwise.
func appendString(b []byte, s []byte, compress bool) []byte {
	if len(s) <= 11 && len(s) > 0 {
		if v, ok := canonicalInt(s); ok {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				return append(b, 0xc0, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				return append(b, 0xc1, byte(v), byte(v>>8))
			case v >= math.MinInt32 && v <= math.MaxInt32:
				return append(b, 0xc2, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
			}
		}
	}
	if compress && len(s) > 20 {
		// Compress in place after room for the longest header, then move
		// the data back behind the actual header: no allocation.
		base := len(b)
		maxHdr := 1 + 2*lenSize(uint64(len(s)))
		// Room for the header and the compressed bytes (at most len(s)-4)
		// at once, so the compressor never grows the buffer.
		b = slices.Grow(b, maxHdr+len(s))
		b = append(b, make([]byte, maxHdr)...)
		out, ok := LZFCompressAppend(b, s, len(s)-4)
		if ok {
			clen := len(out) - base - maxHdr
			hdr := appendLen(appendLen(append(out[base:base], 0xc3), uint64(clen)), uint64(len(s)))
			n := copy(out[base+len(hdr):], out[base+maxHdr:])
			return out[:base+len(hdr)+n]
		}
		b = out[:base]
	}
	b = appendLen(b, uint64(len(s)))
	return append(b, s...)
}

// valueType picks the RDB type a value is written with.
func valueType(v *Value, lim Limits) byte {
	switch v.Kind {
	case KindString:
		return TypeString
	case KindList:
		return TypeListQuicklist2
	case KindSet:
		if setIsIntset(v.Elems, lim) {
			return TypeSetIntset
		}
		return TypeSet
	case KindZSet:
		if zsetSmall(v.ZSet, lim) {
			return TypeZSetListpack
		}
		return TypeZSet2
	case KindHash:
		if hashSmall(v.Hash, lim) {
			return TypeHashListpack
		}
		return TypeHash
	case KindStream:
		return TypeStreamListpack2
	}
	return TypeString
}

func setIsIntset(elems [][]byte, lim Limits) bool {
	if len(elems) == 0 || len(elems) > lim.SetIntsetEntries {
		return false
	}
	for _, el := range elems {
		if _, ok := canonicalInt(el); !ok {
			return false
		}
	}
	return true
}

func zsetSmall(z []ZMember, lim Limits) bool {
	if len(z) > lim.ZSetEntries {
		return false
	}
	for _, m := range z {
		if len(m.Member) > lim.ZSetValue {
			return false
		}
	}
	return true
}

func hashSmall(h []HashField, lim Limits) bool {
	if len(h) > lim.HashEntries {
		return false
	}
	for _, f := range h {
		if len(f.Field) > lim.HashValue || len(f.Value) > lim.HashValue {
			return false
		}
	}
	return true
}

// FormatScore formats a score as Redis stores it in a listpack: integers
// as integers, other values with 17 significant digits.
func FormatScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	case math.IsNaN(f):
		return []byte("nan")
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(nil, int64(f), 10)
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// appendValueBody writes the value after its type byte. flush may be
// called between elements of big values to bound the buffer.
func appendValueBody(b []byte, v *Value, compress bool, lim Limits, flush func([]byte) []byte) []byte {
	if flush == nil {
		flush = func(b []byte) []byte { return b }
	}
	switch valueType(v, lim) {
	case TypeString:
		return appendString(b, v.Str, compress)
	case TypeListQuicklist2:
		nodes := splitListNodes(v.Elems, lim.ListNodeBytes)
		b = appendLen(b, uint64(len(nodes)))
		for _, n := range nodes {
			if len(n) == 1 && len(n[0]) >= 1<<30 {
				b = appendLen(b, quicklistPlain)
				b = appendString(b, n[0], compress)
			} else {
				b = appendLen(b, quicklistPacked)
				b = appendString(b, buildListpack(n), compress)
			}
			b = flush(b)
		}
		return b
	case TypeSetIntset:
		vals := make([]int64, len(v.Elems))
		for i, el := range v.Elems {
			vals[i], _ = canonicalInt(el)
		}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		return appendString(b, buildIntset(vals), compress)
	case TypeSet:
		b = appendLen(b, uint64(len(v.Elems)))
		for _, el := range v.Elems {
			b = appendString(b, el, compress)
			b = flush(b)
		}
		return b
	case TypeZSetListpack:
		z := slices.Clone(v.ZSet)
		sortZSet(z)
		elems := make([][]byte, 0, 2*len(z))
		for _, m := range z {
			elems = append(elems, m.Member, FormatScore(m.Score))
		}
		return appendString(b, buildListpack(elems), compress)
	case TypeZSet2:
		b = appendLen(b, uint64(len(v.ZSet)))
		for _, m := range v.ZSet {
			b = appendString(b, m.Member, compress)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.Score))
			b = flush(b)
		}
		return b
	case TypeHashListpack:
		elems := make([][]byte, 0, 2*len(v.Hash))
		for _, f := range v.Hash {
			elems = append(elems, f.Field, f.Value)
		}
		return appendString(b, buildListpack(elems), compress)
	case TypeStreamListpack2:
		return appendStream(b, v.Stream, compress, flush)
	case TypeHash:
		b = appendLen(b, uint64(len(v.Hash)))
		for _, f := range v.Hash {
			b = appendString(b, f.Field, compress)
			b = appendString(b, f.Value, compress)
			b = flush(b)
		}
		return b
	}
	return b
}

// sortZSet orders members by score, then member, as a sorted set keeps
// them (a listpack-encoded sorted set must be in order).
func sortZSet(z []ZMember) {
	slices.SortFunc(z, func(a, b ZMember) int {
		if a.Score < b.Score {
			return -1
		}
		if a.Score > b.Score {
			return 1
		}
		return slices.Compare(a.Member, b.Member)
	})
}

// splitListNodes cuts a list into quicklist nodes of about nodeBytes.
func splitListNodes(elems [][]byte, nodeBytes int) [][][]byte {
	if nodeBytes <= 0 {
		nodeBytes = 8192
	}
	var nodes [][][]byte
	start, size := 0, 0
	for i, el := range elems {
		sz := len(el) + 11
		if i > start && size+sz > nodeBytes {
			nodes = append(nodes, elems[start:i])
			start, size = i, 0
		}
		size += sz
	}
	if start < len(elems) {
		nodes = append(nodes, elems[start:])
	}
	return nodes
}

// ---- DUMP payload ----------------------------------------------------------

// Dump serialises v as DUMP does: type, value, RDB version (2 bytes little
// endian) and the CRC64 of all that (8 bytes little endian).
func Dump(v *Value, compress bool, lim Limits) []byte {
	return AppendDump(nil, v, compress, lim)
}

// StringDump is a string's DUMP payload as Head ‖ Body ‖ Tail. For a
// string stored raw, Body is the string itself (not copied) and Head and
// Tail its type and length, and version and CRC64; otherwise (an integer
// or an LZF encoding) Head is the whole payload and Body and Tail are
// nil.
type StringDump struct{ Head, Body, Tail []byte }

// DumpString returns s's DUMP payload (the bytes Dump gives for a string
// value s) in parts: a caller sending a big string (MIGRATE) writes it
// from where it is, without a payload-sized copy. The raw case computes
// one CRC64 pass over s and allocates only Head and Tail; an LZF attempt
// on incompressible data writes nothing.
func DumpString(s []byte, compress bool) StringDump {
	if len(s) <= 11 { // may be integer-encoded
		return StringDump{Head: AppendDump(nil, &Value{Kind: KindString, Str: s}, compress, DefaultLimits)}
	}
	if compress && len(s) > 20 {
		if out, shrinks := LZFCompressAppend(nil, s, len(s)-4); shrinks {
			// appendString's LZF encoding, from the one compression.
			p := appendLen(appendLen([]byte{TypeString, 0xc3}, uint64(len(out))), uint64(len(s)))
			p = binary.LittleEndian.AppendUint16(append(p, out...), Version)
			return StringDump{Head: binary.LittleEndian.AppendUint64(p, Checksum(p))}
		}
	}
	head := appendLen([]byte{TypeString}, uint64(len(s)))
	tail := binary.LittleEndian.AppendUint16(make([]byte, 0, 10), Version)
	crc := UpdateCRC(UpdateCRC(UpdateCRC(0, head), s), tail)
	return StringDump{Head: head, Body: s, Tail: binary.LittleEndian.AppendUint64(tail, crc)}
}

// AppendDump appends v's DUMP payload (Dump) to dst and returns the
// extended slice: a caller dumping many values (MIGRATE) fills one
// buffer instead of allocating one per value.
func AppendDump(dst []byte, v *Value, compress bool, lim Limits) []byte {
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	base := len(dst)
	b := append(dst, valueType(v, lim))
	b = appendValueBody(b, v, compress, lim, nil)
	b = binary.LittleEndian.AppendUint16(b, Version)
	return binary.LittleEndian.AppendUint64(b, Checksum(b[base:]))
}
