package node

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/resp"
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
	z, _, ok := c.lookupZSet(string(args[1]))
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

// ZLEXCOUNT key min max
func cmdZLexCount(c *Client, args [][]byte) {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		c.addError(errZMinMaxLex)
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
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	c.addArrayLen(len(args) - 2)
	for _, m := range args[2:] {
		if z != nil {
			if s, ok := z.Score(bstr(m)); ok {
				c.addDouble(s)
				continue
			}
		}
		c.addNull()
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

// ---- ZUNION / ZINTER / ZDIFF -------------------------------------------------

// zsetOpSrc is one input of ZUNION/ZINTER/ZDIFF: a sorted set or a set
// (whose members score 1).
type zsetOpSrc struct {
	z      *value.ZSet
	set    zSetSource
	weight float64
}

// zSetSource is what the set operations need from a set value.
type zSetSource interface {
	Len() int
	Has(member string) bool
	ForEach(fn func(member string) bool)
}

func (s *zsetOpSrc) length() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.set != nil:
		return s.set.Len()
	}
	return 0
}

func (s *zsetOpSrc) forEach(fn func(m string, score float64) bool) {
	switch {
	case s.z != nil:
		s.z.ForEach(fn)
	case s.set != nil:
		s.set.ForEach(func(m string) bool { return fn(m, 1) })
	}
}

func (s *zsetOpSrc) find(m string) (float64, bool) {
	switch {
	case s.z != nil:
		return s.z.Score(m)
	case s.set != nil:
		if s.set.Has(m) {
			return 1, true
		}
	}
	return 0, false
}

type zsetOp int

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

const (
	zaggrSum = iota
	zaggrMin
	zaggrMax
)

func zaggregate(target *float64, v float64, aggr int) {
	switch aggr {
	case zaggrSum:
		*target += v
		if math.IsNaN(*target) {
			*target = 0
		}
	case zaggrMin:
		if v < *target {
			*target = v
		}
	case zaggrMax:
		if v > *target {
			*target = v
		}
	}
}

// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
func cmdZUnionStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, zopUnion, false) }

// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
func cmdZInterStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, zopInter, false) }

// ZDIFFSTORE destination numkeys key [key ...]
func cmdZDiffStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, zopDiff, false) }

// ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
func cmdZUnion(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, zopUnion, false) }

// ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
func cmdZInter(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, zopInter, false) }

// ZINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdZInterCard(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, zopInter, true) }

// ZDIFF numkeys key [key ...] [WITHSCORES]
func cmdZDiff(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, zopDiff, false) }

