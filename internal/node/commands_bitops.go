package node

import (
	"encoding/binary"
	"math/bits"

	"github.com/shardis/shardis/internal/node/keyspace"
)

// Bit commands on strings (Redis's bitops.c): SETBIT, GETBIT, BITCOUNT,
// BITPOS, BITOP, BITFIELD, BITFIELD_RO. Bit 0 is the most significant bit
// of the first byte.

func registerBitopsCommands(t *commandTable) {
	add := func(name string, arity int, flags cmdFlag, first, last int, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: first, last: last, step: 1, fn: fn, group: "bitmap", since: since})
	}
	add("setbit", 4, flagWrite|flagDenyOOM, 1, 1, cmdSetBit, "2.2.0")
	add("getbit", 3, flagReadOnly|flagFast, 1, 1, cmdGetBit, "2.2.0")
	add("bitcount", -2, flagReadOnly, 1, 1, cmdBitCount, "2.6.0")
	add("bitpos", -3, flagReadOnly, 1, 1, cmdBitPos, "2.8.7")
	add("bitop", -4, flagWrite|flagDenyOOM, 2, -1, cmdBitOp, "2.6.0")
	add("bitfield", -2, flagWrite|flagDenyOOM, 1, 1, cmdBitField, "3.2.0")
	add("bitfield_ro", -2, flagReadOnly|flagFast, 1, 1, cmdBitFieldRO, "6.0.0")
}

const errBitOffset = "ERR bit offset is not an integer or out of range"

// bitOffset parses a bit offset (or #N, N*bits, when hashBits > 0) limited
// to proto-max-bulk-len bytes, as getBitOffsetFromArgument does.
func (c *Client) bitOffset(arg []byte, hashBits int) (int64, bool) {
	useHash := hashBits > 0 && len(arg) > 0 && arg[0] == '#'
	if useHash {
		arg = arg[1:]
	}
	off, ok := parseInt(arg)
	if useHash {
		off *= int64(hashBits)
	}
	if !ok || off < 0 || (!c.hasFlag(clientMaster) && off>>3 >= c.srv.cfg.Int(DirProtoMaxBulkLen)) {
		c.addError(errBitOffset)
		return 0, false
	}
	return off, true
}

// lookupStringForBit returns key's string grown (zero-padded) to hold bit
// maxBit, creating it if needed; dirty reports creation or growth. It
// replies WRONGTYPE and returns nil for another type.
func (c *Client) lookupStringForBit(key []byte, maxBit int64) (e *keyspace.Entry, dirty bool) {
	e, ok := c.lookupString(key)
	if !ok {
		return nil, false
	}
	n := int(maxBit>>3) + 1
	if e == nil {
		return c.curDB().SetString(string(key), make([]byte, n), 0, false), true
	}
	old := len(e.Str)
	e.Str = growZero(e.Str, n)
	return e, len(e.Str) != old
}

// SETBIT key offset value
func cmdSetBit(c *Client, args [][]byte) {
	off, ok := c.bitOffset(args[2], 0)
	if !ok {
		return
	}
	on, ok := parseInt(args[3])
	if !ok || on&^1 != 0 {
		c.addError("ERR bit is not an integer or out of range")
		return
	}
	e, dirty := c.lookupStringForBit(args[1], off)
	if e == nil {
		return
	}
	byteIdx, shift := off>>3, 7-uint(off&7)
	old := (e.Str[byteIdx] >> shift) & 1
	if dirty || int64(old) != on {
		e.Str[byteIdx] = e.Str[byteIdx]&^(1<<shift) | byte(on)<<shift
		c.signalModifiedKey(e.Key)
		c.notify(notifyString, "setbit", e.Key)
		c.markDirty(1)
	}
	c.addInt(int64(old))
}

// GETBIT key offset
func cmdGetBit(c *Client, args [][]byte) {
	off, ok := c.bitOffset(args[2], 0)
	if !ok {
		return
	}
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil || off>>3 >= int64(len(e.Str)) {
		c.addInt(0)
		return
	}
	c.addInt(int64(e.Str[off>>3]>>(7-uint(off&7))) & 1)
}

// bitRange converts BITCOUNT/BITPOS start/end (bytes, or bits when isBit)
// into an inclusive bit range of a string of n bytes; empty is true when
// the range holds no bit.
func bitRange(n, start, end int64, isBit bool) (from, to int64, empty bool) {
	total := n
	if isBit {
		total <<= 3
	}
	start, end, empty = clampRange(start, end, total)
	if empty || isBit {
		return start, end, empty
	}
	return start << 3, end<<3 + 7, false
}

