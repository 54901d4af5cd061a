package node

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
)

// Exact Redis error texts used by the dispatcher and many handlers.
const (
	errSyntax        = "ERR syntax error"
	errWrongType     = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotInt        = "ERR value is not an integer or out of range"
	errNotFloat      = "ERR value is not a valid float"
	errNoAuth        = "NOAUTH Authentication required."
	errNoSuchKey     = "ERR no such key"
	errOOM           = "OOM command not allowed when used memory > 'maxmemory'."
	errReadOnly      = "READONLY You can't write against a read only replica."
	errLoading       = "LOADING Redis is loading the dataset in memory"
	errNoReplicas    = "NOREPLICAS Not enough good replicas to write."
	errExecAbort     = "EXECABORT Transaction discarded because of previous errors."
	errMasterDown    = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
	errOverflow      = "ERR increment or decrement would overflow"
	errInvalidExpire = "ERR invalid expire time in '%s' command"
	errDBIndex       = "ERR DB index is out of range"
)

func errWrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func errUnknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(truncArg(args[0]))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if b.Len() > 256 {
			break
		}
		b.WriteString("'")
		b.WriteString(truncArg(a))
		b.WriteString("' ")
	}
	return b.String()
}

func truncArg(a []byte) string {
	s := string(a)
	if len(s) > 128 {
		s = s[:128]
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")
}

// execute runs one request from the client's connection: command lookup
// and the checks of Redis's processCommand, MULTI queueing, then call.
func (c *Client) execute(args [][]byte) {
	c.executeCmd(args, c.srv.table.lookup(args[0]))
}

// executeCmd is execute with args[0] already looked up in the command
// table (nil: unknown command).
func (c *Client) executeCmd(args [][]byte, cmd *command) {
	s := c.srv
	if c.replyMode == replySkip {
		c.replyMode = replySkipNext
	}
	defer func() {
		// ASKING holds for the next command only (outside MULTI), as
		// Redis's resetClient clears CLIENT_ASKING.
		if cmd != nil && cmd.name != "asking" && !c.hasFlag(clientMulti) && c.hasFlag(clientAsking) {
			c.setFlag(clientAsking, false)
		}
		if c.replyMode == replySkipNext {
			c.replyMode = replyOn
		} else if c.replyMode == replySkip {
			c.replyMode = replySkipNext
		}
	}()
	if cmd == nil {
		c.flagTransaction()
		c.addError(errUnknownCommand(args))
		return
	}
	if cmd.subs != nil && len(args) >= 2 {
		if sub := cmd.subs[strings.ToLower(string(args[1]))]; sub != nil {
			cmd = sub
		}
	}
	if !arityOK(cmd, len(args)) {
		if cmd.parent != nil {
			c.reject(cmd, "ERR wrong number of arguments for '"+cmd.parent.name+"|"+cmd.name+"' command")
		} else {
			c.reject(cmd, errWrongArgs(cmd.name))
		}
		return
	}
	// Protected commands are refused before authentication, as in
	// Redis's processCommand.
	if cmd.flags&flagProtected != 0 {
		if msg := c.protectedRefusal(cmd); msg != "" {
			c.reject(cmd, msg)
			return
		}
	}
	if !c.authed.Load() && cmd.flags&flagNoAuth == 0 {
		c.reject(cmd, errNoAuth)
		return
	}
	if msg := s.busyReply(c, cmd); msg != "" {
		// A script runs past busy-reply-threshold.
		if cmd.name == "exec" && c.hasFlag(clientMulti) {
			c.discardTransaction()
			msg = "EXECABORT Transaction discarded because of: " + msg
		}
		c.reject(cmd, msg)
		return
	}
	if s.cluster != nil && c.redirected(cmd, args) {
		return
	}
	if s.cluster != nil && !c.hasFlag(clientMaster) && hasKeySpecs(cmd) {
		// Writes to slots a whole-slot migration is moving away wait
		// here during its pause (slotmig.go).
		done, msg := c.slotmigEnter(cmd, args)
		if msg != "" {
			if cmd.fullName() == "exec" {
				c.discardTransaction()
			} else {
				c.flagTransaction()
			}
			c.addError(msg)
			cmd.stats.rejected.Add(1)
			return
		}
		if done != nil {
			defer done()
		}
	}
	isWrite := cmd.flags&flagWrite != 0
	// CLIENT PAUSE holds commands here, before the checks below, so a
	// command released from a pause is checked against the state it finds
	// (a FAILOVER may have turned this node into a replica meanwhile).
	inflight, held := false, false
	if !c.hasFlag(clientMulti) || isTxControl(cmd) {
		inflight, held = s.enterWrite(c, cmd)
	}
	if inflight {
		defer s.inflightWrites.Add(-1)
	}
	if c.closed.Load() && !c.hasFlag(clientMaster) {
		// Killed while CLIENT PAUSE held the command. The master's
		// stream checks before each command instead (masterLink.apply):
		// a command it skipped here would still count in the offset.
		return
	}
	// A held command is redirected by the slot map it finds, as Redis
	// runs processCommand again for a client a pause postponed: a manual
	// failover pauses the master and then makes it a replica, and the
	// writes it held go to the new master (MOVED), not READONLY.
	if held && s.cluster != nil && c.redirected(cmd, args) {
		return
	}
	if isWrite {
		if s.hot().maxmemory > 0 && cmd.flags&flagDenyOOM != 0 && !c.hasFlag(clientMaster) {
			if !s.freeMemoryIfNeeded() {
				c.reject(cmd, errOOM)
				return
			}
		}
	}
	if isWrite && !c.hasFlag(clientMaster) {
		if msg := s.writeRefused(); msg != "" {
			c.reject(cmd, msg)
			return
		}
	}
	if c.proto < 3 && c.hasFlag(clientPubSub) && !pubsubAllowed(cmd) {
		c.reject(cmd, "ERR Can't execute '"+cmd.fullName()+"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		return
	}
	if s.loading.Load() && !s.loadHeld.Load() && cmd.flags&flagLoading == 0 {
		c.reject(cmd, errLoading)
		return
	}
	if msg := s.staleRefused(cmd); msg != "" && !c.hasFlag(clientMaster) {
		c.reject(cmd, msg)
		return
	}
	if c.hasFlag(clientMulti) && !isTxControl(cmd) {
		if cmd.flags&flagNoMulti != 0 {
			c.reject(cmd, "ERR Command not allowed inside a transaction")
			return
		}
		q := make([][]byte, len(args))
		for i, a := range args {
			q[i] = bytes.Clone(a)
		}
		c.multi = append(c.multi, q)
		c.addSimple("QUEUED")
		return
	}
	c.call(cmd, args, false)
}

// redirected refuses cmd with MOVED, ASK, CROSSSLOT or CLUSTERDOWN when
// cluster mode routes it elsewhere (Redis's getNodeByQuery step of
// processCommand) and reports whether it did.
func (c *Client) redirected(cmd *command, args [][]byte) bool {
	if c.srv.cluster == nil || c.hasFlag(clientMaster) || !hasKeySpecs(cmd) {
		return false
	}
	msg := c.clusterRedirect(cmd, args)
	if msg == "" {
		return false
	}
	if cmd.fullName() == "exec" {
		c.discardTransaction()
	} else {
		c.flagTransaction()
	}
	c.addError(msg)
	cmd.stats.rejected.Add(1)
	return true
}

func arityOK(cmd *command, n int) bool {
	if cmd.arity > 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}

func isTxControl(cmd *command) bool {
	switch cmd.fullName() {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

func pubsubAllowed(cmd *command) bool {
	switch cmd.fullName() {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe", "ping", "quit", "reset":
		return true
	}
	return false
}

// reject refuses cmd before it runs, as Redis's rejectCommand: the error
// reply, a failed MULTI block, and the command's rejected_calls.
func (c *Client) reject(cmd *command, msg string) {
	c.flagTransaction()
	c.addError(msg)
	cmd.stats.rejected.Add(1)
}

// flagTransaction marks a MULTI block as failed so EXEC aborts.
func (c *Client) flagTransaction() {
	if c.hasFlag(clientMulti) {
		c.setFlag(clientDirtyExec, true)
	}
}

// call runs a command with its keyspace locks and does the bookkeeping
// that follows every command: propagation, statistics, slowlog, MONITOR.
// locked is true inside EXEC, whose locks are already held.
func (c *Client) call(cmd *command, args [][]byte, locked bool) {
	s := c.srv
	var start time.Duration
	c.now, start = c.commandStart() // perf_hot.go: at most one clock read
	c.cmd = cmd
	c.dirty = 0
	c.propArgs = nil
	if !locked {
		c.sequence(cmd) // sequence.go: arrival order across connections
		c.lockFor(cmd, args)
		if (s.keyGuards.n.Load() != 0 || c.slotRoute != nil) && cmd.name != "exec" {
			msg := c.settleLocked(cmd, args, func() chan struct{} { return c.guardOf(cmd, args) }, func() { c.lockFor(cmd, args) })
			if msg != "" {
				// The key left, or the slot did, between the slot check and
				// the locks (migrate_guard.go).
				c.unlockHeld()
				c.addError(msg)
				cmd.stats.rejected.Add(1)
				return
			}
		}
	}
	if cmd.flags&flagWrite != 0 && s.snapOpen() {
		c.snapGuardKeys(cmd, args) // an open snapshot copies what it changes first
	}
	errsBefore, nestedBefore := c.errReplies, c.nestedErrs
	// The write's reply and stream offset for min-replicas-ack
	// (replication_ack.go).
	outStart, ackBefore := len(c.out), c.ack.off
	c.statsBefore(cmd) // perf_hot.go
	masterView := s.replicaMode.Load() && c.hasFlag(clientMaster)
	if masterView {
		c.setMasterAccess(cmd, args, true) // replication_expire.go
	}
	cmd.fn(c, args)
	if masterView {
		c.setMasterAccess(cmd, args, false)
	} else if c.dirty > 0 && cmd.flags&flagWrite != 0 && s.replicaMode.Load() {
		c.rememberLocalExpires(cmd, args)
	}
	if c.dirty > 0 && (cmd.flags&(flagWrite|flagMayReplicate) != 0 || c.propArgs != nil) && cmd.flags&flagNoPropagate == 0 {
		s.dirty.Add(int64(c.dirty))
		prop := c.propArgs
		if prop == nil {
			c.propOne[0] = args // no allocation; propagators copy
			prop = c.propOne[:]
		}
		if c.inExec {
			for _, p := range prop {
				c.execProp = append(c.execProp, cloneArgs(p))
			}
		} else if s.hasPropagators() {
			c.propagateWrite(c.db, prop)
		}
	}
	c.propOne[0] = nil
	if !locked {
		c.noteAckSeg(outStart, ackBefore) // replication_ack.go
	}
	if !locked {
		c.unlockHeld()
		if len(c.readyKeys) > 0 || s.readyPending() {
			s.handleReadyKeys(c)
		}
	}
	// MONITOR shows a command once it has run, as Redis 7 does (a
	// command refused before running is not shown).
	if s.monitor.active() && cmd.flags&flagSkipMonitor == 0 && cmd.flags&flagAdmin == 0 {
		s.monitor.feed(c, args)
	}
	dur := c.commandEnd() - start
	// A command failed if it replied an error of its own: EXEC does not
	// fail for its queued commands' errors (counted on those commands).
	errs := c.errReplies - errsBefore
	if locked {
		c.nestedErrs += errs
	} else {
		errs -= c.nestedErrs - nestedBefore
	}
	c.countCall(cmd, dur.Microseconds(), errs > 0) // perf_hot.go
	s.slowlog.maybeAdd(c, args, dur)
	if c.lastCmdRef != cmd {
		// CLIENT LIST's cmd= only changes with the command: no lock for a
		// run of the same command.
		c.lastCmdRef = cmd
		c.infoMu.Lock()
		c.lastCmd = cmd.fullName()
		c.infoMu.Unlock()
	}
}

func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = bytes.Clone(a)
	}
	return out
}

// lockFor takes the shard locks a command needs, from its key metadata.
func (c *Client) lockFor(cmd *command, args [][]byte) {
	if cmd.flags&flagLockScript != 0 {
		return // the script takes its locks (commands_scripting.go)
	}
	if cmd.flags&flagLockAll != 0 {
		c.lockEverything()
		return
	}
	if cmd.flags&flagLockDB != 0 {
		db := c.srv.dbs[c.db]
		for i := range db.Shards {
			c.held = append(c.held, &db.Shards[i].Mu)
		}
		for _, m := range c.held {
			m.Lock()
		}
		if cmd.flags&flagWrite != 0 {
			c.srv.snapGuard(c.held)
		}
		return
	}
	keys := c.lockBuf[:0]
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				keys = append(keys, keyspace.ShardRef{DB: c.db, Shard: keyspace.ShardOf(bstr(args[p]))})
			}
		}
	} else if cmd.first > 0 {
		last := cmd.last
		if last < 0 {
			last = len(args) + last
		}
		last = min(last, len(args)-1)
		if cmd.first == last {
			// One key (GET, SET, INCR, LPUSH...): no sorting, no buffer.
			m := &c.srv.dbs[c.db].KeyShard(bstr(args[last])).Mu
			m.Lock()
			c.held = append(c.held, m)
			return
		}
		step := max(cmd.step, 1)
		for i := cmd.first; i <= last; i += step {
			keys = append(keys, keyspace.ShardRef{DB: c.db, Shard: keyspace.ShardOf(bstr(args[i]))})
		}
	}
	if len(keys) == 0 {
		return
	}
	c.lockKeys(keys)
	if cap(keys) <= 1024 {
		c.lockBuf = keys[:0]
	}
}

