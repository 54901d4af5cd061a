package node

import (
	"bytes"
	"math/big"
	"strconv"

	"github.com/shardis/shardis/internal/node/keyspace"
)

// String commands (Redis's t_string.c): GET/SET and their variants,
// counters, ranges and LCS. Bit commands live in commands_bitops.go.
//
// A string value is the []byte in entry.str. Values are owned by the
// keyspace and changed in place (APPEND, SETRANGE, INCR) under the key's
// shard lock, as Redis does with its sds strings.

func registerStringCommands(t *commandTable) {
	w := flagWrite | flagDenyOOM
	ro := flagReadOnly
	add := func(name string, arity int, flags cmdFlag, first, last, step int, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: first, last: last, step: step, fn: fn, group: "string", since: since})
	}
	add("get", 2, ro|flagFast, 1, 1, 1, cmdGet, "1.0.0")
	add("set", -3, w, 1, 1, 1, cmdSet, "1.0.0")
	add("setnx", 3, w|flagFast, 1, 1, 1, cmdSetNX, "1.0.0")
	add("setex", 4, w, 1, 1, 1, cmdSetEx, "2.0.0")
	add("psetex", 4, w, 1, 1, 1, cmdPSetEx, "2.6.0")
	add("getset", 3, w|flagFast, 1, 1, 1, cmdGetSet, "1.0.0")
	add("getdel", 2, flagWrite|flagFast, 1, 1, 1, cmdGetDel, "6.2.0")
	add("getex", -2, flagWrite|flagFast, 1, 1, 1, cmdGetEx, "6.2.0")
	add("mget", -2, ro|flagFast, 1, -1, 1, cmdMGet, "1.0.0")
	add("mset", -3, w, 1, -1, 2, cmdMSet, "1.0.1")
	add("msetnx", -3, w, 1, -1, 2, cmdMSetNX, "1.0.1")
	add("incr", 2, w|flagFast, 1, 1, 1, cmdIncr, "1.0.0")
	add("decr", 2, w|flagFast, 1, 1, 1, cmdDecr, "1.0.0")
	add("incrby", 3, w|flagFast, 1, 1, 1, cmdIncrBy, "1.0.0")
	add("decrby", 3, w|flagFast, 1, 1, 1, cmdDecrBy, "1.0.0")
	add("incrbyfloat", 3, w|flagFast, 1, 1, 1, cmdIncrByFloat, "2.6.0")
	add("append", 3, w|flagFast, 1, 1, 1, cmdAppend, "2.0.0")
	add("strlen", 2, ro|flagFast, 1, 1, 1, cmdStrlen, "2.2.0")
	add("getrange", 4, ro, 1, 1, 1, cmdGetRange, "2.4.0")
	add("substr", 4, ro, 1, 1, 1, cmdGetRange, "1.0.0")
	add("setrange", 4, w, 1, 1, 1, cmdSetRange, "2.2.0")
	add("lcs", -3, ro, 1, 2, 1, cmdLCS, "7.0.0")
}

// lookupString returns the string value of key: (nil, true) when missing,
// ok=false (after replying WRONGTYPE) when the key holds another type.
func (c *Client) lookupString(key []byte) (e *keyspace.Entry, ok bool) {
	e = c.curDB().Lookup(bstr(key), c.now)
	if e == nil {
		return nil, true
	}
	if e.Obj != nil {
		c.addError(errWrongType)
		return nil, false
	}
	return e, true
}

// storeString sets key to val (which the keyspace takes ownership of).
// e is the key's live entry if the caller already looked it up, or nil.
func (c *Client) storeString(e *keyspace.Entry, key []byte, val []byte, expire int64, keepTTL bool) *keyspace.Entry {
	if e != nil {
		e.Str, e.Obj = val, nil
		if !keepTTL {
			c.curDB().SetExpire(e, expire)
		}
	} else {
		e = c.curDB().SetString(string(key), val, expire, keepTTL)
	}
	e.LRU = c.lruNow()
	return e
}

