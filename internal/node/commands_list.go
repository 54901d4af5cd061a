package node

import (
	"bytes"
	"strconv"

	"github.com/shardis/shardis/internal/node/grammar"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
)

func registerListCommands(t *commandTable) {
	w := flagWrite | flagDenyOOM
	add := func(name string, arity int, flags cmdFlag, first, last int, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: first, last: last, step: 1, fn: fn, group: "list", since: since})
	}
	add("lpush", -3, w|flagFast, 1, 1, cmdLPush, "1.0.0")
	add("rpush", -3, w|flagFast, 1, 1, cmdRPush, "1.0.0")
	add("lpushx", -3, w|flagFast, 1, 1, cmdLPushX, "2.2.0")
	add("rpushx", -3, w|flagFast, 1, 1, cmdRPushX, "2.2.0")
	add("linsert", 5, w, 1, 1, cmdLInsert, "2.2.0")
	add("lpop", -2, flagWrite|flagFast, 1, 1, cmdLPop, "1.0.0")
	add("rpop", -2, flagWrite|flagFast, 1, 1, cmdRPop, "1.0.0")
	add("llen", 2, flagReadOnly|flagFast, 1, 1, cmdLLen, "1.0.0")
	add("lindex", 3, flagReadOnly, 1, 1, cmdLIndex, "1.0.0")
	add("lset", 4, w, 1, 1, cmdLSet, "1.0.0")
	add("lrange", 4, flagReadOnly, 1, 1, cmdLRange, "1.0.0")
	add("ltrim", 4, flagWrite, 1, 1, cmdLTrim, "1.0.0")
	add("lpos", -3, flagReadOnly, 1, 1, cmdLPos, "6.0.6")
	add("lrem", 4, flagWrite, 1, 1, cmdLRem, "1.0.0")
	add("rpoplpush", 3, w, 1, 2, cmdRPopLPush, "1.2.0")
	add("lmove", 5, w, 1, 2, cmdLMove, "6.2.0")
	add("brpoplpush", 4, w|flagNoScript|flagBlocking, 1, 2, cmdBRPopLPush, "2.2.0")
	add("blmove", 6, w|flagNoScript|flagBlocking, 1, 2, cmdBLMove, "6.2.0")
	add("blpop", -3, flagWrite|flagNoScript|flagBlocking, 1, -2, cmdBLPop, "2.0.0")
	add("brpop", -3, flagWrite|flagNoScript|flagBlocking, 1, -2, cmdBRPop, "2.0.0")
	t.add(&command{name: "lmpop", arity: -4, flags: flagWrite, keys: numKeysAt(1), fn: cmdLMPop, group: "list", since: "7.0.0"})
	t.add(&command{name: "blmpop", arity: -5, flags: flagWrite | flagBlocking, keys: numKeysAt(2), fn: cmdBLMPop, group: "list", since: "7.0.0"})
}

// lookupList returns key's list: (nil, nil, true) when missing, ok=false
// (after replying WRONGTYPE) when the key holds another type.
func (c *Client) lookupList(key []byte) (e *keyspace.Entry, l *value.List, ok bool) {
	return c.lookupListKey(string(key))
}

// lookupListKey is lookupList for a key already converted to a string.
func (c *Client) lookupListKey(key string) (e *keyspace.Entry, l *value.List, ok bool) {
	e = c.curDB().Lookup(key, c.now)
	if e == nil {
		return nil, nil, true
	}
	l, isList := e.Obj.(*value.List)
	if !isList {
		c.addError(errWrongType)
		return nil, nil, false
	}
	return e, l, true
}

// parseLong parses an integer argument, replying Redis's error if invalid.
func parseLong(c *Client, b []byte) (int64, bool) {
	n, ok := parseInt(b)
	if !ok {
		c.addError(errNotInt)
	}
	return n, ok
}

// parseLongPair parses two integer arguments (start and stop), replying
// Redis's error for the first invalid one.
func parseLongPair(c *Client, a, b []byte) (x, y int64, ok bool) {
	if x, ok = parseLong(c, a); ok {
		y, ok = parseLong(c, b)
	}
	return x, y, ok
}