func zsetOpGeneric(c *Client, args [][]byte, numIdx int, op zsetOp, cardOnly bool) {
	setnum, ok := parseInt(args[numIdx])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if setnum < 1 {
		c.addError("ERR at least 1 input key is needed for '" + c.cmd.fullName() + "' command")
		return
	}
	if setnum > int64(len(args)-(numIdx+1)) {
		c.addError(errSyntax)
		return
	}
	dst := ""
	if numIdx == 2 {
		dst = string(args[1])
	}
	db := c.curDB()
	src := make([]zsetOpSrc, setnum)
	j := numIdx + 1
	for i := range src {
		src[i].weight = 1
		e := db.Lookup(string(args[j]), c.now)
		j++
		if e == nil {
			continue
		}
		switch v := e.Obj.(type) {
		case *value.ZSet:
			src[i].z = v
		default:
			tv, isTV := e.Obj.(value.Value)
			ss, isSet := e.Obj.(zSetSource)
			if !isTV || tv.TypeName() != "set" || !isSet {
				c.addError(errWrongType)
				return
			}
			src[i].set = ss
		}
	}
	aggr := zaggrSum
	withScores := false
	var limit int64
	for j < len(args) {
		remaining := len(args) - j
		a := args[j]
		switch {
		case op != zopDiff && !cardOnly && remaining >= int(setnum)+1 && eqFold(a, "weights"):
			j++
			for i := range src {
				f, ok := parseFloat(args[j])
				if !ok {
					c.addError(errZWeightFloat)
					return
				}
				src[i].weight = f
				j++
			}
		case op != zopDiff && !cardOnly && remaining >= 2 && eqFold(a, "aggregate"):
			j++
			switch {
			case eqFold(args[j], "sum"):
				aggr = zaggrSum
			case eqFold(args[j], "min"):
				aggr = zaggrMin
			case eqFold(args[j], "max"):
				aggr = zaggrMax
			default:
				c.addError(errSyntax)
				return
			}
			j++
		case dst == "" && !cardOnly && eqFold(a, "withscores"):
			j++
			withScores = true
		case cardOnly && remaining >= 2 && eqFold(a, "limit"):
			n, ok := parseInt(args[j+1])
			if !ok || n < 0 {
				c.addError("ERR LIMIT can't be negative")
				return
			}
			limit = n
			j += 2
		default:
			c.addError(errSyntax)
			return
		}
	}
	if op != zopDiff {
		sort.SliceStable(src, func(a, b int) bool { return src[a].length() < src[b].length() })
	}
	res := value.NewZSetLarge()
	cardinality := int64(0)
	switch op {
	case zopInter:
		if src[0].length() == 0 {
			break
		}
		src[0].forEach(func(m string, s float64) bool {
			score := src[0].weight * s
			if math.IsNaN(score) {
				score = 0
			}
			k := 1
			for ; k < len(src); k++ {
				v, ok := src[k].find(m)
				if !ok {
					break
				}
				zaggregate(&score, v*src[k].weight, aggr)
			}
			if k < len(src) {
				return true
			}
			if cardOnly {
				cardinality++
				return limit == 0 || cardinality < limit
			}
			res.InsertNew(m, score)
			return true
		})
	case zopUnion:
		acc := make(map[string]float64, src[len(src)-1].length())
		for i := range src {
			src[i].forEach(func(m string, s float64) bool {
				score := src[i].weight * s
				if math.IsNaN(score) {
					score = 0
				}
				if cur, ok := acc[m]; ok {
					zaggregate(&cur, score, aggr)
					acc[m] = cur
				} else {
					acc[m] = score
				}
				return true
			})
		}
		for m, s := range acc {
			res.InsertNew(m, s)
		}
	case zopDiff:
		src[0].forEach(func(m string, s float64) bool {
			for k := 1; k < len(src); k++ {
				if _, ok := src[k].find(m); ok {
					return true
				}
			}
			res.InsertNew(m, s)
			return true
		})
	}
	switch {
	case dst != "":
		res.ShrinkIfSmall(c.zsetLimits())
		event := [...]string{"zunionstore", "zinterstore", "zdiffstore"}[op]
		c.storeZSet(dst, res, event)
	case cardOnly:
		c.addInt(cardinality)
	default:
		items := make([]value.ZItem, 0, res.Len())
		res.ForEach(func(m string, s float64) bool {
			items = append(items, value.ZItem{Member: m, Score: s})
			return true
		})
		c.replyZItems(items, withScores)
	}
}

// ---- pops -----------------------------------------------------------------

// ZPOPMIN key [count]
func cmdZPopMin(c *Client, args [][]byte) { zpopMinMax(c, args, false) }

// ZPOPMAX key [count]
func cmdZPopMax(c *Client, args [][]byte) { zpopMinMax(c, args, true) }

func zpopMinMax(c *Client, args [][]byte, max bool) {
	if len(args) > 3 {
		c.addError(errSyntax)
		return
	}
	count := int64(-1)
	if len(args) == 3 {
		n, ok := parseInt(args[2])
		if !ok {
			c.addError(errNotInt)
			return
		}
		if n < 0 {
			c.addError(errZPositive)
			return
		}
		count = n
	}
	nested := c.proto >= 3 && count != -1
	zpopGeneric(c, args[1:2], max, false, count, nested, false)
}