// popcountBits counts the set bits of p in the inclusive bit range.
func popcountBits(p []byte, from, to int64) int64 {
	var n int64
	i := from
	for ; i <= to && i&7 != 0; i++ {
		n += int64(p[i>>3]>>(7-uint(i&7))) & 1
	}
	for ; i+63 <= to; i += 64 {
		n += int64(bits.OnesCount64(binary.BigEndian.Uint64(p[i>>3:])))
	}
	for ; i+7 <= to; i += 8 {
		n += int64(bits.OnesCount8(p[i>>3]))
	}
	for ; i <= to; i++ {
		n += int64(p[i>>3]>>(7-uint(i&7))) & 1
	}
	return n
}

// findBit returns the first bit equal to bit in the inclusive range, or -1.
func findBit(p []byte, from, to int64, bit byte) int64 {
	get := func(i int64) byte { return (p[i>>3] >> (7 - uint(i&7))) & 1 }
	i := from
	for ; i <= to && i&7 != 0; i++ {
		if get(i) == bit {
			return i
		}
	}
	for ; i+63 <= to; i += 64 {
		w := binary.BigEndian.Uint64(p[i>>3:])
		if bit == 0 {
			w = ^w
		}
		if w != 0 {
			return i + int64(bits.LeadingZeros64(w))
		}
	}
	for ; i+7 <= to; i += 8 {
		b := p[i>>3]
		if bit == 0 {
			b = ^b
		}
		if b != 0 {
			return i + int64(bits.LeadingZeros8(b))
		}
	}
	for ; i <= to; i++ {
		if get(i) == bit {
			return i
		}
	}
	return -1
}

// parseBitUnit parses BYTE|BIT.
func parseBitUnit(c *Client, a []byte) (isBit, ok bool) {
	switch {
	case eqFold(a, "BIT"):
		return true, true
	case eqFold(a, "BYTE"):
		return false, true
	}
	c.addError(errSyntax)
	return false, false
}

// BITCOUNT key [start end [BYTE|BIT]]
func cmdBitCount(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	p := e.Str
	var from, to int64
	switch len(args) {
	case 2:
		if len(p) == 0 {
			c.addInt(0)
			return
		}
		from, to = 0, int64(len(p))*8-1
	case 4, 5:
		start, ok := parseInt(args[2])
		if !ok {
			c.addError(errNotInt)
			return
		}
		end, ok := parseInt(args[3])
		if !ok {
			c.addError(errNotInt)
			return
		}
		if start < 0 && end < 0 && start > end {
			c.addInt(0)
			return
		}
		isBit := false
		if len(args) == 5 {
			if isBit, ok = parseBitUnit(c, args[4]); !ok {
				return
			}
		}
		var empty bool
		if from, to, empty = bitRange(int64(len(p)), start, end, isBit); empty {
			c.addInt(0)
			return
		}
	default:
		c.addError(errSyntax)
		return
	}
	c.addInt(popcountBits(p, from, to))
}

// BITPOS key bit [start [end [BYTE|BIT]]]
func cmdBitPos(c *Client, args [][]byte) {
	bit, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if bit != 0 && bit != 1 {
		c.addError("ERR The bit argument must be 1 or 0.")
		return
	}
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		if bit == 1 {
			c.addInt(-1)
		} else {
			c.addInt(0)
		}
		return
	}
	p := e.Str
	n := int64(len(p))
	from, to := int64(0), n*8-1
	endGiven := false
	switch len(args) {
	case 3:
	case 4, 5, 6:
		start, ok := parseInt(args[3])
		if !ok {
			c.addError(errNotInt)
			return
		}
		isBit := false
		if len(args) == 6 {
			if isBit, ok = parseBitUnit(c, args[5]); !ok {
				return
			}
		}
		end := int64(-1)
		if len(args) >= 5 {
			if end, ok = parseInt(args[4]); !ok {
				c.addError(errNotInt)
				return
			}
			endGiven = true
		}
		var empty bool
		if from, to, empty = bitRange(n, start, end, isBit); empty {
			c.addInt(-1)
			return
		}
	default:
		c.addError(errSyntax)
		return
	}
	if from > to {
		c.addInt(-1)
		return
	}
	pos := findBit(p, from, to, byte(bit))
	if pos == -1 && bit == 0 && !endGiven {
		// Without an explicit end the string is seen as padded with
		// zeros: the first clear bit is right after the (byte) range.
		pos = (to>>3 + 1) << 3
	}
	c.addInt(pos)
}