// parseListEnd parses LEFT|RIGHT: true for LEFT; on error it replies.
func parseListEnd(c *Client, b []byte) (left, ok bool) {
	right, err := grammar.OneOf(b, "left", "right")
	if err != nil {
		c.addErr(err)
		return false, false
	}
	return !right, true
}

func endName(left bool) string {
	if left {
		return "left"
	}
	return "right"
}

func popEvent(left bool) string {
	if left {
		return "lpop"
	}
	return "rpop"
}

func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

func popCmdName(left bool) []byte {
	if left {
		return []byte("LPOP")
	}
	return []byte("RPOP")
}

// ---- push ----------------------------------------------------------------

func pushGeneric(c *Client, args [][]byte, left, xx bool) {
	key := string(args[1])
	e, l, ok := c.lookupListKey(key)
	if !ok {
		return
	}
	if e == nil {
		if xx {
			c.addInt(0)
			return
		}
		l = value.NewList()
		c.curDB().Add(key, &keyspace.Entry{Obj: l})
	}
	if !left {
		l.Reserve(args[2:])
	}
	for _, v := range args[2:] {
		l.Push(v, left) // copied into the list
	}
	c.markDirty(len(args) - 2)
	c.addInt(int64(l.Len()))
	c.signalModifiedKey(key)
	c.notify(notifyList, pushEvent(left), key)
	c.signalKeyAsReady(key)
}

// LPUSH key element [element ...]
func cmdLPush(c *Client, args [][]byte) { pushGeneric(c, args, true, false) }

// RPUSH key element [element ...]
func cmdRPush(c *Client, args [][]byte) { pushGeneric(c, args, false, false) }

// LPUSHX key element [element ...]
func cmdLPushX(c *Client, args [][]byte) { pushGeneric(c, args, true, true) }

// RPUSHX key element [element ...]
func cmdRPushX(c *Client, args [][]byte) { pushGeneric(c, args, false, true) }

// LINSERT key BEFORE|AFTER pivot element
func cmdLInsert(c *Client, args [][]byte) {
	after, err := grammar.OneOf(args[2], "before", "after")
	if err != nil {
		c.addErr(err)
		return
	}
	e, l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	pos := l.IndexOf(args[3])
	if pos < 0 {
		c.addInt(-1)
		return
	}
	if after {
		pos++
	}
	l.Insert(pos, args[4])
	key := string(args[1])
	c.signalModifiedKey(key)
	c.notify(notifyList, "linsert", key)
	c.markDirty(1)
	c.addInt(int64(l.Len()))
}

// ---- pop -----------------------------------------------------------------

// listRemoved does the bookkeeping after popping n elements from key:
// notification, removing the emptied key, WATCH, dirty.
func (c *Client) listRemoved(key string, l *value.List, left bool, n int) {
	c.notify(notifyList, popEvent(left), key)
	if l.Len() == 0 {
		c.curDB().Remove(key)
		c.notify(notifyGeneric, "del", key)
	}
	c.signalModifiedKey(key)
	c.markDirty(n)
}

// popRangeReply pops up to count elements from one end and replies with
// them as an array.
func (c *Client) popRangeReply(l *value.List, left bool, count int64) int {
	n := int(min(count, int64(l.Len())))
	c.addArrayLen(n)
	for k := 0; k < n; k++ {
		c.addBulk(l.PopView(left)) // copied into the reply before the next pop
	}
	return n
}

func popGeneric(c *Client, args [][]byte, left bool) {
	if len(args) > 3 {
		c.addError(errWrongArgs(c.cmd.name))
		return
	}
	hasCount := len(args) == 3
	var count int64
	if hasCount {
		n, err := grammar.Positive(args[2])
		if err != nil {
			c.addErr(err)
			return
		}
		count = n
	}
	key := string(args[1])
	e, l, ok := c.lookupListKey(key)
	if !ok {
		return
	}
	if e == nil {
		if hasCount {
			c.addNullArray()
		} else {
			c.addNull()
		}
		return
	}
	if hasCount && count == 0 {
		c.addArrayLen(0)
		return
	}
	if !hasCount {
		c.addBulk(l.PopView(left))
		c.listRemoved(key, l, left, 1)
		return
	}
	n := c.popRangeReply(l, left, count)
	c.listRemoved(key, l, left, n)
}