// zpopGeneric pops up to count (-1: one, plain reply) members from the
// first existing sorted set among keys, replying as Redis's
// genericZpopCommand does. It returns the key popped from and how many
// members were popped.
func zpopGeneric(c *Client, keys [][]byte, max, emitKey bool, count int64, nested, nilWhenEmpty bool) (string, int) {
	var z *value.ZSet
	var key string
	for _, k := range keys {
		zz, _, ok := c.lookupZSet(string(k))
		if !ok {
			return "", 0
		}
		if zz != nil {
			z, key = zz, string(k)
			break
		}
	}
	if z == nil {
		if nilWhenEmpty {
			c.addNullArray()
		} else {
			c.addArrayLen(0)
		}
		return "", 0
	}
	if count == 0 {
		c.addArrayLen(0)
		return "", 0
	}
	if count == -1 {
		count = 1
	}
	n := z.Len()
	if count < int64(n) {
		n = int(count)
	}
	switch {
	case !nested && !emitKey:
		c.addArrayLen(n * 2)
	case nested && !emitKey:
		c.addArrayLen(n)
	case !nested && emitKey:
		c.addArrayLen(n*2 + 1)
		c.addBulkString(key)
	default:
		c.addArrayLen(2)
		c.addBulkString(key)
		c.addArrayLen(n)
	}
	emit := func(m string, s float64) bool {
		if nested {
			c.addArrayLen(2)
		}
		c.addBulkString(m)
		c.addDouble(s)
		return true
	}
	total := z.Len()
	if max {
		z.RangeByRank(total-n, total-1, true, emit)
		z.RemoveRankRange(total-n, total-1)
	} else {
		z.RangeByRank(0, n-1, false, emit)
		z.RemoveRankRange(0, n-1)
	}
	c.markDirty(n)
	if max {
		c.notify(notifyZSet, "zpopmax", key)
	} else {
		c.notify(notifyZSet, "zpopmin", key)
	}
	c.signalModifiedKey(key)
	if z.Len() == 0 {
		c.curDB().Remove(key)
		c.notify(notifyGeneric, "del", key)
	}
	return key, n
}

// parseZMPopArgs parses "numkeys key... MIN|MAX [COUNT count]" starting at
// numIdx; on error it replies and returns ok=false.
func parseZMPopArgs(c *Client, args [][]byte, numIdx int) (keys [][]byte, max bool, count int64, ok bool) {
	numkeys, isInt := parseInt(args[numIdx])
	if !isInt || numkeys < 1 {
		c.addError("ERR numkeys should be greater than 0")
		return nil, false, 0, false
	}
	whereIdx := int64(numIdx) + numkeys + 1
	if whereIdx >= int64(len(args)) {
		c.addError(errSyntax)
		return nil, false, 0, false
	}
	switch {
	case eqFold(args[whereIdx], "min"):
	case eqFold(args[whereIdx], "max"):
		max = true
	default:
		c.addError(errSyntax)
		return nil, false, 0, false
	}
	count = -1
	for j := int(whereIdx) + 1; j < len(args); j++ {
		more := len(args) - 1 - j
		if count == -1 && eqFold(args[j], "count") && more > 0 {
			j++
			n, isInt := parseInt(args[j])
			if !isInt || n < 1 {
				c.addError("ERR count should be greater than 0")
				return nil, false, 0, false
			}
			count = n
		} else {
			c.addError(errSyntax)
			return nil, false, 0, false
		}
	}
	if count == -1 {
		count = 1
	}
	return args[numIdx+1 : whereIdx], max, count, true
}

