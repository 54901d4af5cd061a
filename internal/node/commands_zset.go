package node

import (
	"strings"

	"github.com/shardis/shardis/internal/node/grammar"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
)

// Sorted set commands, with Redis 7.0's replies and errors.

// errZNaN is ZINCRBY's (and ZADD INCR's) reply when the new score is NaN.
const errZNaN = "ERR resulting score is not a number (NaN)"

func registerZSetCommands(t *commandTable) {
	w := flagWrite | flagDenyOOM
	ro := flagReadOnly
	add := func(name string, arity int, flags cmdFlag, first, last, step int, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: first, last: last, step: step, fn: fn, group: "sorted-set", since: since})
	}
	// Movable keys: the keys func drives locking; first/last/step are
	// what COMMAND INFO reports, as Redis's legacy key range.
	addMov := func(name string, arity int, flags cmdFlag, keys keysFunc, fn handlerFunc, since string) {
		first, last := 0, 0
		if strings.HasSuffix(name, "store") {
			first, last = 1, 1
		}
		t.add(&command{name: name, arity: arity, flags: flags, keys: keys, first: first, last: last, step: first, fn: fn, group: "sorted-set", since: since})
	}
	add("zadd", -4, w|flagFast, 1, 1, 1, cmdZAdd, "1.2.0")
	add("zincrby", 4, w|flagFast, 1, 1, 1, cmdZIncrBy, "1.2.0")
	add("zrem", -3, flagWrite|flagFast, 1, 1, 1, cmdZRem, "1.2.0")
	add("zremrangebyscore", 4, flagWrite, 1, 1, 1, cmdZRemRangeByScore, "1.2.0")
	add("zremrangebyrank", 4, flagWrite, 1, 1, 1, cmdZRemRangeByRank, "2.0.0")
	add("zremrangebylex", 4, flagWrite, 1, 1, 1, cmdZRemRangeByLex, "2.8.9")
	addMov("zunionstore", -4, w, zNumkeysKeys(2, 1), cmdZUnionStore, "2.0.0")
	addMov("zinterstore", -4, w, zNumkeysKeys(2, 1), cmdZInterStore, "2.0.0")
	addMov("zdiffstore", -4, w, zNumkeysKeys(2, 1), cmdZDiffStore, "6.2.0")
	addMov("zunion", -3, ro, zNumkeysKeys(1), cmdZUnion, "6.2.0")
	addMov("zinter", -3, ro, zNumkeysKeys(1), cmdZInter, "6.2.0")
	addMov("zintercard", -3, ro, zNumkeysKeys(1), cmdZInterCard, "7.0.0")
	addMov("zdiff", -3, ro, zNumkeysKeys(1), cmdZDiff, "6.2.0")
	add("zrange", -4, ro, 1, 1, 1, cmdZRange, "1.2.0")
	add("zrangestore", -5, w, 1, 2, 1, cmdZRangeStore, "6.2.0")
	add("zrangebyscore", -4, ro, 1, 1, 1, cmdZRangeByScore, "1.0.5")
	add("zrevrangebyscore", -4, ro, 1, 1, 1, cmdZRevRangeByScore, "2.2.0")
	add("zrangebylex", -4, ro, 1, 1, 1, cmdZRangeByLex, "2.8.9")
	add("zrevrangebylex", -4, ro, 1, 1, 1, cmdZRevRangeByLex, "2.8.9")
	add("zcount", 4, ro|flagFast, 1, 1, 1, cmdZCount, "2.0.0")
	add("zlexcount", 4, ro|flagFast, 1, 1, 1, cmdZLexCount, "2.8.9")
	add("zrevrange", -4, ro, 1, 1, 1, cmdZRevRange, "1.2.0")
	add("zcard", 2, ro|flagFast, 1, 1, 1, cmdZCard, "1.2.0")
	add("zscore", 3, ro|flagFast, 1, 1, 1, cmdZScore, "1.2.0")
	add("zmscore", -3, ro|flagFast, 1, 1, 1, cmdZMScore, "6.2.0")
	add("zrank", 3, ro|flagFast, 1, 1, 1, cmdZRank, "2.0.0")
	add("zrevrank", 3, ro|flagFast, 1, 1, 1, cmdZRevRank, "2.0.0")
	add("zscan", -3, ro, 1, 1, 1, cmdZScan, "2.8.0")
	add("zpopmin", -2, flagWrite|flagFast, 1, 1, 1, cmdZPopMin, "5.0.0")
	add("zpopmax", -2, flagWrite|flagFast, 1, 1, 1, cmdZPopMax, "5.0.0")
	addMov("zmpop", -4, flagWrite, zNumkeysKeys(1), cmdZMPop, "7.0.0")
	add("zrandmember", -2, ro, 1, 1, 1, cmdZRandMember, "6.2.0")
	registerZSetBlockingCommands(t)
	registerSortCommands(t)
}