// storeStringCopy is storeString with a value the caller does not own
// (a request argument): an overwritten string reuses its buffer when it
// fits without wasting much, so SET on an existing key does not allocate.
func (c *Client) storeStringCopy(e *keyspace.Entry, key []byte, val []byte, expire int64, keepTTL bool) *keyspace.Entry {
	if e != nil && e.Obj == nil && e.Str != nil && cap(e.Str) >= len(val) && cap(e.Str) <= 2*len(val)+32 {
		return c.storeString(e, key, append(e.Str[:0], val...), expire, keepTTL)
	}
	if e == nil {
		// A new key: entry, key and value in one allocation (keyspace/entry_inline.go).
		if ne := c.curDB().AddString(key, val, expire); ne != nil {
			ne.LRU = c.lruNow()
			return ne
		}
	}
	return c.storeString(e, key, bytes.Clone(val), expire, keepTTL)
}

// GET key
func cmdGet(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.srv.stats.keyspaceMisses.Add(1)
		c.addNull()
		return
	}
	c.srv.stats.keyspaceHits.Add(1)
	c.addBulk(e.Str)
}

// Flags of SET and GETEX, as Redis's parseExtendedStringArgumentsOrReply
// parses them.
const (
	setNX = 1 << iota
	setXX
	setEX
	setPX
	setKeepTTL
	setGet
	setEXAT
	setPXAT
	setPersist

	setAnyExpire = setEX | setPX | setEXAT | setPXAT
)

// expireOption returns the flag of an EX, PX, EXAT or PXAT option, 0 for
// any other argument.
func expireOption(a []byte) int {
	switch {
	case eqFold(a, "EX"):
		return setEX
	case eqFold(a, "PX"):
		return setPX
	case eqFold(a, "EXAT"):
		return setEXAT
	case eqFold(a, "PXAT"):
		return setPXAT
	}
	return 0
}

// parseStringFlags parses SET's (forSet) or GETEX's options. It returns
// the flags and the expire argument (nil if none); on a syntax error it
// replies and returns ok=false.
func parseStringFlags(c *Client, opts [][]byte, forSet bool) (flags int, expire []byte, ok bool) {
	for j := 0; j < len(opts); j++ {
		a := opts[j]
		hasNext := j+1 < len(opts)
		switch {
		case forSet && eqFold(a, "NX") && flags&setXX == 0:
			flags |= setNX
		case forSet && eqFold(a, "XX") && flags&setNX == 0:
			flags |= setXX
		case forSet && eqFold(a, "GET"):
			flags |= setGet
		case forSet && eqFold(a, "KEEPTTL") && flags&(setPersist|setAnyExpire) == 0:
			flags |= setKeepTTL
		case !forSet && eqFold(a, "PERSIST") && flags&(setKeepTTL|setAnyExpire) == 0:
			flags |= setPersist
		case hasNext && expireOption(a) != 0 && flags&(setKeepTTL|setPersist|setAnyExpire&^expireOption(a)) == 0:
			// EX, PX, EXAT or PXAT: one kind only (repeating it is
			// allowed, the last value wins).
			flags |= expireOption(a)
			expire = opts[j+1]
			j++
		default:
			c.addError(errSyntax)
			return 0, nil, false
		}
	}
	return flags, expire, true
}

// expireMillis converts the expire argument of SET/GETEX/SETEX to an
// absolute unix time in ms, replying with Redis's errors when it is not a
// positive integer or overflows.
func expireMillis(c *Client, arg []byte, flags int, name string) (int64, bool) {
	ms, ok := parseInt(arg)
	if !ok {
		c.addError(errNotInt)
		return 0, false
	}
	seconds := flags&(setEX|setEXAT) != 0
	if ms <= 0 || (seconds && ms > (1<<63-1)/1000) {
		c.addError("ERR invalid expire time in '" + name + "' command")
		return 0, false
	}
	if seconds {
		ms *= 1000
	}
	if flags&(setEX|setPX) != 0 {
		ms += c.now // wraps negative on overflow, caught below
	}
	if ms <= 0 {
		c.addError("ERR invalid expire time in '" + name + "' command")
		return 0, false
	}
	return ms, true
}

