package node

import "strings"

func registerServerCommands(t *commandTable) {
	t.add(&command{name: "flushall", arity: -1, flags: flagWrite | flagLockAll, fn: cmdFlushAll, group: "server", since: "1.0.0"})
	t.add(&command{name: "flushdb", arity: -1, flags: flagWrite | flagLockDB, fn: cmdFlushDB, group: "server", since: "1.0.0"})
	t.add(&command{name: "function", arity: -2, fn: cmdHelpDispatch, group: "scripting", since: "7.0.0"})
	t.addSub("function", &command{name: "flush", arity: -2, flags: flagWrite | flagNoScript, fn: cmdFunctionFlush})
	t.addSub("function", &command{name: "list", arity: -2, flags: flagNoScript, fn: cmdFunctionList})
	t.add(&command{name: "config", arity: -2, fn: cmdHelpDispatch, group: "server", since: "2.0.0"})
	t.addSub("config", &command{name: "get", arity: -3, flags: flagAdmin | flagNoScript | flagLoading | flagStale, fn: cmdConfigGet})
	t.addSub("config", &command{name: "set", arity: -4, flags: flagAdmin | flagNoScript | flagLoading | flagStale, fn: cmdConfigSet})
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

// FUNCTION FLUSH [ASYNC|SYNC]: the function library is always empty.
func cmdFunctionFlush(c *Client, args [][]byte) {
	if len(args) > 3 || (len(args) == 3 && !eqFold(args[2], "ASYNC") && !eqFold(args[2], "SYNC")) {
		c.addError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.addOK()
}

// FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern]: no libraries.
func cmdFunctionList(c *Client, args [][]byte) { c.addArrayLen(0) }

// CONFIG GET parameter [parameter ...]
func cmdConfigGet(c *Client, args [][]byte) {
	seen := map[string]bool{}
	var pairs []string
	for _, a := range args[2:] {
		pat := strings.ToLower(string(a))
		for _, name := range c.srv.cfg.Names() {
			d := configDefs[name]
			match := globMatch(pat, name, true)
			alias := d.alias != "" && globMatch(pat, d.alias, true)
			if (match || alias) && !seen[name] {
				shown := name
				if !match && alias {
					shown = d.alias
				}
				seen[name] = true
				pairs = append(pairs, shown, c.srv.cfg.Get(name))
			}
		}
	}
	c.addMapLen(len(pairs) / 2)
	for _, p := range pairs {
		c.addBulkString(p)
	}
}

// CONFIG SET parameter value [parameter value ...]: all or nothing.
func cmdConfigSet(c *Client, args [][]byte) {
	if len(args)%2 != 0 {
		c.addError("ERR wrong number of arguments for 'config|set' command")
		return
	}
	type change struct{ name, old, val string }
	var changes []change
	seen := map[string]bool{}
	for i := 2; i < len(args); i += 2 {
		canon, d := canonicalName(string(args[i]))
		if d == nil {
			c.addError("ERR Unknown option or number of arguments for CONFIG SET - '" + string(args[i]) + "'")
			return
		}
		if d.immutable {
			c.addError("ERR CONFIG SET failed (possibly related to argument '" + string(args[i]) + "') - can't set immutable config")
			return
		}
		if seen[canon] {
			c.addError("ERR CONFIG SET failed (possibly related to argument '" + string(args[i]) + "') - duplicate parameter")
			return
		}
		seen[canon] = true
		changes = append(changes, change{canon, c.srv.cfg.Get(canon), string(args[i+1])})
	}
	for i, ch := range changes {
		if err := c.srv.cfg.Set(ch.name, ch.val); err != nil {
			for _, undo := range changes[:i] {
				_ = c.srv.cfg.Set(undo.name, undo.old)
			}
			msg := err.Error()
			msg = strings.TrimPrefix(msg, "argument(s) must be one of the following: ")
			c.addError("ERR CONFIG SET failed (possibly related to argument '" + ch.name + "') - " + msg)
			return
		}
	}
	for _, ch := range changes {
		if d := configDefs[ch.name]; d.apply != nil {
			d.apply(c.srv, c.srv.cfg.Get(ch.name))
		}
	}
	c.srv.configChanged()
	c.addOK()
}