// zNumkeysKeys returns the keys func of a sorted-set command with
// numkeys at numIdx (grammar.NumKeysUpTo).
func zNumkeysKeys(numIdx int, fixed ...int) keysFunc { return grammar.NumKeysUpTo(numIdx, fixed...) }

// zsetLimits reads the small-encoding thresholds from the configuration.
func (c *Client) zsetLimits() value.ZSetLimits {
	return c.srv.hot().zsetLim
}

// lookupZSet returns the sorted set at key (nil when missing); ok=false
// after replying WRONGTYPE when the key holds another type.
func (c *Client) lookupZSet(key string) (z *value.ZSet, e *keyspace.Entry, ok bool) {
	e = c.curDB().Lookup(key, c.now)
	if e == nil {
		return nil, nil, true
	}
	z, isZ := e.Obj.(*value.ZSet)
	if !isZ {
		c.addError(errWrongType)
		return nil, nil, false
	}
	return z, e, true
}

// ---- replies -------------------------------------------------------------

// replyZItems replies with members, and scores when withScores: a flat
// array in RESP2, an array of [member, score] pairs in RESP3.
func (c *Client) replyZItems(items []value.ZItem, withScores bool) {
	if withScores && c.proto < 3 {
		c.addArrayLen(len(items) * 2)
	} else {
		c.addArrayLen(len(items))
	}
	for _, it := range items {
		if withScores && c.proto >= 3 {
			c.addArrayLen(2)
		}
		c.addBulkString(it.Member)
		if withScores {
			c.addDouble(it.Score)
		}
	}
}

// ---- ZADD / ZINCRBY / ZREM -------------------------------------------------

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
func cmdZAdd(c *Client, args [][]byte) { zaddGeneric(c, args, false) }

// ZINCRBY key increment member
func cmdZIncrBy(c *Client, args [][]byte) { zaddGeneric(c, args, true) }

func zaddGeneric(c *Client, args [][]byte, incr bool) {
	f, first, err := grammar.ZAdd(args, incr)
	if err != nil {
		c.addErr(err)
		return
	}
	pairs := args[first:]
	var scoreBuf [8]float64
	scores := scoreBuf[:0]
	if len(pairs)/2 > len(scoreBuf) {
		scores = make([]float64, 0, len(pairs)/2)
	}
	scores = scores[:len(pairs)/2]
	if err := grammar.Scores(scores, pairs); err != nil {
		c.addErr(err)
		return
	}
	key := string(args[1])
	z, _, ok := c.lookupZSet(key)
	if !ok {
		return
	}
	var r value.ZAddResult
	created := false
	if z == nil && !f.XX {
		z = value.NewZSet()
		c.curDB().SetObject(key, z)
		created = true
	}
	if z != nil {
		if r = z.ZAddPairs(f, scores, pairs, c.zsetLimits()); r.NaN {
			c.addError(errZNaN)
			c.zaddNotify(key, r.Added, r.Updated, f.Incr, created)
			return
		}
		c.markDirty(r.Added + r.Updated)
	}
	switch {
	case f.Incr && r.Processed > 0:
		c.addDouble(r.Score)
	case f.Incr:
		c.addNull()
	case f.CH:
		c.addInt(int64(r.Added + r.Updated))
	default:
		c.addInt(int64(r.Added))
	}
	c.zaddNotify(key, r.Added, r.Updated, f.Incr, created)
}

func (c *Client) zaddNotify(key string, added, updated int, incr, created bool) {
	if added == 0 && updated == 0 {
		return
	}
	c.signalModifiedKey(key)
	if incr {
		c.notify(notifyZSet, "zincr", key)
	} else {
		c.notify(notifyZSet, "zadd", key)
	}
	if created {
		c.signalKeyAsReady(key)
	}
}