// LPOP key [count]
func cmdLPop(c *Client, args [][]byte) { popGeneric(c, args, true) }

// RPOP key [count]
func cmdRPop(c *Client, args [][]byte) { popGeneric(c, args, false) }

// mpopFrom pops from the first non-empty list of keys. It returns
// handled=true when it replied (elements or an error).
func mpopFrom(c *Client, keys [][]byte, left bool, count int64) (handled bool) {
	for _, k := range keys {
		e, l, ok := c.lookupList(k)
		if !ok {
			return true
		}
		if e == nil || l.Len() == 0 {
			continue
		}
		key := string(k)
		c.addArrayLen(2)
		c.addBulk(k)
		n := c.popRangeReply(l, left, count)
		c.listRemoved(key, l, left, n)
		c.propagateAs([][]byte{popCmdName(left), []byte(key), []byte(strconv.Itoa(n))})
		return true
	}
	return false
}

// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
func cmdLMPop(c *Client, args [][]byte) {
	o, ok := parseMPop(c, args, 1, "left", "right")
	if !ok {
		return
	}
	if !mpopFrom(c, o.Keys, !o.Second, o.Count) {
		c.addNullArray()
	}
}

// ---- read ----------------------------------------------------------------

// LLEN key
func cmdLLen(c *Client, args [][]byte) {
	e, l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	c.addInt(int64(l.Len()))
}

// LINDEX key index
func cmdLIndex(c *Client, args [][]byte) {
	e, l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addNull()
		return
	}
	i, ok := parseLong(c, args[2])
	if !ok {
		return
	}
	if i > int64(l.Len()) || i < -int64(l.Len()) {
		c.addNull()
		return
	}
	v, found := l.Index(int(i))
	if !found {
		c.addNull()
		return
	}
	c.addBulk(v)
}

// LSET key index element
func cmdLSet(c *Client, args [][]byte) {
	e, l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addError(errNoSuchKey)
		return
	}
	i, ok := parseLong(c, args[2])
	if !ok {
		return
	}
	if i > int64(l.Len()) || i < -int64(l.Len()) || !l.Set(int(i), args[3]) {
		c.addError("ERR index out of range")
		return
	}
	c.addOK()
	key := string(args[1])
	c.signalModifiedKey(key)
	c.notify(notifyList, "lset", key)
	c.markDirty(1)
}

// LRANGE key start stop
func cmdLRange(c *Client, args [][]byte) {
	start, end, ok := parseLongPair(c, args[2], args[3])
	if !ok {
		return
	}
	e, l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addArrayLen(0)
		return
	}
	s, en, ok := value.ClampRange(start, end, l.Len())
	if !ok {
		c.addArrayLen(0)
		return
	}
	c.addArrayLen(en - s + 1)
	l.Range(s, en, func(v []byte) bool {
		c.addBulk(v)
		return true
	})
}

// LTRIM key start stop
func cmdLTrim(c *Client, args [][]byte) {
	start, end, ok := parseLongPair(c, args[2], args[3])
	if !ok {
		return
	}
	e, l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addOK()
		return
	}
	key := string(args[1])
	removed := l.TrimRange(start, end)
	c.notify(notifyList, "ltrim", key)
	if l.Len() == 0 {
		c.curDB().Remove(key)
		c.notify(notifyGeneric, "del", key)
	}
	c.signalModifiedKey(key)
	c.markDirty(removed)
	c.addOK()
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func cmdLPos(c *Client, args [][]byte) {
	o, err := grammar.ParseLPos(args[3:])
	if err != nil {
		c.addErr(err)
		return
	}
	e, l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	var found []int64
	if e != nil {
		found = l.Positions(args[2], o.Rank, o.Count, o.MaxLen)
	}
	switch {
	case o.Count != -1:
		c.addArrayLen(len(found))
		for _, f := range found {
			c.addInt(f)
		}
	case len(found) > 0:
		c.addInt(found[0])
	default:
		c.addNull()
	}
}