// BITOP AND|OR|XOR|NOT destkey key [key ...]
func cmdBitOp(c *Client, args [][]byte) {
	op := args[1]
	isNot := eqFold(op, "NOT")
	if !eqFold(op, "AND") && !eqFold(op, "OR") && !eqFold(op, "XOR") && !isNot {
		c.addError(errSyntax)
		return
	}
	if isNot && len(args) != 4 {
		c.addError("ERR BITOP NOT must be called with a single source key.")
		return
	}
	db := c.curDB()
	srcs := make([][]byte, 0, len(args)-3)
	maxLen := 0
	for _, k := range args[3:] {
		e := db.Lookup(bstr(k), c.now)
		if e == nil {
			srcs = append(srcs, nil)
			continue
		}
		if e.Obj != nil {
			c.addError(errWrongType)
			return
		}
		srcs = append(srcs, e.Str)
		maxLen = max(maxLen, len(e.Str))
	}
	dest := args[2]
	if maxLen == 0 {
		if e := db.GetEntry(bstr(dest)); e != nil {
			key := e.Key
			db.Remove(key)
			c.signalModifiedKey(key)
			c.notify(notifyGeneric, "del", key)
			c.markDirty(1)
		}
		c.addInt(0)
		return
	}
	res := make([]byte, maxLen)
	switch {
	case isNot:
		for i, b := range srcs[0] {
			res[i] = ^b
		}
	case eqFold(op, "AND"):
		copy(res, srcs[0])
		for _, s := range srcs[1:] {
			for i := range res {
				if i < len(s) {
					res[i] &= s[i]
				} else {
					res[i] = 0
				}
			}
		}
	default:
		xor := eqFold(op, "XOR")
		for _, s := range srcs {
			for i, b := range s {
				if xor {
					res[i] ^= b
				} else {
					res[i] |= b
				}
			}
		}
	}
	e := db.Lookup(bstr(dest), c.now)
	e = c.storeString(e, dest, res, 0, false)
	c.signalModifiedKey(e.Key)
	c.notify(notifyString, "set", e.Key)
	c.markDirty(1)
	c.addInt(int64(maxLen))
}

// Overflow policies of BITFIELD.
const (
	bfWrap = iota
	bfSat
	bfFail
)

// bitfieldOp is one GET/SET/INCRBY of a BITFIELD call.
type bitfieldOp struct {
	op       byte // 'g', 's', 'i'
	offset   int64
	bits     int
	signed   bool
	value    int64
	overflow int
}

// BITFIELD key [GET enc off] [SET enc off value] [INCRBY enc off incr] [OVERFLOW WRAP|SAT|FAIL] ...
func cmdBitField(c *Client, args [][]byte) { bitfieldGeneric(c, args, false) }

// BITFIELD_RO key [GET encoding offset ...]
func cmdBitFieldRO(c *Client, args [][]byte) { bitfieldGeneric(c, args, true) }

func bitfieldGeneric(c *Client, args [][]byte, readOnlyCmd bool) {
	var ops []bitfieldOp
	overflow := bfWrap
	readonly := true
	var highest int64
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		sub := args[j]
		var op byte
		switch {
		case eqFold(sub, "GET") && rem >= 2:
			op = 'g'
		case eqFold(sub, "SET") && rem >= 3:
			op = 's'
		case eqFold(sub, "INCRBY") && rem >= 3:
			op = 'i'
		case eqFold(sub, "OVERFLOW") && rem >= 1:
			j++
			switch t := args[j]; {
			case eqFold(t, "WRAP"):
				overflow = bfWrap
			case eqFold(t, "SAT"):
				overflow = bfSat
			case eqFold(t, "FAIL"):
				overflow = bfFail
			default:
				c.addError("ERR Invalid OVERFLOW type specified")
				return
			}
			continue
		default:
			c.addError(errSyntax)
			return
		}
		signed, nbits, ok := parseBitfieldType(args[j+1])
		if !ok {
			c.addError("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
			return
		}
		off, ok := c.bitOffset(args[j+2], nbits)
		if !ok {
			return
		}
		o := bitfieldOp{op: op, offset: off, bits: nbits, signed: signed, overflow: overflow}
		if op != 'g' {
			readonly = false
			highest = max(highest, off+int64(nbits)-1)
			if o.value, ok = parseInt(args[j+3]); !ok {
				c.addError(errNotInt)
				return
			}
			j++
		}
		j += 2
		ops = append(ops, o)
	}
	var e *keyspace.Entry
	dirty := false
	if readonly {
		var ok bool
		if e, ok = c.lookupString(args[1]); !ok {
			return
		}
	} else {
		if readOnlyCmd {
			c.addError("ERR BITFIELD_RO only supports the GET subcommand")
			return
		}
		if e, dirty = c.lookupStringForBit(args[1], highest); e == nil {
			return
		}
	}
	changes := 0
	c.addArrayLen(len(ops))
	for _, o := range ops {
		if o.op == 'g' {
			var buf [9]byte
			if e != nil {
				byteIdx := o.offset >> 3
				for i := int64(0); i < 9 && byteIdx+i < int64(len(e.Str)); i++ {
					buf[i] = e.Str[byteIdx+i]
				}
			}
			rel := o.offset & 7
			if o.signed {
				c.addInt(getSignedBits(buf[:], rel, o.bits))
			} else {
				c.addInt(int64(getUnsignedBits(buf[:], rel, o.bits)))
			}
			continue
		}
		var oldv, newv, ret int64
		var over bool
		if o.signed {
			oldv = getSignedBits(e.Str, o.offset, o.bits)
			if o.op == 'i' {
				var wrapped int64
				over, wrapped = signedOverflow(oldv, o.value, o.bits, o.overflow)
				if over {
					newv = wrapped
				} else {
					newv = oldv + o.value
				}
				ret = newv
			} else {
				newv = o.value
				var wrapped int64
				if over, wrapped = signedOverflow(newv, 0, o.bits, o.overflow); over {
					newv = wrapped
				}
				ret = oldv
			}
		} else {
			uold := getUnsignedBits(e.Str, o.offset, o.bits)
			var unew uint64
			if o.op == 'i' {
				var wrapped uint64
				unew = uold + uint64(o.value)
				if over, wrapped = unsignedOverflow(uold, o.value, o.bits, o.overflow); over {
					unew = wrapped
				}
				ret = int64(unew)
			} else {
				unew = uint64(o.value)
				var wrapped uint64
				if over, wrapped = unsignedOverflow(unew, 0, o.bits, o.overflow); over {
					unew = wrapped
				}
				ret = int64(uold)
			}
			oldv, newv = int64(uold), int64(unew)
		}
		if over && o.overflow == bfFail {
			c.addNull()
			continue
		}
		c.addInt(ret)
		setBits(e.Str, o.offset, o.bits, uint64(newv))
		if dirty || oldv != newv {
			changes++
		}
	}
	if changes > 0 {
		c.signalModifiedKey(e.Key)
		c.notify(notifyString, "setbit", e.Key)
		c.markDirty(changes)
	}
}