// ZREM key member [member ...]
func cmdZRem(c *Client, args [][]byte) {
	key := string(args[1])
	z, _, ok := c.lookupZSet(key)
	if !ok {
		return
	}
	if z == nil {
		c.addInt(0)
		return
	}
	deleted, removed := 0, false
	for _, m := range args[2:] {
		if z.Remove(bstr(m)) {
			deleted++
		}
		if z.Len() == 0 {
			c.curDB().Remove(key)
			removed = true
			break
		}
	}
	if deleted > 0 {
		c.notify(notifyZSet, "zrem", key)
		if removed {
			c.notify(notifyGeneric, "del", key)
		}
		c.signalModifiedKey(key)
		c.markDirty(deleted)
	}
	c.addInt(int64(deleted))
}

// ---- ZREMRANGEBY* ----------------------------------------------------------

// ZREMRANGEBYRANK key start stop
func cmdZRemRangeByRank(c *Client, args [][]byte) { zremRange(c, args, grammar.ByRank) }

// ZREMRANGEBYSCORE key min max
func cmdZRemRangeByScore(c *Client, args [][]byte) { zremRange(c, args, grammar.ByScore) }

// ZREMRANGEBYLEX key min max
func cmdZRemRangeByLex(c *Client, args [][]byte) { zremRange(c, args, grammar.ByLex) }

// zremRange removes the members of the range args[2..3] (by rank, score
// or member) from the sorted set at args[1], replying how many went.
func zremRange(c *Client, args [][]byte, by grammar.RangeBy) {
	zremEvents := [...]string{grammar.ByRank: "zremrangebyrank", grammar.ByScore: "zremrangebyscore", grammar.ByLex: "zremrangebylex"}
	span, err := grammar.Span(by, args[2], args[3])
	if err != nil {
		c.addErr(err)
		return
	}
	key := string(args[1])
	z, _, ok := c.lookupZSet(key)
	if !ok {
		return
	}
	if z == nil {
		c.addInt(0)
		return
	}
	lo, hi := span.Bounds(z)
	deleted := 0
	if hi > lo {
		deleted = z.RemoveRankRange(lo, hi-1)
	}
	if deleted > 0 {
		removed := false
		if z.Len() == 0 {
			c.curDB().Remove(key)
			removed = true
		}
		c.signalModifiedKey(key)
		c.notify(notifyZSet, zremEvents[by], key)
		if removed {
			c.notify(notifyGeneric, "del", key)
		}
		c.markDirty(deleted)
	}
	c.addInt(int64(deleted))
}

// ---- ZRANGE family -----------------------------------------------------------

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
func cmdZRange(c *Client, args [][]byte) { zrangeGeneric(c, args, 1, grammar.ByAuto, grammar.DirAuto) }

// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
func cmdZRangeStore(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 2, grammar.ByAuto, grammar.DirAuto)
}

// ZREVRANGE key start stop [WITHSCORES]
func cmdZRevRange(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, grammar.ByRank, grammar.DirReverse)
}

// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
func cmdZRangeByScore(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, grammar.ByScore, grammar.DirForward)
}

// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
func cmdZRevRangeByScore(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, grammar.ByScore, grammar.DirReverse)
}

// ZRANGEBYLEX key min max [LIMIT offset count]
func cmdZRangeByLex(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, grammar.ByLex, grammar.DirForward)
}

// ZREVRANGEBYLEX key max min [LIMIT offset count]
func cmdZRevRangeByLex(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, grammar.ByLex, grammar.DirReverse)
}

// zrangeGeneric implements ZRANGE, ZRANGESTORE (keyIdx 2: args[1] is the
// destination) and the older Z[REV]RANGE[BYSCORE|BYLEX] commands.
func zrangeGeneric(c *Client, args [][]byte, keyIdx int, by grammar.RangeBy, dir grammar.Dir) {
	store := keyIdx == 2
	r, err := grammar.ParseZRange(args, keyIdx, store, by, dir)
	if err != nil {
		c.addErr(err)
		return
	}
	z, _, ok := c.lookupZSet(string(args[keyIdx]))
	if !ok {
		return
	}
	var items []value.ZItem
	if z != nil {
		r.Each(z, func(m string, s float64) bool {
			items = append(items, value.ZItem{Member: m, Score: s})
			return true
		})
	}
	if store {
		c.storeZSet(string(args[1]), value.FromItems(items, c.zsetLimits()), "zrangestore")
		return
	}
	c.replyZItems(items, r.WithScores)
}

