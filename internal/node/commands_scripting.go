package node

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/script"
)

// Scripting errors with Redis's texts (package script's).
const (
	errNoScript   = script.ErrNoScript
	errBusyEval   = script.ErrBusyEval
	errNotBusy    = script.ErrNotBusy
	errUnkillable = script.ErrUnkillable
)

// scripting is a server's scripting state.
//
// Atomicity: a script runs holding gate exclusively and takes, before each
// of its commands runs, the shard locks that command needs (its keys'
// shards, declared or not; every shard of its database for a command
// that sees the whole database or has no key metadata; every shard of
// every database for one that locks everything), keeping all of them
// until it ends. Every other taker of more than one shard lock at a time
// (a multi-key command, EXEC, a command locking a database, serving a
// blocked client on several keys) holds gate shared before its first
// shard lock, and takers of locks across databases (Server.LockAll,
// lockEverything) hold it exclusively. So while a script runs, every
// other holder of a shard lock holds exactly one and waits for no other:
// the script's lock waits always end (no deadlock, whatever the order it
// meets its keys in), and, as no lock is released before the end (two-
// phase locking), no other client sees a state between two commands of a
// script, declared keys or not.
type scripting struct {
	once sync.Once
	eng  *script.Engine
	// gate is held exclusively by a running script and by the takers of
	// every shard lock, shared by the other takers of several shard locks.
	gate sync.RWMutex
	// running is the script in progress, nil when none (BUSY, KILL,
	// FUNCTION STATS).
	running atomic.Pointer[runningScript]
	// kill is the context scripts run under until a kill fires it (then
	// the next script gets a new one); used under gate.
	kill *script.KillSwitch
	// host, run and out serve every script run that takes gate itself
	// (all but those inside EXEC), reused from run to run under gate.
	host scriptHost
	run  script.Run
	out  []byte
}

// runningScript is the script a client is running.
type runningScript struct {
	c     *Client
	start time.Time
	// eval is true for EVAL/EVALSHA, false for FCALL.
	eval bool
	// name is the function's name for FUNCTION STATS.
	name string
	args [][]byte
	// wrote is set once the script ran a write command (UNKILLABLE).
	wrote atomic.Bool
	// fromMaster: run from the master's stream (never killed).
	fromMaster bool
	kill       *script.KillSwitch
	// debug: an EVAL under the Lua debugger (ldb.go), not shown as
	// running and not killable; undo, in a forked session, records what
	// to roll back.
	debug bool
	undo  *ldbUndo
}

func (s *Server) scriptEngine() *script.Engine {
	sc := &s.scripting
	sc.once.Do(func() {
		sc.eng = script.NewEngine()
		var seed [4]byte
		_, _ = rand.Read(seed[:])
		sc.eng.SeedRandom(int32(binary.LittleEndian.Uint32(seed[:])))
		sc.eng.Log = func(level int, msg string) { s.log.Log(context.Background(), script.SlogLevel(level), msg) }
	})
	return sc.eng
}

// busyReply is the BUSY error every other client gets while a script runs
// past busy-reply-threshold, or "" (Redis's processCommand check, before
// the command takes any lock). The master's stream waits instead.
func (s *Server) busyReply(c *Client, cmd *command) string {
	r := s.scripting.running.Load()
	if r == nil || r.c == c || cmd.flags&flagAllowBusy != 0 || c.hasFlag(clientMaster) {
		return ""
	}
	limit := s.cfg.Int(config.DirLuaTimeLimit)
	if limit <= 0 || time.Since(r.start) < time.Duration(limit)*time.Millisecond {
		return ""
	}
	if r.eval {
		return errBusyEval
	}
	return script.ErrBusyFunction
}

