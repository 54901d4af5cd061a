package rdb

import (
	"errors"
	"math/bits"
	"sync"
)

// LZF, the compression RDB files use for strings (Marc Lehmann's format):
// a stream of literal runs (control byte 000LLLLL, L+1 bytes follow) and
// back references (control byte LLLOOOOO [extra length byte if LLL == 7]
// offset byte; length L+2, distance ((OOOOO << 8) | offset) + 1).

const (
	lzfHashBits = 14
	lzfMaxLit   = 32
	lzfMaxOff   = 1 << 13
	lzfMaxRef   = (1 << 8) + (1 << 3) // 264
	lzfMinMatch = 3
)

// lzfTables recycles hash tables; only the part an input needs is cleared,
// so compressing many short strings does not clear 64 KB each time.
var lzfTables = sync.Pool{New: func() any { return new([1 << lzfHashBits]int32) }}

// ErrLZF reports corrupt compressed data.
var ErrLZF = errors.New("rdb: invalid LZF data")

// LZFCompress compresses in into a new slice of at most maxOut bytes and
// returns nil when the result would not fit (the caller then stores the
// data uncompressed).
func LZFCompress(in []byte, maxOut int) []byte {
	if len(in) < 4 || maxOut <= 0 {
		return nil
	}
	out, ok := LZFCompressAppend(make([]byte, 0, maxOut), in, maxOut)
	if !ok {
		return nil
	}
	return out
}

// LZFCompressAppend appends the compression of in to dst, using at most
// maxOut bytes. It reports false (dst's content past its original length
// is then garbage) when the result would not fit. The RDB encoder uses it
// to compress straight into its output buffer, without an allocation per
// string.
func LZFCompressAppend(dst, in []byte, maxOut int) ([]byte, bool) {
	if len(in) < 4 || maxOut <= 0 {
		return dst, false
	}
	hb := min(lzfHashBits, max(8, bits.Len(uint(len(in)))))
	shift := 32 - hb
	tp := lzfTables.Get().(*[1 << lzfHashBits]int32)
	defer lzfTables.Put(tp)
	table := tp[:1<<hb] // positions + 1; 0 = empty
	clear(table)
	out := dst
	maxOut += len(dst)
	litStart := 0 // start of the pending literal run
	flushLits := func(end int) bool {
		// The run's control bytes and bytes must fit: else fail before
		// copying anything.
		if n := end - litStart; len(out)+n+(n+lzfMaxLit-1)/lzfMaxLit > maxOut {
			return false
		}
		for litStart < end {
			n := min(end-litStart, lzfMaxLit)
			if len(out)+1+n > maxOut {
				return false
			}
			out = append(out, byte(n-1))
			out = append(out, in[litStart:litStart+n]...)
			litStart += n
		}
		return true
	}
	ip := 0
	// skip>>5 is the step to the next position looked up: it grows by
	// one every 32 lookups without a match and is back to 1 after a
	// match (Snappy's rule), so incompressible data is crossed in
	// O(sqrt) lookups while compressible data is looked up at every
	// position. The skipped bytes go out as literals: the stream is
	// valid LZF either way, only the ratio of data whose matches follow
	// a long incompressible stretch can be lower.
	skip := 32
	for ip+lzfMinMatch <= len(in) {
		v := uint32(in[ip])<<16 | uint32(in[ip+1])<<8 | uint32(in[ip+2])
		h := (v * 2654435761) >> shift
		ref := int(table[h]) - 1
		table[h] = int32(ip + 1)
		if ref >= 0 && ip-ref <= lzfMaxOff && in[ref] == in[ip] && in[ref+1] == in[ip+1] && in[ref+2] == in[ip+2] {
			n := lzfMinMatch
			maxN := min(lzfMaxRef, len(in)-ip)
			for n < maxN && in[ref+n] == in[ip+n] {
				n++
			}
			if !flushLits(ip) {
				return out, false
			}
			off := ip - ref - 1
			l := n - 2
			if l < 7 {
				if len(out)+2 > maxOut {
					return out, false
				}
				out = append(out, byte(l<<5|off>>8), byte(off))
			} else {
				if len(out)+3 > maxOut {
					return out, false
				}
				out = append(out, byte(7<<5|off>>8), byte(l-7), byte(off))
			}
			// Index the positions inside the match so later data can
			// refer to them.
			end := ip + n
			for p := ip + 1; p < end && p+lzfMinMatch <= len(in); p++ {
				w := uint32(in[p])<<16 | uint32(in[p+1])<<8 | uint32(in[p+2])
				table[(w*2654435761)>>shift] = int32(p + 1)
			}
			ip = end
			litStart = ip
			skip = 32
			continue
		}
		ip += skip >> 5
		skip++
	}
	if !flushLits(len(in)) {
		return out, false
	}
	return out, true
}

// LZFDecompress expands in, which must produce exactly outLen bytes.
func LZFDecompress(in []byte, outLen int) ([]byte, error) {
	out := make([]byte, 0, outLen)
	i := 0
	for i < len(in) {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			n := ctrl + 1
			if i+n > len(in) || len(out)+n > outLen {
				return nil, ErrLZF
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		l := ctrl >> 5
		if l == 7 {
			if i >= len(in) {
				return nil, ErrLZF
			}
			l += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, ErrLZF
		}
		ref := len(out) - ((ctrl&0x1f)<<8 | int(in[i])) - 1
		i++
		l += 2
		if ref < 0 || len(out)+l > outLen {
			return nil, ErrLZF
		}
		for k := 0; k < l; k++ { // may overlap: byte by byte
			out = append(out, out[ref+k])
		}
	}
	if len(out) != outLen {
		return nil, ErrLZF
	}
	return out, nil
}
