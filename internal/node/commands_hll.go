package node

import (
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/hll"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// HyperLogLog commands (Redis's hyperloglog.c): PFADD, PFCOUNT, PFMERGE,
// PFDEBUG, PFSELFTEST. A HyperLogLog is a string value in Redis's byte
// layout (internal/node/hll), so GET, DUMP, RDB and replication carry it
// unchanged between shardnode and redis-server.

func registerHLLCommands(t *commandTable) {
	add := func(name string, arity int, flags cmdFlag, first, last int, fn handlerFunc) {
		t.add(&command{name: name, arity: arity, flags: flags, first: first, last: last, step: 1, fn: fn, group: "hyperloglog", since: "2.8.9"})
	}
	add("pfadd", -2, flagWrite|flagDenyOOM|flagFast, 1, 1, cmdPFAdd)
	add("pfcount", -2, flagReadOnly|flagMayReplicate, 1, -1, cmdPFCount)
	add("pfmerge", -2, flagWrite|flagDenyOOM, 1, -1, cmdPFMerge)
	add("pfdebug", 3, flagWrite|flagDenyOOM|flagAdmin, 2, 2, cmdPFDebug)
	add("pfselftest", 1, flagAdmin, 0, 0, cmdPFSelfTest)
}

// hllSparseMax reads hll-sparse-max-bytes.
func (c *Client) hllSparseMax() int { return int(c.srv.cfg.Int(config.DirHllSparseMaxBytes)) }

// lookupHLL returns key's HyperLogLog entry (nil when the key is missing).
// ok is false, after an error reply, when the key holds another type or a
// string that is not a HyperLogLog (Redis answers both with WRONGTYPE).
func (c *Client) lookupHLL(key []byte) (e *keyspace.Entry, ok bool) {
	e, ok = c.lookupString(key)
	if !ok || e == nil {
		return e, ok
	}
	if err := hll.Check(e.Str); err != nil {
		c.addError(err.Error())
		return nil, false
	}
	return e, true
}

// PFADD key [element ...]
func cmdPFAdd(c *Client, args [][]byte) {
	e, ok := c.lookupHLL(args[1])
	if !ok {
		return
	}
	var cur []byte
	if e != nil {
		cur = e.Str
	}
	val, updated, err := hll.AddAll(cur, args[2:], c.hllSparseMax())
	switch {
	case e != nil:
		e.Str = val // on a corrupt value, the edits made before the corrupt part stay, as in Redis
	case err == nil:
		e = c.curDB().SetString(string(args[1]), val, 0, false)
	}
	if err != nil {
		c.addError(err.Error())
		return
	}
	if updated == 0 {
		c.addInt(0)
		return
	}
	hll.Invalidate(e.Str)
	c.signalModifiedKey(e.Key)
	c.notify(notifyString, "pfadd", e.Key)
	c.markDirty(updated)
	c.addInt(1)
}

// PFCOUNT key [key ...]
func cmdPFCount(c *Client, args [][]byte) {
	if len(args) > 2 {
		if u, ok := c.hllUnion(args[1:]); ok {
			c.addInt(int64(hll.CountRegisters(&u.Regs)))
		}
		return
	}
	e, ok := c.lookupHLLRead(args[1])
	if !ok || e == nil {
		if ok {
			c.addInt(0)
		}
		return
	}
	card, updated, err := hll.CountCached(e.Str)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if updated != nil {
		e.Str = updated
		c.signalModifiedKey(e.Key)
		c.markDirty(1) // propagated, as Redis propagates the cache update
	}
	c.addInt(int64(card))
}

// lookupHLLRead is lookupHLL for reads: keyspace hits and misses count.
func (c *Client) lookupHLLRead(key []byte) (*keyspace.Entry, bool) {
	e, ok := c.lookupHLL(key)
	if ok {
		if e == nil {
			c.srv.stats.keyspaceMisses.Add(1)
			c.notify(notifyKeyMiss, "keymiss", bstr(key))
		} else {
			c.srv.stats.keyspaceHits.Add(1)
		}
	}
	return e, ok
}

// hllUnion merges the HyperLogLogs at keys (missing ones count as
// empty), replying the first error (ok false) in key order.
func (c *Client) hllUnion(keys [][]byte) (*hll.Union, bool) {
	u := new(hll.Union)
	for _, k := range keys {
		e, ok := c.lookupHLLRead(k)
		if !ok {
			return nil, false
		}
		if e != nil {
			if err := u.Add(e.Str); err != nil {
				c.addError(err.Error())
				return nil, false
			}
		}
	}
	return u, true
}

// PFMERGE destkey [sourcekey ...]
func cmdPFMerge(c *Client, args [][]byte) {
	u, ok := c.hllUnion(args[1:])
	if !ok {
		return
	}
	dst, _ := c.lookupString(args[1]) // checked above
	var cur []byte
	if dst != nil {
		cur = dst.Str
	}
	val, err := hll.FromRegisters(cur, &u.Regs, u.Dense, c.hllSparseMax())
	if err != nil {
		c.addError(err.Error())
		return
	}
	if dst == nil {
		dst = c.curDB().SetString(string(args[1]), val, 0, false)
	} else {
		dst.Str = val
	}
	c.signalModifiedKey(dst.Key)
	c.notify(notifyString, "pfadd", dst.Key)
	c.markDirty(1)
	c.addOK()
}

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key
func cmdPFDebug(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[2])
	if !ok {
		return
	}
	if e == nil {
		c.addError("ERR The specified key does not exist")
		return
	}
	if err := hll.Check(e.Str); err != nil {
		c.addError(err.Error())
		return
	}
	reply, val, changed, err := hll.Debug(string(args[1]), e.Str)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if changed {
		e.Str = val
		c.markDirty(1) // the encoding change is propagated
	}
	switch r := reply.(type) {
	case []uint8:
		c.addArrayLen(len(r))
		for _, v := range r {
			c.addInt(int64(v))
		}
	case string:
		c.addBulkString(r)
	case hll.Status:
		c.addSimple(string(r))
	case int64:
		c.addInt(r)
	}
}

// PFSELFTEST
func cmdPFSelfTest(c *Client, args [][]byte) {
	if err := hll.SelfTest(c.hllSparseMax()); err != nil {
		c.addError(err.Error())
		return
	}
	c.addOK()
}
