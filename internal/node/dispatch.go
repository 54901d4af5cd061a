package node

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/node/acl"
	"github.com/shardis/shardis/internal/node/config"
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
// table (nil: unknown command). It runs the checks of dispatchChecks in
// order; the first that refuses or takes the request (a MULTI queues it)
// ends it, and a request that passes them all is called.
func (c *Client) executeCmd(args [][]byte, cmd *command) { c.executeKept(args, cmd, 0) }

// executeKept is executeCmd for a request whose arguments marked in keep
// may be kept after it (request.keep).
func (c *Client) executeKept(args [][]byte, cmd *command, keep argMask) {
	if c.replyMode == replySkip {
		c.replyMode = replySkipNext
	}
	r := &c.req
	*r = request{cmd: cmd, args: args, keep: keep}
	defer c.endRequest(r)
	if !runDispatchChecks(c, r) {
		return
	}
	c.call(r.cmd, args, false)
}

// runDispatchChecks runs dispatchChecks in their order, as direct calls
// the compiler can inline: a loop over the table pays an indirect call
// per check, about 300 instructions a request (callgrind, INCR and SET
// alike). TestDispatchChecksInOrder keeps this chain and the table equal.
func runDispatchChecks(c *Client, r *request) bool {
	return checkCommand(c, r) && checkArity(c, r) && checkProtected(c, r) && checkAuth(c, r) &&
		checkACL(c, r) && checkBusyScript(c, r) && checkClusterRedirect(c, r) && checkSlotMigration(c, r) &&
		checkClientPause(c, r) && checkKilledWhileHeld(c, r) && checkRedirectAfterPause(c, r) &&
		checkScriptFlags(c, r) && checkOOM(c, r) && checkWriteRefused(c, r) && checkPubSubContext(c, r) && checkLoading(c, r) &&
		checkStaleData(c, r) && checkMultiQueue(c, r)
}

// request is one request on its way through the dispatch checks. It lives
// in the Client (c.req) so that the checks, called through a table, do not
// move it to the heap.
type request struct {
	cmd  *command // nil until the command check found it; then the subcommand
	args [][]byte
	// keep marks the arguments the connection's reader never writes again
	// (resp.Reader.ArgRetainable): a handler may keep them instead of
	// copying (keepArg). Zero for every request not read by pump.
	keep argMask
	// held: CLIENT PAUSE (or DEBUG SLEEP) held the request before it ran.
	held bool
	// inflight: the request counts in inflightWrites until it ends.
	inflight bool
	// slotmigDone ends a write's stay in a slot migration's gate.
	slotmigDone func()
}

// endRequest is what follows every request, refused or run: the releases
// the checks took, and the per-command client state Redis's resetClient
// clears.
func (c *Client) endRequest(r *request) {
	if r.slotmigDone != nil {
		r.slotmigDone()
	}
	if r.inflight {
		c.srv.inflightWrites.Add(-1)
	}
	// ASKING holds for the next command only (outside MULTI), as
	// Redis's resetClient clears CLIENT_ASKING.
	if r.cmd != nil && r.cmd.name != "asking" && !c.hasFlag(clientMulti) && c.hasFlag(clientAsking) {
		c.setFlag(clientAsking, false)
	}
	if c.replyMode == replySkipNext {
		c.replyMode = replyOn
	} else if c.replyMode == replySkip {
		c.replyMode = replySkipNext
	}
	*r = request{}
}

// dispatchCheck is one step of processCommand: run returns false when the
// request ends there (refused with a reply, queued, or dropped).
type dispatchCheck struct {
	name string
	run  func(c *Client, r *request) bool
}

