package node

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
)

// Sorted set commands, with Redis 7.0's replies and errors.

const (
	errZNaN          = "ERR resulting score is not a number (NaN)"
	errZMinMaxFloat  = "ERR min or max is not a float"
	errZMinMaxLex    = "ERR min or max not valid string range item"
	errZPositive     = "ERR value is out of range, must be positive"
	errZWeightFloat  = "ERR weight value is not a float"
	errZLimitRank    = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZWithScoreLex = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
)

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

// zNumkeysKeys returns a keys func for commands with a numkeys argument at
// position numIdx followed by that many keys, plus fixed key positions.
// An invalid numkeys yields only the fixed keys (the handler then fails
// before touching any key).
func zNumkeysKeys(numIdx int, fixed ...int) keysFunc {
	return func(args [][]byte) []int {
		pos := append([]int(nil), fixed...)
		if numIdx >= len(args) {
			return pos
		}
		n, ok := parseInt(args[numIdx])
		if !ok || n < 1 {
			return pos
		}
		for i := 0; i < int(n) && numIdx+1+i < len(args); i++ {
			pos = append(pos, numIdx+1+i)
		}
		return pos
	}
}

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

// ---- range specs ---------------------------------------------------------

// zstrtod parses a float the way Redis's range parser (zstrtod with a full
// match) accepts it: leading spaces allowed, NaN refused, the empty string
// is 0.
func zstrtod(s string) (float64, bool) {
	if s == "" {
		return 0, true
	}
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(cHexFloat(s), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// cHexFloat adapts a C hexadecimal float ("0x10", whose binary exponent is
// optional for strtod) to Go's syntax, which requires the exponent.
func cHexFloat(s string) string {
	t := strings.TrimLeft(s, "+-")
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') && !strings.ContainsAny(t, "pP_") {
		return s + "p0"
	}
	return s
}

// zparseFloat parses a score argument as Redis's string2d (strtod) does,
// hexadecimal floats included.
func zparseFloat(b []byte) (float64, bool) {
	if f, ok := zparseSmallInt(b); ok {
		return f, true
	}
	if bytes.Contains(b, []byte("0x")) || bytes.Contains(b, []byte("0X")) {
		return parseFloat([]byte(cHexFloat(string(b))))
	}
	return parseFloat(b)
}

// zparseSmallInt parses an optionally negative decimal integer of at most
// 15 digits (redis-benchmark's scores), which a float64 holds exactly, as
// strtod would ("-0" is -0); anything else is left to the float parser.
func zparseSmallInt(b []byte) (float64, bool) {
	d := b
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 {
		return 0, false
	}
	var v int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	f := float64(v)
	if len(d) < len(b) {
		f = -f
	}
	return f, true
}

// zScoreRange is a score interval with open/closed ends.
type zScoreRange struct {
	min, max     float64
	minex, maxex bool
}

func parseScoreBound(b []byte) (float64, bool, bool) {
	if len(b) > 0 && b[0] == '(' {
		f, ok := zstrtod(string(b[1:]))
		return f, true, ok
	}
	f, ok := zstrtod(string(b))
	return f, false, ok
}

func parseScoreRange(min, max []byte) (r zScoreRange, ok bool) {
	var ok1, ok2 bool
	r.min, r.minex, ok1 = parseScoreBound(min)
	r.max, r.maxex, ok2 = parseScoreBound(max)
	return r, ok1 && ok2
}

// bounds returns the ascending ranks [lo, hi) of the members in r.
func (r zScoreRange) bounds(z *value.ZSet) (int, int) {
	lo := z.CountWhile(func(s float64, _ string) bool {
		if r.minex {
			return s <= r.min
		}
		return s < r.min
	})
	hi := z.CountWhile(func(s float64, _ string) bool {
		if r.maxex {
			return s < r.max
		}
		return s <= r.max
	})
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// zLexBound is one end of a lex range: inf is -1 for "-", +1 for "+".
type zLexBound struct {
	s   string
	ex  bool
	inf int
}

func parseLexBound(b []byte) (zLexBound, bool) {
	if len(b) == 0 {
		return zLexBound{}, false
	}
	switch b[0] {
	case '+':
		return zLexBound{inf: 1}, len(b) == 1
	case '-':
		return zLexBound{inf: -1}, len(b) == 1
	case '(':
		return zLexBound{s: string(b[1:]), ex: true}, true
	case '[':
		return zLexBound{s: string(b[1:])}, true
	}
	return zLexBound{}, false
}

type zLexRange struct{ min, max zLexBound }

func parseLexRange(min, max []byte) (r zLexRange, ok bool) {
	var ok1, ok2 bool
	r.min, ok1 = parseLexBound(min)
	r.max, ok2 = parseLexBound(max)
	return r, ok1 && ok2
}

// bounds returns the ascending ranks [lo, hi) of the members in r
// (members are assumed to share one score, as Redis requires).
func (r zLexRange) bounds(z *value.ZSet) (int, int) {
	below := func(b zLexBound, upper bool) int {
		switch b.inf {
		case -1:
			return 0
		case 1:
			return z.Len()
		}
		return z.CountWhile(func(_ float64, m string) bool {
			if upper != b.ex {
				return m <= b.s
			}
			return m < b.s
		})
	}
	lo := below(r.min, false)
	hi := below(r.max, true)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// normRankRange turns Redis start/stop indexes into ascending ranks
// [lo, hi] (inclusive); ok=false when the range is empty.
func normRankRange(start, end int64, n int) (int, int, bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if end < 0 {
		end += ln
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= ln {
		return 0, 0, false
	}
	if end >= ln {
		end = ln - 1
	}
	return int(start), int(end), true
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
	var nx, xx, gt, lt, ch bool
	i := 2
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case eqFold(a, "nx"):
			nx = true
		case eqFold(a, "xx"):
			xx = true
		case eqFold(a, "ch"):
			ch = true
		case eqFold(a, "incr"):
			incr = true
		case eqFold(a, "gt"):
			gt = true
		case eqFold(a, "lt"):
			lt = true
		default:
			goto done
		}
	}
done:
	elems := len(args) - i
	if elems%2 != 0 || elems == 0 {
		c.addError(errSyntax)
		return
	}
	elems /= 2
	if nx && xx {
		c.addError("ERR XX and NX options at the same time are not compatible")
		return
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		c.addError("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	if incr && elems > 1 {
		c.addError("ERR INCR option supports a single increment-element pair")
		return
	}
	var scoreBuf [8]float64
	scores := scoreBuf[:0]
	if elems > len(scoreBuf) {
		scores = make([]float64, 0, elems)
	}
	scores = scores[:elems]
	for j := range scores {
		f, ok := zparseFloat(args[i+2*j])
		if !ok {
			c.addError(errNotFloat)
			return
		}
		scores[j] = f
	}
	key := string(args[1])
	z, _, ok := c.lookupZSet(key)
	if !ok {
		return
	}
	added, updated, processed := 0, 0, 0
	var score float64
	created := false
	if z == nil {
		if xx {
			goto reply
		}
		z = value.NewZSet()
		c.curDB().SetObject(key, z)
		created = true
	}
	{
		lim := c.zsetLimits()
		for j := 0; j < elems; j++ {
			s := scores[j]
			arg := args[i+2*j+1]
			// Look up without copying; the member is copied only when
			// stored (bstr's string must not be retained).
			// In the skiplist encoding the skip list node found here is
			// updated directly: one lookup, no copy of the member.
			var node *value.SkipNode
			var cur float64
			var exists bool
			if z.Dict != nil {
				if n := z.Dict.FindBytes(arg); n != nil {
					node = n.Val
					cur, exists = node.Score, true
				}
			} else {
				cur, exists = z.Score(bstr(arg))
			}
			if exists {
				if nx {
					continue
				}
				if incr {
					s += cur
					if math.IsNaN(s) {
						c.addError(errZNaN)
						c.zaddNotify(key, added, updated, incr, created)
						return
					}
				}
				if (lt && s >= cur) || (gt && s <= cur) {
					continue
				}
				processed++
				score = s
				if s != cur {
					if node != nil {
						z.Zsl.UpdateScore(node, s)
					} else {
						z.Set(string(arg), s, lim)
					}
					updated++
				}
			} else if !xx {
				z.Set(string(arg), s, lim)
				added++
				processed++
				score = s
			}
		}
	}
	c.markDirty(added + updated)
reply:
	if incr {
		if processed > 0 {
			c.addDouble(score)
		} else {
			c.addNull()
		}
	} else if ch {
		c.addInt(int64(added + updated))
	} else {
		c.addInt(int64(added))
	}
	c.zaddNotify(key, added, updated, incr, created)
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
func cmdZRemRangeByRank(c *Client, args [][]byte) {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.addError(errNotInt)
		return
	}
	zremRange(c, args[1], "zremrangebyrank", func(z *value.ZSet) (int, int) {
		lo, hi, ok := normRankRange(start, end, z.Len())
		if !ok {
			return 0, 0
		}
		return lo, hi + 1
	})
}

// ZREMRANGEBYSCORE key min max
func cmdZRemRangeByScore(c *Client, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.addError(errZMinMaxFloat)
		return
	}
	zremRange(c, args[1], "zremrangebyscore", r.bounds)
}

// ZREMRANGEBYLEX key min max
func cmdZRemRangeByLex(c *Client, args [][]byte) {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		c.addError(errZMinMaxLex)
		return
	}
	zremRange(c, args[1], "zremrangebylex", r.bounds)
}

func zremRange(c *Client, keyb []byte, event string, bounds func(z *value.ZSet) (int, int)) {
	key := string(keyb)
	z, _, ok := c.lookupZSet(key)
	if !ok {
		return
	}
	if z == nil {
		c.addInt(0)
		return
	}
	lo, hi := bounds(z)
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
		c.notify(notifyZSet, event, key)
		if removed {
			c.notify(notifyGeneric, "del", key)
		}
		c.markDirty(deleted)
	}
	c.addInt(int64(deleted))
}

