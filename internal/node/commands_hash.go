package node

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/grammar"
	"github.com/shardis/shardis/internal/node/value"
)

func registerHashCommands(t *commandTable) {
	w := flagWrite | flagDenyOOM
	ro := flagReadOnly
	add := func(name string, arity int, flags cmdFlag, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: 1, last: 1, fn: fn, group: "hash", since: since})
	}
	add("hset", -4, w|flagFast, cmdHSet, "2.0.0")
	add("hsetnx", 4, w|flagFast, cmdHSetNX, "2.0.0")
	add("hmset", -4, w|flagFast, cmdHSet, "2.0.0")
	add("hget", 3, ro|flagFast, cmdHGet, "2.0.0")
	add("hmget", -3, ro|flagFast, cmdHMGet, "2.0.0")
	add("hdel", -3, flagWrite|flagFast, cmdHDel, "2.0.0")
	add("hlen", 2, ro|flagFast, cmdHLen, "2.0.0")
	add("hstrlen", 3, ro|flagFast, cmdHStrLen, "3.2.0")
	add("hexists", 3, ro|flagFast, cmdHExists, "2.0.0")
	add("hkeys", 2, ro, cmdHKeys, "2.0.0")
	add("hvals", 2, ro, cmdHVals, "2.0.0")
	add("hgetall", 2, ro, cmdHGetAll, "2.0.0")
	add("hincrby", 4, w|flagFast, cmdHIncrBy, "2.0.0")
	add("hincrbyfloat", 4, w|flagFast, cmdHIncrByFloat, "2.6.0")
	add("hrandfield", -2, ro, cmdHRandField, "6.2.0")
	add("hscan", -3, ro, cmdHScan, "2.8.0")
}

// lookupHash returns the hash at key (see lookupValue).
func (c *Client) lookupHash(key []byte, read bool) (*value.Hash, bool) {
	return lookupValue[*value.Hash](c, key, read)
}

// createHash stores a new empty hash at key, which must be missing.
func (c *Client) createHash(key []byte) *value.Hash {
	h := value.NewHash()
	c.curDB().SetObject(string(key), h)
	return h
}

// HSET key field value [field value ...] (also HMSET, which replies OK)
func cmdHSet(c *Client, args [][]byte) {
	if len(args)%2 != 0 {
		c.addError(errWrongArgs(strings.ToLower(string(args[0]))))
		return
	}
	h, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	if h == nil {
		h = c.createHash(args[1])
	}
	lim := c.srv.hashLimits()
	if h.Dict == nil && len(args) > 4 {
		// One allocation for all the pairs of a multi-field HSET.
		extra := 0
		for i := 2; i < len(args); i += 2 {
			extra += value.ListpackEntrySize(args[i], args[i+1])
		}
		if h.Len()+(len(args)-2)/2 <= lim.Entries {
			h.Reserve(extra)
		}
	}
	// The loop stays here rather than in a value method: HSET is a hot
	// path, and a call there cost 0.6% of its instructions (callgrind).
	created := 0
	for i := 2; i < len(args); i += 2 {
		if h.SetB(args[i], args[i+1], lim) {
			created++
		}
	}
	key := string(args[1])
	c.signalModifiedKey(key)
	c.notify(notifyHash, "hset", key)
	c.markDirty((len(args) - 2) / 2)
	if args[0][1] == 's' || args[0][1] == 'S' {
		c.addInt(int64(created))
	} else {
		c.addOK()
	}
}

// HSETNX key field value
func cmdHSetNX(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	if h != nil {
		if _, exists := h.GetB(args[2]); exists {
			c.addInt(0)
			return
		}
	} else {
		h = c.createHash(args[1])
	}
	h.SetB(args[2], args[3], c.srv.hashLimits())
	key := string(args[1])
	c.signalModifiedKey(key)
	c.notify(notifyHash, "hset", key)
	c.markDirty(1)
	c.addInt(1)
}

