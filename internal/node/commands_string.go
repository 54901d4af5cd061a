package node

import (
	"bytes"
	"strconv"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/strops"
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

// strValue is the string of e for the strops functions: nil when the key
// is missing, never nil when it exists.
func strValue(e *keyspace.Entry) []byte {
	if e == nil {
		return nil
	}
	if e.Str == nil {
		return []byte{}
	}
	return e.Str
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

// setGeneric is Redis's setGenericCommand, shared by SET, SETNX, SETEX and
// PSETEX. intReplies selects SETNX's :1/:0 instead of +OK/null; opts are
// SET's options (to propagate them without GET).
func setGeneric(c *Client, flags int, key, val, expireArg []byte, opts [][]byte, name string, intReplies bool) {
	var when int64
	if expireArg != nil {
		var err error
		if when, err = strops.ExpireAt(expireArg, flags, c.now, name); err != nil {
			c.addError(err.Error())
			return
		}
	}
	e := c.curDB().Lookup(bstr(key), c.now)
	if flags&strops.SetGet != 0 {
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
	if (flags&strops.SetNX != 0 && e != nil) || (flags&strops.SetXX != 0 && e == nil) {
		if flags&strops.SetGet == 0 {
			if intReplies {
				c.addInt(0)
			} else {
				c.addNull()
			}
		}
		return
	}
	e = c.storeStringCopy(e, key, val, when, flags&strops.SetKeepTTL != 0)
	k := e.Key
	c.markDirty(1)
	c.signalModifiedKey(k)
	c.notify(notifyString, "set", k)
	if expireArg != nil {
		c.notify(notifyGeneric, "expire", k)
	}
	if expireArg != nil || flags&strops.SetGet != 0 {
		c.propagateAs(strops.SetPropagation(key, val, opts, when, expireArg != nil))
	}
	if flags&strops.SetGet == 0 {
		if intReplies {
			c.addInt(1)
		} else {
			c.addOK()
		}
	}
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ts|KEEPTTL]
func cmdSet(c *Client, args [][]byte) {
	var o strops.SetOptions
	if len(args) > 3 {
		var err error
		if o, err = strops.ParseSetOptions(args[3:], true); err != nil {
			c.addError(err.Error())
			return
		}
	}
	setGeneric(c, o.Flags, args[1], args[2], o.Expire, args[3:], "set", false)
}

// SETNX key value
func cmdSetNX(c *Client, args [][]byte) {
	setGeneric(c, strops.SetNX, args[1], args[2], nil, nil, "setnx", true)
}

// SETEX key seconds value
func cmdSetEx(c *Client, args [][]byte) {
	setGeneric(c, strops.SetEX, args[1], args[3], args[2], nil, "setex", false)
}

// PSETEX key milliseconds value
func cmdPSetEx(c *Client, args [][]byte) {
	setGeneric(c, strops.SetPX, args[1], args[3], args[2], nil, "psetex", false)
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
	c.keyChanged(notifyString, "set", e.Key)
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
	c.keyChangedAs(notifyGeneric, "del", key, [][]byte{c.delVerb(config.DirLazyfreeLazyUserDel), args[1]})
}

// GETEX key [EX s|PX ms|EXAT ts|PXAT ts|PERSIST]
func cmdGetEx(c *Client, args [][]byte) {
	o, err := strops.ParseSetOptions(args[2:], false)
	if err != nil {
		c.addError(err.Error())
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
	flags, expire := o.Flags, o.Expire
	var when int64
	if expire != nil {
		if when, err = strops.ExpireAt(expire, flags, c.now, "getex"); err != nil {
			c.addError(err.Error())
			return
		}
	}
	c.addBulk(e.Str)
	db := c.curDB()
	key := e.Key
	switch {
	case flags&(strops.SetEXAT|strops.SetPXAT) != 0 && c.alreadyExpired(when):
		db.Remove(key)
		c.keyChangedAs(notifyGeneric, "del", key, [][]byte{c.delVerb(config.DirLazyfreeLazyExpire), args[1]})
	case expire != nil:
		db.SetExpire(e, when)
		c.keyChangedAs(notifyGeneric, "expire", key, [][]byte{[]byte("PEXPIREAT"), args[1], strconv.AppendInt(nil, when, 10)})
	case flags&strops.SetPersist != 0 && e.Expire != 0:
		db.SetExpire(e, 0)
		c.keyChangedAs(notifyGeneric, "persist", key, [][]byte{[]byte("PERSIST"), args[1]})
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
	c.addOKOr(nx, 1)
}

// INCR key
func cmdIncr(c *Client, args [][]byte) { incrDecr(c, args[1], 1) }

// DECR key
func cmdDecr(c *Client, args [][]byte) { incrDecr(c, args[1], -1) }

// INCRBY key increment
func cmdIncrBy(c *Client, args [][]byte) { incrByArg(c, args, false) }

// DECRBY key decrement
func cmdDecrBy(c *Client, args [][]byte) { incrByArg(c, args, true) }

func incrByArg(c *Client, args [][]byte, decr bool) {
	n, err := strops.ParseIncrement(args[2], decr)
	if err != nil {
		c.addError(err.Error())
		return
	}
	incrDecr(c, args[1], n)
}

func incrDecr(c *Client, key []byte, by int64) {
	e, ok := c.lookupString(key)
	if !ok {
		return
	}
	n, err := strops.Incr(strValue(e), by)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e != nil {
		e.Str = strconv.AppendInt(e.Str[:0], n, 10)
	} else {
		var nb [20]byte
		v := strconv.AppendInt(nb[:0], n, 10)
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
	c.addInt(n)
}

// INCRBYFLOAT key increment
func cmdIncrByFloat(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	val, err := strops.IncrByFloat(strValue(e), args[2])
	if err != nil {
		c.addError(err.Error())
		return
	}
	e = c.storeString(e, args[1], val, 0, true)
	c.keyChanged(notifyString, "incrbyfloat", e.Key)
	c.addBulk(val)
	c.propagateAs([][]byte{[]byte("SET"), args[1], bytes.Clone(val), []byte("KEEPTTL")})
}

// maxStringLen is proto-max-bulk-len for strops.CheckLength: no limit (0)
// for our master's and the AOF's commands.
func (c *Client) maxStringLen() int64 {
	if c.hasFlag(clientMaster) {
		return 0
	}
	return c.srv.cfg.Int(config.DirProtoMaxBulkLen)
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
		if err := strops.CheckLength(int64(len(e.Str)), int64(len(args[2])), c.maxStringLen()); err != nil {
			c.addError(err.Error())
			return
		}
		e.Str = append(e.Str, args[2]...)
	}
	c.keyChanged(notifyString, "append", e.Key)
	c.addInt(int64(len(e.Str)))
}

// STRLEN key
func cmdStrlen(c *Client, args [][]byte) {
	if e, ok := c.lookupString(args[1]); ok {
		c.addInt(int64(len(strValue(e))))
	}
}

// GETRANGE key start end (also SUBSTR)
func cmdGetRange(c *Client, args [][]byte) {
	start, end, ok := parseLongPair(c, args[2], args[3])
	if !ok {
		return
	}
	if e, ok := c.lookupString(args[1]); ok {
		c.addBulk(strops.GetRange(strValue(e), start, end))
	}
}

// SETRANGE key offset value
func cmdSetRange(c *Client, args [][]byte) {
	offset, err := strops.ParseOffset(args[2])
	if err != nil {
		c.addError(err.Error())
		return
	}
	val := args[3]
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	var cur []byte
	if e != nil {
		cur = e.Str
	}
	if len(val) == 0 {
		c.addInt(int64(len(cur)))
		return
	}
	if err := strops.CheckLength(offset, int64(len(val)), c.maxStringLen()); err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		e = c.curDB().SetString(string(args[1]), strops.SetRange(nil, offset, val), 0, false)
	} else {
		e.Str = strops.SetRange(e.Str, offset, val)
	}
	c.keyChanged(notifyString, "setrange", e.Key)
	c.addInt(int64(len(e.Str)))
}

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]
func cmdLCS(c *Client, args [][]byte) {
	db := c.curDB()
	ea := db.Lookup(bstr(args[1]), c.now)
	eb := db.Lookup(bstr(args[2]), c.now)
	if (ea != nil && ea.Obj != nil) || (eb != nil && eb.Obj != nil) {
		c.addError("ERR The specified keys must contain string values")
		return
	}
	o, err := strops.ParseLCSOptions(args[3:])
	if err != nil {
		c.addError(err.Error())
		return
	}
	r, err := strops.LCS(strValue(ea), strValue(eb), o, c.srv.cfg.Int(config.DirProtoMaxBulkLen))
	switch {
	case err != nil:
		c.addError(err.Error())
	case o.Len:
		c.addInt(int64(r.Len))
	case !o.Idx:
		c.addBulk(r.Seq)
	case c.replying():
		c.out = r.AppendIdx(c.out, c.proto, o.WithMatchLen)
	}
}