// ---- ZRANGE family -----------------------------------------------------------

type zrangeKind int

const (
	zrangeAuto zrangeKind = iota
	zrangeRank
	zrangeScore
	zrangeLex
)

type zrangeDir int

const (
	zdirAuto zrangeDir = iota
	zdirForward
	zdirReverse
)

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
func cmdZRange(c *Client, args [][]byte) { zrangeGeneric(c, args, 1, "", zrangeAuto, zdirAuto) }

// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
func cmdZRangeStore(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 2, string(args[1]), zrangeAuto, zdirAuto)
}

// ZREVRANGE key start stop [WITHSCORES]
func cmdZRevRange(c *Client, args [][]byte) { zrangeGeneric(c, args, 1, "", zrangeRank, zdirReverse) }

// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
func cmdZRangeByScore(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, "", zrangeScore, zdirForward)
}

// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
func cmdZRevRangeByScore(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, "", zrangeScore, zdirReverse)
}

// ZRANGEBYLEX key min max [LIMIT offset count]
func cmdZRangeByLex(c *Client, args [][]byte) { zrangeGeneric(c, args, 1, "", zrangeLex, zdirForward) }

// ZREVRANGEBYLEX key max min [LIMIT offset count]
func cmdZRevRangeByLex(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, "", zrangeLex, zdirReverse)
}

