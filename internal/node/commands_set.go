package node

import (
	"slices"

	"github.com/shardis/shardis/internal/node/grammar"
	"github.com/shardis/shardis/internal/node/value"
)

func registerSetCommands(t *commandTable) {
	w := flagWrite | flagDenyOOM
	ro := flagReadOnly
	add := func(name string, arity int, flags cmdFlag, first, last int, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: first, last: last, fn: fn, group: "set", since: since})
	}
	add("sadd", -3, w|flagFast, 1, 1, cmdSAdd, "1.0.0")
	add("srem", -3, flagWrite|flagFast, 1, 1, cmdSRem, "1.0.0")
	add("smove", 4, flagWrite|flagFast, 1, 2, cmdSMove, "1.0.0")
	add("sismember", 3, ro|flagFast, 1, 1, cmdSIsMember, "1.0.0")
	add("smismember", -3, ro|flagFast, 1, 1, cmdSMIsMember, "6.2.0")
	add("scard", 2, ro|flagFast, 1, 1, cmdSCard, "1.0.0")
	add("spop", -2, flagWrite|flagFast, 1, 1, cmdSPop, "1.0.0")
	add("srandmember", -2, ro, 1, 1, cmdSRandMember, "1.0.0")
	add("smembers", 2, ro, 1, 1, cmdSInter, "1.0.0")
	add("sinter", -2, ro, 1, -1, cmdSInter, "1.0.0")
	add("sinterstore", -3, w, 1, -1, cmdSInterStore, "1.0.0")
	add("sunion", -2, ro, 1, -1, cmdSUnion, "1.0.0")
	add("sunionstore", -3, w, 1, -1, cmdSUnionStore, "1.0.0")
	add("sdiff", -2, ro, 1, -1, cmdSDiff, "1.0.0")
	add("sdiffstore", -3, w, 1, -1, cmdSDiffStore, "1.0.0")
	add("sscan", -3, ro, 1, 1, cmdSScan, "2.8.0")
	t.add(&command{name: "sintercard", arity: -3, flags: ro, keys: numKeysAt(1), fn: cmdSInterCard, group: "set", since: "7.0.0"})
}

// numKeysAt returns the keys func of a "numkeys key [key ...]" command
// whose numkeys is at pos (grammar.NumKeysAt).
func numKeysAt(pos int) keysFunc { return grammar.NumKeysAt(pos) }

// lookupSet returns the set at key (see lookupValue).
func (c *Client) lookupSet(key []byte, read bool) (*value.Set, bool) {
	return lookupValue[*value.Set](c, key, read)
}

// SADD key member [member ...]
func cmdSAdd(c *Client, args [][]byte) {
	s, ok := c.lookupSet(args[1], false)
	if !ok {
		return
	}
	if s == nil {
		s = value.NewSetFor(args[2], 0)
		c.curDB().SetObject(string(args[1]), s)
	}
	limit := c.srv.intsetLimit()
	added := 0
	for _, m := range args[2:] {
		if s.AddB(m, limit) {
			added++
		}
	}
	if added > 0 {
		key := string(args[1])
		c.signalModifiedKey(key)
		c.notify(notifySet, "sadd", key)
	}
	c.markDirty(added)
	c.addInt(int64(added))
}

// SREM key member [member ...]
func cmdSRem(c *Client, args [][]byte) {
	removeMembersCommand(c, args, (*value.Set).RemB, notifySet, "srem")
}

// SMOVE source destination member
func cmdSMove(c *Client, args [][]byte) {
	db := c.curDB()
	src, dst := string(args[1]), string(args[2])
	se := db.Lookup(src, c.now)
	de := db.Lookup(dst, c.now)
	if se == nil {
		c.addInt(0)
		return
	}
	ss, ok := se.Obj.(*value.Set)
	if !ok {
		c.addError(errWrongType)
		return
	}
	var ds *value.Set
	if de != nil {
		if ds, ok = de.Obj.(*value.Set); !ok {
			c.addError(errWrongType)
			return
		}
	}
	member := args[3]
	if src == dst {
		if ss.HasB(member) {
			c.addInt(1)
		} else {
			c.addInt(0)
		}
		return
	}
	if !ss.RemB(member) {
		c.addInt(0)
		return
	}
	c.notify(notifySet, "srem", src)
	if ss.Len() == 0 {
		db.Remove(src)
		c.notify(notifyGeneric, "del", src)
	}
	if ds == nil {
		ds = value.NewSetFor(member, 0)
		db.SetObject(dst, ds)
	}
	c.signalModifiedKey(src)
	c.markDirty(1)
	if ds.AddB(member, c.srv.intsetLimit()) {
		c.markDirty(1)
		c.signalModifiedKey(dst)
		c.notify(notifySet, "sadd", dst)
	}
	c.addInt(1)
}