// zpopPropagation is what a ZMPOP/BZPOP* is replicated as.
func zpopPropagation(max bool, key string, n int, withCount bool) [][]byte {
	name := "ZPOPMIN"
	if max {
		name = "ZPOPMAX"
	}
	if !withCount {
		return [][]byte{[]byte(name), []byte(key)}
	}
	return [][]byte{[]byte(name), []byte(key), []byte(strconv.Itoa(n))}
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
func cmdZMPop(c *Client, args [][]byte) {
	keys, max, count, ok := parseZMPopArgs(c, args, 1)
	if !ok {
		return
	}
	key, n := zpopGeneric(c, keys, max, true, count, true, true)
	if n > 0 {
		c.propagateAs(zpopPropagation(max, key, n, true))
	}
}

// ---- ZRANDMEMBER -------------------------------------------------------------

// ZRANDMEMBER key [count [WITHSCORES]]
func cmdZRandMember(c *Client, args [][]byte) {
	if len(args) >= 3 {
		l, ok := parseInt(args[2])
		if !ok {
			c.addError(errNotInt)
			return
		}
		if l == math.MinInt64 {
			c.addError("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
			return
		}
		withScores := false
		if len(args) > 4 || (len(args) == 4 && !eqFold(args[3], "withscores")) {
			c.addError(errSyntax)
			return
		} else if len(args) == 4 {
			withScores = true
			if l < -math.MaxInt64/2 || l > math.MaxInt64/2 {
				c.addError("ERR value is out of range")
				return
			}
		}
		zrandMemberWithCount(c, args[1], l, withScores)
		return
	}
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	if z == nil {
		c.addNull()
		return
	}
	m, _ := z.At(rand.IntN(z.Len()))
	c.addBulkString(m)
}

func zrandMemberWithCount(c *Client, keyb []byte, l int64, withScores bool) {
	z, _, ok := c.lookupZSet(string(keyb))
	if !ok {
		return
	}
	if z == nil {
		c.addArrayLen(0)
		return
	}
	size := z.Len()
	uniq := l >= 0
	count := l
	if !uniq {
		count = -l
	}
	if count == 0 {
		c.addArrayLen(0)
		return
	}
	emit := func(m string, s float64) {
		if withScores && c.proto >= 3 {
			c.addArrayLen(2)
		}
		c.addBulkString(m)
		if withScores {
			c.addDouble(s)
		}
	}
	if !uniq || count == 1 {
		if withScores && c.proto < 3 {
			c.addArrayLen(int(count * 2))
		} else {
			c.addArrayLen(int(count))
		}
		for i := int64(0); i < count; i++ {
			m, s := z.At(rand.IntN(size))
			emit(m, s)
		}
		return
	}
	n := size
	if count < int64(size) {
		n = int(count)
	}
	if withScores && c.proto < 3 {
		c.addArrayLen(n * 2)
	} else {
		c.addArrayLen(n)
	}
	if n == size {
		z.ForEach(func(m string, s float64) bool { emit(m, s); return true })
		return
	}
	// Partial Fisher-Yates over ranks: n distinct random ranks.
	swapped := make(map[int]int, n)
	get := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	for i := 0; i < n; i++ {
		j := i + rand.IntN(size-i)
		vi, vj := get(i), get(j)
		swapped[i], swapped[j] = vj, vi
		m, s := z.At(vj)
		emit(m, s)
	}
}

// ---- ZSCAN ------------------------------------------------------------------

// ZSCAN key cursor [MATCH pattern] [COUNT count]
//
// A small (listpack) set is returned whole with cursor 0, as Redis does; a
// large one is walked through its hash table with a reverse-binary cursor,
// so a member present for the whole scan is returned at least once.
func cmdZScan(c *Client, args [][]byte) {
	cursor, ok := zscanCursor(args[2])
	if !ok {
		c.addError("ERR invalid cursor")
		return
	}
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	if z == nil {
		c.addArrayLen(2)
		c.addBulkString("0")
		c.addArrayLen(0)
		return
	}
	count := int64(10)
	pattern := ""
	hasPattern := false
	for j := 3; j < len(args); j += 2 {
		if j+1 >= len(args) {
			c.addError(errSyntax)
			return
		}
		switch {
		case eqFold(args[j], "count"):
			n, ok := parseInt(args[j+1])
			if !ok {
				c.addError(errNotInt)
				return
			}
			if n < 1 {
				c.addError(errSyntax)
				return
			}
			count = n
		case eqFold(args[j], "match"):
			pattern = string(args[j+1])
			hasPattern = pattern != "*"
		default:
			c.addError(errSyntax)
			return
		}
	}
	var items []value.ZItem
	next := uint64(0)
	{
		collect := func(m string, s float64) bool {
			if !hasPattern || globMatch(pattern, m, false) {
				items = append(items, value.ZItem{Member: m, Score: s})
			}
			return true
		}
		if z.IsSmall() {
			z.ForEach(collect)
		} else {
			// Visit buckets until count elements are collected, at most
			// count*10 buckets per call, as Redis's scanGenericCommand.
			next = cursor
			seen := int64(0)
			visit := func(n *value.DictNode[*value.SkipNode]) { seen++; collect(n.Key, n.Val.Score) }
			for iter := count * 10; ; {
				next = z.Dict.Scan(next, visit)
				iter--
				if next == 0 || iter <= 0 || seen >= count {
					break
				}
			}
		}
	}
	c.addArrayLen(2)
	c.addBulkString(strconv.FormatUint(next, 10))
	c.addArrayLen(len(items) * 2)
	var buf [32]byte
	for _, it := range items {
		c.addBulkString(it.Member)
		c.addBulk(resp.FormatDouble(buf[:0], it.Score))
	}
}

// zscanCursor parses a SCAN cursor as Redis's strtoul does: an unsigned
// 64-bit integer, a leading '-' negating it modulo 2^64.
func zscanCursor(b []byte) (uint64, bool) {
	if len(b) == 0 || b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' || b[0] == '\v' || b[0] == '\f' {
		return 0, false
	}
	neg := false
	switch b[0] {
	case '-':
		neg, b = true, b[1:]
	case '+':
		b = b[1:]
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