// HGET key field
func cmdHGet(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1], true)
	if !ok {
		return
	}
	if h == nil {
		c.addNull()
		return
	}
	v, found := h.GetB(args[2])
	if !found {
		c.addNull()
		return
	}
	c.addBulk(v)
}

// HMGET key field [field ...]
func cmdHMGet(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1], true)
	if !ok {
		return
	}
	c.addArrayLen(len(args) - 2)
	for _, f := range args[2:] {
		if h == nil {
			c.addNull()
			continue
		}
		if v, found := h.GetB(f); found {
			c.addBulk(v)
		} else {
			c.addNull()
		}
	}
}

// HDEL key field [field ...]
func cmdHDel(c *Client, args [][]byte) {
	removeMembersCommand(c, args, (*value.Hash).DelB, notifyHash, "hdel")
}

// HLEN key
func cmdHLen(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1], true)
	if !ok {
		return
	}
	if h == nil {
		c.addInt(0)
		return
	}
	c.addInt(int64(h.Len()))
}

// HSTRLEN key field
func cmdHStrLen(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1], true)
	if !ok {
		return
	}
	n := 0
	if h != nil {
		v, _ := h.GetB(args[2])
		n = len(v)
	}
	c.addInt(int64(n))
}

// HEXISTS key field
func cmdHExists(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1], true)
	if !ok {
		return
	}
	found := false
	if h != nil {
		_, found = h.GetB(args[2])
	}
	if found {
		c.addInt(1)
	} else {
		c.addInt(0)
	}
}

// HKEYS key
func cmdHKeys(c *Client, args [][]byte) { hashGetAll(c, args, true, false) }

// HVALS key
func cmdHVals(c *Client, args [][]byte) { hashGetAll(c, args, false, true) }

// HGETALL key (a map in RESP3)
func cmdHGetAll(c *Client, args [][]byte) { hashGetAll(c, args, true, true) }

func hashGetAll(c *Client, args [][]byte, keys, vals bool) {
	h, ok := c.lookupHash(args[1], true)
	if !ok {
		return
	}
	n := 0
	if h != nil {
		n = h.Len()
	}
	if keys && vals {
		c.addMapLen(n)
	} else {
		c.addArrayLen(n)
	}
	if h == nil {
		return
	}
	h.Each(func(f, v []byte) bool {
		if keys {
			c.addBulk(f)
		}
		if vals {
			c.addBulk(v)
		}
		return true
	})
}

// HINCRBY key field increment
func cmdHIncrBy(c *Client, args [][]byte) {
	incr, err := grammar.Int(args[3])
	if err != nil {
		c.addErr(err)
		return
	}
	h, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	var cur int64
	if h != nil {
		if v, found := h.GetB(args[2]); found {
			n, ok := parseInt(v)
			if !ok {
				c.addError("ERR hash value is not an integer")
				return
			}
			cur = n
		}
	}
	if (incr < 0 && cur < 0 && incr < math.MinInt64-cur) || (incr > 0 && cur > 0 && incr > math.MaxInt64-cur) {
		c.addError(errOverflow)
		return
	}
	cur += incr
	if h == nil {
		h = c.createHash(args[1])
	}
	var buf [24]byte
	h.SetB(args[2], strconv.AppendInt(buf[:0], cur, 10), c.srv.hashLimits())
	key := string(args[1])
	c.signalModifiedKey(key)
	c.notify(notifyHash, "hincrby", key)
	c.markDirty(1)
	c.addInt(cur)
}