// setGeneric is Redis's setGenericCommand, shared by SET, SETNX, SETEX and
// PSETEX. intReplies selects SETNX's :1/:0 instead of +OK/null; opts are
// SET's options (to propagate them without GET).
func setGeneric(c *Client, flags int, key, val, expireArg []byte, opts [][]byte, name string, intReplies bool) {
	var when int64
	if expireArg != nil {
		var ok bool
		if when, ok = expireMillis(c, expireArg, flags, name); !ok {
			return
		}
	}
	e := c.curDB().Lookup(bstr(key), c.now)
	if flags&setGet != 0 {
		if e != nil && e.Obj != nil {
			c.addError(errWrongType)
			return
		}
		if e == nil {
			c.addNull()
		} else {
			c.addBulk(e.Str)
		}
	}
	if (flags&setNX != 0 && e != nil) || (flags&setXX != 0 && e == nil) {
		if flags&setGet == 0 {
			if intReplies {
				c.addInt(0)
			} else {
				c.addNull()
			}
		}
		return
	}
	e = c.storeStringCopy(e, key, val, when, flags&setKeepTTL != 0)
	k := e.Key
	c.markDirty(1)
	c.signalModifiedKey(k)
	c.notify(notifyString, "set", k)
	if expireArg != nil {
		c.notify(notifyGeneric, "expire", k)
		// Replicas and the AOF get an absolute time, as Redis 7 does.
		c.propagateAs([][]byte{[]byte("SET"), key, val, []byte("PXAT"), strconv.AppendInt(nil, when, 10)})
	} else if flags&setGet != 0 {
		// Propagate without GET.
		prop := [][]byte{[]byte("SET"), key, val}
		for _, a := range opts {
			if !eqFold(a, "GET") {
				prop = append(prop, a)
			}
		}
		c.propagateAs(prop)
	}
	if flags&setGet == 0 {
		if intReplies {
			c.addInt(1)
		} else {
			c.addOK()
		}
	}
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ts|KEEPTTL]
func cmdSet(c *Client, args [][]byte) {
	var flags int
	var expire []byte
	if len(args) > 3 {
		var ok bool
		if flags, expire, ok = parseStringFlags(c, args[3:], true); !ok {
			return
		}
	}
	setGeneric(c, flags, args[1], args[2], expire, args[3:], "set", false)
}

// SETNX key value
func cmdSetNX(c *Client, args [][]byte) {
	setGeneric(c, setNX, args[1], args[2], nil, nil, "setnx", true)
}

// SETEX key seconds value
func cmdSetEx(c *Client, args [][]byte) {
	setGeneric(c, setEX, args[1], args[3], args[2], nil, "setex", false)
}

// PSETEX key milliseconds value
func cmdPSetEx(c *Client, args [][]byte) {
	setGeneric(c, setPX, args[1], args[3], args[2], nil, "psetex", false)
}

// GETSET key value
func cmdGetSet(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addNull()
	} else {
		c.addBulk(e.Str)
	}
	e = c.storeStringCopy(e, args[1], args[2], 0, false)
	c.markDirty(1)
	c.signalModifiedKey(e.Key)
	c.notify(notifyString, "set", e.Key)
	c.propagateAs([][]byte{[]byte("SET"), args[1], args[2]})
}

// GETDEL key
func cmdGetDel(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addNull()
		return
	}
	c.addBulk(e.Str)
	key := e.Key
	c.curDB().Remove(key)
	c.markDirty(1)
	c.propagateAs([][]byte{c.delVerb(DirLazyfreeLazyUserDel), args[1]})
	c.signalModifiedKey(key)
	c.notify(notifyGeneric, "del", key)
}

