package node

import "github.com/shardis/shardis/internal/node/value"

// Blocking sorted set pops: BZPOPMIN, BZPOPMAX and BZMPOP, on the blocking
// machinery of blocking.go.

// registerZSetBlockingCommands registers BZPOPMIN, BZPOPMAX and BZMPOP.
func registerZSetBlockingCommands(t *commandTable) {
	f := flagWrite | flagNoScript | flagBlocking
	t.add(&command{name: "bzpopmin", arity: -3, flags: f | flagFast, first: 1, last: -2, step: 1, fn: cmdBZPopMin, group: "sorted-set", since: "5.0.0"})
	t.add(&command{name: "bzpopmax", arity: -3, flags: f | flagFast, first: 1, last: -2, step: 1, fn: cmdBZPopMax, group: "sorted-set", since: "5.0.0"})
	t.add(&command{name: "bzmpop", arity: -5, flags: flagWrite | flagBlocking, keys: zNumkeysKeys(2), fn: cmdBZMPop, group: "sorted-set", since: "7.0.0"})
}

// BZPOPMIN key [key ...] timeout
func cmdBZPopMin(c *Client, args [][]byte) {
	bzpopGeneric(c, args[1:len(args)-1], args[len(args)-1], false, -1)
}

// BZPOPMAX key [key ...] timeout
func cmdBZPopMax(c *Client, args [][]byte) {
	bzpopGeneric(c, args[1:len(args)-1], args[len(args)-1], true, -1)
}

// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
func cmdBZMPop(c *Client, args [][]byte) {
	o, ok := parseMPop(c, args, 2, "min", "max")
	if !ok {
		return
	}
	bzpopGeneric(c, o.Keys, args[1], o.Second, o.Count)
}

// bzpopGeneric pops from the first non-empty sorted set among keys, or
// blocks until one gets members. count is -1 for BZPOPMIN/BZPOPMAX (flat
// reply [key, member, score]), else BZMPOP's count (nested reply).
func bzpopGeneric(c *Client, keys [][]byte, timeoutArg []byte, max bool, count int64) {
	timeout, ok := parseTimeout(c, timeoutArg)
	if !ok {
		return
	}
	nested := count != -1
	kick := false
	for _, k := range keys {
		z, _, ok := c.lookupZSet(string(k))
		if !ok {
			return
		}
		if z == nil || z.Len() == 0 {
			continue
		}
		if c.behindWaiters(k) {
			kick = true
			break
		}
		key, n := zpopGeneric(c, [][]byte{k}, max, true, count, nested, nested)
		if n > 0 {
			c.propagateAs(zpopPropagation(max, key, n, nested))
		}
		return
	}
	if !c.canBlock() {
		c.addNullArray()
		return
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = string(k)
	}
	c.blockForKeys(blockSpec{
		keys:    names,
		timeout: timeout,
		kick:    kick,
		serve: func(c *Client, key string) bool {
			e := c.curDB().Lookup(key, c.now)
			if e == nil {
				return false
			}
			if z, isZ := e.Obj.(*value.ZSet); !isZ || z.Len() == 0 {
				return false
			}
			k, n := zpopGeneric(c, [][]byte{[]byte(key)}, max, true, count, nested, nested)
			if n > 0 {
				c.propagateAs(zpopPropagation(max, k, n, nested))
			}
			return true
		},
	})
}