// lockKeys locks the given shards in (db, shard) order, without duplicates.
func (c *Client) lockKeys(keys []keyspace.ShardRef) {
	c.held = keyspace.LockShards(c.srv.dbs, keyspace.SortShardRefs(keys), c.held)
}

func (c *Client) lockEverything() {
	// Takers of more than one database's locks pass the scripting gate
	// first (commands_scripting.go).
	c.srv.scripting.gate.Lock()
	c.gated = true
	for _, db := range c.srv.dbs {
		c.held = db.LockAllInto(c.held)
	}
	c.srv.snapGuard(c.held)
}

func (c *Client) unlockHeld() {
	keyspace.UnlockShards(c.held)
	c.held = c.held[:0]
	if c.gated {
		c.gated = false
		c.srv.scripting.gate.Unlock()
	}
}

// relockHeld re-takes locks released by a blocking command while it waited.
func (c *Client) relockHeld(ms []*sync.Mutex) {
	for _, m := range ms {
		m.Lock()
	}
	c.held = append(c.held[:0], ms...)
	c.srv.snapGuard(c.held)
}

// releaseForWait releases the held locks and returns them for relockHeld.
func (c *Client) releaseForWait() []*sync.Mutex {
	ms := slices.Clone(c.held)
	c.unlockHeld()
	return ms
}