// HINCRBYFLOAT key field increment (propagated as HSET with the result)
func cmdHIncrByFloat(c *Client, args [][]byte) {
	incr, ok := parseLongDouble(args[3])
	if !ok {
		c.addError(errNotFloat)
		return
	}
	if incr.IsInf() {
		c.addError("ERR value is NaN or Infinity")
		return
	}
	h, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	if h != nil {
		if v, found := h.GetB(args[2]); found {
			f, ok := parseLongDouble(v)
			if !ok {
				c.addError("ERR hash value is not a float")
				return
			}
			cur = f
		}
	}
	if cur.IsInf() {
		c.addError("ERR increment would produce NaN or Infinity")
		return
	}
	cur.Add(cur, incr)
	if longDoubleOverflows(cur) {
		c.addError("ERR increment would produce NaN or Infinity")
		return
	}
	out := formatLongDouble(cur)
	if h == nil {
		h = c.createHash(args[1])
	}
	h.SetB(args[2], out, c.srv.hashLimits())
	key := string(args[1])
	c.signalModifiedKey(key)
	c.notify(notifyHash, "hincrbyfloat", key)
	c.markDirty(1)
	c.addBulk(out)
	c.propagateAs([][]byte{[]byte("HSET"), args[1], args[2], out})
}

// HRANDFIELD key [count [WITHVALUES]]
func cmdHRandField(c *Client, args [][]byte) {
	if len(args) >= 3 {
		l, withValues, err := grammar.RandCount(args, "withvalues")
		if err != nil {
			c.addErr(err)
			return
		}
		hashRandFieldCount(c, args[1], l, withValues)
		return
	}
	h, ok := c.lookupHash(args[1], true)
	if !ok {
		return
	}
	if h == nil {
		c.addNull()
		return
	}
	f, _ := h.RandomField()
	c.addBulk(f)
}

// hashRandFieldCount answers HRANDFIELD with a count l: distinct fields
// for l > 0, l draws with repetitions for l < 0.
func hashRandFieldCount(c *Client, key []byte, l int64, withValues bool) {
	h, ok := c.lookupHash(key, true)
	if !ok {
		return
	}
	if h == nil || l == 0 {
		c.addArrayLen(0)
		return
	}
	pair := func(f, v []byte) {
		if withValues && c.proto > 2 {
			c.addArrayLen(2)
		}
		c.addBulk(f)
		if withValues {
			c.addBulk(v)
		}
	}
	count, mode := value.RandPlan(l, h.Len())
	if withValues && c.proto == 2 {
		c.addArrayLen(int(count * 2))
	} else {
		c.addArrayLen(int(count))
	}
	switch mode {
	case value.RandRepeats:
		h.RandomRepeats(count, func(f, v []byte) bool { pair(f, v); return !c.closed.Load() })
	case value.RandAll:
		h.Each(func(f, v []byte) bool { pair(f, v); return true })
	default:
		h.RandomDistinct(int(count), pair)
	}
}

// scanKeep reports whether an element passes a SCAN's MATCH pattern.
func scanKeep(o *grammar.Scan, m []byte) bool {
	return !o.Match || globMatch(o.Pattern, bstr(m), false)
}

// parseCollScan parses HSCAN/SSCAN's "cursor [MATCH pattern] [COUNT
// count]"; on error it replies and returns false.
func parseCollScan(c *Client, args [][]byte) (grammar.Scan, bool) {
	o, err := grammar.ParseScan(args)
	if err != nil {
		c.addErr(err)
		return o, false
	}
	return o, true
}

// parseScanCursor parses a SCAN cursor (grammar.Cursor).
func parseScanCursor(b []byte) (uint64, bool) { return grammar.Cursor(b) }

// addScanReply writes [cursor, [elements...]].
func (c *Client) addScanReply(cursor uint64, items [][]byte) {
	c.addArrayLen(2)
	c.addBulkString(strconv.FormatUint(cursor, 10))
	c.addBulks(items)
}

// HSCAN key cursor [MATCH pattern] [COUNT count]
func cmdHScan(c *Client, args [][]byte) {
	o, ok := parseCollScan(c, args[2:])
	if !ok {
		return
	}
	h, ok := c.lookupHash(args[1], true)
	if !ok {
		return
	}
	if h == nil {
		c.addScanReply(0, nil)
		return
	}
	var items [][]byte
	cursor := h.Scan(o.Cursor, o.Count, func(f, v []byte) {
		if scanKeep(&o, f) {
			items = append(items, f, v)
		}
	})
	c.addScanReply(cursor, items)
}
