package node

import (
	"strings"
	"sync"
	"time"
)

func registerDebugCommands(t *commandTable) {
	t.add(&command{name: "debug", arity: -2, flags: flagAdmin | flagNoScript | flagLoading | flagStale | flagProtected, fn: cmdDebug, group: "server", since: "1.0.0"})
}

// RegisterDebug adds a DEBUG subcommand (persistence registers RELOAD and
// OBJECT). The handler gets the full argument list (args[1] is the
// subcommand). Outside MULTI it runs WITHOUT keyspace locks and takes what
// it needs through debugLockAll / debugLockShard; inside EXEC the block
// already holds every shard lock (keysOfMulti locks everything for a
// block with DEBUG, so the block stays atomic as in Redis) and those
// helpers take nothing. Call it before Run.
func (s *Server) RegisterDebug(name string, fn handlerFunc) {
	if s.debugHooks == nil {
		s.debugHooks = make(map[string]handlerFunc)
	}
	s.debugHooks[strings.ToLower(name)] = fn
}

// debugLockAll locks every shard for a DEBUG subcommand, unless it runs
// inside EXEC (which holds them all), and returns the matching release.
func (c *Client) debugLockAll() (unlock func()) {
	if c.inExec {
		return func() {}
	}
	c.srv.LockAll()
	return c.srv.UnlockAll
}

// debugLockShard is debugLockAll for one shard lock.
func (c *Client) debugLockShard(m *sync.Mutex) (unlock func()) {
	if c.inExec {
		return func() {}
	}
	m.Lock()
	return m.Unlock
}

func debugSyntaxError(c *Client, args [][]byte) {
	c.addError("ERR unknown subcommand or wrong number of arguments for '" + truncArg(args[1]) + "'. Try DEBUG HELP.")
}

// DEBUG subcommand [arg ...]: SLEEP, SET-ACTIVE-EXPIRE, JMAP,
// CHANGE-REPL-ID, REPLICATE, QUICKLIST-PACKED-THRESHOLD, STRINGMATCH-LEN,
// LISTPACK, HELP, plus the hooks other parts register (RELOAD, OBJECT ...).
func cmdDebug(c *Client, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	if fn := c.srv.debugHooks[sub]; fn != nil {
		fn(c, args)
		return
	}
	if d, ok := debugSubcommands[sub]; ok && len(args) == d.args {
		d.fn(c, args)
		return
	}
	switch {
	case sub == "help" && len(args) == 2:
		c.addHelp("DEBUG", []string{
			"CHANGE-REPL-ID",
			"    Change the replication IDs of the instance.",
			"    Dangerous: should be used only for testing the replication subsystem.",
			"JMAP",
			"    Create a memory dump of the heap (no-op).",
			"LISTPACK <key>",
			"    Show low level info about the listpack encoding of <key>.",
			"PROTOCOL <type>",
			"    Reply with a test value of the specified type. <type> can be: string,",
			"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
			"    true, false.",
			"QUICKLIST-PACKED-THRESHOLD <size>",
			"    Sets the threshold for elements to be inserted as plain vs packed nodes",
			"REPLICATE <string>",
			"    Replicates the provided string to replicas, allowing data divergence.",
			"SET-ACTIVE-EXPIRE <0|1>",
			"    Setting it to 0 disables expiring keys in background when they are not",
			"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
			"    default.",
			"SLEEP <seconds>",
			"    Stop the server for <seconds>. Decimals allowed.",
			"STRINGMATCH-LEN",
			"    Run a fuzz tester against the stringmatchlen() function.",
		})
	case sub == "sleep" && len(args) == 3:
		f, ok := parseFloat(args[2])
		if !ok {
			c.addError(errNotFloat)
			return
		}
		// Like Redis, the whole server stops: every shard is locked and
		// no other client's command runs (debug_freeze.go).
		unlock := c.debugLockAll()
		c.srv.freeze(c, time.Duration(f*float64(time.Second)))
		unlock()
		c.addOK()
	case sub == "set-active-expire" && len(args) == 3:
		n, ok := parseInt(args[2])
		if !ok {
			c.addError(errNotInt)
			return
		}
		c.srv.activeExpire.Store(n != 0)
		c.addOK()
	case sub == "jmap" && len(args) == 2,
		sub == "change-repl-id" && len(args) == 2,
		sub == "quicklist-packed-threshold" && len(args) == 3:
		c.addOK()
	case sub == "stringmatch-len" && len(args) == 2:
		// A bounded run of the glob matcher on pathological input: it
		// must terminate without blowing the stack.
		globMatch(strings.Repeat("a*", 200)+"b", strings.Repeat("a", 300), false)
		c.addSimple("OK")
	case sub == "listpack" && len(args) == 3:
		c.addSimple("Listpack structure printed on stdout")
	case sub == "replicate" && len(args) >= 3:
		c.srv.debugReplicate(c.db, args[2:])
		c.addOK()
	default:
		debugSyntaxError(c, args)
	}
}

// debugReplicate is DEBUG REPLICATE <cmd> [arg ...]: it feeds cmd to the
// replication stream (the backlog and every replica) without running it
// and without writing it to the AOF, as Redis 7.0's debug.c calls
// replicationFeedSlaves alone; tests use it to make a replica diverge
// (integration/replication-4). The command goes in db, with a SELECT first
// when the stream is on another database (Redis sends it in whatever
// database the stream last selected); nothing is fed when no replica
// ever connected, as Redis keeps no backlog then either.
func (s *Server) debugReplicate(db int, cmd [][]byte) {
	s.propMu.RLock()
	defer s.propMu.RUnlock()
	for _, p := range s.propagators {
		if r, ok := p.(*replication); ok {
			r.Propagate(db, [][][]byte{cmd})
		}
	}
}
