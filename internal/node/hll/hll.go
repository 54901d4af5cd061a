// Package hll implements Redis's HyperLogLog as a string value, byte for
// byte as redis-server 7.0 stores it, so that GET, DUMP, RDB files and
// replication carry the same bytes between shardnode and redis-server.
//
// A HyperLogLog is a string that starts with a 16-byte header: the magic
// "HYLL", one encoding byte (Dense or Sparse), three zero bytes and a cached
// cardinality (8 bytes, little endian; bit 7 of the last byte set means the
// cache is stale). After it come 16384 registers of 6 bits:
//
//   - Dense: the registers packed one after the other from the least
//     significant bit of each byte, 12288 bytes.
//   - Sparse: a run-length code of three opcodes: ZERO (00xxxxxx, 1 to 64
//     zero registers), XZERO (01xxxxxx yyyyyyyy, 1 to 16384 zero registers)
//     and VAL (1vvvvvxx, 1 to 4 registers of value 1 to 32).
//
// An element hashes (MurmurHash64A, seed 0xadc83b19) to a register (the low
// 14 bits) and a count (the position of the first 1 bit in the other 50,
// plus one); a register keeps the largest count it has seen. The sparse
// code is edited in place the way Redis edits it (split the covering
// opcode, then merge adjacent VAL opcodes in a window of five), because the
// same additions in the same order must give the same bytes. A sparse value
// turns dense when a count exceeds 32 or an edit would make it longer than
// hll-sparse-max-bytes.
//
// The cardinality is Ertl's improved estimator over the register
// histogram ("New cardinality estimation algorithms for HyperLogLog
// sketches", arXiv:1702.01284), as Redis 7.0 computes it.
package hll

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Sizes and encodings.
const (
	P          = 14     // register index bits
	Q          = 64 - P // hash bits left for the count
	Registers  = 1 << P // 16384
	HeaderSize = 16     // magic, encoding, 3 unused, cached cardinality
	DenseSize  = HeaderSize + (Registers*6+7)/8
	Dense      = 0 // encoding byte of a dense HyperLogLog
	Sparse     = 1 // encoding byte of a sparse HyperLogLog

	registerMax     = 63
	sparseValMax    = 32
	sparseValMaxLen = 4
	sparseZeroMax   = 64
	sparseXZeroMax  = 16384
	alphaInf        = 0.721347520444481703680 // 0.5/ln(2)
)

// ErrInvalid is a value that is not a HyperLogLog: Redis answers it with
// WRONGTYPE and this text.
var ErrInvalid = errors.New("WRONGTYPE Key is not a valid HyperLogLog string value.")

// ErrCorrupt is a sparse HyperLogLog whose opcodes do not cover exactly
// 16384 registers.
var ErrCorrupt = errors.New("INVALIDOBJ Corrupted HLL object detected")

// New returns an empty HyperLogLog: sparse, one XZERO of 16384 registers.
func New() []byte {
	b := make([]byte, HeaderSize+2)
	copy(b, "HYLL")
	b[4] = Sparse
	putXZero(b[HeaderSize:], Registers)
	return b
}

// Check reports whether b is a HyperLogLog Redis accepts: at least a
// header, the magic, a known encoding and, when dense, the exact size.
func Check(b []byte) error {
	if len(b) < HeaderSize || string(b[:4]) != "HYLL" || b[4] > Sparse {
		return ErrInvalid
	}
	if b[4] == Dense && len(b) != DenseSize {
		return ErrInvalid
	}
	return nil
}

// IsSparse reports whether a checked HyperLogLog is sparse.
func IsSparse(b []byte) bool { return b[4] == Sparse }

// Cached returns the cached cardinality when it is valid.
func Cached(b []byte) (uint64, bool) {
	if b[15]&0x80 != 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[8:16]), true
}

// SetCached stores card as the cached cardinality.
func SetCached(b []byte, card uint64) { binary.LittleEndian.PutUint64(b[8:16], card) }

// Invalidate marks the cached cardinality stale.
func Invalidate(b []byte) { b[15] |= 0x80 }