// SISMEMBER key member
func cmdSIsMember(c *Client, args [][]byte) {
	s, ok := c.lookupSet(args[1], true)
	if !ok {
		return
	}
	if s != nil && s.HasB(args[2]) {
		c.addInt(1)
	} else {
		c.addInt(0)
	}
}

// SMISMEMBER key member [member ...]
func cmdSMIsMember(c *Client, args [][]byte) {
	s, ok := c.lookupSet(args[1], true)
	if !ok {
		return
	}
	c.addArrayLen(len(args) - 2)
	for _, m := range args[2:] {
		if s != nil && s.HasB(m) {
			c.addInt(1)
		} else {
			c.addInt(0)
		}
	}
}

// SCARD key
func cmdSCard(c *Client, args [][]byte) {
	s, ok := c.lookupSet(args[1], true)
	if !ok {
		return
	}
	if s == nil {
		c.addInt(0)
		return
	}
	c.addInt(int64(s.Len()))
}

// SPOP key [count] (propagated as SREM, or DEL when the whole set goes)
func cmdSPop(c *Client, args [][]byte) {
	if len(args) == 3 {
		setPopCount(c, args)
		return
	}
	if len(args) > 3 {
		c.addError(errSyntax)
		return
	}
	s, ok := c.lookupSet(args[1], false)
	if !ok {
		return
	}
	if s == nil {
		c.addNull()
		return
	}
	m := s.PopRandom()
	key := string(args[1])
	c.notify(notifySet, "spop", key)
	c.propagateAs([][]byte{[]byte("SREM"), args[1], []byte(m)})
	c.addBulkString(m)
	if s.Len() == 0 {
		c.curDB().Remove(key)
		c.notify(notifyGeneric, "del", key)
	}
	c.signalModifiedKey(key)
	c.markDirty(1)
}

// setPopCount is SPOP key count: it replies with the popped members and
// propagates each as SREM (DEL when the whole set goes).
func setPopCount(c *Client, args [][]byte) {
	l, err := grammar.Positive(args[2])
	if err != nil {
		c.addErr(err)
		return
	}
	s, ok := c.lookupSet(args[1], false)
	if !ok {
		return
	}
	if s == nil || l == 0 {
		c.addSetLen(0)
		return
	}
	key := string(args[1])
	size := int64(s.Len())
	c.notify(notifySet, "spop", key)
	if l >= size {
		c.addSetValue(s)
		c.curDB().Remove(key)
		c.notify(notifyGeneric, "del", key)
		c.propagateAs([][]byte{[]byte("DEL"), args[1]})
		c.signalModifiedKey(key)
		c.markDirty(int(size))
		return
	}
	c.addSetLen(int(l))
	s.PopMany(int(l), c.srv.intsetLimit(), func(m []byte) {
		c.addBulk(m)
		c.propagateAs([][]byte{[]byte("SREM"), args[1], m})
	})
	c.signalModifiedKey(key)
	c.markDirty(int(l))
}

// SRANDMEMBER key [count]
func cmdSRandMember(c *Client, args [][]byte) {
	if len(args) == 3 {
		setRandMemberCount(c, args)
		return
	}
	if len(args) > 3 {
		c.addError(errSyntax)
		return
	}
	s, ok := c.lookupSet(args[1], true)
	if !ok {
		return
	}
	if s == nil {
		c.addNull()
		return
	}
	c.addBulkString(s.RandomMember())
}

// setRandMemberCount is SRANDMEMBER key count: distinct members for
// count > 0, count draws with repetitions for count < 0.
func setRandMemberCount(c *Client, args [][]byte) {
	l, err := grammar.SRandCount(args[2])
	if err != nil {
		c.addErr(err)
		return
	}
	s, ok := c.lookupSet(args[1], true)
	if !ok {
		return
	}
	if s == nil || l == 0 {
		c.addArrayLen(0)
		return
	}
	count, mode := value.RandPlan(l, s.Len())
	c.addArrayLen(int(count))
	switch mode {
	case value.RandRepeats:
		s.RandomRepeats(count, func(m []byte) bool { c.addBulk(m); return !c.closed.Load() })
	case value.RandAll:
		s.Each(func(m []byte) bool { c.addBulk(m); return true })
	default:
		s.RandomDistinct(int(count), c.addBulkString)
	}
}