// GETEX key [EX s|PX ms|EXAT ts|PXAT ts|PERSIST]
func cmdGetEx(c *Client, args [][]byte) {
	flags, expire, ok := parseStringFlags(c, args[2:], false)
	if !ok {
		return
	}
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addNull()
		return
	}
	var when int64
	if expire != nil {
		if when, ok = expireMillis(c, expire, flags, "getex"); !ok {
			return
		}
	}
	c.addBulk(e.Str)
	db := c.curDB()
	key := e.Key
	switch {
	case flags&(setEXAT|setPXAT) != 0 && c.alreadyExpired(when):
		db.Remove(key)
		c.markDirty(1)
		c.propagateAs([][]byte{c.delVerb(DirLazyfreeLazyExpire), args[1]})
		c.signalModifiedKey(key)
		c.notify(notifyGeneric, "del", key)
	case expire != nil:
		db.SetExpire(e, when)
		c.markDirty(1)
		c.propagateAs([][]byte{[]byte("PEXPIREAT"), args[1], strconv.AppendInt(nil, when, 10)})
		c.signalModifiedKey(key)
		c.notify(notifyGeneric, "expire", key)
	case flags&setPersist != 0 && e.Expire != 0:
		db.SetExpire(e, 0)
		c.markDirty(1)
		c.propagateAs([][]byte{[]byte("PERSIST"), args[1]})
		c.signalModifiedKey(key)
		c.notify(notifyGeneric, "persist", key)
	}
}

// alreadyExpired is Redis's checkAlreadyExpired: a time in the past deletes
// the key, except on a replica or while loading (the master's DEL will
// follow).
func (c *Client) alreadyExpired(when int64) bool {
	return when <= c.now && c.srv.expireDeletes() && !c.srv.loading.Load() && !c.hasFlag(clientMaster)
}

// MGET key [key ...]
func cmdMGet(c *Client, args [][]byte) {
	db := c.curDB()
	c.addArrayLen(len(args) - 1)
	for _, k := range args[1:] {
		e := db.Lookup(bstr(k), c.now)
		if e == nil || e.Obj != nil {
			c.addNull()
			continue
		}
		c.addBulk(e.Str)
	}
}

// MSET key value [key value ...]
func cmdMSet(c *Client, args [][]byte) { msetGeneric(c, args, false) }

// MSETNX key value [key value ...]
func cmdMSetNX(c *Client, args [][]byte) { msetGeneric(c, args, true) }

func msetGeneric(c *Client, args [][]byte, nx bool) {
	if len(args)%2 == 0 {
		c.addError(errWrongArgs(c.cmd.name))
		return
	}
	db := c.curDB()
	if nx {
		for i := 1; i < len(args); i += 2 {
			if db.Lookup(bstr(args[i]), c.now) != nil {
				c.addInt(0)
				return
			}
		}
	}
	for i := 1; i < len(args); i += 2 {
		e := db.GetEntry(bstr(args[i]))
		e = c.storeStringCopy(e, args[i], args[i+1], 0, false)
		c.signalModifiedKey(e.Key)
		c.notify(notifyString, "set", e.Key)
	}
	c.markDirty((len(args) - 1) / 2)
	if nx {
		c.addInt(1)
	} else {
		c.addOK()
	}
}

// INCR key
func cmdIncr(c *Client, args [][]byte) { incrDecr(c, args[1], 1) }

// DECR key
func cmdDecr(c *Client, args [][]byte) { incrDecr(c, args[1], -1) }

// INCRBY key increment
func cmdIncrBy(c *Client, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	incrDecr(c, args[1], n)
}

// DECRBY key decrement
func cmdDecrBy(c *Client, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if n == -1<<63 {
		c.addError("ERR decrement would overflow")
		return
	}
	incrDecr(c, args[1], -n)
}

func incrDecr(c *Client, key []byte, by int64) {
	e, ok := c.lookupString(key)
	if !ok {
		return
	}
	var cur int64
	if e != nil {
		v, ok := parseInt(e.Str)
		if !ok {
			c.addError(errNotInt)
			return
		}
		cur = v
	}
	if (by < 0 && cur < 0 && by < -1<<63-cur) || (by > 0 && cur > 0 && by > 1<<63-1-cur) {
		c.addError(errOverflow)
		return
	}
	cur += by
	if e != nil {
		e.Str = strconv.AppendInt(e.Str[:0], cur, 10)
	} else {
		var nb [20]byte
		v := strconv.AppendInt(nb[:0], cur, 10)
		// A new key: one allocation (keyspace/entry_inline.go), unless a replica
		// still holds it expired.
		if e = c.curDB().AddString(key, v, 0); e != nil {
			e.LRU = c.lruNow()
		} else {
			e = c.curDB().SetString(string(key), bytes.Clone(v), 0, false)
		}
	}
	c.markDirty(1)
	c.signalModifiedKey(e.Key)
	c.notify(notifyString, "incrby", e.Key)
	c.addInt(cur)
}

