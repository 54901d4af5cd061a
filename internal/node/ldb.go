package node

import (
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/script"
)

// The Lua debugger's glue (SCRIPT DEBUG YES|SYNC; the debugger itself is
// package script's Debugger). The EVAL that follows SCRIPT DEBUG runs
// under the debugger on the client's goroutine, outside the connection's
// read loop (pump hands it over as it does a blocking command), and
// reads the debugger's commands from the client's own reader: the
// client's next requests are the dialogue. The session ends with the
// EVAL: "<endsession>", the EVAL's reply, and the connection is closed
// after it, as in Redis.
//
// Both modes run the script as any script runs (the scripting gate held
// exclusively, its shard locks taken as its commands need them and kept
// to the end), so while the client is at the debugger's prompt other
// clients' commands on those shards, and those taking several shard
// locks, wait: the server is not blocked as a whole as redis-server is
// in sync mode, but nothing the script has touched can be seen or
// changed. A debugged script is not shown as running (no BUSY, SCRIPT
// KILL does not reach it): a human at the prompt is not a busy script.
//
// Sync mode (SCRIPT DEBUG SYNC) keeps the script's changes and
// propagates them as any script's. Forked mode (SCRIPT DEBUG YES), where
// redis-server forks and discards the child, applies and then rolls
// back: before a write command of the script runs, each key it names is
// saved (a copy of its entry, or its absence) the first time; at the
// end every saved key is put back, while the script's locks are still
// held, and nothing is propagated, so no other client ever sees a
// change and replicas and the AOF get nothing. A write command that may
// change keys it does not name in the current database (FLUSHDB,
// FLUSHALL, SWAPDB, MOVE, COPY ... DB, or any write without key
// metadata), and PUBLISH, whose message cannot be taken back, are
// refused in a forked session with errLdbForked.

// ldbSession is a client's debugger between SCRIPT DEBUG YES|SYNC and
// its EVAL.
type ldbSession struct {
	dbg  *script.Debugger
	sync bool
}

// errLdbForked refuses, in a forked debugging session, a command whose
// effects could not be rolled back.
const errLdbForked = "This command can not be rolled back: not allowed in a forked debugging session (use SCRIPT DEBUG SYNC)"

// ldbConn is the debugging client's connection (script.DebugConn).
type ldbConn struct{ c *Client }

// ReadCommand reads the client's next request from its own reader.
func (l ldbConn) ReadCommand() ([][]byte, error) {
	c := l.c
	if c.deadline {
		// The prompt waits for a human: no idle timeout.
		_ = c.conn.SetReadDeadline(time.Time{})
		c.deadline = false
	}
	return c.rd.ReadCommand()
}

// Write sends b now.
func (l ldbConn) Write(b []byte) error {
	c := l.c
	c.wmu.Lock()
	n, err := c.io.Write(b)
	c.wmu.Unlock()
	c.srv.stats.netOutput.Add(int64(n))
	return err
}

// SCRIPT DEBUG YES|SYNC|NO
func cmdScriptDebug(c *Client, args [][]byte) {
	if len(c.out) > 0 {
		c.addError("ERR SCRIPT DEBUG must be called outside a pipeline")
		return
	}
	switch strings.ToLower(string(args[2])) {
	case "no":
		c.ldb = nil
	case "yes", "sync":
		c.ldb = &ldbSession{dbg: script.NewDebugger(ldbConn{c}), sync: strings.EqualFold(string(args[2]), "sync")}
	default:
		c.addError("ERR Use SCRIPT DEBUG YES/SYNC/NO")
		return
	}
	c.addOK()
}

// debugging reports whether c's next EVAL runs under the debugger.
func (c *Client) debugging() bool { return c.ldb != nil && !c.inExec && !c.hasFlag(clientMaster) }

// evalDebug is EVAL under the debugger (Redis's
// evalGenericCommandWithDebugging).
func (c *Client) evalDebug(args [][]byte, ro bool) {
	ses := c.ldb
	c.ldb = nil
	d := ses.dbg
	// The dialogue reads from the reader that holds args: keep a copy.
	args = cloneArgs(args)
	// Replies queued before the EVAL go out before the debugger's.
	c.flush()
	c.setFlag(clientCloseAfterReply, true)
	mode := "forked (changes rolled back)"
	if ses.sync {
		mode = "sync"
	}
	c.srv.log.Warn("Lua debugging session started", "mode", mode, "addr", c.addr)
	defer c.srv.log.Warn("Lua debugging session ended", "addr", c.addr)
	d.Start(args[1])
	defer d.End()
	eng := c.srv.scriptEngine()
	numkeys, msg := script.ParseNumKeys(args, false)
	if msg != "" {
		c.addError(msg)
		return
	}
	sc, err := eng.Load(args[1])
	if err != nil {
		c.addError(err.Msg)
		return
	}
	if limit := c.srv.cfg.Int(config.DirLuaTimeLimit); limit > 0 {
		d.TimeLimit = time.Duration(limit) * time.Millisecond
	}
	rs := &runningScript{eval: true, name: sc.SHA, debug: true}
	if !ses.sync {
		rs.undo = script.NewUndo()
		// One script runs at a time (the gate), so one forked session.
		c.srv.watches.forked.Store(rs.undo)
		defer c.srv.watches.forked.Store(nil)
	}
	c.runScript(rs, sc.Flags, ro, args, numkeys, func(run *script.Run, out []byte) []byte {
		return eng.ExecDebug(sc, d, run, out)
	})
}

// ldbUndo is a forked session's record of the keys its writes may
// change (script.Undo).
type ldbUndo = script.Undo

// ldbSave records the keys cmd may change before it runs, with the
// script's locks held; it returns a refusal for a command whose effects
// could not be rolled back.
func ldbSave(u *ldbUndo, c *Client, cmd *command, args [][]byte) string {
	switch cmd.name {
	case "publish", "spublish":
		return errLdbForked
	}
	if cmd.flags&flagWrite == 0 {
		return ""
	}
	if cmd.flags&(flagLockAll|flagLockDB) != 0 || cmd.name == "move" || cmd.name == "swapdb" ||
		cmd.name == "copy" && copyToOtherDB(args) {
		return errLdbForked
	}
	keys := cmd.keyPositions(args)
	if len(keys) == 0 {
		return errLdbForked
	}
	db := c.srv.dbs[c.db]
	for _, p := range keys {
		if p < len(args) {
			u.Save(c.db, db, string(args[p]))
		}
	}
	return ""
}

// copyToOtherDB reports a COPY with a DB option.
func copyToOtherDB(args [][]byte) bool {
	for _, a := range args[3:] {
		if strings.EqualFold(string(a), "db") {
			return true
		}
	}
	return false
}

// ldbRestore puts every key the session saved back as it was; the
// script's locks are still held.
func ldbRestore(u *ldbUndo, s *Server) {
	defer s.watches.forked.Store(nil)
	u.Restore(s.dbs)
}
