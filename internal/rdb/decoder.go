package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
)

// Decoder reads an RDB stream, keeping the running CRC64 of what it read.
type Decoder struct {
	r   *bufio.Reader
	crc uint64
	off int64
	one [1]byte
	// size is the number of bytes the stream holds, -1 when unknown. A
	// length field may not claim more than the bytes left, so a small
	// corrupt input (a RESTORE payload) cannot make the decoder allocate
	// much more than its own size.
	size int64
	// noCRC skips the running CRC64: Undump verifies the payload's
	// checksum over the whole payload before decoding it.
	noCRC bool
	// scratch holds an LZF string's compressed bytes while it is
	// decompressed (reused; at most maxScratch kept).
	scratch []byte
}

// maxScratch is the largest compressed string whose buffer a decoder
// keeps for the next one.
const maxScratch = 64 << 10

// NewDecoder returns a decoder reading r. When r reports how many bytes
// it holds (bytes.Reader, strings.Reader: a Len method), lengths read are
// checked against the bytes left before anything is allocated for them.
func NewDecoder(r io.Reader) *Decoder {
	size := int64(-1)
	if l, ok := r.(interface{ Len() int }); ok {
		if _, buffered := r.(*bufio.Reader); !buffered { // its Len is only what it buffered
			size = int64(l.Len())
		}
	}
	br, ok := r.(*bufio.Reader)
	if !ok {
		// A small input (a RESTORE payload) gets a buffer its size: a
		// 256 KiB buffer per call made RESTORE cost ~250 µs.
		n := 256 << 10
		if size >= 0 && size < int64(n) {
			n = max(int(size), 16)
		}
		br = bufio.NewReaderSize(r, n)
	}
	return &Decoder{r: br, size: size}
}

// left returns the bytes left to read, or math.MaxInt64 when unknown.
func (d *Decoder) left() int64 {
	if d.size < 0 {
		return math.MaxInt64
	}
	return d.size - d.off
}

// checkLeft refuses a length that claims more bytes than are left.
func (d *Decoder) checkLeft(n uint64, what string) error {
	if n > uint64(d.left()) {
		return corrupt("%s %d beyond the %d bytes left at offset %d", what, n, d.left(), d.off)
	}
	return nil
}

// readCount reads the element count of a list, set, sorted set, hash or
// quicklist: each element takes a byte at least, so a count beyond the
// bytes left is refused.
func (d *Decoder) readCount() (int, error) {
	n, err := d.readPlainLen()
	if err != nil {
		return 0, err
	}
	if err := d.checkLeft(uint64(n), "element count"); err != nil {
		return 0, err
	}
	return n, nil
}

// countHint is the capacity to allocate for n elements up front: never
// more than 1<<16, the rest grows as elements arrive.
func countHint(n int) int { return min(n, 1<<16) }

// Offset returns the number of bytes consumed.
func (d *Decoder) Offset() int64 { return d.off }

func (d *Decoder) readFull(p []byte) error {
	n, err := io.ReadFull(d.r, p)
	if !d.noCRC {
		d.crc = UpdateCRC(d.crc, p[:n])
	}
	d.off += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: unexpected end of file at offset %d", ErrCorrupt, d.off)
		}
		return err
	}
	return nil
}

func (d *Decoder) readByte() (byte, error) {
	b, err := d.r.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%w: unexpected end of file at offset %d", ErrCorrupt, d.off)
		}
		return 0, err
	}
	d.one[0] = b
	if !d.noCRC {
		d.crc = UpdateCRC(d.crc, d.one[:])
	}
	d.off++
	return b, nil
}