// INCRBYFLOAT key increment
func cmdIncrByFloat(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	if e != nil {
		v, ok := parseLongDouble(e.Str)
		if !ok {
			c.addError(errNotFloat)
			return
		}
		cur = v
	}
	incr, ok := parseLongDouble(args[2])
	if !ok {
		c.addError(errNotFloat)
		return
	}
	if cur.IsInf() || incr.IsInf() {
		c.addError("ERR increment would produce NaN or Infinity")
		return
	}
	sum := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(cur, incr)
	if longDoubleOverflows(sum) {
		c.addError("ERR increment would produce NaN or Infinity")
		return
	}
	val := formatLongDouble(sum)
	e = c.storeString(e, args[1], val, 0, true)
	c.markDirty(1)
	c.signalModifiedKey(e.Key)
	c.notify(notifyString, "incrbyfloat", e.Key)
	c.addBulk(val)
	c.propagateAs([][]byte{[]byte("SET"), args[1], bytes.Clone(val), []byte("KEEPTTL")})
}

// checkStringLength refuses a string that would grow beyond
// proto-max-bulk-len (except for our master's and the AOF's commands).
func (c *Client) checkStringLength(size, add int64) bool {
	if c.hasFlag(clientMaster) {
		return true
	}
	total := size + add
	if total > c.srv.cfg.Int(DirProtoMaxBulkLen) || total < size || total < add {
		c.addError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return false
	}
	return true
}

// APPEND key value
func cmdAppend(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		e = c.curDB().SetString(string(args[1]), bytes.Clone(args[2]), 0, false)
	} else {
		if !c.checkStringLength(int64(len(e.Str)), int64(len(args[2]))) {
			return
		}
		e.Str = append(e.Str, args[2]...)
	}
	c.markDirty(1)
	c.signalModifiedKey(e.Key)
	c.notify(notifyString, "append", e.Key)
	c.addInt(int64(len(e.Str)))
}

// STRLEN key
func cmdStrlen(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	c.addInt(int64(len(e.Str)))
}

// GETRANGE key start end (also SUBSTR)
func cmdGetRange(c *Client, args [][]byte) {
	start, end, ok := parseLongPair(c, args[2], args[3])
	if !ok {
		return
	}
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addBulk([]byte{})
		return
	}
	if start < 0 && end < 0 && start > end {
		c.addBulk([]byte{})
		return
	}
	from, to, empty := clampRange(start, end, int64(len(e.Str)))
	if empty {
		c.addBulk([]byte{})
		return
	}
	c.addBulk(e.Str[from : to+1])
}

// clampRange turns GETRANGE/BITCOUNT-style indexes (negative ones count
// from the end) into an inclusive range of a sequence of n items, clamped
// to it as Redis clamps them (both ends to 0 first, so a range wholly
// before the start selects the first item); empty when nothing is left.
func clampRange(start, end, n int64) (from, to int64, empty bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end {
		return 0, 0, true
	}
	return start, end, false
}

// SETRANGE key offset value
func cmdSetRange(c *Client, args [][]byte) {
	offset, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if offset < 0 {
		c.addError("ERR offset is out of range")
		return
	}
	val := args[3]
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		if len(val) == 0 {
			c.addInt(0)
			return
		}
		if !c.checkStringLength(offset, int64(len(val))) {
			return
		}
		buf := make([]byte, offset+int64(len(val)))
		copy(buf[offset:], val)
		e = c.curDB().SetString(string(args[1]), buf, 0, false)
	} else {
		if len(val) == 0 {
			c.addInt(int64(len(e.Str)))
			return
		}
		if !c.checkStringLength(offset, int64(len(val))) {
			return
		}
		e.Str = growZero(e.Str, int(offset)+len(val))
		copy(e.Str[offset:], val)
	}
	c.markDirty(1)
	c.signalModifiedKey(e.Key)
	c.notify(notifyString, "setrange", e.Key)
	c.addInt(int64(len(e.Str)))
}