// storeZSet stores a computed result at dst (deleting dst when it is
// empty), replies with its size and notifies event.
func (c *Client) storeZSet(dst string, res *value.ZSet, event string) {
	db := c.curDB()
	if res.Len() == 0 {
		c.addInt(0)
		if db.Lookup(dst, c.now) != nil {
			db.Remove(dst)
			c.signalModifiedKey(dst)
			c.notify(notifyGeneric, "del", dst)
			c.markDirty(1)
		}
		return
	}
	db.SetObject(dst, res)
	c.addInt(int64(res.Len()))
	c.signalModifiedKey(dst)
	c.notify(notifyZSet, event, dst)
	c.signalKeyAsReady(dst)
	c.markDirty(1)
}

// ---- ZCOUNT / ZLEXCOUNT / ZCARD / ZSCORE / ZRANK ------------------------------

// ZCOUNT key min max
func cmdZCount(c *Client, args [][]byte) { zcountRange(c, args, grammar.ByScore) }

// ZLEXCOUNT key min max
func cmdZLexCount(c *Client, args [][]byte) { zcountRange(c, args, grammar.ByLex) }

// zcountRange answers the number of members of the sorted set at args[1]
// inside the range args[2..3] (by score or member): 0 for a missing key.
func zcountRange(c *Client, args [][]byte, by grammar.RangeBy) {
	span, err := grammar.Span(by, args[2], args[3])
	if err != nil {
		c.addErr(err)
		return
	}
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	if z == nil {
		c.addInt(0)
		return
	}
	lo, hi := span.Bounds(z)
	c.addInt(int64(hi - lo))
}

// ZCARD key
func cmdZCard(c *Client, args [][]byte) {
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	if z == nil {
		c.addInt(0)
		return
	}
	c.addInt(int64(z.Len()))
}

// ZSCORE key member
func cmdZScore(c *Client, args [][]byte) {
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	if z == nil {
		c.addNull()
		return
	}
	if s, ok := z.Score(bstr(args[2])); ok {
		c.addDouble(s)
	} else {
		c.addNull()
	}
}

// ZMSCORE key member [member ...]
func cmdZMScore(c *Client, args [][]byte) {
	eachMemberScore(c, args, func(score float64, found bool) {
		if found {
			c.addDouble(score)
		} else {
			c.addNull()
		}
	})
}

// eachMemberScore answers an array of one reply per member of args[2:]
// (ZMSCORE, GEOPOS, GEOHASH): reply gets the member's score in key's sorted
// set, or found=false for a missing member or key.
func eachMemberScore(c *Client, args [][]byte, reply func(score float64, found bool)) {
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	c.addArrayLen(len(args) - 2)
	for _, m := range args[2:] {
		var s float64
		found := false
		if z != nil {
			s, found = z.Score(bstr(m))
		}
		reply(s, found)
	}
}

// ZRANK key member
func cmdZRank(c *Client, args [][]byte) { zrankGeneric(c, args, false) }

// ZREVRANK key member
func cmdZRevRank(c *Client, args [][]byte) { zrankGeneric(c, args, true) }

func zrankGeneric(c *Client, args [][]byte, rev bool) {
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	if z == nil {
		c.addNull()
		return
	}
	r, ok := z.Rank(bstr(args[2]))
	if !ok {
		c.addNull()
		return
	}
	if rev {
		r = z.Len() - 1 - r
	}
	c.addInt(int64(r))
}

// zScoreRange is the score interval commands_geo.go's radius search
// walks; it forwards to value.ScoreRange.
type zScoreRange struct {
	min, max     float64
	minex, maxex bool
}

// bounds returns the ascending ranks [lo, hi) of the members in r.
func (r zScoreRange) bounds(z *value.ZSet) (int, int) {
	return value.ScoreRange{Min: r.min, Max: r.max, MinEx: r.minex, MaxEx: r.maxex}.Bounds(z)
}