// dispatchChecks are the checks every request passes before its handler,
// in the order they run. It follows Redis's processCommand where it can:
// lookup and arity, protected commands, authentication, ACL permissions,
// the cluster redirect, then the refusals that depend on the node's state.
// Two places differ, on purpose: a script past busy-reply-threshold is
// answered BUSY before the cluster redirect (a busy node answers nothing
// else), and CLIENT PAUSE holds a request before the state checks, so that
// a released request is checked against the state it finds (Redis re-runs
// processCommand for a postponed client, which has the same effect).
var dispatchChecks = []dispatchCheck{
	{"command", checkCommand},                  // unknown command, subcommand lookup
	{"arity", checkArity},                      // wrong number of arguments
	{"protected", checkProtected},              // enable-debug-command / enable-module-command
	{"auth", checkAuth},                        // NOAUTH
	{"acl", checkACL},                          // NOPERM (users and their rules)
	{"busy-script", checkBusyScript},           // BUSY
	{"cluster-redirect", checkClusterRedirect}, // MOVED/ASK/CROSSSLOT/TRYAGAIN/CLUSTERDOWN
	{"slot-migration", checkSlotMigration},     // writes to slots a migration is moving
	{"client-pause", checkClientPause},         // CLIENT PAUSE, DEBUG SLEEP; counts in-flight writes
	{"killed-while-held", checkKilledWhileHeld},
	{"cluster-redirect-after-pause", checkRedirectAfterPause},
	{"script-flags", checkScriptFlags},     // OOM, READONLY ..., MASTERDOWN by a script's declared flags
	{"oom", checkOOM},                      // OOM (maxmemory)
	{"write-refused", checkWriteRefused},   // READONLY, NOREPLICAS, MISCONF
	{"pubsub-context", checkPubSubContext}, // RESP2 subscriber context
	{"loading", checkLoading},              // LOADING
	{"stale-data", checkStaleData},         // MASTERDOWN
	{"multi-queue", checkMultiQueue},       // QUEUED
}

// The checks are written as a condition under which they pass at once,
// small enough for the compiler to inline into runDispatchChecks, and a
// function for the rest, so that a request that passes them all (nearly
// every one) pays a few loads and compares per check, not a call.

// checkCommand refuses an unknown command and resolves a subcommand.
func checkCommand(c *Client, r *request) bool {
	return (r.cmd != nil && r.cmd.subs == nil) || resolveCommand(c, r)
}

func resolveCommand(c *Client, r *request) bool {
	if r.cmd == nil {
		c.flagTransaction()
		c.addError(errUnknownCommand(r.args))
		return false
	}
	if r.cmd.subs != nil && len(r.args) >= 2 {
		if sub := r.cmd.subs[strings.ToLower(string(r.args[1]))]; sub != nil {
			r.cmd = sub
		}
	}
	return true
}

// checkArity refuses a wrong number of arguments.
func checkArity(c *Client, r *request) bool {
	return len(r.args) == r.cmd.arity || refuseArity(c, r)
}

func refuseArity(c *Client, r *request) bool {
	if arityOK(r.cmd, len(r.args)) {
		return true
	}
	if r.cmd.parent != nil {
		c.reject(r.cmd, "ERR wrong number of arguments for '"+r.cmd.parent.name+"|"+r.cmd.name+"' command")
	} else {
		c.reject(r.cmd, errWrongArgs(r.cmd.name))
	}
	return false
}

// checkProtected refuses protected commands (DEBUG, MODULE LOAD ...)
// before authentication, as Redis's processCommand does.
func checkProtected(c *Client, r *request) bool {
	return r.cmd.flags&flagProtected == 0 || refuseProtected(c, r)
}

func refuseProtected(c *Client, r *request) bool { return c.refuseIf(r.cmd, c.protectedRefusal(r.cmd)) }

// refuseIf rejects cmd with msg unless msg is "", and reports whether the
// request passes.
func (c *Client) refuseIf(cmd *command, msg string) bool {
	if msg == "" {
		return true
	}
	c.reject(cmd, msg)
	return false
}

// checkAuth refuses an unauthenticated client all but the no-auth commands.
func checkAuth(c *Client, r *request) bool {
	return c.authed.Load() || refuseUnauthed(c, r)
}

func refuseUnauthed(c *Client, r *request) bool {
	return r.cmd.flags&flagNoAuth != 0 || !c.srv.acl.AuthRequired.Load() || c.refuseIf(r.cmd, errNoAuth)
}

// checkACL refuses a command the client's ACL user may not run, or whose
// keys or channels it may not touch (NOPERM), and logs it in the ACL LOG.
func checkACL(c *Client, r *request) bool {
	return (c.aclFree && c.aclGen == c.srv.acl.Gen.Load()) || checkACLRules(c, r)
}