func registerScriptingCommands(t *commandTable) {
	ef := flagNoScript | flagSkipMonitor | flagMayReplicate | flagStale | flagLockScript | flagNoPropagate
	rf := flagNoScript | flagSkipMonitor | flagStale | flagReadOnly | flagLockScript | flagNoPropagate
	t.add(&command{name: "eval", arity: -3, flags: ef, keys: numKeysAt(2), fn: cmdEval, group: "scripting", since: "2.6.0"})
	t.add(&command{name: "evalsha", arity: -3, flags: ef, keys: numKeysAt(2), fn: cmdEvalSha, group: "scripting", since: "2.6.0"})
	t.add(&command{name: "eval_ro", arity: -3, flags: rf, keys: numKeysAt(2), fn: cmdEvalRO, group: "scripting", since: "7.0.0"})
	t.add(&command{name: "evalsha_ro", arity: -3, flags: rf, keys: numKeysAt(2), fn: cmdEvalShaRO, group: "scripting", since: "7.0.0"})
	t.add(&command{name: "fcall", arity: -3, flags: ef, keys: numKeysAt(2), fn: cmdFcall, group: "scripting", since: "7.0.0"})
	t.add(&command{name: "fcall_ro", arity: -3, flags: rf, keys: numKeysAt(2), fn: cmdFcallRO, group: "scripting", since: "7.0.0"})
	t.add(&command{name: "script", arity: -2, fn: cmdHelpDispatch, group: "scripting", since: "2.6.0"})
	t.addSub("script", &command{name: "load", arity: 3, flags: flagNoScript | flagStale, fn: cmdScriptLoad, since: "2.6.0"})
	t.addSub("script", &command{name: "exists", arity: -3, flags: flagNoScript, fn: cmdScriptExists, since: "2.6.0"})
	t.addSub("script", &command{name: "flush", arity: -2, flags: flagNoScript, fn: cmdScriptFlush, since: "2.6.0"})
	t.addSub("script", &command{name: "kill", arity: 2, flags: flagNoScript | flagAllowBusy, fn: cmdScriptKill, since: "2.6.0"})
	t.addSub("script", &command{name: "debug", arity: 3, flags: flagNoScript, fn: cmdScriptDebug, since: "3.2.0"})
	t.addSub("script", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdScriptHelp, since: "5.0.0"})
}

func cmdEval(c *Client, args [][]byte)      { c.evalGeneric(args, false, false) }
func cmdEvalSha(c *Client, args [][]byte)   { c.evalGeneric(args, true, false) }
func cmdEvalRO(c *Client, args [][]byte)    { c.evalGeneric(args, false, true) }
func cmdEvalShaRO(c *Client, args [][]byte) { c.evalGeneric(args, true, true) }

// EVAL script numkeys [key ...] [arg ...] (and EVALSHA, the _RO forms)
func (c *Client) evalGeneric(args [][]byte, bySHA, ro bool) {
	eng := c.srv.scriptEngine()
	var sc *script.Script
	if c.debugging() {
		if !bySHA {
			c.evalDebug(args, ro)
		} else if len(args[1]) != 40 {
			c.addError(errNoScript)
		} else {
			c.addError("ERR Please use EVAL instead of EVALSHA for debugging")
		}
		return
	}
	if bySHA {
		if sc = eng.LookupBytes(args[1]); sc == nil {
			c.addError(errNoScript)
			return
		}
	}
	numkeys, msg := script.ParseNumKeys(args, false)
	if msg != "" {
		c.addError(msg)
		return
	}
	if !bySHA {
		var err *script.Error
		if sc, err = eng.Load(args[1]); err != nil {
			c.addError(err.Msg)
			return
		}
	}
	c.runScript(&runningScript{eval: true, name: sc.SHA}, sc.Flags, ro, args, numkeys, func(run *script.Run, out []byte) []byte {
		return eng.Exec(sc, run, out)
	})
}

// scriptFlagChecks is processCommand's view of an EVAL or FCALL whose
// script declared flags (Redis's evalGetCommandFlags and
// fcallGetCommandFlags): the command is a deny-oom write unless the
// flags say no-writes (or allow-oom), and refused on a stale replica
// unless they say allow-stale, with the generic errors, before it is
// queued or run. A script without a shebang keeps the command's own
// flags (never refused here; its commands are checked as they run).
// The script is looked up only when one of the checks could refuse.
func (c *Client) scriptFlagChecks(r *request) bool {
	s := c.srv
	h := s.hot()
	if h.maxmemory <= 0 && !s.replicaMode.Load() && h.minReplicasToWrite <= 0 && h.minReplicasAck <= 0 && s.persistRefused() == "" {
		// Nothing could refuse: the common case, without a lookup.
		return true
	}
	if c.hasFlag(clientMaster) {
		return true
	}
	oom := h.maxmemory > 0
	stale := s.replicaMode.Load() && !s.cfg.Bool(config.DirReplicaServeStaleData) && s.masterLinkUp != nil && !s.masterLinkUp()
	wr := s.writeRefused()
	if !oom && !stale && wr == "" {
		return true
	}
	// write, denyOOM and denyStale as the declared flags make them; an
	// EXEC has them when one of its queued scripts has (Redis's
	// mstate.cmd_flags), and is refused with EXECABORT.
	var write, denyOOM, denyStale bool
	if r.cmd.name == "exec" {
		for _, q := range c.multi {
			cmd := s.queuedCommand(q)
			if cmd == nil || cmd.flags&flagLockScript == 0 {
				continue
			}
			if f, ok := c.declaredFlags(cmd, q); ok {
				write = write || f&script.FlagNoWrites == 0
				denyOOM = denyOOM || f&(script.FlagNoWrites|script.FlagAllowOOM) == 0
				denyStale = denyStale || f&script.FlagAllowStale == 0
			}
		}
	} else {
		f, ok := c.declaredFlags(r.cmd, r.args)
		if !ok {
			return true
		}
		write = f&script.FlagNoWrites == 0
		denyOOM = f&(script.FlagNoWrites|script.FlagAllowOOM) == 0
		denyStale = f&script.FlagAllowStale == 0
	}
	if oom && denyOOM && !s.freeMemoryIfNeeded() {
		c.reject(r.cmd, errOOM)
		return false
	}
	if write && wr != "" {
		c.reject(r.cmd, wr)
		return false
	}
	if stale && denyStale {
		c.reject(r.cmd, errMasterDown)
		return false
	}
	return true
}