// zrangeGeneric implements ZRANGE, ZRANGESTORE (dst != "") and the older
// Z[REV]RANGE[BYSCORE|BYLEX] commands; keyIdx is the source key.
func zrangeGeneric(c *Client, args [][]byte, keyIdx int, dst string, kind zrangeKind, dir zrangeDir) {
	store := dst != ""
	minIdx, maxIdx := keyIdx+1, keyIdx+2
	withScores := false
	var offset, limit int64 = 0, -1
	for j := keyIdx + 3; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case !store && eqFold(a, "withscores"):
			withScores = true
		case eqFold(a, "limit") && left >= 2:
			var ok bool
			if offset, ok = parseInt(args[j+1]); !ok {
				c.addError(errNotInt)
				return
			}
			if limit, ok = parseInt(args[j+2]); !ok {
				c.addError(errNotInt)
				return
			}
			j += 2
		case dir == zdirAuto && eqFold(a, "rev"):
			dir = zdirReverse
		case kind == zrangeAuto && eqFold(a, "bylex"):
			kind = zrangeLex
		case kind == zrangeAuto && eqFold(a, "byscore"):
			kind = zrangeScore
		default:
			c.addError(errSyntax)
			return
		}
	}
	if dir == zdirAuto {
		dir = zdirForward
	}
	if kind == zrangeAuto {
		kind = zrangeRank
	}
	rev := dir == zdirReverse
	if limit != -1 && kind == zrangeRank {
		c.addError(errZLimitRank)
		return
	}
	if withScores && kind == zrangeLex {
		c.addError(errZWithScoreLex)
		return
	}
	if rev && kind != zrangeRank {
		minIdx, maxIdx = maxIdx, minIdx
	}
	var start, end int64
	var sr zScoreRange
	var lr zLexRange
	switch kind {
	case zrangeRank:
		var ok bool
		if start, ok = parseInt(args[minIdx]); !ok {
			c.addError(errNotInt)
			return
		}
		if end, ok = parseInt(args[maxIdx]); !ok {
			c.addError(errNotInt)
			return
		}
	case zrangeScore:
		var ok bool
		if sr, ok = parseScoreRange(args[minIdx], args[maxIdx]); !ok {
			c.addError(errZMinMaxFloat)
			return
		}
	case zrangeLex:
		var ok bool
		if lr, ok = parseLexRange(args[minIdx], args[maxIdx]); !ok {
			c.addError(errZMinMaxLex)
			return
		}
	}
	z, _, ok := c.lookupZSet(string(args[keyIdx]))
	if !ok {
		return
	}
	var items []value.ZItem
	if z != nil {
		collect := func(m string, s float64) bool {
			items = append(items, value.ZItem{Member: m, Score: s})
			return true
		}
		switch kind {
		case zrangeRank:
			if lo, hi, ok := normRankRange(start, end, z.Len()); ok {
				if rev {
					n := z.Len()
					lo, hi = n-1-hi, n-1-lo
				}
				items = make([]value.ZItem, 0, hi-lo+1)
				z.RangeByRank(lo, hi, rev, collect)
			}
		default:
			var lo, hi int
			if kind == zrangeScore {
				lo, hi = sr.bounds(z)
			} else {
				lo, hi = lr.bounds(z)
			}
			n := int64(hi - lo)
			if offset < 0 || offset >= n || (offset > 0 && offset >= int64(z.Len())) {
				n = 0
			} else {
				n -= offset
				if limit >= 0 && limit < n {
					n = limit
				}
			}
			if n > 0 {
				if rev {
					top := hi - 1 - int(offset)
					z.RangeByRank(top-int(n)+1, top, true, collect)
				} else {
					first := lo + int(offset)
					z.RangeByRank(first, first+int(n)-1, false, collect)
				}
			}
		}
	}
	if store {
		res := value.NewZSet()
		if len(items) > c.zsetLimits().Entries {
			res = value.NewZSetLarge()
		}
		lim := c.zsetLimits()
		for _, it := range items {
			res.Set(it.Member, it.Score, lim)
		}
		c.storeZSet(dst, res, "zrangestore")
		return
	}
	c.replyZItems(items, withScores)
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
func cmdZCount(c *Client, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.addError(errZMinMaxFloat)
		return
	}
	zcountRange(c, args[1], r)
}

// ZLEXCOUNT key min max
func cmdZLexCount(c *Client, args [][]byte) {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		c.addError(errZMinMaxLex)
		return
	}
	zcountRange(c, args[1], r)
}

// zcountRange answers the number of members of key's sorted set inside r
// (a score or a lex range): 0 for a missing key.
func zcountRange(c *Client, key []byte, r interface{ bounds(*value.ZSet) (int, int) }) {
	z, _, ok := c.lookupZSet(string(key))
	if !ok {
		return
	}
	if z == nil {
		c.addInt(0)
		return
	}
	lo, hi := r.bounds(z)
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
