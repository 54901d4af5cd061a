package node

import (
	"github.com/shardis/shardis/internal/node/bitops"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// Bit commands on strings (Redis's bitops.c): SETBIT, GETBIT, BITCOUNT,
// BITPOS, BITOP, BITFIELD, BITFIELD_RO. The bit logic is package bitops;
// these handlers look the keys up, call it and reply.

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

// lookupStringForBit returns key's string grown (zero-padded) to hold bit
// maxBit, creating it if needed; dirty reports creation or growth. It
// replies WRONGTYPE and returns nil for another type.
func (c *Client) lookupStringForBit(key []byte, maxBit int64) (e *keyspace.Entry, dirty bool) {
	e, ok := c.lookupString(key)
	if !ok {
		return nil, false
	}
	if e == nil {
		p, _ := bitops.Grow(nil, maxBit)
		return c.curDB().SetString(string(key), p, 0, false), true
	}
	e.Str, dirty = bitops.Grow(e.Str, maxBit)
	return e, dirty
}

// addIntOrError replies n, or err's text when err is not nil.
func (c *Client) addIntOrError(n int64, err error) {
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addInt(n)
}

// SETBIT key offset value
func cmdSetBit(c *Client, args [][]byte) {
	off, err := bitops.ParseOffset(args[2], 0, c.maxStringLen())
	if err != nil {
		c.addError(err.Error())
		return
	}
	on, err := bitops.ParseBitValue(args[3])
	if err != nil {
		c.addError(err.Error())
		return
	}
	e, dirty := c.lookupStringForBit(args[1], off)
	if e == nil {
		return
	}
	old := bitops.SetBit(e.Str, off, on)
	if dirty || old != on {
		c.keyChanged(notifyString, "setbit", e.Key)
	}
	c.addInt(int64(old))
}

// GETBIT key offset
func cmdGetBit(c *Client, args [][]byte) {
	off, err := bitops.ParseOffset(args[2], 0, c.maxStringLen())
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e, ok := c.lookupString(args[1]); ok {
		c.addInt(int64(bitops.GetBit(strValue(e), off)))
	}
}

// BITCOUNT key [start end [BYTE|BIT]]
func cmdBitCount(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	switch {
	case !ok:
	case e == nil:
		c.addInt(0)
	default:
		c.addIntOrError(bitops.Count(e.Str, args[2:]))
	}
}

// BITPOS key bit [start [end [BYTE|BIT]]]
func cmdBitPos(c *Client, args [][]byte) {
	bit, err := bitops.ParseBit(args[2])
	if err != nil {
		c.addError(err.Error())
		return
	}
	e, ok := c.lookupString(args[1])
	switch {
	case !ok:
	case e == nil:
		c.addInt(-int64(bit)) // -1 for a 1 bit, 0 for a 0 bit
	default:
		c.addIntOrError(bitops.Pos(e.Str, bit, args[3:]))
	}
}

// BITOP AND|OR|XOR|NOT destkey key [key ...]
func cmdBitOp(c *Client, args [][]byte) {
	op, err := bitops.ParseOp(args[1], len(args)-3)
	if err != nil {
		c.addError(err.Error())
		return
	}
	db := c.curDB()
	srcs := make([][]byte, 0, len(args)-3)
	for _, k := range args[3:] {
		e := db.Lookup(bstr(k), c.now)
		if e != nil && e.Obj != nil {
			c.addError(errWrongType)
			return
		}
		srcs = append(srcs, strValue(e))
	}
	dest := args[2]
	res := bitops.Apply(op, srcs)
	if res == nil {
		if e := db.GetEntry(bstr(dest)); e != nil {
			key := e.Key
			db.Remove(key)
			c.keyChanged(notifyGeneric, "del", key)
		}
		c.addInt(0)
		return
	}
	e := c.storeString(db.Lookup(bstr(dest), c.now), dest, res, 0, false)
	c.keyChanged(notifyString, "set", e.Key)
	c.addInt(int64(len(res)))
}

// BITFIELD key [GET enc off] [SET enc off value] [INCRBY enc off incr] [OVERFLOW WRAP|SAT|FAIL] ...
func cmdBitField(c *Client, args [][]byte) { bitfieldGeneric(c, args, false) }

// BITFIELD_RO key [GET encoding offset ...]
func cmdBitFieldRO(c *Client, args [][]byte) { bitfieldGeneric(c, args, true) }

func bitfieldGeneric(c *Client, args [][]byte, readOnlyCmd bool) {
	f, err := bitops.ParseField(args[2:], c.maxStringLen())
	if err != nil {
		c.addError(err.Error())
		return
	}
	var e *keyspace.Entry
	dirty, ok := false, true
	switch {
	case f.ReadOnly:
		e, ok = c.lookupString(args[1])
	case readOnlyCmd:
		c.addError(bitops.ErrReadOnly.Error())
		return
	default:
		e, dirty = c.lookupStringForBit(args[1], f.Highest)
		ok = e != nil
	}
	if !ok {
		return
	}
	res, changes := f.Run(strValue(e), dirty)
	c.addArrayLen(len(res))
	for _, r := range res {
		if r.Nil {
			c.addNull()
		} else {
			c.addInt(r.Value)
		}
	}
	if changes > 0 {
		c.signalModifiedKey(e.Key)
		c.notify(notifyString, "setbit", e.Key)
		c.markDirty(changes)
	}
}
