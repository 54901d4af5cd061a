package node

func registerServerCommands(t *commandTable) {
	t.add(&command{name: "flushall", arity: -1, flags: flagWrite | flagLockAll, fn: cmdFlushAll, group: "server", since: "1.0.0"})
	t.add(&command{name: "flushdb", arity: -1, flags: flagWrite | flagLockDB, fn: cmdFlushDB, group: "server", since: "1.0.0"})
	t.add(&command{name: "dbsize", arity: 1, flags: flagReadOnly | flagFast, fn: cmdDBSize, group: "server", since: "1.0.0"})
}

func parseFlushMode(c *Client, args [][]byte) bool {
	if len(args) > 2 || (len(args) == 2 && !eqFold(args[1], "ASYNC") && !eqFold(args[1], "SYNC")) {
		c.addError(errSyntax)
		return false
	}
	return true
}

// FLUSHALL [ASYNC|SYNC]
func cmdFlushAll(c *Client, args [][]byte) {
	if !parseFlushMode(c, args) {
		return
	}
	for _, db := range c.srv.dbs {
		db.flush()
	}
	c.srv.watches.touchDB(-1)
	c.markDirty(1)
	c.propagateAs([][]byte{[]byte("FLUSHALL")})
	c.addOK()
}

// FLUSHDB [ASYNC|SYNC]
func cmdFlushDB(c *Client, args [][]byte) {
	if !parseFlushMode(c, args) {
		return
	}
	c.curDB().flush()
	c.srv.watches.touchDB(c.db)
	c.markDirty(1)
	c.propagateAs([][]byte{[]byte("FLUSHDB")})
	c.addOK()
}

// DBSIZE
func cmdDBSize(c *Client, args [][]byte) { c.addInt(c.curDB().size()) }