// propagateAs replaces what call propagates for this command (for example
// SET ... EX as SET ... PXAT, SPOP as SREM). Each element is one command.
func (c *Client) propagateAs(cmds ...[][]byte) {
	c.propArgs = append(c.propArgs, cmds...)
	if c.dirty == 0 {
		c.dirty = 1
	}
}

// markDirty counts n changes to the keyspace by the running command.
func (c *Client) markDirty(n int) { c.dirty += n }

// curDB is the client's selected database.
func (c *Client) curDB() *keyspace.DB { return c.srv.dbs[c.db] }

// writeRefused returns the error that refuses a write on this node now, if
// any: read-only replica, min-replicas.
func (s *Server) writeRefused() string {
	if s.replicaMode.Load() && s.hot().replicaReadOnly {
		return errReadOnly
	}
	if s.minReplicasRefuse != nil && s.minReplicasRefuse() {
		return errNoReplicas
	}
	return s.persistRefused()
}

// staleRefused refuses commands while the master link is down and
// replica-serve-stale-data is off.
func (s *Server) staleRefused(cmd *command) string {
	if s.replicaMode.Load() && !s.cfg.Bool(DirReplicaServeStaleData) && cmd.flags&flagStale == 0 && s.masterLinkUp != nil && !s.masterLinkUp() {
		return errMasterDown
	}
	return ""
}