func checkACLRules(c *Client, r *request) bool {
	res, pos := c.aclCheck(r.cmd, r.args)
	if res == acl.OK {
		return true
	}
	c.aclLogDenied(res, c.aclLogContext(), pos, r.cmd, r.args)
	c.reject(r.cmd, acl.NoPermError(res, r.cmd.fullName()))
	return false
}

// checkBusyScript refuses commands while a script runs past
// busy-reply-threshold.
func checkBusyScript(c *Client, r *request) bool {
	return c.srv.scripting.running.Load() == nil || refuseBusy(c, r)
}

func refuseBusy(c *Client, r *request) bool {
	return c.refuseIf(r.cmd, c.srv.busyReply(c, r.cmd)) // EXECABORT for EXEC
}

// checkClusterRedirect sends a request for keys served elsewhere to
// their node (cluster mode only).
func checkClusterRedirect(c *Client, r *request) bool {
	return c.srv.cluster == nil || !c.redirected(r.cmd, r.args)
}

// checkSlotMigration holds writes to slots a whole-slot migration is
// moving away during its pause (slotmig.go).
func checkSlotMigration(c *Client, r *request) bool {
	return c.srv.cluster == nil || enterSlotMigration(c, r)
}

func enterSlotMigration(c *Client, r *request) bool {
	if c.hasFlag(clientMaster) || !hasKeySpecs(r.cmd) {
		return true
	}
	done, msg := c.slotmigEnter(r.cmd, r.args)
	if msg != "" {
		if r.cmd.fullName() == "exec" {
			c.discardTransaction()
		} else {
			c.flagTransaction()
		}
		c.addError(msg)
		r.cmd.stats.rejected.Add(1)
		return false
	}
	r.slotmigDone = done
	return true
}

// checkClientPause holds the request while CLIENT PAUSE (or DEBUG SLEEP)
// lasts, and counts a write in flight until the request ends.
func checkClientPause(c *Client, r *request) bool {
	if !c.hasFlag(clientMulti) || isTxControl(r.cmd) {
		r.inflight, r.held = c.srv.enterWrite(c, r.cmd, r.args)
	}
	return true
}

// checkKilledWhileHeld drops a request whose client was killed while the
// pause held it. The master's stream checks before each command instead
// (masterLink.apply): a command it skipped here would still count in the
// offset.
func checkKilledWhileHeld(c *Client, r *request) bool {
	return !c.closed.Load() || c.hasFlag(clientMaster)
}

// checkRedirectAfterPause redirects a held request by the slot map it
// finds, as Redis runs processCommand again for a client a pause
// postponed: a manual failover pauses the master and then makes it a
// replica, and the writes it held go to the new master (MOVED), not
// READONLY.
func checkRedirectAfterPause(c *Client, r *request) bool {
	return !r.held || c.srv.cluster == nil || !c.redirected(r.cmd, r.args)
}

// checkScriptFlags applies to EVAL and FCALL, and to an EXEC of queued
// ones, the state checks that follow a command's write, deny-oom and
// stale flags, with the flags the script or function declares
// (commands_scripting.go).
func checkScriptFlags(c *Client, r *request) bool {
	return r.cmd.flags&flagLockScript == 0 && (len(c.multi) == 0 || r.cmd.name != "exec") || c.scriptFlagChecks(r)
}

// checkOOM refuses a deny-oom write when memory cannot be freed below
// maxmemory.
func checkOOM(c *Client, r *request) bool {
	return r.cmd.flags&(flagWrite|flagDenyOOM) != flagWrite|flagDenyOOM || checkFreeMemory(c, r)
}

func checkFreeMemory(c *Client, r *request) bool {
	return c.hasFlag(clientMaster) || c.srv.hot().maxmemory <= 0 || c.srv.freeMemoryIfNeeded() || c.refuseIf(r.cmd, errOOM)
}

// checkWriteRefused refuses writes on a read-only replica, without enough
// good replicas, or after a failed background save (writeRefused).
func checkWriteRefused(c *Client, r *request) bool {
	return r.cmd.flags&flagWrite == 0 || refuseWrite(c, r)
}

func refuseWrite(c *Client, r *request) bool {
	return c.hasFlag(clientMaster) || c.refuseIf(r.cmd, c.srv.writeRefused())
}

