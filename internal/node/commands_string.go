package node

import (
	"bytes"
	"strconv"
)

func registerStringCommands(t *commandTable) {
	w := flagWrite | flagDenyOOM
	t.add(&command{name: "get", arity: 2, flags: flagReadOnly | flagFast, first: 1, last: 1, fn: cmdGet, group: "string", since: "1.0.0"})
	t.add(&command{name: "set", arity: -3, flags: w, first: 1, last: 1, fn: cmdSet, group: "string", since: "1.0.0"})
	t.add(&command{name: "mget", arity: -2, flags: flagReadOnly | flagFast, first: 1, last: -1, fn: cmdMGet, group: "string", since: "1.0.0"})
	t.add(&command{name: "mset", arity: -3, flags: w, first: 1, last: -1, step: 2, fn: cmdMSet, group: "string", since: "1.0.1"})
	t.add(&command{name: "incr", arity: 2, flags: w | flagFast, first: 1, last: 1, fn: cmdIncr, group: "string", since: "1.0.0"})
	t.add(&command{name: "decr", arity: 2, flags: w | flagFast, first: 1, last: 1, fn: cmdDecr, group: "string", since: "1.0.0"})
	t.add(&command{name: "incrby", arity: 3, flags: w | flagFast, first: 1, last: 1, fn: cmdIncrBy, group: "string", since: "1.0.0"})
	t.add(&command{name: "decrby", arity: 3, flags: w | flagFast, first: 1, last: 1, fn: cmdDecrBy, group: "string", since: "1.0.0"})
}

// lookupString returns the string value of key: (nil, true) when missing,
// ok=false (after replying WRONGTYPE) when the key holds another type.
func (c *Client) lookupString(key []byte) (e *entry, ok bool) {
	e = c.curDB().lookup(string(key), c.now)
	if e == nil {
		return nil, true
	}
	if e.obj != nil {
		c.addError(errWrongType)
		return nil, false
	}
	return e, true
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
	e.lru = lruClock()
	c.addBulk(e.str)
}

// setOptions are SET's flags.
type setOptions struct {
	nx, xx, get, keepTTL bool
	expire               int64 // absolute ms, 0 = none
}

// parseSetOptions parses SET's options after key and value; on error it
// replies and returns false.
func parseSetOptions(c *Client, args [][]byte, name string) (setOptions, bool) {
	var o setOptions
	seenExpire := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case eqFold(a, "NX") && !o.xx:
			o.nx = true
		case eqFold(a, "XX") && !o.nx:
			o.xx = true
		case eqFold(a, "GET"):
			o.get = true
		case eqFold(a, "KEEPTTL") && !seenExpire:
			o.keepTTL = true
		case (eqFold(a, "EX") || eqFold(a, "PX") || eqFold(a, "EXAT") || eqFold(a, "PXAT")) && !o.keepTTL && !seenExpire && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				c.addError(errNotInt)
				return o, false
			}
			if n <= 0 {
				c.addError("ERR invalid expire time in '" + name + "' command")
				return o, false
			}
			var ms int64
			switch {
			case eqFold(a, "EX"):
				if n > (1<<63-1)/1000 {
					c.addError("ERR invalid expire time in '" + name + "' command")
					return o, false
				}
				ms = c.now + n*1000
			case eqFold(a, "PX"):
				ms = c.now + n
			case eqFold(a, "EXAT"):
				if n > (1<<63-1)/1000 {
					c.addError("ERR invalid expire time in '" + name + "' command")
					return o, false
				}
				ms = n * 1000
			default:
				ms = n
			}
			if ms <= 0 {
				c.addError("ERR invalid expire time in '" + name + "' command")
				return o, false
			}
			o.expire = ms
			seenExpire = true
			i++
		default:
			c.addError(errSyntax)
			return o, false
		}
	}
	return o, true
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ts|KEEPTTL]
func cmdSet(c *Client, args [][]byte) {
	o, ok := parseSetOptions(c, args[3:], "set")
	if !ok {
		return
	}
	db := c.curDB()
	key := string(args[1])
	e := db.lookup(key, c.now)
	if o.get {
		if e != nil && e.obj != nil {
			c.addError(errWrongType)
			return
		}
		if e == nil {
			c.addNull()
		} else {
			c.addBulk(e.str)
		}
	}
	if (o.nx && e != nil) || (o.xx && e == nil) {
		if !o.get {
			c.addNull()
		}
		return
	}
	db.setString(key, bytes.Clone(args[2]), o.expire, o.keepTTL)
	c.markDirty(1)
	c.signalModifiedKey(key)
	c.notify(notifyString, "set", key)
	if o.expire != 0 {
		c.notify(notifyGeneric, "expire", key)
		// Replicas and the AOF get an absolute time, as Redis 7 does.
		prop := [][]byte{[]byte("SET"), args[1], args[2], []byte("PXAT"), []byte(strconv.FormatInt(o.expire, 10))}
		if o.nx {
			prop = append(prop, []byte("NX"))
		}
		if o.xx {
			prop = append(prop, []byte("XX"))
		}
		c.propagateAs(prop)
	}
	if !o.get {
		c.addOK()
	}
}

// MGET key [key ...]
func cmdMGet(c *Client, args [][]byte) {
	db := c.curDB()
	c.addArrayLen(len(args) - 1)
	for _, k := range args[1:] {
		e := db.lookup(string(k), c.now)
		if e == nil || e.obj != nil {
			c.addNull()
			continue
		}
		c.addBulk(e.str)
	}
}

// MSET key value [key value ...]
func cmdMSet(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.addError(errWrongArgs("mset"))
		return
	}
	db := c.curDB()
	for i := 1; i < len(args); i += 2 {
		key := string(args[i])
		db.setString(key, bytes.Clone(args[i+1]), 0, false)
		c.signalModifiedKey(key)
		c.notify(notifyString, "set", key)
	}
	c.markDirty((len(args) - 1) / 2)
	c.addOK()
}

func cmdIncr(c *Client, args [][]byte) { incrDecr(c, args[1], 1) }
func cmdDecr(c *Client, args [][]byte) { incrDecr(c, args[1], -1) }

func cmdIncrBy(c *Client, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	incrDecr(c, args[1], n)
}

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
		v, ok := parseStrictInt(e.str)
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
	val := strconv.AppendInt(nil, cur, 10)
	k := string(key)
	if e != nil {
		e.str = val
	} else {
		c.curDB().setString(k, val, 0, false)
	}
	c.markDirty(1)
	c.signalModifiedKey(k)
	c.notify(notifyString, "incrby", k)
	c.addInt(cur)
}

// parseStrictInt parses a stored string as Redis's string2ll does: no
// spaces, no leading '+', no leading zeros.
func parseStrictInt(b []byte) (int64, bool) { return parseInt(b) }