// parseBitfieldType parses i<bits> (1..64) or u<bits> (1..63).
func parseBitfieldType(a []byte) (signed bool, n int, ok bool) {
	if len(a) < 2 || (a[0] != 'i' && a[0] != 'u') {
		return false, 0, false
	}
	signed = a[0] == 'i'
	v, ok := parseInt(a[1:])
	if !ok || v < 1 || (signed && v > 64) || (!signed && v > 63) {
		return false, 0, false
	}
	return signed, int(v), true
}

func getUnsignedBits(p []byte, off int64, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		pos := off + int64(i)
		v = v<<1 | uint64((p[pos>>3]>>(7-uint(pos&7)))&1)
	}
	return v
}

func getSignedBits(p []byte, off int64, n int) int64 {
	v := getUnsignedBits(p, off, n)
	if n < 64 && v&(1<<(n-1)) != 0 {
		v |= ^uint64(0) << n
	}
	return int64(v)
}

func setBits(p []byte, off int64, n int, v uint64) {
	for i := 0; i < n; i++ {
		b := byte(v>>(n-1-i)) & 1
		pos := off + int64(i)
		shift := 7 - uint(pos&7)
		p[pos>>3] = p[pos>>3]&^(1<<shift) | b<<shift
	}
}

// unsignedOverflow is checkUnsignedBitfieldOverflow: whether value+incr
// leaves the n-bit range, and the wrapped or saturated result.
func unsignedOverflow(value uint64, incr int64, n int, policy int) (bool, uint64) {
	maxv := uint64(1)<<n - 1
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	wrap := func() uint64 { return (value + uint64(incr)) & maxv }
	if value > maxv || (incr > 0 && incr > maxIncr) {
		switch policy {
		case bfWrap:
			return true, wrap()
		case bfSat:
			return true, maxv
		}
		return true, 0
	}
	if incr < 0 && incr < minIncr {
		switch policy {
		case bfWrap:
			return true, wrap()
		case bfSat:
			return true, 0
		}
		return true, 0
	}
	return false, 0
}

// signedOverflow is checkSignedBitfieldOverflow.
func signedOverflow(value, incr int64, n int, policy int) (bool, int64) {
	maxv := int64(1<<63 - 1)
	if n < 64 {
		maxv = int64(1)<<(n-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	wrap := func() int64 {
		r := uint64(value) + uint64(incr)
		if n < 64 {
			mask := ^uint64(0) << n
			if r&(1<<(n-1)) != 0 {
				r |= mask
			} else {
				r &^= mask
			}
		}
		return int64(r)
	}
	if value > maxv || (n != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr) {
		switch policy {
		case bfWrap:
			return true, wrap()
		case bfSat:
			return true, maxv
		}
		return true, 0
	}
	if value < minv || (n != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr) {
		switch policy {
		case bfWrap:
			return true, wrap()
		case bfSat:
			return true, minv
		}
		return true, 0
	}
	return false, 0
}