// checkPubSubContext allows a RESP2 subscriber only the subscription
// commands, PING, QUIT and RESET.
func checkPubSubContext(c *Client, r *request) bool {
	return c.proto >= 3 || checkSubscriberCommand(c, r)
}

func checkSubscriberCommand(c *Client, r *request) bool {
	if c.hasFlag(clientPubSub) && !pubsubAllowed(r.cmd) {
		c.reject(r.cmd, "ERR Can't execute '"+r.cmd.fullName()+"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		return false
	}
	return true
}

// checkLoading refuses commands without the loading flag while the
// dataset loads.
func checkLoading(c *Client, r *request) bool {
	return !c.srv.loading.Load() || refuseLoading(c, r)
}

func refuseLoading(c *Client, r *request) bool {
	return c.srv.loadHeld.Load() || r.cmd.flags&flagLoading != 0 || c.refuseIf(r.cmd, errLoading)
}

// checkStaleData refuses commands on a replica whose master link is down
// when replica-serve-stale-data is off.
func checkStaleData(c *Client, r *request) bool {
	return !c.srv.replicaMode.Load() || refuseStale(c, r)
}

func refuseStale(c *Client, r *request) bool {
	return c.hasFlag(clientMaster) || c.refuseIf(r.cmd, c.srv.staleRefused(r.cmd))
}

// checkMultiQueue queues a command inside MULTI instead of running it.
func checkMultiQueue(c *Client, r *request) bool {
	return !c.hasFlag(clientMulti) || queueInMulti(c, r)
}

func queueInMulti(c *Client, r *request) bool {
	if isTxControl(r.cmd) {
		return true
	}
	if r.cmd.flags&flagNoMulti != 0 {
		c.reject(r.cmd, "ERR Command not allowed inside a transaction")
		return false
	}
	q := make([][]byte, len(r.args))
	for i, a := range r.args {
		q[i] = bytes.Clone(a)
	}
	c.multi = append(c.multi, q)
	c.addSimple("QUEUED")
	return false
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
// reply, a failed MULTI block, and the command's rejected_calls. A refused
// EXEC discards the transaction and answers EXECABORT with the reason
// (execCommandAbort), whether or not a MULTI was open.
func (c *Client) reject(cmd *command, msg string) {
	c.flagTransaction()
	if cmd.name == "exec" && cmd.parent == nil && !strings.HasPrefix(msg, "EXECABORT") {
		c.discardTransaction()
		msg = "EXECABORT Transaction discarded because of: " + strings.TrimPrefix(msg, "ERR ")
	}
	c.addError(msg)
	cmd.stats.rejected.Add(1)
}

// flagTransaction marks a MULTI block as failed so EXEC aborts.
func (c *Client) flagTransaction() {
	if c.hasFlag(clientMulti) {
		c.setFlag(clientDirtyExec, true)
	}
}

// selectArgs is SELECT db, for a propagated block that changes database.
func selectArgs(db int) [][]byte {
	return [][]byte{[]byte("SELECT"), []byte(strconv.Itoa(db))}
}

// endExecProp closes a propagated block that started in database db:
// if its commands moved to another database, a final SELECT brings the
// stream back to db, which is where the propagator believes it is after
// the block.
func (c *Client) endExecProp(db int) {
	if len(c.execProp) > 0 && c.execDB != db {
		c.execProp = append(c.execProp, selectArgs(db))
	}
	c.execDB = db
}

// call runs a command with its keyspace locks and does the bookkeeping
// that follows every command: propagation, statistics, slowlog, MONITOR.
// locked is true inside EXEC, whose locks are already held.
func (c *Client) call(cmd *command, args [][]byte, locked bool) {
	s := c.srv
	var start time.Duration
	if c.callDepth == 0 {
		c.now, start = c.commandStart() // perf_hot.go: at most one clock read
	} else {
		start = time.Since(procStart) // inside EXEC or a script: the outer command's now holds
	}
	c.callDepth++
	c.cmd = cmd
	c.dirty = 0
	c.propArgs = nil
	if !locked {
		if cmd.prelock != nil {
			c.prepared = cmd.prelock(c, args)
		}
		c.sequence(cmd, args) // sequence.go: arrival order across connections
		c.lockFor(cmd, args)
		if (s.keyGuards.Count() != 0 || c.slotRoute != nil) && cmd.name != "exec" {
			msg := c.settleLocked(cmd, args, func() chan struct{} { return c.guardOf(cmd, args) }, func() { c.lockFor(cmd, args) })
			if msg != "" {
				// The key left, or the slot did, between the slot check and
				// the locks (migrate_guard.go).
				c.unlockHeld()
				c.prepared = nil
				c.addError(msg)
				cmd.stats.rejected.Add(1)
				c.callDepth--
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
	c.prepared = nil
	c.callDepth--
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
			if c.db != c.execDB {
				c.execProp = append(c.execProp, selectArgs(c.db))
				c.execDB = c.db
			}
			for _, p := range prop {
				c.execProp = append(c.execProp, cloneArgs(p))
			}
		} else if s.hasPropagators() {
			c.propagateWrite(c.db, prop)
		}
	}
	c.propOne[0] = nil
	c.propArgs = nil // propagated: keep no argument alive (a RESTORE's payload)
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
	s.slowlogAdd(c, args, dur)
	if c.lastCmdRef != cmd {
		// CLIENT LIST's cmd= only changes with the command: no lock for a
		// run of the same command.
		c.lastCmdRef = cmd
		c.infoMu.Lock()
		c.lastCmd = cmd.fullName()
		c.infoMu.Unlock()
	}
}

// argMask marks arguments by position, the first 64.
type argMask uint64

// has reports whether argument i is marked.
func (m argMask) has(i int) bool { return i < 64 && m&(1<<i) != 0 }

// keepArg reports whether argument i of the request being called may be
// kept after it (request.keep), and if so notes that it is kept, so that
// the reader does not reuse its buffer (pump, resp.Reader.Recycle). For a
// prelock step, where the request is c.req.
func (c *Client) keepArg(i int) bool {
	if !c.req.keep.has(i) {
		return false
	}
	c.argsKept = true
	return true
}

// keptArgs is the mask of the arguments of the request the connection's
// reader returned last that it never writes again.
func (c *Client) keptArgs(n int) argMask {
	if !c.rd.HasRetainable() {
		return 0
	}
	var m argMask
	for i := 0; i < n && i < 64; i++ {
		if c.rd.ArgRetainable(i) {
			m |= 1 << i
		}
	}
	return m
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
		c.gateShared()
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
// A taker of several shard locks, and EXEC (whose commands may lock more
// shards as they run), holds the scripting gate shared first.
func (c *Client) lockKeys(keys []keyspace.ShardRef) {
	refs := keyspace.SortShardRefs(keys)
	if len(refs) > 1 || c.cmd != nil && c.cmd.name == "exec" {
		c.gateShared()
	}
	c.held = keyspace.LockShards(c.srv.dbs, refs, c.held)
}

// gateShared takes the scripting gate shared, before any shard lock: a
// script, which holds it exclusively, then never waits for a shard lock
// held by someone waiting for one of its own (commands_scripting.go).
func (c *Client) gateShared() {
	// A script's client holds the gate exclusively already (runScript).
	if !c.gated && !c.gatedRead && !c.inScript {
		c.srv.scripting.gate.RLock()
		c.gatedRead = true
	}
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
	if c.gatedRead {
		c.gatedRead = false
		c.srv.scripting.gate.RUnlock()
	}
}

// relockHeld re-takes locks released by a blocking command while it waited.
func (c *Client) relockHeld(ms []*sync.Mutex) {
	if len(ms) > 1 {
		c.gateShared()
	}
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
		if e := s.fenceRefusal(); e != "" {
			return e
		}
		return errNoReplicas
	}
	return s.persistRefused()
}

// staleRefused refuses commands while the master link is down and
// replica-serve-stale-data is off.
func (s *Server) staleRefused(cmd *command) string {
	if s.replicaMode.Load() && !s.cfg.Bool(config.DirReplicaServeStaleData) && cmd.flags&flagStale == 0 && s.masterLinkUp != nil && !s.masterLinkUp() {
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
func parseFloat(b []byte) (float64, bool) { return value.ParseFloat(b) }

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }
