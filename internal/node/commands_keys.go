package node

func registerKeyCommands(t *commandTable) {
	t.add(&command{name: "del", arity: -2, flags: flagWrite, first: 1, last: -1, fn: cmdDel, group: "generic", since: "1.0.0"})
	t.add(&command{name: "unlink", arity: -2, flags: flagWrite | flagFast, first: 1, last: -1, fn: cmdDel, group: "generic", since: "4.0.0"})
	t.add(&command{name: "exists", arity: -2, flags: flagReadOnly | flagFast, first: 1, last: -1, fn: cmdExists, group: "generic", since: "1.0.0"})
}

// DEL key [key ...] (also UNLINK)
func cmdDel(c *Client, args [][]byte) {
	db := c.curDB()
	n := 0
	for _, k := range args[1:] {
		key := string(k)
		if db.lookup(key, c.now) == nil {
			continue
		}
		db.remove(key)
		n++
		c.signalModifiedKey(key)
		c.notify(notifyGeneric, "del", key)
	}
	c.markDirty(n)
	c.addInt(int64(n))
}

// EXISTS key [key ...]
func cmdExists(c *Client, args [][]byte) {
	db := c.curDB()
	n := 0
	for _, k := range args[1:] {
		if db.lookup(string(k), c.now) != nil {
			n++
		}
	}
	c.addInt(int64(n))
}