// declaredFlags returns the flags the script of an EVAL, EVALSHA or
// FCALL declares (script.DeclaredFlags); ok is false for a script without
// a shebang or one not found.
func (c *Client) declaredFlags(cmd *command, args [][]byte) (script.Flags, bool) {
	return script.DeclaredFlags(cmd.name, args, c.srv.scriptEngine)
}

// scriptRefused is Redis's scriptPrepareForRun: the flags a script
// declared against the server's state.
func (c *Client) scriptRefused(flags script.Flags, ro bool) string {
	s := c.srv
	return flags.Refusal(&script.RunState{
		FromMaster:         c.hasFlag(clientMaster),
		RO:                 ro,
		Stale:              s.replicaMode.Load() && !s.cfg.Bool(config.DirReplicaServeStaleData) && s.masterLinkUp != nil && !s.masterLinkUp(),
		Cluster:            s.cluster != nil,
		ReadOnlyReplica:    s.replicaMode.Load() && s.hot().replicaReadOnly,
		PersistRefused:     s.persistRefused,
		MinReplicasRefused: s.minReplicasRefuse,
		OutOfMemory:        func() bool { return s.hot().maxmemory > 0 && !s.freeMemoryIfNeeded() },
	})
}

// runScript runs one script or function invocation for c: the checks of
// its flags, the locks (see scripting), the host its commands go through,
// the reply, and the propagation of its effects as one MULTI/EXEC block.
func (c *Client) runScript(rs *runningScript, flags script.Flags, ro bool, args [][]byte, numkeys int, exec func(*script.Run, []byte) []byte) {
	s := c.srv
	if s.monitor.active() {
		// Shown before the commands it runs, as Redis's evalCommand.
		s.monitor.feed(c, args)
	}
	if msg := c.scriptRefused(flags, ro); msg != "" {
		c.addError(msg)
		return
	}
	slot := -1
	if s.cluster != nil && numkeys > 0 {
		slot = keySlot(bstr(args[3]))
	}
	oomAtStart := s.hot().maxmemory > 0 && !c.hasFlag(clientMaster) && !s.freeMemoryIfNeeded()
	sc := &s.scripting
	outerExec := c.inExec
	var h *scriptHost
	var run *script.Run
	if !outerExec {
		sc.gate.Lock()
		h, run = &sc.host, &sc.run
		locked := h.locked
		clear(locked)
		*h = scriptHost{locked: locked}
		*run = script.Run{}
	} else {
		// Inside EXEC, which holds every lock (and gate) already.
		h, run = &scriptHost{allLocked: true}, &script.Run{}
	}
	h.c, h.flags, h.repl, h.slot, h.oomAtStart = c, flags, script.ReplAll, slot, oomAtStart
	h.ro = ro || flags&script.FlagEvalCompat == 0 && flags&script.FlagNoWrites != 0
	h.allowOOM = flags&script.FlagEvalCompat == 0 && flags&script.FlagAllowOOM != 0
	h.crossSlot = flags&script.FlagEvalCompat != 0 || flags&script.FlagAllowCrossSlot != 0
	h.gated = !outerExec
	if sc.kill == nil || sc.kill.Err() != nil {
		sc.kill = script.NewKillSwitch()
	}
	rs.c, rs.start, rs.kill, rs.args = c, time.Now(), sc.kill, args
	rs.fromMaster = c.hasFlag(clientMaster)
	h.rs = rs
	if !rs.fromMaster && !rs.debug {
		// The master's stream cannot be killed: no context.
		s.scripting.running.Store(rs)
	}
	run.Host, run.Keys, run.Args, run.Proto = h, args[3:3+numkeys], args[3+numkeys:], c.proto
	if !rs.fromMaster && !rs.debug {
		run.Ctx = rs.kill
	}
	if !rs.eval {
		run.Name = rs.name
	}
	savedDB, savedCmd := c.db, c.cmd
	savedProp := c.execProp
	if !outerExec {
		c.execProp = nil
	}
	if !outerExec {
		c.execDB = c.db
	}
	c.inExec, c.inScript = true, true
	var out []byte
	if !outerExec {
		out = sc.out[:0]
	}
	out = exec(run, out)
	c.inExec, c.inScript = outerExec, false
	c.db, c.cmd = savedDB, savedCmd
	s.scripting.running.Store(nil)
	if len(out) > 0 && out[0] == '-' {
		msg := strings.TrimRight(string(out[1:]), "\r\n")
		if run.NoErrorStats {
			// Counted when the command was refused: the script only
			// fails.
			c.errReplies++
			if c.replying() {
				c.out = append(c.out, out...)
			}
		} else {
			c.addError(msg)
		}
	} else if c.replying() {
		c.out = append(c.out, out...)
	}
	if outerExec {
		// Inside MULTI/EXEC the block's effects go everywhere together:
		// redis.set_repl's AOF-only or replicas-only choice is not kept.
		c.execMask = nil
	}
	if rs.undo != nil {
		// A forked debugging session: its changes are rolled back and
		// nothing of it propagates or wakes a blocked client.
		ldbRestore(rs.undo, s)
		c.execProp, c.execMask, c.readyKeys = nil, nil, nil
	}
	if !outerExec {
		c.endExecProp(savedDB)
		prop, masks := c.execProp, c.execMask
		c.execProp, c.execMask = savedProp, nil
		if len(prop) > 0 && s.hasPropagators() {
			if masks == nil {
				c.propagateWrite(savedDB, script.WrapEffects(prop))
			} else {
				for len(masks) < len(prop) {
					masks = append(masks, script.ReplAll)
				}
				c.propagateWriteTo(savedDB, prop, masks)
			}
		}
		c.unlockHeld()
		h.gated = false
		h.c, h.rs = nil, nil
		*run = script.Run{}
		if cap(out) <= 64<<10 {
			sc.out = out[:0]
		}
		s.scripting.gate.Unlock()
	}
}