// LREM key count element
func cmdLRem(c *Client, args [][]byte) {
	toRemove, ok := parseLong(c, args[2])
	if !ok {
		return
	}
	e, l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	removed := l.RemoveMatching(args[3], toRemove)
	key := string(args[1])
	if removed > 0 {
		c.signalModifiedKey(key)
		c.notify(notifyList, "lrem", key)
		c.markDirty(int(removed))
	}
	if l.Len() == 0 {
		c.curDB().Remove(key)
		c.notify(notifyGeneric, "del", key)
	}
	c.addInt(removed)
}

// ---- move ----------------------------------------------------------------

// lmoveGeneric moves one element from src to dst, replying with it. It
// returns false if it did not move (it replied null or an error).
func lmoveGeneric(c *Client, srcKey, dstKey []byte, from, to bool) bool {
	e, src, ok := c.lookupList(srcKey)
	if !ok {
		return false
	}
	if e == nil || src.Len() == 0 {
		c.addNull()
		return false
	}
	return moveElement(c, string(srcKey), src, string(dstKey), from, to, false)
}

// moveElement pops from src (which holds elements) and pushes to dstKey
// after checking its type; replies with the element or WRONGTYPE. It
// returns false on WRONGTYPE. fromBlocked is set when serving a blocked
// client (Redis then signals the source as modified already).
func moveElement(c *Client, srcKey string, src *value.List, dstKey string, from, to bool, fromBlocked bool) bool {
	db := c.curDB()
	de := db.Lookup(dstKey, c.now)
	var dst *value.List
	if de != nil {
		var isList bool
		if dst, isList = de.Obj.(*value.List); !isList {
			c.addError(errWrongType)
			return false
		}
	}
	v := src.Pop(from)
	if dst == nil {
		dst = value.NewList()
		db.Add(dstKey, &keyspace.Entry{Obj: dst})
	}
	c.signalModifiedKey(dstKey)
	dst.Push(v, to)
	c.notify(notifyList, pushEvent(to), dstKey)
	c.addBulk(v)
	c.signalKeyAsReady(dstKey)
	c.notify(notifyList, popEvent(from), srcKey)
	if src.Len() == 0 {
		db.Remove(srcKey)
		c.notify(notifyGeneric, "del", srcKey)
	}
	if !fromBlocked {
		c.signalModifiedKey(srcKey)
	}
	c.markDirty(1)
	return true
}

// RPOPLPUSH source destination
func cmdRPopLPush(c *Client, args [][]byte) { lmoveGeneric(c, args[1], args[2], false, true) }

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
func cmdLMove(c *Client, args [][]byte) {
	from, ok := parseListEnd(c, args[3])
	if !ok {
		return
	}
	to, ok := parseListEnd(c, args[4])
	if !ok {
		return
	}
	lmoveGeneric(c, args[1], args[2], from, to)
}

// ---- blocking ------------------------------------------------------------

// blockingPop implements BLPOP, BRPOP and BLMPOP: count < 0 is the plain
// single-element form ([key, element] reply), count > 0 BLMPOP's
// [key, [elements]].
func blockingPop(c *Client, keys [][]byte, left bool, timeout int64, count int64) {
	kick := false
	for _, k := range keys {
		e, l, ok := c.lookupList(k)
		if !ok {
			return
		}
		if e == nil || l.Len() == 0 {
			continue
		}
		if c.behindWaiters(k) {
			kick = true
			break
		}
		servePop(c, string(k), l, left, count)
		return
	}
	if !c.canBlock() {
		c.addNullArray()
		return
	}
	spec := blockSpec{timeout: timeout, kick: kick}
	for _, k := range keys {
		spec.keys = append(spec.keys, string(k))
	}
	spec.serve = func(c *Client, key string) bool {
		e := c.curDB().Lookup(key, c.now)
		if e == nil {
			return false
		}
		l, isList := e.Obj.(*value.List)
		if !isList || l.Len() == 0 {
			return false
		}
		servePop(c, key, l, left, count)
		return true
	}
	c.blockForKeys(spec)
}

