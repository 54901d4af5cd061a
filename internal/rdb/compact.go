package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Compact encodings embedded in RDB strings: listpack, ziplist, intset and
// zipmap. Readers validate every length against the blob, so a corrupt
// file yields ErrCorrupt and never a panic.

// ---- listpack ------------------------------------------------------------

// listpackEntries decodes every element of a listpack.
func listpackEntries(lp []byte) ([][]byte, error) {
	if len(lp) < 7 {
		return nil, corrupt("listpack too short")
	}
	total := binary.LittleEndian.Uint32(lp)
	if int(total) != len(lp) || lp[len(lp)-1] != 0xff {
		return nil, corrupt("listpack header/terminator mismatch")
	}
	count := int(binary.LittleEndian.Uint16(lp[4:]))
	out := make([][]byte, 0, min(count, len(lp)))
	p := 6
	for {
		if p >= len(lp) {
			return nil, corrupt("listpack overrun")
		}
		b := lp[p]
		if b == 0xff {
			break
		}
		var val []byte
		var n int // encoding + data size
		switch {
		case b&0x80 == 0:
			val = strconv.AppendInt(nil, int64(b&0x7f), 10)
			n = 1
		case b&0xc0 == 0x80:
			l := int(b & 0x3f)
			n = 1 + l
			if p+n > len(lp) {
				return nil, corrupt("listpack string overrun")
			}
			val = lp[p+1 : p+n]
		case b&0xe0 == 0xc0:
			if p+2 > len(lp) {
				return nil, corrupt("listpack int overrun")
			}
			u := uint64(b&0x1f)<<8 | uint64(lp[p+1])
			v := int64(u)
			if u >= 1<<12 {
				v = int64(u) - (1 << 13)
			}
			val = strconv.AppendInt(nil, v, 10)
			n = 2
		case b&0xf0 == 0xe0:
			if p+2 > len(lp) {
				return nil, corrupt("listpack string overrun")
			}
			l := int(b&0x0f)<<8 | int(lp[p+1])
			n = 2 + l
			if p+n > len(lp) {
				return nil, corrupt("listpack string overrun")
			}
			val = lp[p+2 : p+n]
		case b == 0xf0:
			if p+5 > len(lp) {
				return nil, corrupt("listpack string overrun")
			}
			l := int(binary.LittleEndian.Uint32(lp[p+1:]))
			n = 5 + l
			if l < 0 || p+n > len(lp) || n < 0 {
				return nil, corrupt("listpack string overrun")
			}
			val = lp[p+5 : p+n]
		case b >= 0xf1 && b <= 0xf4:
			size := [...]int{2, 3, 4, 8}[b-0xf1]
			n = 1 + size
			if p+n > len(lp) {
				return nil, corrupt("listpack int overrun")
			}
			var u uint64
			for i := size - 1; i >= 0; i-- {
				u = u<<8 | uint64(lp[p+1+i])
			}
			shift := 64 - 8*size
			v := int64(u<<shift) >> shift
			val = strconv.AppendInt(nil, v, 10)
		default:
			return nil, corrupt("listpack bad encoding byte %#x", b)
		}
		p += n + ListpackBacklenSize(n)
		if p > len(lp) {
			return nil, corrupt("listpack overrun")
		}
		out = append(out, val)
	}
	if p != len(lp)-1 {
		return nil, corrupt("listpack trailing data")
	}
	if count != 0xffff && count != len(out) {
		return nil, corrupt("listpack count mismatch")
	}
	return out, nil
}

// ListpackBacklenSize is the size of a listpack element's back-length
// field for an element of l bytes (encoding and content), as listpack.c
// lays it out.
func ListpackBacklenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