// Hash is Redis's MurmurHash64A (64-bit, little-endian reads).
func Hash(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ (uint64(len(key)) * m)
	n := len(key) &^ 7
	for i := 0; i < n; i += 8 {
		k := binary.LittleEndian.Uint64(key[i:])
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	tail := key[n:]
	switch len(tail) {
	case 7:
		h ^= uint64(tail[6]) << 48
		fallthrough
	case 6:
		h ^= uint64(tail[5]) << 40
		fallthrough
	case 5:
		h ^= uint64(tail[4]) << 32
		fallthrough
	case 4:
		h ^= uint64(tail[3]) << 24
		fallthrough
	case 3:
		h ^= uint64(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint64(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint64(tail[0])
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// PatLen returns the register an element goes to and its count: one plus
// the number of zero bits before the first 1 in the hash bits above the
// index (at most Q+1).
func PatLen(ele []byte) (index int, count uint8) {
	h := Hash(ele, 0xadc83b19)
	index = int(h & (Registers - 1))
	h >>= P
	h |= 1 << Q
	count = 1
	for h&1 == 0 {
		count++
		h >>= 1
	}
	return index, count
}

// ---- dense ---------------------------------------------------------------

// getReg reads dense register i of regs (the bytes after the header).
func getReg(regs []byte, i int) uint8 {
	byteAt := i * 6 / 8
	fb := uint(i*6) & 7
	b0 := uint(regs[byteAt])
	var b1 uint
	if byteAt+1 < len(regs) {
		b1 = uint(regs[byteAt+1])
	}
	return uint8(((b0 >> fb) | (b1 << (8 - fb))) & registerMax)
}

// mergeDense takes the maximum of dst and the dense registers regs, four
// registers (three bytes) at a time.
func mergeDense(dst *[Registers]uint8, regs []byte) {
	if len(regs) < Registers*6/8 {
		for i := 0; i < Registers; i++ {
			dst[i] = max(dst[i], getReg(regs, i))
		}
		return
	}
	regs = regs[:Registers*6/8]
	for g := 0; g < Registers/4; g++ {
		b := regs[3*g : 3*g+3 : 3*g+3]
		w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		d := dst[4*g : 4*g+4 : 4*g+4]
		d[0] = max(d[0], uint8(w)&registerMax)
		d[1] = max(d[1], uint8(w>>6)&registerMax)
		d[2] = max(d[2], uint8(w>>12)&registerMax)
		d[3] = max(d[3], uint8(w>>18)&registerMax)
	}
}

// setReg writes dense register i of regs.
func setReg(regs []byte, i int, v uint8) {
	byteAt := i * 6 / 8
	fb := uint(i*6) & 7
	regs[byteAt] &^= registerMax << fb
	regs[byteAt] |= v << fb
	if byteAt+1 < len(regs) {
		regs[byteAt+1] &^= registerMax >> (8 - fb)
		regs[byteAt+1] |= v >> (8 - fb)
	}
}

// denseSet raises register index to count; it reports a change.
func denseSet(b []byte, index int, count uint8) bool {
	regs := b[HeaderSize:]
	if getReg(regs, index) >= count {
		return false
	}
	setReg(regs, index, count)
	return true
}

// ---- sparse --------------------------------------------------------------

// opSpan is the number of registers a one-byte opcode covers (ZERO: 1 to
// 64, VAL: 1 to 4), 0 for the first byte of an XZERO.
var opSpan = func() (t [256]uint8) {
	for op := range t {
		switch b := byte(op); {
		case isZero(b):
			t[op] = uint8(zeroLen(b))
		case isVal(b):
			t[op] = uint8(valLen(b))
		}
	}
	return t
}()

func isZero(op byte) bool  { return op&0xc0 == 0 }
func isXZero(op byte) bool { return op&0xc0 == 0x40 }
func isVal(op byte) bool   { return op&0x80 != 0 }

func zeroLen(op byte) int       { return int(op&0x3f) + 1 }
func xzeroLen(hi, lo byte) int  { return (int(hi&0x3f)<<8 | int(lo)) + 1 }
func valValue(op byte) uint8    { return (op>>2)&0x1f + 1 }
func valLen(op byte) int        { return int(op&0x3) + 1 }
func valOp(v uint8, n int) byte { return 0x80 | (v-1)<<2 | byte(n-1) }
func zeroOp(n int) byte         { return byte(n - 1) }
func putXZero(p []byte, n int)  { p[0] = 0x40 | byte((n-1)>>8); p[1] = byte((n - 1) & 0xff) }
func appendZeros(s []byte, n int) []byte {
	if n > sparseZeroMax {
		return append(s, 0x40|byte((n-1)>>8), byte((n-1)&0xff))
	}
	return append(s, zeroOp(n))
}

// walkSparse calls f for every opcode of a sparse code: its first register,
// run length and value (0 for ZERO/XZERO). It returns ErrCorrupt unless
// the runs cover exactly Registers registers (a VAL run past the end stops
// the walk, as Redis's readers stop).
func walkSparse(sp []byte, f func(first, n int, v uint8)) error {
	idx := 0
	for p := 0; p < len(sp); {
		op := sp[p]
		switch {
		case isZero(op):
			n := zeroLen(op)
			f(idx, n, 0)
			idx += n
			p++
		case isXZero(op):
			if p+1 >= len(sp) {
				return ErrCorrupt
			}
			n := xzeroLen(op, sp[p+1])
			f(idx, n, 0)
			idx += n
			p += 2
		default:
			n := valLen(op)
			if idx+n > Registers {
				return ErrCorrupt
			}
			f(idx, n, valValue(op))
			idx += n
			p++
		}
	}
	if idx != Registers {
		return ErrCorrupt
	}
	return nil
}

// ToDense returns b in the dense encoding (b itself when already dense).
// The header, cached cardinality included, is kept.
func ToDense(b []byte) ([]byte, error) {
	if b[4] == Dense {
		return b, nil
	}
	d := make([]byte, DenseSize)
	copy(d, b[:HeaderSize])
	d[4] = Dense
	regs := d[HeaderSize:]
	err := walkSparse(b[HeaderSize:], func(first, n int, v uint8) {
		if v == 0 || first+n > Registers {
			return
		}
		for i := first; i < first+n; i++ {
			setReg(regs, i, v)
		}
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// findOp finds the opcode of the sparse code sp that covers register
// index: its offset p, its first register and run length span, and the
// offset of the opcode before it (-1 for none). span is 0 when the code
// ends before index or in the middle of an XZERO. One table lookup per
// one-byte opcode; a loop of its own, so that its few variables stay in
// registers.
func findOp(sp []byte, index int) (first, span, p, prev int) {
	prev = -1
	rem := index // registers left before index
	for {
		// A run of one-byte opcodes (ZERO, VAL): the inner loop keeps
		// neither the first register (index-rem) nor prev (p-1).
		start := p
		for p < len(sp) {
			s := int(opSpan[sp[p]])
			if s == 0 {
				break
			}
			if rem < s {
				if p > start {
					prev = p - 1
				}
				return index - rem, s, p, prev
			}
			rem -= s
			p++
		}
		if p > start {
			prev = p - 1
		}
		if p+1 >= len(sp) { // the end, or an XZERO cut short
			return 0, 0, p, prev
		}
		s := xzeroLen(sp[p], sp[p+1])
		if rem < s {
			return index - rem, s, p, prev
		}
		rem -= s
		prev = p
		p += 2
	}
}

// sparseSet raises register index to count in a sparse HyperLogLog,
// editing the code as Redis's hllSparseSet does. It returns the new value
// (b edited in place, or a new slice), whether a register changed, and
// ErrCorrupt for an invalid code. The result may be dense (promotion).
func sparseSet(b []byte, index int, count uint8, maxBytes int) ([]byte, bool, error) {
	if count > sparseValMax {
		return promote(b, index, count)
	}
	sp := b[HeaderSize:]
	// Step 1: the opcode covering index, and the one before it.
	first, span, p, prev := findOp(sp, index)
	if span == 0 {
		return nil, false, ErrCorrupt
	}
	op := sp[p]
	zero, xzero, val := isZero(op), isXZero(op), isVal(op)
	var runlen int
	switch {
	case zero:
		runlen = zeroLen(op)
	case xzero:
		runlen = xzeroLen(op, sp[p+1])
	default:
		runlen = valLen(op)
	}
	// Step 2: the trivial cases.
	switch {
	case val && valValue(op) >= count:
		return b, false, nil
	case val && runlen == 1, zero && runlen == 1:
		sp[p] = valOp(count, 1)
		return mergeAndInvalidate(b, prev), true, nil
	}
	// The general case: split the opcode into up to three.
	var seq [5]byte
	n := seq[:0]
	last := first + span - 1
	if zero || xzero {
		if index != first {
			n = appendZeros(n, index-first)
		}
		n = append(n, valOp(count, 1))
		if index != last {
			n = appendZeros(n, last-index)
		}
	} else {
		cur := valValue(op)
		if index != first {
			n = append(n, valOp(cur, index-first))
		}
		n = append(n, valOp(count, 1))
		if index != last {
			n = append(n, valOp(cur, last-index))
		}
	}
	// Step 3: put the new sequence in place of the old opcode.
	oldlen := 1
	if xzero {
		oldlen = 2
	}
	delta := len(n) - oldlen
	if delta > 0 && len(b)+delta > maxBytes {
		return promote(b, index, count)
	}
	out := make([]byte, 0, len(b)+delta)
	out = append(out, b[:HeaderSize+p]...)
	out = append(out, n...)
	out = append(out, b[HeaderSize+p+oldlen:]...)
	return mergeAndInvalidate(out, prev), true, nil
}

// mergeAndInvalidate is Step 4 of Redis's edit: from the opcode before the
// edited one, scan up to five opcodes and merge adjacent VAL opcodes of one
// value whose runs fit one opcode; then mark the cache stale.
func mergeAndInvalidate(b []byte, prev int) []byte {
	p := HeaderSize
	if prev >= 0 {
		p += prev
	}
	end := len(b)
	for scan := 5; p < end && scan > 0; {
		scan--
		switch op := b[p]; {
		case isXZero(op):
			p += 2
			continue
		case isZero(op):
			p++
			continue
		}
		if p+1 < end && isVal(b[p+1]) {
			v1, v2 := valValue(b[p]), valValue(b[p+1])
			if v1 == v2 {
				if l := valLen(b[p]) + valLen(b[p+1]); l <= sparseValMaxLen {
					b[p+1] = valOp(v1, l)
					copy(b[p:], b[p+1:end])
					end--
					continue // try the merged opcode with the next one
				}
			}
		}
		p++
	}
	b = b[:end]
	Invalidate(b)
	return b
}

// promote turns a sparse HyperLogLog dense and then sets the register.
func promote(b []byte, index int, count uint8) ([]byte, bool, error) {
	d, err := ToDense(b)
	if err != nil {
		return nil, false, err
	}
	denseSet(d, index, count)
	Invalidate(d)
	return d, true, nil
}

// ---- operations ----------------------------------------------------------

// Set raises register index to count in the checked HyperLogLog b,
// returning the value to store (b itself or a new slice) and whether a
// register changed; maxBytes is hll-sparse-max-bytes. A change marks the
// cached cardinality stale.
func Set(b []byte, index int, count uint8, maxBytes int) ([]byte, bool, error) {
	if b[4] == Dense {
		if !denseSet(b, index, count) {
			return b, false, nil
		}
		Invalidate(b)
		return b, true, nil
	}
	return sparseSet(b, index, count, maxBytes)
}

// Add adds one element (PFADD's element) to the checked HyperLogLog b.
func Add(b, ele []byte, maxBytes int) ([]byte, bool, error) {
	index, count := PatLen(ele)
	return Set(b, index, count, maxBytes)
}

// MergeInto raises max[i] to each register of the checked HyperLogLog b.
func MergeInto(max *[Registers]uint8, b []byte) error {
	if b[4] == Dense {
		mergeDense(max, b[HeaderSize:])
		return nil
	}
	return walkSparse(b[HeaderSize:], func(first, n int, v uint8) {
		for i := first; i < first+n && v != 0; i++ {
			if v > max[i] {
				max[i] = v
			}
		}
	})
}

// Count computes the cardinality of the checked HyperLogLog b (ignoring
// the cache).
func Count(b []byte) (uint64, error) {
	var histo [64]int
	if b[4] == Dense {
		regs := b[HeaderSize:]
		for i := 0; i < Registers; i++ {
			histo[getReg(regs, i)]++
		}
	} else {
		// Redis counts a sparse code as it reads it and reports it invalid
		// when the runs do not add up; a VAL past the end is counted too.
		idx := 0
		sp := b[HeaderSize:]
		for p := 0; p < len(sp); {
			op := sp[p]
			switch {
			case isZero(op):
				n := zeroLen(op)
				histo[0] += n
				idx += n
				p++
			case isXZero(op):
				if p+1 >= len(sp) {
					return 0, ErrCorrupt
				}
				n := xzeroLen(op, sp[p+1])
				histo[0] += n
				idx += n
				p += 2
			default:
				n := valLen(op)
				histo[valValue(op)] += n
				idx += n
				p++
			}
		}
		if idx != Registers {
			return 0, ErrCorrupt
		}
	}
	return estimate(&histo), nil
}

// CountRegisters computes the cardinality of plain registers (PFCOUNT of
// several keys merges into these).
func CountRegisters(regs *[Registers]uint8) uint64 {
	var histo [64]int
	for _, v := range regs {
		histo[v&63]++
	}
	return estimate(&histo)
}

// estimate is Ertl's estimator over the register histogram.
func estimate(histo *[64]int) uint64 {
	m := float64(Registers)
	z := m * tau((m-float64(histo[Q+1]))/m)
	for j := Q; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += m * sigma(float64(histo[0])/m)
	return uint64(math.Round(alphaInf * m * m / z))
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zPrime := z
		z += x * y
		y += y
		if zPrime == z {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if zPrime == z {
			return z / 3
		}
	}
}

// FromRegisters builds the value PFMERGE stores into dst (a checked
// HyperLogLog, or nil for a new key): dst made dense when dense is set,
// then every non-zero register of regs set in order, as Redis does.
func FromRegisters(dst []byte, regs *[Registers]uint8, dense bool, maxBytes int) ([]byte, error) {
	if dst == nil {
		dst = New()
	}
	var err error
	if dense {
		if dst, err = ToDense(dst); err != nil {
			return nil, err
		}
	}
	for i, v := range regs {
		if v == 0 {
			continue
		}
		if dst, _, err = Set(dst, i, v, maxBytes); err != nil {
			return nil, err
		}
	}
	Invalidate(dst)
	return dst, nil
}

// Registers returns the 16384 register values of the checked b.
func RegisterValues(b []byte) ([]uint8, error) {
	var max [Registers]uint8
	if err := MergeInto(&max, b); err != nil {
		return nil, err
	}
	return max[:], nil
}

// Decode renders a sparse code as PFDEBUG DECODE does ("z:3 v:2,1 Z:100").
func Decode(b []byte) (string, error) {
	if b[4] != Sparse {
		return "", errors.New("ERR HLL encoding is not sparse")
	}
	var sb strings.Builder
	sp := b[HeaderSize:]
	for p := 0; p < len(sp); {
		op := sp[p]
		switch {
		case isZero(op):
			fmt.Fprintf(&sb, "z:%d ", zeroLen(op))
			p++
		case isXZero(op):
			lo := byte(0)
			if p+1 < len(sp) {
				lo = sp[p+1]
			}
			fmt.Fprintf(&sb, "Z:%d ", xzeroLen(op, lo))
			p += 2
		default:
			fmt.Fprintf(&sb, "v:%d,%d ", valValue(op), valLen(op))
			p++
		}
	}
	return strings.TrimRight(sb.String(), " "), nil
}

// SelfTest is PFSELFTEST: the dense registers keep what is written to them
// and do not disturb their neighbours; then ten million distinct elements go
// into a dense and a sparse HyperLogLog, which must use the sparse encoding
// while small, agree with each other, and stay within six standard errors
// of the true count at every power of ten. It returns Redis's TESTFAILED
// error texts.
func SelfTest(maxBytes int) error {
	rng := newSelfTestRand()
	dense := make([]byte, DenseSize)
	regs := dense[HeaderSize:]
	var want [Registers]uint8
	for cycle := 0; cycle < 1000; cycle++ {
		for i := range want {
			want[i] = uint8(rng.next() & registerMax)
			setReg(regs, i, want[i])
		}
		for i := range want {
			if v := getReg(regs, i); v != want[i] {
				return fmt.Errorf("TESTFAILED Register %d should be %d but is %d", i, want[i], v)
			}
		}
	}
	clear(regs)
	copy(dense, "HYLL")
	sparse := New()
	relerr := 1.04 / math.Sqrt(Registers)
	seed := rng.next() | rng.next()<<32
	var ele [8]byte
	checkpoint := uint64(1)
	for j := uint64(1); j <= 10000000; j++ {
		binary.LittleEndian.PutUint64(ele[:], j^seed)
		index, count := PatLen(ele[:])
		denseSet(dense, index, count)
		var err error
		if sparse, _, err = Set(sparse, index, count, maxBytes); err != nil {
			return err
		}
		if j != checkpoint {
			continue
		}
		if j < uint64(maxBytes/2) && !IsSparse(sparse) {
			return errors.New("TESTFAILED sparse encoding not used")
		}
		cd, _ := Count(dense)
		cs, _ := Count(sparse)
		if cd != cs {
			return errors.New("TESTFAILED dense/sparse disagree")
		}
		abserr := int64(checkpoint) - int64(cd)
		if abserr < 0 {
			abserr = -abserr
		}
		maxerr := int64(math.Ceil(relerr * 6 * float64(checkpoint)))
		if j == 10 {
			maxerr = 1
		}
		if abserr > maxerr {
			return fmt.Errorf("TESTFAILED Too big error. card:%d abserr:%d", checkpoint, abserr)
		}
		checkpoint *= 10
	}
	return nil
}

// selfTestRand is a small xorshift generator for SelfTest's values.
type selfTestRand struct{ s uint64 }

func newSelfTestRand() *selfTestRand { return &selfTestRand{s: 0x9e3779b97f4a7c15} }

func (r *selfTestRand) next() uint64 {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return r.s & 0xffffffff
}