// servePop pops from a non-empty list for BLPOP/BRPOP/BLMPOP, replies and
// propagates as LPOP/RPOP (with a count for BLMPOP), as Redis 7.0 does.
func servePop(c *Client, key string, l *value.List, left bool, count int64) {
	if count < 0 {
		c.addArrayLen(2)
		c.addBulkString(key)
		c.addBulk(l.PopView(left))
		c.listRemoved(key, l, left, 1)
		c.propagateAs([][]byte{popCmdName(left), []byte(key)})
		return
	}
	c.addArrayLen(2)
	c.addBulkString(key)
	n := c.popRangeReply(l, left, count)
	c.listRemoved(key, l, left, n)
	c.propagateAs([][]byte{popCmdName(left), []byte(key), []byte(strconv.Itoa(n))})
}

// BLPOP key [key ...] timeout
func cmdBLPop(c *Client, args [][]byte) {
	timeout, ok := parseTimeout(c, args[len(args)-1])
	if !ok {
		return
	}
	blockingPop(c, args[1:len(args)-1], true, timeout, -1)
}

// BRPOP key [key ...] timeout
func cmdBRPop(c *Client, args [][]byte) {
	timeout, ok := parseTimeout(c, args[len(args)-1])
	if !ok {
		return
	}
	blockingPop(c, args[1:len(args)-1], false, timeout, -1)
}

// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
func cmdBLMPop(c *Client, args [][]byte) {
	o, ok := parseMPop(c, args, 2, "left", "right")
	if !ok {
		return
	}
	timeout, ok := parseTimeout(c, args[1])
	if !ok {
		return
	}
	blockingPop(c, o.Keys, !o.Second, timeout, o.Count)
}

// blmoveGeneric implements BLMOVE and BRPOPLPUSH; rpoplpush selects how a
// served move is propagated.
func blmoveGeneric(c *Client, args [][]byte, from, to bool, timeout int64, rpoplpush bool) {
	srcKey, dstKey := string(args[1]), string(args[2])
	e, _, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	kick := e != nil && c.behindWaiters(args[1])
	if e != nil && !kick {
		if lmoveGeneric(c, args[1], args[2], from, to) {
			if rpoplpush {
				c.propagateAs([][]byte{[]byte("RPOPLPUSH"), []byte(srcKey), []byte(dstKey)})
			} else {
				c.propagateAs([][]byte{[]byte("LMOVE"), []byte(srcKey), []byte(dstKey), bytes.Clone(args[3]), bytes.Clone(args[4])})
			}
		}
		return
	}
	if !c.canBlock() {
		c.addNull()
		return
	}
	spec := blockSpec{keys: []string{srcKey}, target: dstKey, timeout: timeout, kick: kick}
	spec.serve = func(c *Client, key string) bool {
		se := c.curDB().Lookup(key, c.now)
		if se == nil {
			return false
		}
		src, isList := se.Obj.(*value.List)
		if !isList || src.Len() == 0 {
			return false
		}
		if moveElement(c, key, src, dstKey, from, to, true) {
			if rpoplpush {
				c.propagateAs([][]byte{[]byte("RPOPLPUSH"), []byte(key), []byte(dstKey)})
			} else {
				c.propagateAs([][]byte{[]byte("LMOVE"), []byte(key), []byte(dstKey), []byte(endName(from)), []byte(endName(to))})
			}
		}
		return true
	}
	c.blockForKeys(spec)
}

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
func cmdBLMove(c *Client, args [][]byte) {
	from, ok := parseListEnd(c, args[3])
	if !ok {
		return
	}
	to, ok := parseListEnd(c, args[4])
	if !ok {
		return
	}
	timeout, ok := parseTimeout(c, args[5])
	if !ok {
		return
	}
	blmoveGeneric(c, args, from, to, timeout, false)
}

// BRPOPLPUSH source destination timeout
func cmdBRPopLPush(c *Client, args [][]byte) {
	timeout, ok := parseTimeout(c, args[3])
	if !ok {
		return
	}
	blmoveGeneric(c, args, false, true, timeout, true)
}
