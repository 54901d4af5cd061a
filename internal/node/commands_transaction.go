package node

import (
	"slices"
	"time"

	"github.com/shardis/shardis/internal/node/clients"
	"github.com/shardis/shardis/internal/node/keyspace"
)

func registerTransactionCommands(t *commandTable) {
	t.add(&command{name: "multi", arity: 1, flags: flagAllowBusy | flagFast | flagLoading | flagStale | flagNoScript, fn: cmdMulti, group: "transactions", since: "1.2.0"})
	t.add(&command{name: "exec", arity: 1, flags: flagLoading | flagStale | flagSkipSlowlog | flagNoScript | flagNoPropagate | flagSequenced, fn: cmdExec, group: "transactions", since: "1.2.0"})
	t.add(&command{name: "discard", arity: 1, flags: flagAllowBusy | flagFast | flagLoading | flagStale | flagNoScript, fn: cmdDiscard, group: "transactions", since: "2.0.0"})
	t.add(&command{name: "watch", arity: -2, flags: flagAllowBusy | flagFast | flagLoading | flagStale | flagNoScript, first: 1, last: -1, step: 1, fn: cmdWatch, group: "transactions", since: "2.2.0"})
	t.add(&command{name: "unwatch", arity: 1, flags: flagAllowBusy | flagFast | flagLoading | flagStale | flagNoScript, fn: cmdUnwatch, group: "transactions", since: "2.2.0"})
}

// MULTI
func cmdMulti(c *Client, args [][]byte) {
	if c.hasFlag(clientMulti) {
		c.addError("ERR MULTI calls can not be nested")
		return
	}
	c.setFlag(clientMulti, true)
	c.multi = c.multi[:0]
	c.publishInfo()
	c.addOK()
}

func (c *Client) discardTransaction() {
	c.multi = nil
	c.setFlag(clientMulti|clientDirtyCAS|clientDirtyExec, false)
	c.srv.watches.unwatchAll(c)
	c.publishInfo()
}

// DISCARD
func cmdDiscard(c *Client, args [][]byte) {
	if !c.hasFlag(clientMulti) {
		c.addError("ERR DISCARD without MULTI")
		return
	}
	c.discardTransaction()
	c.addOK()
}

// EXEC runs the queued commands atomically: it takes the shard locks of
// every queued command's keys (all locks when a command lacks key
// metadata), then runs them in order and propagates them as one
// MULTI/EXEC block. A queued CLIENT PAUSE starts, and the writes in
// flight finish, before the locks are taken (pauseBeforeExec).
func cmdExec(c *Client, args [][]byte) {
	if !c.hasFlag(clientMulti) {
		c.addError("ERR EXEC without MULTI")
		return
	}
	if c.hasFlag(clientDirtyExec) {
		c.discardTransaction()
		c.addError(errExecAbort)
		return
	}
	keys, all := c.keysOfMulti()
	// Watched keys are checked under their locks too.
	for _, wk := range c.watched {
		keys = append(keys, keyspace.ShardRef{DB: wk.db, Shard: keyspace.ShardOf(wk.key)})
	}
	lock := func() {
		if all {
			c.lockEverything()
		} else {
			c.lockKeys(slices.Clone(keys))
		}
	}
	undoPause := func() {}
	if d, all, ok := c.queuedPause(); ok && !c.hasFlag(clientDirtyCAS) {
		// CLIENT PAUSE in the transaction: the writes in flight finish
		// before it runs (pauseBeforeExec).
		undo, alive := c.srv.pauseBeforeExec(c, c.cmd, d, all)
		if !alive {
			c.discardTransaction() // killed while held
			return
		}
		undoPause = undo
	}
	lock()
	defer c.unlockHeld()
	if msg := c.settleLocked(c.cmd, args, c.guardOfMulti, lock); msg != "" {
		// A queued command's key or slot moved since EXEC's slot check
		// (migrate_guard.go).
		undoPause()
		c.discardTransaction()
		c.addError(msg)
		return
	}
	if c.hasFlag(clientDirtyCAS) || c.watchedExpired() {
		undoPause()
		c.discardTransaction()
		c.addNullArray()
		return
	}
	queued := c.multi
	c.multi = nil
	c.publishInfo()
	c.setFlag(clientMulti, false)
	c.srv.watches.unwatchAll(c)
	c.addArrayLen(len(queued))
	c.inExec = true
	c.execProp = c.execProp[:0]
	startDB := c.db
	c.execDB = startDB
	for _, q := range queued {
		cmd := c.srv.queuedCommand(q)
		if msg := c.aclExecRefusal(cmd, q); msg != "" {
			c.addError(msg)
			continue
		}
		if cmd.flags&flagWrite != 0 && !c.hasFlag(clientMaster) {
			if msg := c.srv.writeRefused(); msg != "" {
				c.addError(msg)
				continue
			}
		}
		c.call(cmd, q, true)
		c.cmd = nil
	}
	c.inExec = false
	c.endExecProp(startDB)
	if len(c.execProp) > 0 && c.srv.hasPropagators() {
		block := make([][][]byte, 0, len(c.execProp)+2)
		block = append(block, [][]byte{[]byte("MULTI")})
		block = append(block, c.execProp...)
		block = append(block, [][]byte{[]byte("EXEC")})
		c.propagateWrite(startDB, block)
	}
	c.execProp = nil
}

// queuedPause finds the first CLIENT PAUSE queued in the transaction that
// will pause when it runs (valid arguments, allowed by the client's ACL
// rules) and returns its timeout and mode.
func (c *Client) queuedPause() (d time.Duration, all bool, ok bool) {
	for _, q := range c.multi {
		cmd := c.srv.queuedCommand(q)
		if cmd == nil || cmd.parent == nil || cmd.parent.name != "client" || cmd.name != "pause" || len(q) > 4 || c.aclExecRefusal(cmd, q) != "" {
			continue
		}
		all, err := clients.ParsePauseMode(optArg(q, 3))
		if err != nil {
			continue
		}
		d, err := clients.ParseTimeoutMS(q[2])
		if err != nil {
			continue
		}
		return d, all, true
	}
	return 0, false, false
}

// multiFlags returns the union of the flags of the commands queued in
// MULTI (Redis's mstate.cmd_flags: CLIENT PAUSE WRITE holds an EXEC that
// would write).
func (c *Client) multiFlags() cmdFlag {
	var f cmdFlag
	for _, q := range c.multi {
		if cmd := c.srv.queuedCommand(q); cmd != nil {
			f |= cmd.flags
		}
	}
	return f
}

// queuedCommand finds the command (or subcommand) of a request queued by
// MULTI, which the dispatcher has already checked.
func (s *Server) queuedCommand(q [][]byte) *command {
	cmd := s.table.lookup(q[0])
	if cmd != nil && cmd.subs != nil && len(q) >= 2 {
		if sub := cmd.subs[lowerASCII(q[1])]; sub != nil {
			cmd = sub
		}
	}
	return cmd
}

// WATCH key [key ...]
func cmdWatch(c *Client, args [][]byte) {
	if c.hasFlag(clientMulti) {
		c.addError("ERR WATCH inside MULTI is not allowed")
		return
	}
	for _, k := range args[1:] {
		c.srv.watches.watch(c, c.db, string(k))
	}
	c.addOK()
}

// UNWATCH
func cmdUnwatch(c *Client, args [][]byte) {
	c.srv.watches.unwatchAll(c)
	c.setFlag(clientDirtyCAS, false)
	c.addOK()
}

func lowerASCII(b []byte) string {
	out := make([]byte, len(b))
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		out[i] = ch
	}
	return string(out)
}