// scriptHost runs a script's commands on its client (script.Host).
type scriptHost struct {
	c  *Client
	rs *runningScript
	// flags are the script's declared flags; ro refuses writes.
	flags     script.Flags
	ro        bool
	allowOOM  bool
	crossSlot bool
	// oomAtStart: the server was over maxmemory when the script started.
	oomAtStart bool
	// slot is the hash slot the script's keys are in (cluster mode), -1
	// before the first key.
	slot int
	// locked has, per database, a bit per shard the script holds;
	// allLocked: every shard of every database (inside EXEC, or after a
	// command that locks everything).
	locked    []uint64
	allLocked bool
	gated     bool
	// repl is redis.set_repl's setting.
	repl int
}

// lockShard takes shard i of database db if the script does not hold it.
func (h *scriptHost) lockShard(db, i int) {
	if len(h.locked) != len(h.c.srv.dbs) {
		h.locked = make([]uint64, len(h.c.srv.dbs))
	}
	bit := uint64(1) << i
	if h.locked[db]&bit != 0 {
		return
	}
	h.locked[db] |= bit
	m := &h.c.srv.dbs[db].Shards[i].Mu
	m.Lock()
	h.c.held = append(h.c.held, m)
}

// lockDB takes every shard of database db the script does not hold, and
// lets open snapshots copy them all (a whole-database command may change
// any of them).
func (h *scriptHost) lockDB(db int) {
	if h.allLocked {
		return
	}
	if len(h.locked) != len(h.c.srv.dbs) {
		h.locked = make([]uint64, len(h.c.srv.dbs))
	}
	if h.locked[db] == ^uint64(0) {
		return
	}
	shards := h.c.srv.dbs[db].Shards[:]
	for i := range shards {
		h.lockShard(db, i)
	}
	if h.c.srv.snapOpen() {
		ms := make([]*sync.Mutex, len(shards))
		for i := range shards {
			ms[i] = &shards[i].Mu
		}
		h.c.srv.snapGuard(ms)
	}
}

func (h *scriptHost) lockAll() {
	if h.allLocked {
		return
	}
	for i := range h.c.srv.dbs {
		h.lockDB(i)
	}
	h.allLocked = true
}

// lockFor takes the locks cmd needs in the script's current database,
// as Client.lockFor does for a command of its own.
func (h *scriptHost) lockFor(cmd *command, args [][]byte) {
	if h.allLocked {
		return
	}
	db := h.c.db
	switch {
	case cmd.flags&flagLockAll != 0 || cmd.name == "debug" || cmd.name == "swapdb":
		h.lockAll()
		return
	case cmd.flags&flagLockDB != 0:
		h.lockDB(db)
		return
	}
	n := 0
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				h.lockShard(db, keyspace.ShardOf(bstr(args[p])))
				n++
			}
		}
	} else if cmd.first > 0 {
		last := cmd.last
		if last < 0 {
			last = len(args) + last
		}
		last = min(last, len(args)-1)
		for i := cmd.first; i <= last; i += max(cmd.step, 1) {
			h.lockShard(db, keyspace.ShardOf(bstr(args[i])))
			n++
		}
	}
	if n == 0 && !keyspaceFree(cmd) {
		// No key metadata: it may look at any key (SCAN, RANDOMKEY,
		// DBSIZE ...).
		h.lockDB(db)
	}
}

// keyspaceFree reports the key-less commands that never look at the
// keyspace, which a script runs without taking shard locks.
func keyspaceFree(cmd *command) bool {
	switch cmd.name {
	case "ping", "echo", "time", "publish", "spublish", "select":
		return true
	}
	return false
}

// SetRepl is redis.set_repl. The node has one propagation path for
// replicas and the AOF, so only REPL_NONE (propagate nothing) differs
// from REPL_ALL.
func (h *scriptHost) SetRepl(flags int) { h.repl = flags }

// Call runs one command of the script, Redis's scriptCall: the checks of
// a command called from a script, then the command on the script's client
// with every lock already held. A refused command counts in the error
// statistics and in its rejected_calls, as Redis's afterErrorReply.
func (h *scriptHost) Call(args [][]byte, proto int, out []byte) ([]byte, string) {
	reply, refusal, cmd := h.call(args, proto, out)
	if refusal != "" {
		msg := refusal
		if strings.HasPrefix(msg, "-") {
			msg = msg[1:]
		} else {
			msg = "ERR " + msg
		}
		h.c.srv.stats.countError(msg)
		if cmd != nil {
			cmd.stats.rejected.Add(1)
		}
	}
	return reply, refusal
}

func (h *scriptHost) call(args [][]byte, proto int, out []byte) ([]byte, string, *command) {
	c := h.c
	s := c.srv
	cmd := s.table.lookup(args[0])
	if cmd != nil && cmd.subs != nil && len(args) >= 2 {
		if sub := cmd.subs[lowerASCII(args[1])]; sub != nil {
			cmd = sub
		}
	}
	if cmd == nil {
		return nil, "Unknown Redis command called from script", nil
	}
	if !arityOK(cmd, len(args)) {
		return nil, "Wrong number of args calling Redis command from script", cmd
	}
	if cmd.flags&flagNoScript != 0 && !s.scriptDenyDisabled.Load() {
		return nil, "This Redis command is not allowed from script", cmd
	}
	fromMaster := c.hasFlag(clientMaster)
	if s.replicaMode.Load() && !s.cfg.Bool(config.DirReplicaServeStaleData) && s.masterLinkUp != nil && !s.masterLinkUp() && cmd.flags&flagStale == 0 {
		return nil, "Can not execute the command on a stale replica", cmd
	}
	if msg := h.aclRefusal(cmd, args); msg != "" {
		return nil, msg, cmd
	}
	isWrite := cmd.flags&flagWrite != 0
	if h.ro && cmd.flags&(flagWrite|flagMayReplicate) != 0 {
		return nil, "Write commands are not allowed from read-only scripts.", cmd
	}
	if isWrite && !h.rs.wrote.Load() && !fromMaster {
		if msg := s.writeRefused(); msg != "" {
			return nil, "-" + msg, cmd
		}
	}
	if !h.allowOOM && !fromMaster && !h.rs.wrote.Load() && h.oomAtStart && cmd.flags&flagDenyOOM != 0 {
		return nil, "-" + errOOM, cmd
	}
	if isWrite {
		h.rs.wrote.Store(true)
	}
	if s.cluster != nil && !fromMaster {
		if msg := h.clusterCheck(cmd, args); msg != "" {
			return nil, msg, cmd
		}
	}
	h.lockFor(cmd, args)
	if h.rs.undo != nil {
		if msg := ldbSave(h.rs.undo, c, cmd, args); msg != "" {
			return nil, msg, cmd
		}
	}
	before, dbBefore := len(c.execProp), c.execDB
	savedOut, savedMode, savedProto := c.out, c.replyMode, c.proto
	c.out, c.replyMode, c.proto = out, replyOn, proto
	c.call(cmd, args, true)
	reply := c.out
	c.out, c.replyMode, c.proto = savedOut, savedMode, savedProto
	c.cmd = nil
	if n := len(c.execProp); n > before {
		switch {
		case h.repl == script.ReplNone:
			c.execProp, c.execDB = c.execProp[:before], dbBefore
		case h.repl != script.ReplAll || c.execMask != nil:
			// redis.set_repl chose AOF or replicas only: each effect
			// keeps its targets (a SELECT goes everywhere).
			for len(c.execMask) < before {
				c.execMask = append(c.execMask, script.ReplAll)
			}
			for _, cmd := range c.execProp[before:n] {
				m := uint8(h.repl)
				if len(cmd) > 0 && string(cmd[0]) == "SELECT" {
					m = script.ReplAll
				}
				c.execMask = append(c.execMask, m)
			}
		}
	}
	return reply, "", cmd
}

// clusterCheck is scriptVerifyClusterState: every key of the command in
// a slot this node serves, and (unless the script allows cross-slot keys)
// in the script's slot.
func (h *scriptHost) clusterCheck(cmd *command, args [][]byte) string {
	rt := h.c.srv.cluster.Routing()
	return script.ClusterRefusal(&script.ClusterCall{
		Args: args, Keys: cmd.keyPositions(args), Write: cmd.flags&flagWrite != 0,
		Down: rt.State != cluster.ClusterOK, CrossSlot: h.crossSlot,
		Serves: func(slot int) bool {
			owner := rt.Owner(slot)
			return owner == rt.Me || h.c.hasFlag(clientReadOnly) && cmd.flags&flagWrite == 0 && rt.MyMaster >= 0 && rt.MyMaster == owner
		},
	}, &h.slot)
}

// SCRIPT LOAD script
func cmdScriptLoad(c *Client, args [][]byte) {
	sc, err := c.srv.scriptEngine().Load(args[2])
	if err != nil {
		c.addError(err.Msg)
		return
	}
	c.addBulkString(sc.SHA)
}

// SCRIPT EXISTS sha1 [sha1 ...]
func cmdScriptExists(c *Client, args [][]byte) {
	eng := c.srv.scriptEngine()
	c.addArrayLen(len(args) - 2)
	for _, a := range args[2:] {
		if eng.Lookup(string(a)) != nil {
			c.addInt(1)
		} else {
			c.addInt(0)
		}
	}
}

// SCRIPT FLUSH [ASYNC|SYNC]
func cmdScriptFlush(c *Client, args [][]byte) {
	if msg := script.ParseFlush(args, false); msg != "" {
		c.addError(msg)
		return
	}
	// The EVAL Lua state is only used under the gate.
	c.srv.scripting.gate.Lock()
	c.srv.scriptEngine().Flush()
	c.srv.scripting.gate.Unlock()
	c.addOK()
}

// SCRIPT KILL
func cmdScriptKill(c *Client, args [][]byte) { c.killScript(true) }

// killScript is Redis's scriptKill for SCRIPT KILL (eval) and FUNCTION KILL.
func (c *Client) killScript(eval bool) {
	r := c.srv.scripting.running.Load()
	var st *script.Running
	if r != nil {
		st = &script.Running{Eval: r.eval, FromMaster: r.fromMaster, Wrote: r.wrote.Load()}
	}
	if msg := script.KillRefusal(st, eval); msg != "" {
		c.addError(msg)
		return
	}
	r.kill.Fire()
	c.addOK()
}

// SCRIPT HELP
func cmdScriptHelp(c *Client, args [][]byte) { c.addHelp("SCRIPT", script.ScriptHelp) }

var _ = keyspace.NumShards