func appendBacklen(b []byte, l int) []byte {
	switch ListpackBacklenSize(l) {
	case 1:
		return append(b, byte(l))
	case 2:
		return append(b, byte(l>>7), byte(l&127)|128)
	case 3:
		return append(b, byte(l>>14), byte((l>>7)&127)|128, byte(l&127)|128)
	case 4:
		return append(b, byte(l>>21), byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
	}
	return append(b, byte(l>>28), byte((l>>21)&127)|128, byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
}

// canonicalInt parses b as Redis's string2ll does for encodings: only the
// canonical decimal form of an int64 is an integer.
func canonicalInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if b[0] == '0' && len(b) > 1 {
		return 0, false
	}
	if b[0] == '-' && (len(b) == 1 || b[1] == '0') {
		return 0, false
	}
	for i, c := range b {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

// appendListpackEntry appends one element with its backlen.
func appendListpackEntry(b []byte, v []byte) []byte {
	start := len(b)
	if iv, ok := canonicalInt(v); ok {
		switch {
		case iv >= 0 && iv <= 127:
			b = append(b, byte(iv))
		case iv >= -4096 && iv <= 4095:
			u := uint64(iv) & 0x1fff
			b = append(b, 0xc0|byte(u>>8), byte(u))
		case iv >= math.MinInt16 && iv <= math.MaxInt16:
			b = append(b, 0xf1, byte(iv), byte(iv>>8))
		case iv >= -(1<<23) && iv < 1<<23:
			b = append(b, 0xf2, byte(iv), byte(iv>>8), byte(iv>>16))
		case iv >= math.MinInt32 && iv <= math.MaxInt32:
			b = append(b, 0xf3)
			b = binary.LittleEndian.AppendUint32(b, uint32(iv))
		default:
			b = append(b, 0xf4)
			b = binary.LittleEndian.AppendUint64(b, uint64(iv))
		}
	} else {
		l := len(v)
		switch {
		case l < 64:
			b = append(b, 0x80|byte(l))
		case l < 4096:
			b = append(b, 0xe0|byte(l>>8), byte(l))
		default:
			b = append(b, 0xf0)
			b = binary.LittleEndian.AppendUint32(b, uint32(l))
		}
		b = append(b, v...)
	}
	return appendBacklen(b, len(b)-start)
}

// buildListpack encodes elems as a listpack.
func buildListpack(elems [][]byte) []byte {
	size := 7
	for _, e := range elems {
		size += len(e) + 11
	}
	b := make([]byte, 6, size)
	for _, e := range elems {
		b = appendListpackEntry(b, e)
	}
	b = append(b, 0xff)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	n := len(elems)
	if n >= 0xffff {
		n = 0xffff
	}
	binary.LittleEndian.PutUint16(b[4:], uint16(n))
	return b
}

// ---- ziplist -------------------------------------------------------------

// ziplistEntries decodes every element of a ziplist (files from Redis < 7).
func ziplistEntries(zl []byte) ([][]byte, error) {
	if len(zl) < 11 {
		return nil, corrupt("ziplist too short")
	}
	if int(binary.LittleEndian.Uint32(zl)) != len(zl) || zl[len(zl)-1] != 0xff {
		return nil, corrupt("ziplist header/terminator mismatch")
	}
	count := int(binary.LittleEndian.Uint16(zl[8:]))
	out := make([][]byte, 0, min(count, len(zl)))
	p := 10
	for {
		if p >= len(zl) {
			return nil, corrupt("ziplist overrun")
		}
		if zl[p] == 0xff {
			break
		}
		// prevlen
		if zl[p] < 254 {
			p++
		} else {
			p += 5
		}
		if p >= len(zl) {
			return nil, corrupt("ziplist overrun")
		}
		b := zl[p]
		var val []byte
		need := func(n int) bool { return p+n <= len(zl)-1 }
		switch b >> 6 {
		case 0:
			l := int(b & 0x3f)
			if !need(1 + l) {
				return nil, corrupt("ziplist string overrun")
			}
			val = zl[p+1 : p+1+l]
			p += 1 + l
		case 1:
			if !need(2) {
				return nil, corrupt("ziplist overrun")
			}
			l := int(b&0x3f)<<8 | int(zl[p+1])
			if !need(2 + l) {
				return nil, corrupt("ziplist string overrun")
			}
			val = zl[p+2 : p+2+l]
			p += 2 + l
		case 2:
			if !need(5) {
				return nil, corrupt("ziplist overrun")
			}
			l := int(binary.BigEndian.Uint32(zl[p+1:]))
			if l < 0 || !need(5+l) {
				return nil, corrupt("ziplist string overrun")
			}
			val = zl[p+5 : p+5+l]
			p += 5 + l
		default:
			var v int64
			var n int
			switch b {
			case 0xc0:
				n = 2
			case 0xd0:
				n = 4
			case 0xe0:
				n = 8
			case 0xf0:
				n = 3
			case 0xfe:
				n = 1
			default:
				if b >= 0xf1 && b <= 0xfd {
					v = int64(b&0x0f) - 1
				} else {
					return nil, corrupt("ziplist bad encoding %#x", b)
				}
			}
			if !need(1 + n) {
				return nil, corrupt("ziplist int overrun")
			}
			if n > 0 {
				var u uint64
				for i := n - 1; i >= 0; i-- {
					u = u<<8 | uint64(zl[p+1+i])
				}
				shift := 64 - 8*n
				v = int64(u<<shift) >> shift
			}
			val = strconv.AppendInt(nil, v, 10)
			p += 1 + n
		}
		out = append(out, val)
	}
	if count != 0xffff && count != len(out) {
		return nil, corrupt("ziplist count mismatch")
	}
	return out, nil
}

// ---- intset --------------------------------------------------------------

func intsetEntries(is []byte) ([][]byte, error) {
	if len(is) < 8 {
		return nil, corrupt("intset too short")
	}
	enc := int(binary.LittleEndian.Uint32(is))
	n := int(binary.LittleEndian.Uint32(is[4:]))
	if enc != 2 && enc != 4 && enc != 8 {
		return nil, corrupt("intset bad encoding %d", enc)
	}
	if n < 0 || 8+n*enc != len(is) {
		return nil, corrupt("intset length mismatch")
	}
	out := make([][]byte, n)
	for i := 0; i < n; i++ {
		p := is[8+i*enc:]
		var v int64
		switch enc {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		out[i] = strconv.AppendInt(nil, v, 10)
	}
	return out, nil
}

// buildIntset encodes sorted unique integers.
func buildIntset(vals []int64) []byte {
	enc := 2
	for _, v := range vals {
		if v < math.MinInt32 || v > math.MaxInt32 {
			enc = 8
			break
		}
		if v < math.MinInt16 || v > math.MaxInt16 {
			enc = 4
		}
	}
	b := make([]byte, 8, 8+enc*len(vals))
	binary.LittleEndian.PutUint32(b, uint32(enc))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(vals)))
	for _, v := range vals {
		switch enc {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		default:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	return b
}

// ---- zipmap --------------------------------------------------------------

// zipmapEntries decodes a zipmap (hashes from Redis < 2.6) into
// alternating field, value.
func zipmapEntries(zm []byte) ([][]byte, error) {
	if len(zm) < 2 {
		return nil, corrupt("zipmap too short")
	}
	p := 1
	var out [][]byte
	readLen := func() (int, bool) {
		if p >= len(zm) {
			return 0, false
		}
		b := zm[p]
		if b < 254 {
			p++
			return int(b), true
		}
		if b == 254 && p+5 <= len(zm) {
			l := int(binary.LittleEndian.Uint32(zm[p+1:]))
			p += 5
			return l, true
		}
		return 0, false
	}
	for {
		if p >= len(zm) {
			return nil, corrupt("zipmap overrun")
		}
		if zm[p] == 0xff {
			break
		}
		kl, ok := readLen()
		if !ok || kl < 0 || p+kl > len(zm) {
			return nil, corrupt("zipmap key overrun")
		}
		key := zm[p : p+kl]
		p += kl
		vl, ok := readLen()
		if !ok || p >= len(zm) {
			return nil, corrupt("zipmap value overrun")
		}
		free := int(zm[p])
		p++
		if vl < 0 || p+vl+free > len(zm) {
			return nil, corrupt("zipmap value overrun")
		}
		out = append(out, key, zm[p:p+vl])
		p += vl + free
	}
	return out, nil
}