// loadSets looks up the sets at keys (nil for a missing key); ok=false
// after replying WRONGTYPE.
func (c *Client) loadSets(keys [][]byte) ([]*value.Set, bool) {
	sets := make([]*value.Set, len(keys))
	for i, k := range keys {
		s, ok := c.lookupSet(k, true)
		if !ok {
			return nil, false
		}
		sets[i] = s
	}
	return sets, true
}

// storeSetResult stores res at dst (or deletes dst when res is empty) and
// replies with its size, as SINTERSTORE/SUNIONSTORE/SDIFFSTORE do.
func (c *Client) storeSetResult(dst []byte, res *value.Set, event string) {
	db := c.curDB()
	key := string(dst)
	if res.Len() > 0 {
		db.SetObject(key, res)
		c.signalModifiedKey(key)
		c.addInt(int64(res.Len()))
		c.notify(notifySet, event, key)
		c.markDirty(1)
		return
	}
	c.addInt(0)
	if db.Lookup(key, c.now) != nil {
		db.Remove(key)
		c.markDirty(1)
		c.signalModifiedKey(key)
		c.notify(notifyGeneric, "del", key)
	}
}

// SINTER key [key ...] (also SMEMBERS key)
func cmdSInter(c *Client, args [][]byte) {
	sets, ok := c.loadSets(args[1:])
	if !ok {
		return
	}
	if slices.Contains(sets, nil) {
		c.addSetLen(0)
		return
	}
	if len(sets) == 1 {
		c.addSetValue(sets[0])
		return
	}
	var res [][]byte
	value.SInter(sets, func(m []byte) bool { res = append(res, slices.Clone(m)); return true })
	c.addSetLen(len(res))
	for _, m := range res {
		c.addBulk(m)
	}
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdSInterCard(c *Client, args [][]byte) {
	o, err := grammar.ParseInterCard(args)
	if err != nil {
		c.addErr(err)
		return
	}
	sets, ok := c.loadSets(o.Keys)
	if !ok {
		return
	}
	if slices.Contains(sets, nil) {
		c.addInt(0)
		return
	}
	c.addInt(value.SInterCard(sets, o.Limit))
}

// SINTERSTORE destination key [key ...]
func cmdSInterStore(c *Client, args [][]byte) {
	sets, ok := c.loadSets(args[2:])
	if !ok {
		return
	}
	res := value.NewSet()
	if !slices.Contains(sets, nil) {
		limit := c.srv.intsetLimit()
		value.SInter(sets, func(m []byte) bool { res.AddB(m, limit); return true })
	}
	c.storeSetResult(args[1], res, "sinterstore")
}

// addSetValue replies with s's members as a set.
func (c *Client) addSetValue(s *value.Set) {
	c.addSetLen(s.Len())
	s.Each(func(m []byte) bool { c.addBulk(m); return true })
}

// SUNION key [key ...]
func cmdSUnion(c *Client, args [][]byte) {
	sets, ok := c.loadSets(args[1:])
	if !ok {
		return
	}
	c.addSetValue(value.SUnion(sets, c.srv.intsetLimit()))
}

// SUNIONSTORE destination key [key ...]
func cmdSUnionStore(c *Client, args [][]byte) {
	sets, ok := c.loadSets(args[2:])
	if !ok {
		return
	}
	c.storeSetResult(args[1], value.SUnion(sets, c.srv.intsetLimit()), "sunionstore")
}

// SDIFF key [key ...]
func cmdSDiff(c *Client, args [][]byte) {
	sets, ok := c.loadSets(args[1:])
	if !ok {
		return
	}
	c.addSetValue(value.SDiff(sets, c.srv.intsetLimit()))
}

// SDIFFSTORE destination key [key ...]
func cmdSDiffStore(c *Client, args [][]byte) {
	sets, ok := c.loadSets(args[2:])
	if !ok {
		return
	}
	c.storeSetResult(args[1], value.SDiff(sets, c.srv.intsetLimit()), "sdiffstore")
}

// SSCAN key cursor [MATCH pattern] [COUNT count]
func cmdSScan(c *Client, args [][]byte) {
	o, ok := parseCollScan(c, args[2:])
	if !ok {
		return
	}
	s, ok := c.lookupSet(args[1], true)
	if !ok {
		return
	}
	if s == nil {
		c.addScanReply(0, nil)
		return
	}
	var items [][]byte
	cursor := s.Scan(o.Cursor, o.Count, func(m []byte) {
		if scanKeep(&o, m) {
			items = append(items, m)
		}
	})
	c.addScanReply(cursor, items)
}