// keysOfMulti returns the shard locks an EXEC needs, or all=true when a
// queued command has no precise key metadata.
func (c *Client) keysOfMulti() (keys []keyspace.ShardRef, all bool) {
	for _, q := range c.multi {
		cmd := c.srv.table.lookup(q[0])
		if cmd == nil {
			continue
		}
		if cmd.subs != nil && len(q) >= 2 {
			if sub := cmd.subs[strings.ToLower(string(q[1]))]; sub != nil {
				cmd = sub
			}
		}
		// DEBUG subcommands in a block run with every lock held (see
		// RegisterDebug): DEBUG RELOAD replaces the whole dataset.
		if cmd.flags&(flagLockAll|flagLockDB|flagLockScript) != 0 || cmd.fullName() == "select" || cmd.name == "debug" {
			return nil, true
		}
		for _, p := range cmd.keyPositions(q) {
			if p < len(q) {
				keys = append(keys, keyspace.ShardRef{DB: c.db, Shard: keyspace.ShardOf(bstr(q[p]))})
			}
		}
	}
	return keys, false
}

// parseInt parses a Redis integer argument.
func parseInt(b []byte) (int64, bool) { return value.ParseInt(b) }

// parseFloat parses a Redis float argument (inf, -inf allowed; NaN not).
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5000 {
		return 0, false
	}
	if b[0] == ' ' || b[len(b)-1] == ' ' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, false
	}
	if f != f {
		return 0, false
	}
	return f, true
}

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }
