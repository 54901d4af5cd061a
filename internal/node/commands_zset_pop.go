package node

import (
	"math/rand/v2"
	"strconv"

	"github.com/shardis/shardis/internal/node/grammar"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/resp"
)

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
		// getPositiveLongFromObjectOrReply: a non-integer gets the
		// range message too.
		n, err := grammar.Positive(args[2])
		if err != nil {
			c.addErr(err)
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
	n := int(min(count, int64(z.Len())))
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
	z.PopN(n, max, func(m string, s float64) {
		if nested {
			c.addArrayLen(2)
		}
		c.addBulkString(m)
		c.addDouble(s)
	})
	c.markDirty(n)
	event := "zpopmin"
	if max {
		event = "zpopmax"
	}
	c.notify(notifyZSet, event, key)
	c.signalModifiedKey(key)
	if z.Len() == 0 {
		c.curDB().Remove(key)
		c.notify(notifyGeneric, "del", key)
	}
	return key, n
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
	o, ok := parseMPop(c, args, 1, "min", "max")
	if !ok {
		return
	}
	key, n := zpopGeneric(c, o.Keys, o.Second, true, o.Count, true, true)
	if n > 0 {
		c.propagateAs(zpopPropagation(o.Second, key, n, true))
	}
}

// ---- ZRANDMEMBER -------------------------------------------------------------

// ZRANDMEMBER key [count [WITHSCORES]]
func cmdZRandMember(c *Client, args [][]byte) {
	if len(args) >= 3 {
		l, withScores, err := grammar.RandCount(args, "withscores")
		if err != nil {
			c.addErr(err)
			return
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

// zrandMemberWithCount answers ZRANDMEMBER with a count l: distinct
// members for l > 0, l draws with repetitions for l < 0.
func zrandMemberWithCount(c *Client, keyb []byte, l int64, withScores bool) {
	z, _, ok := c.lookupZSet(string(keyb))
	if !ok {
		return
	}
	if z == nil || l == 0 {
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
	n, mode := value.RandPlan(l, z.Len())
	if withScores && c.proto < 3 {
		c.addArrayLen(int(n * 2))
	} else {
		c.addArrayLen(int(n))
	}
	switch mode {
	case value.RandRepeats:
		z.RandomRepeats(n, func(m string, s float64) bool { emit(m, s); return true })
	case value.RandAll:
		z.ForEach(func(m string, s float64) bool { emit(m, s); return true })
	default:
		z.RandomDistinct(int(n), emit)
	}
}

// ---- ZSCAN ------------------------------------------------------------------

// ZSCAN key cursor [MATCH pattern] [COUNT count] (see value.ZSet.Scan)
func cmdZScan(c *Client, args [][]byte) {
	// Unlike HSCAN and SSCAN, an empty cursor is refused.
	cursor, ok := grammar.Cursor(args[2])
	if !ok || len(args[2]) == 0 {
		c.addErr(grammar.ErrInvalidCursor)
		return
	}
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	if z == nil {
		c.addScanReply(0, nil)
		return
	}
	o, err := grammar.ScanOptions(args[3:])
	if err != nil {
		c.addErr(err)
		return
	}
	var items [][]byte
	next := z.Scan(cursor, o.Count, func(m string, s float64) {
		if scanKeep(&o, sbytes(m)) {
			items = append(items, sbytes(m), resp.FormatDouble(nil, s))
		}
	})
	c.addScanReply(next, items)
}