// growZero extends b with zero bytes to at least n bytes.
func growZero(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	if cap(b) >= n {
		old := len(b)
		b = b[:n]
		clear(b[old:])
		return b
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// lcsRange is one match of LCS IDX: a[aStart..aEnd] = b[bStart..bEnd].
type lcsRange struct{ aStart, aEnd, bStart, bEnd int }

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]
func cmdLCS(c *Client, args [][]byte) {
	db := c.curDB()
	ea := db.Lookup(bstr(args[1]), c.now)
	eb := db.Lookup(bstr(args[2]), c.now)
	if (ea != nil && ea.Obj != nil) || (eb != nil && eb.Obj != nil) {
		c.addError("ERR The specified keys must contain string values")
		return
	}
	var a, b []byte
	if ea != nil {
		a = ea.Str
	}
	if eb != nil {
		b = eb.Str
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for j := 3; j < len(args); j++ {
		switch opt := args[j]; {
		case eqFold(opt, "IDX"):
			getIdx = true
		case eqFold(opt, "LEN"):
			getLen = true
		case eqFold(opt, "WITHMATCHLEN"):
			withMatchLen = true
		case eqFold(opt, "MINMATCHLEN") && j+1 < len(args):
			n, ok := parseInt(args[j+1])
			if !ok {
				c.addError(errNotInt)
				return
			}
			minMatchLen = max(n, 0)
			j++
		default:
			c.addError(errSyntax)
			return
		}
	}
	if getLen && getIdx {
		c.addError("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	alen, blen := len(a), len(b)
	cells := uint64(alen+1) * uint64(blen+1)
	if cells*4 > uint64(c.srv.cfg.Int(DirProtoMaxBulkLen)) {
		c.addError("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	lcs := make([]uint32, cells)
	at := func(i, j int) *uint32 { return &lcs[j+i*(blen+1)] }
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				*at(i, j) = *at(i-1, j-1) + 1
			} else {
				*at(i, j) = max(*at(i-1, j), *at(i, j-1))
			}
		}
	}
	total := int(*at(alen, blen))
	if getLen {
		c.addInt(int64(total))
		return
	}
	result := make([]byte, total)
	idx := total
	var ranges []lcsRange
	cur := lcsRange{aStart: -1}
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if cur.aStart == -1 {
				cur = lcsRange{i - 1, i - 1, j - 1, j - 1}
			} else if cur.aStart == i && cur.bStart == j {
				cur.aStart--
				cur.bStart--
			} else {
				emit = true
			}
			if cur.aStart == 0 || cur.bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if *at(i-1, j) > *at(i, j-1) {
				i--
			} else {
				j--
			}
			if cur.aStart != -1 {
				emit = true
			}
		}
		if emit {
			if minMatchLen == 0 || int64(cur.aEnd-cur.aStart+1) >= minMatchLen {
				ranges = append(ranges, cur)
			}
			cur.aStart = -1
		}
	}
	if !getIdx {
		c.addBulk(result)
		return
	}
	c.addMapLen(2)
	c.addBulkString("matches")
	c.addArrayLen(len(ranges))
	for _, r := range ranges {
		if withMatchLen {
			c.addArrayLen(3)
		} else {
			c.addArrayLen(2)
		}
		c.addArrayLen(2)
		c.addInt(int64(r.aStart))
		c.addInt(int64(r.aEnd))
		c.addArrayLen(2)
		c.addInt(int64(r.bStart))
		c.addInt(int64(r.bEnd))
		if withMatchLen {
			c.addInt(int64(r.aEnd - r.aStart + 1))
		}
	}
	c.addBulkString("len")
	c.addInt(int64(total))
}