// readLen reads a length; encoded is true for the 11xxxxxx special string
// encodings, whose kind is returned as the length.
func (d *Decoder) readLen() (n uint64, encoded bool, err error) {
	b, err := d.readByte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3f), false, nil
	case 1:
		b2, err := d.readByte()
		if err != nil {
			return 0, false, err
		}
		return uint64(b&0x3f)<<8 | uint64(b2), false, nil
	case 3:
		return uint64(b & 0x3f), true, nil
	}
	var buf [8]byte
	switch b {
	case 0x80:
		if err := d.readFull(buf[:4]); err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(buf[:])), false, nil
	case 0x81:
		if err := d.readFull(buf[:8]); err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(buf[:]), false, nil
	}
	return 0, false, corrupt("unknown length encoding %#x at offset %d", b, d.off-1)
}

// lzfMaxExpansion bounds what one compressed byte can become: the
// longest back reference, 3 bytes, copies 264.
const lzfMaxExpansion = 88

// maxAlloc bounds a single allocation from a length read in the file, so
// a corrupt length cannot exhaust memory before the short read is seen.
const maxAlloc = 512 << 20

func (d *Decoder) readPlainLen() (int, error) {
	n, enc, err := d.readLen()
	if err != nil {
		return 0, err
	}
	if enc {
		return 0, corrupt("unexpected encoded length at offset %d", d.off)
	}
	if n > maxAlloc*8 {
		return 0, corrupt("length %d too large at offset %d", n, d.off)
	}
	return int(n), nil
}

// ReadString reads a string object in any encoding.
func (d *Decoder) ReadString() ([]byte, error) {
	n, enc, err := d.readLen()
	if err != nil {
		return nil, err
	}
	if enc {
		var buf [4]byte
		switch n {
		case 0:
			if err := d.readFull(buf[:1]); err != nil {
				return nil, err
			}
			return strconv.AppendInt(nil, int64(int8(buf[0])), 10), nil
		case 1:
			if err := d.readFull(buf[:2]); err != nil {
				return nil, err
			}
			return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(buf[:]))), 10), nil
		case 2:
			if err := d.readFull(buf[:4]); err != nil {
				return nil, err
			}
			return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(buf[:]))), 10), nil
		case 3:
			clen, err := d.readPlainLen()
			if err != nil {
				return nil, err
			}
			ulen, err := d.readPlainLen()
			if err != nil {
				return nil, err
			}
			if clen > maxAlloc || ulen > 8*maxAlloc {
				return nil, corrupt("LZF string too large at offset %d", d.off)
			}
			if err := d.checkLeft(uint64(clen), "LZF length"); err != nil {
				return nil, err
			}
			if ulen > lzfMaxExpansion*clen {
				return nil, corrupt("LZF string of %d bytes cannot expand to %d at offset %d", clen, ulen, d.off)
			}
			var c []byte
			if clen <= maxScratch {
				if cap(d.scratch) < clen {
					d.scratch = make([]byte, maxScratch)
				}
				c = d.scratch[:clen]
			} else {
				c = make([]byte, clen)
			}
			if err := d.readFull(c); err != nil {
				return nil, err
			}
			out, err := LZFDecompress(c, ulen)
			if err != nil {
				return nil, fmt.Errorf("%w at offset %d", err, d.off)
			}
			return out, nil
		}
		return nil, corrupt("unknown string encoding %d at offset %d", n, d.off)
	}
	if n > maxAlloc*8 {
		return nil, corrupt("string length %d too large at offset %d", n, d.off)
	}
	if err := d.checkLeft(n, "string length"); err != nil {
		return nil, err
	}
	// Grow in steps so a bogus length fails at EOF, not in make; with the
	// input's size known, checkLeft bounded n by the bytes left, so the
	// string is allocated once, its size.
	if n > maxAlloc && d.size < 0 {
		var buf bytes.Buffer
		if _, err := io.CopyN(&buf, io.TeeReader(d.r, crcWriter{d}), int64(n)); err != nil {
			return nil, corrupt("unexpected end of file at offset %d", d.off)
		}
		return buf.Bytes(), nil
	}
	s := make([]byte, n)
	// In steps of copyStep: runtime.memmove is not preemptible, and one
	// 50 MB copy into fresh pages held the process's only P for 100 ms
	// and more while requests of other keys waited (docs/BENCHMARKS.md,
	// "Session 20, bigp99"). Between steps the goroutine can be
	// preempted, so the scheduler's time slice bounds how long it keeps
	// the P.
	for i := 0; i < len(s); i += copyStep {
		if err := d.readFull(s[i:min(i+copyStep, len(s))]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// copyStep is the most a string read copies in one call: at least the
// decoder's buffer (256 KiB), so bufio copies straight from the input
// into the string instead of through its buffer.
const copyStep = 256 << 10

type crcWriter struct{ d *Decoder }

func (w crcWriter) Write(p []byte) (int, error) {
	if !w.d.noCRC {
		w.d.crc = UpdateCRC(w.d.crc, p)
	}
	w.d.off += int64(len(p))
	return len(p), nil
}

func (d *Decoder) readBinaryDouble() (float64, error) {
	var buf [8]byte
	if err := d.readFull(buf[:]); err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(buf[:])), nil
}

// readStringDouble reads the old ZSET score encoding.
func (d *Decoder) readStringDouble() (float64, error) {
	l, err := d.readByte()
	if err != nil {
		return 0, err
	}
	switch l {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	buf := make([]byte, l)
	if err := d.readFull(buf); err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(buf), 64)
	if err != nil {
		return 0, corrupt("bad score %q at offset %d", buf, d.off)
	}
	return f, nil
}

// ReadValue reads a value of RDB type t.
func (d *Decoder) ReadValue(t byte) (*Value, error) {
	switch t {
	case TypeString:
		s, err := d.ReadString()
		if err != nil {
			return nil, err
		}
		return &Value{Kind: KindString, Str: s}, nil
	case TypeList, TypeSet:
		n, err := d.readCount()
		if err != nil {
			return nil, err
		}
		elems := make([][]byte, 0, countHint(n))
		for i := 0; i < n; i++ {
			s, err := d.ReadString()
			if err != nil {
				return nil, err
			}
			elems = append(elems, s)
		}
		k := KindList
		if t == TypeSet {
			k = KindSet
		}
		return &Value{Kind: k, Elems: elems}, nil
	case TypeZSet, TypeZSet2:
		n, err := d.readCount()
		if err != nil {
			return nil, err
		}
		z := make([]ZMember, 0, countHint(n))
		for i := 0; i < n; i++ {
			m, err := d.ReadString()
			if err != nil {
				return nil, err
			}
			var sc float64
			if t == TypeZSet2 {
				sc, err = d.readBinaryDouble()
			} else {
				sc, err = d.readStringDouble()
			}
			if err != nil {
				return nil, err
			}
			if math.IsNaN(sc) {
				return nil, corrupt("zset score is NaN")
			}
			z = append(z, ZMember{m, sc})
		}
		return &Value{Kind: KindZSet, ZSet: z}, nil
	case TypeHash:
		n, err := d.readCount()
		if err != nil {
			return nil, err
		}
		h := make([]HashField, 0, countHint(n))
		for i := 0; i < n; i++ {
			f, err := d.ReadString()
			if err != nil {
				return nil, err
			}
			v, err := d.ReadString()
			if err != nil {
				return nil, err
			}
			h = append(h, HashField{f, v})
		}
		return &Value{Kind: KindHash, Hash: h}, nil
	case TypeListQuicklist, TypeListQuicklist2:
		n, err := d.readCount()
		if err != nil {
			return nil, err
		}
		var elems [][]byte
		for i := 0; i < n; i++ {
			container := uint64(quicklistPacked)
			if t == TypeListQuicklist2 {
				if container, _, err = d.readLen(); err != nil {
					return nil, err
				}
			}
			blob, err := d.ReadString()
			if err != nil {
				return nil, err
			}
			switch {
			case container == quicklistPlain:
				elems = append(elems, blob)
			case container != quicklistPacked:
				return nil, corrupt("bad quicklist container %d", container)
			case t == TypeListQuicklist2:
				e, err := listpackEntries(blob)
				if err != nil {
					return nil, err
				}
				elems = append(elems, e...)
			default:
				e, err := ziplistEntries(blob)
				if err != nil {
					return nil, err
				}
				elems = append(elems, e...)
			}
		}
		return &Value{Kind: KindList, Elems: elems}, nil
	case TypeListZiplist, TypeSetIntset, TypeZSetZiplist, TypeHashZiplist, TypeHashZipmap, TypeHashListpack, TypeZSetListpack:
		blob, err := d.ReadString()
		if err != nil {
			return nil, err
		}
		return decodeBlob(t, blob)
	case TypeStreamListpacks, TypeStreamListpack2:
		return d.readStream(t)
	case TypeModule, TypeModule2:
		return nil, &UnsupportedTypeError{Type: t}
	}
	return nil, corrupt("unknown value type %d at offset %d", t, d.off)
}

func decodeBlob(t byte, blob []byte) (*Value, error) {
	var elems [][]byte
	var err error
	switch t {
	case TypeListZiplist, TypeZSetZiplist, TypeHashZiplist:
		elems, err = ziplistEntries(blob)
	case TypeSetIntset:
		elems, err = intsetEntries(blob)
	case TypeHashZipmap:
		elems, err = zipmapEntries(blob)
	default:
		elems, err = listpackEntries(blob)
	}
	if err != nil {
		return nil, err
	}
	switch t {
	case TypeListZiplist:
		return &Value{Kind: KindList, Elems: elems}, nil
	case TypeSetIntset:
		return &Value{Kind: KindSet, Elems: elems}, nil
	case TypeZSetZiplist, TypeZSetListpack:
		if len(elems)%2 != 0 {
			return nil, corrupt("odd sorted set listpack")
		}
		z := make([]ZMember, 0, len(elems)/2)
		for i := 0; i < len(elems); i += 2 {
			sc, err := strconv.ParseFloat(string(elems[i+1]), 64)
			if err != nil || math.IsNaN(sc) {
				return nil, corrupt("bad score %q", elems[i+1])
			}
			z = append(z, ZMember{elems[i], sc})
		}
		return &Value{Kind: KindZSet, ZSet: z}, nil
	default:
		if len(elems)%2 != 0 {
			return nil, corrupt("odd hash listpack")
		}
		h := make([]HashField, 0, len(elems)/2)
		for i := 0; i < len(elems); i += 2 {
			h = append(h, HashField{elems[i], elems[i+1]})
		}
		return &Value{Kind: KindHash, Hash: h}, nil
	}
}

// ---- whole files -----------------------------------------------------------

// Entry is one key read from a file.
type Entry struct {
	DB       int
	Key      []byte
	ExpireMs int64 // 0 = none
	Idle     int64 // -1 = not in file
	Freq     int   // -1 = not in file
	Value    *Value
}

// Handler receives what a file holds, in order. Nil funcs are skipped.
type Handler struct {
	Aux      func(key, val []byte) error
	SelectDB func(db int) error
	ResizeDB func(size, expires uint64)
	Key      func(e *Entry) error
	// Function receives a FUNCTION2 library's code; when nil the library
	// is refused with an error.
	Function func(code []byte) error
}

// Parse reads a whole RDB stream (header to checksum trailer), calling h.
// It returns the RDB version of the file.
func Parse(r io.Reader, h Handler) (int, error) {
	d := NewDecoder(r)
	return d.Parse(h)
}

// Parse is Parse on an existing decoder (AOF preambles).
func (d *Decoder) Parse(h Handler) (int, error) {
	var magic [9]byte
	if err := d.readFull(magic[:]); err != nil {
		return 0, err
	}
	if string(magic[:5]) != "REDIS" {
		return 0, corrupt("wrong signature, not an RDB file")
	}
	ver, err := strconv.Atoi(string(magic[5:]))
	if err != nil || ver < 1 || ver > Version {
		return 0, fmt.Errorf("%w: can't handle RDB format version %s", ErrCorrupt, magic[5:])
	}
	db := 0
	ent := Entry{Idle: -1, Freq: -1}
	for {
		op, err := d.readByte()
		if err != nil {
			return ver, err
		}
		switch op {
		case OpExpireSec:
			var buf [4]byte
			if err := d.readFull(buf[:]); err != nil {
				return ver, err
			}
			ent.ExpireMs = int64(int32(binary.LittleEndian.Uint32(buf[:]))) * 1000
			continue
		case OpExpireMs:
			var buf [8]byte
			if err := d.readFull(buf[:]); err != nil {
				return ver, err
			}
			ent.ExpireMs = int64(binary.LittleEndian.Uint64(buf[:]))
			continue
		case OpIdle:
			n, _, err := d.readLen()
			if err != nil {
				return ver, err
			}
			ent.Idle = int64(n)
			continue
		case OpFreq:
			b, err := d.readByte()
			if err != nil {
				return ver, err
			}
			ent.Freq = int(b)
			continue
		case OpEOF:
			if ver >= 5 {
				want := d.crc
				var buf [8]byte
				if err := d.readFull(buf[:]); err != nil {
					return ver, err
				}
				got := binary.LittleEndian.Uint64(buf[:])
				if got != 0 && got != want {
					return ver, fmt.Errorf("%w: wrong RDB checksum expected %016x got %016x", ErrCorrupt, got, want)
				}
			}
			return ver, nil
		case OpSelectDB:
			n, err := d.readPlainLen()
			if err != nil {
				return ver, err
			}
			db = n
			if h.SelectDB != nil {
				if err := h.SelectDB(db); err != nil {
					return ver, err
				}
			}
			continue
		case OpResizeDB:
			a, _, err := d.readLen()
			if err != nil {
				return ver, err
			}
			b, _, err := d.readLen()
			if err != nil {
				return ver, err
			}
			if h.ResizeDB != nil {
				h.ResizeDB(a, b)
			}
			continue
		case OpAux:
			k, err := d.ReadString()
			if err != nil {
				return ver, err
			}
			v, err := d.ReadString()
			if err != nil {
				return ver, err
			}
			if h.Aux != nil {
				if err := h.Aux(k, v); err != nil {
					return ver, err
				}
			}
			continue
		case OpModuleAux:
			return ver, fmt.Errorf("rdb: the file contains module auxiliary data (offset %d), which shardnode cannot load", d.off-1)
		case OpFunction:
			return ver, fmt.Errorf("rdb: the file contains a pre-GA function library (offset %d), which cannot be loaded", d.off-1)
		case OpFunction2:
			code, err := d.ReadString()
			if err != nil {
				return ver, err
			}
			if h.Function == nil {
				return ver, fmt.Errorf("rdb: the file contains a function library (offset %d) and this node has no function engine", d.off)
			}
			if err := h.Function(code); err != nil {
				return ver, err
			}
			continue
		}
		keyOff := d.off - 1
		key, err := d.ReadString()
		if err != nil {
			return ver, err
		}
		v, err := d.ReadValue(op)
		if err != nil {
			var ut *UnsupportedTypeError
			if errors.As(err, &ut) {
				return ver, fmt.Errorf("rdb: key %q at offset %d: %w", key, keyOff, err)
			}
			return ver, err
		}
		ent.DB, ent.Key, ent.Value = db, key, v
		if h.Key != nil {
			if err := h.Key(&ent); err != nil {
				return ver, err
			}
		}
		ent = Entry{Idle: -1, Freq: -1}
	}
}

// ErrBadPayload is DUMP payload validation's failure.
var ErrBadPayload = errors.New("DUMP payload version or checksum are wrong")

// Undump parses a DUMP payload, checking its version and checksum.
func Undump(p []byte) (*Value, error) { return UndumpKeep(p, 0) }

// UndumpKeep is Undump, except that a string value of at least keep
// bytes stored raw (neither LZF-compressed nor an integer) is returned as
// a subslice of p, its capacity cut at its end, instead of a copy; keep
// <= 0 copies every string. It is for a caller that owns p and uses
// nothing else of it afterwards (RESTORE of an argument its reader never
// writes again): the value then shares p's memory.
func UndumpKeep(p []byte, keep int) (*Value, error) {
	v := new(Value)
	if err := UndumpKeepInto(p, keep, v); err != nil {
		return nil, err
	}
	return v, nil
}

// UndumpKeepInto is UndumpKeep decoding into v, which the caller owns
// (RESTORE's on its stack: a string payload then allocates nothing but
// the string).
func UndumpKeepInto(p []byte, keep int, v *Value) error {
	if len(p) < 10 {
		return ErrBadPayload
	}
	footer := p[len(p)-10:]
	ver := binary.LittleEndian.Uint16(footer)
	if ver > Version {
		return ErrBadPayload
	}
	if Checksum(p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return ErrBadPayload
	}
	body := p[:len(p)-10]
	if len(body) < 1 {
		return ErrBadPayload
	}
	if keep > 0 && body[0] == TypeString {
		if s, ok := rawString(body[1:]); ok && len(s) >= keep {
			*v = Value{Kind: KindString, Str: s}
			return nil
		}
	}
	u := undumpers.Get().(*undumper)
	defer u.put()
	u.src.Reset(body[1:])
	u.buf.Reset(&u.src)
	u.d = Decoder{r: &u.buf, size: int64(len(body) - 1), noCRC: true, scratch: u.d.scratch} // checksum verified above, once
	if body[0] == TypeString {
		// ReadValue's string case, without its Value allocation.
		s, err := u.d.ReadString()
		if err != nil {
			return err
		}
		*v = Value{Kind: KindString, Str: s}
	} else {
		dv, err := u.d.ReadValue(body[0])
		if err != nil {
			return err
		}
		*v = *dv
	}
	if u.d.off != int64(len(body)-1) {
		return corrupt("trailing bytes in payload")
	}
	return nil
}

// An undumper is the reader and decoder of one Undump, pooled: a MIGRATE
// of small keys makes one RESTORE per key, and a decoder, its buffered
// reader and buffer per payload were most of what the target allocated
// for them. Decoded values never alias the buffer (every string is copied
// out of it, or kept from the payload itself).
type undumper struct {
	src bytes.Reader
	buf bufio.Reader
	d   Decoder
}

var undumpers = sync.Pool{New: func() any {
	u := &undumper{}
	u.buf = *bufio.NewReaderSize(nil, 4096)
	return u
}}

// put returns u to the pool, holding nothing of the payload.
func (u *undumper) put() {
	u.src.Reset(nil)
	u.buf.Reset(nil)
	u.d = Decoder{scratch: u.d.scratch}
	undumpers.Put(u)
}

// rawString returns the string of b when b is exactly one raw-encoded
// string (a plain length and that many bytes), as a subslice of b.
func rawString(b []byte) ([]byte, bool) {
	if len(b) == 0 {
		return nil, false
	}
	var n uint64
	hdr := 0
	switch {
	case b[0]>>6 == 0:
		n, hdr = uint64(b[0]&0x3f), 1
	case b[0]>>6 == 1 && len(b) >= 2:
		n, hdr = uint64(b[0]&0x3f)<<8|uint64(b[1]), 2
	case b[0] == 0x80 && len(b) >= 5:
		n, hdr = uint64(binary.BigEndian.Uint32(b[1:5])), 5
	case b[0] == 0x81 && len(b) >= 9:
		n, hdr = binary.BigEndian.Uint64(b[1:9]), 9
	default:
		return nil, false // an encoded string (integer, LZF), or short
	}
	if n != uint64(len(b)-hdr) {
		return nil, false // not exactly one string: the decoder says why
	}
	return b[hdr:len(b):len(b)], true
}
