package node

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/script"
)

// Scripting errors with Redis's texts.
const (
	errNoScript      = "NOSCRIPT No matching script. Please use EVAL."
	errBusyEval      = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errBusyFunction  = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	errNotBusy       = "NOTBUSY No scripts in execution right now."
	errUnkillable    = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errUnkillableMst = "UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed."
)

// scripting is a server's scripting state.
//
// Atomicity: a script runs holding gate and every shard lock of each
// database it touches (its client's database from the start, another one
// when a command of the script selects it, all of them for a command that
// locks everything). Every other taker of shard locks of more than one
// database (Server.LockAll, lockEverything: FLUSHALL, MOVE, SWAPDB, EXEC
// of a block that needs them, snapshots, full syncs) takes gate first, so
// the shard locks a running script takes late can only be held by
// single-database commands, which never wait for the script's locks: no
// deadlock, and no other client sees the keyspace between two commands of
// a script, declared keys or not.
type scripting struct {
	once sync.Once
	eng  *script.Engine
	// gate serialises scripts with each other and with every taker of
	// shard locks across databases.
	gate sync.Mutex
	// running is the script in progress, nil when none (BUSY, KILL,
	// FUNCTION STATS).
	running atomic.Pointer[runningScript]
	// kill is the context scripts run under until a kill fires it (then
	// the next script gets a new one); used under gate.
	kill *killSwitch
}

// killSwitch is a context whose Done channel is fixed: the Lua VM checks
// it at every instruction, and a plain channel is the cheapest check.
type killSwitch struct {
	ch   chan struct{}
	once sync.Once
}

func newKillSwitch() *killSwitch { return &killSwitch{ch: make(chan struct{})} }

func (k *killSwitch) fire() { k.once.Do(func() { close(k.ch) }) }

// Deadline is context.Context's: none.
func (k *killSwitch) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done is closed by fire.
func (k *killSwitch) Done() <-chan struct{} { return k.ch }

// Err is context.Canceled once fired.
func (k *killSwitch) Err() error {
	select {
	case <-k.ch:
		return context.Canceled
	default:
		return nil
	}
}

// Value is context.Context's: no values.
func (k *killSwitch) Value(any) any { return nil }

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
	kill       *killSwitch
}

func (s *Server) scriptEngine() *script.Engine {
	sc := &s.scripting
	sc.once.Do(func() {
		sc.eng = script.NewEngine()
		var seed [4]byte
		_, _ = rand.Read(seed[:])
		sc.eng.SeedRandom(int32(binary.LittleEndian.Uint32(seed[:])))
		sc.eng.Log = func(level int, msg string) {
			switch level {
			case script.LogWarning:
				s.log.Warn(msg)
			case script.LogNotice:
				s.log.Info(msg)
			default:
				s.log.Debug(msg)
			}
		}
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
	limit := s.cfg.Int(DirLuaTimeLimit)
	if limit <= 0 || time.Since(r.start) < time.Duration(limit)*time.Millisecond {
		return ""
	}
	if r.eval {
		return errBusyEval
	}
	return errBusyFunction
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

// scriptNumKeys parses EVAL's and FCALL's numkeys.
func (c *Client) scriptNumKeys(args [][]byte, fcall bool) (int, bool) {
	n, ok := parseInt(args[2])
	if !ok {
		if fcall {
			c.addError("ERR Bad number of keys provided")
		} else {
			c.addError(errNotInt)
		}
		return 0, false
	}
	if n > int64(len(args)-3) {
		c.addError("ERR Number of keys can't be greater than number of args")
		return 0, false
	}
	if n < 0 {
		c.addError("ERR Number of keys can't be negative")
		return 0, false
	}
	return int(n), true
}

// EVAL script numkeys [key ...] [arg ...] (and EVALSHA, the _RO forms)
func (c *Client) evalGeneric(args [][]byte, bySHA, ro bool) {
	eng := c.srv.scriptEngine()
	var sc *script.Script
	if bySHA {
		if sc = eng.Lookup(string(args[1])); sc == nil {
			c.addError(errNoScript)
			return
		}
	}
	numkeys, ok := c.scriptNumKeys(args, false)
	if !ok {
		return
	}
	if !bySHA {
		var err *script.Error
		if sc, err = eng.Load(args[1]); err != nil {
			c.addError(err.Msg)
			return
		}
	}
	c.runScript(&runningScript{eval: true, name: "f_" + sc.SHA}, sc.Flags, ro, args, numkeys, func(run *script.Run, out []byte) []byte {
		return eng.Exec(sc, run, out)
	})
}

// scriptRefused is Redis's scriptPrepareForRun: the flags a script
// declared against the server's state.
func (c *Client) scriptRefused(flags script.Flags, ro bool) string {
	s := c.srv
	fromMaster := c.hasFlag(clientMaster)
	stale := s.replicaMode.Load() && !s.cfg.Bool(DirReplicaServeStaleData) && s.masterLinkUp != nil && !s.masterLinkUp()
	if flags&script.FlagEvalCompat != 0 {
		if stale {
			return errMasterDown
		}
		return ""
	}
	if flags&script.FlagNoCluster != 0 && s.cluster != nil {
		return "ERR Can not run script on cluster, 'no-cluster' flag is set."
	}
	if stale && flags&script.FlagAllowStale == 0 {
		return "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script."
	}
	if flags&script.FlagNoWrites == 0 {
		if s.replicaMode.Load() && s.hot().replicaReadOnly && !fromMaster {
			return "READONLY Can not run script with write flag on readonly replica"
		}
		if !fromMaster {
			if msg := s.persistRefused(); msg != "" {
				return msg
			}
		}
		if ro {
			return "ERR Can not execute a script with write flag using *_ro command."
		}
		if !fromMaster && s.minReplicasRefuse != nil && s.minReplicasRefuse() {
			return errNoReplicas
		}
		if !fromMaster && flags&script.FlagAllowOOM == 0 && s.hot().maxmemory > 0 && !s.freeMemoryIfNeeded() {
			return "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"
		}
	}
	return ""
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
	h := &scriptHost{c: c, flags: flags, repl: script.ReplAll, slot: -1}
	h.ro = ro || flags&script.FlagEvalCompat == 0 && flags&script.FlagNoWrites != 0
	h.allowOOM = flags&script.FlagEvalCompat == 0 && flags&script.FlagAllowOOM != 0
	h.crossSlot = flags&script.FlagEvalCompat != 0 || flags&script.FlagAllowCrossSlot != 0
	h.oomAtStart = s.hot().maxmemory > 0 && !c.hasFlag(clientMaster) && !s.freeMemoryIfNeeded()
	if s.cluster != nil && numkeys > 0 {
		h.slot = keySlot(bstr(args[3]))
	}
	outerExec := c.inExec
	if !outerExec {
		s.scripting.gate.Lock()
		h.gated = true
		h.lockDB(c.db)
	} else {
		h.allLocked = true
	}
	sc := &s.scripting
	if sc.kill == nil || sc.kill.Err() != nil {
		sc.kill = newKillSwitch()
	}
	rs.c, rs.start, rs.kill, rs.args = c, time.Now(), sc.kill, args
	rs.fromMaster = c.hasFlag(clientMaster)
	h.rs = rs
	if !rs.fromMaster {
		// The master's stream cannot be killed: no context.
		s.scripting.running.Store(rs)
	}
	run := &script.Run{Host: h, Keys: args[3 : 3+numkeys], Args: args[3+numkeys:], Proto: c.proto}
	if !rs.fromMaster {
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
	h.propDB = c.db
	c.inExec, c.inScript = true, true
	out := exec(run, nil)
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
	if !outerExec {
		prop := c.execProp
		c.execProp = savedProp
		if len(prop) > 0 && s.hasPropagators() {
			if len(prop) > 1 {
				block := make([][][]byte, 0, len(prop)+2)
				block = append(block, [][]byte{[]byte("MULTI")})
				block = append(block, prop...)
				block = append(block, [][]byte{[]byte("EXEC")})
				prop = block
			}
			s.propagate(savedDB, prop)
		}
		c.unlockHeld()
		h.gated = false
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
	// locked marks the databases whose shards the script holds;
	// allLocked: every database (inside EXEC, or after a command that
	// locks everything).
	locked    []bool
	allLocked bool
	gated     bool
	// repl is redis.set_repl's setting; propDB the database the
	// propagated commands apply to so far.
	repl   int
	propDB int
}

func (h *scriptHost) lockDB(db int) {
	if h.allLocked {
		return
	}
	if h.locked == nil {
		h.locked = make([]bool, len(h.c.srv.dbs))
	}
	if h.locked[db] {
		return
	}
	h.locked[db] = true
	c := h.c
	n := len(c.held)
	c.held = c.srv.dbs[db].LockAllInto(c.held)
	c.srv.snapGuard(c.held[n:])
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
	if cmd.flags&flagNoScript != 0 {
		return nil, "This Redis command is not allowed from script", cmd
	}
	fromMaster := c.hasFlag(clientMaster)
	if s.replicaMode.Load() && !s.cfg.Bool(DirReplicaServeStaleData) && s.masterLinkUp != nil && !s.masterLinkUp() && cmd.flags&flagStale == 0 {
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
	// Locks: the database the command runs in, or all of them.
	if cmd.flags&flagLockAll != 0 || cmd.name == "debug" || cmd.name == "swapdb" {
		h.lockAll()
	} else {
		h.lockDB(c.db)
	}
	db := c.db
	before := len(c.execProp)
	savedOut, savedMode, savedProto := c.out, c.replyMode, c.proto
	c.out, c.replyMode, c.proto = out, replyOn, proto
	c.call(cmd, args, true)
	reply := c.out
	c.out, c.replyMode, c.proto = savedOut, savedMode, savedProto
	c.cmd = nil
	if len(c.execProp) > before {
		if h.repl == script.ReplNone {
			c.execProp = c.execProp[:before]
		} else if db != h.propDB {
			sel := [][]byte{[]byte("SELECT"), []byte(strconv.Itoa(db))}
			c.execProp = append(c.execProp[:before], append([][][]byte{sel}, c.execProp[before:]...)...)
			h.propDB = db
		}
	}
	return reply, "", cmd
}

// clusterCheck is scriptVerifyClusterState: every key of the command in
// a slot this node serves, and (unless the script allows cross-slot keys)
// in the script's slot.
func (h *scriptHost) clusterCheck(cmd *command, args [][]byte) string {
	rt := h.c.srv.cluster.route.Load()
	pos := cmd.keyPositions(args)
	if len(pos) == 0 {
		return ""
	}
	if rt.State != cluster.ClusterOK {
		if cmd.flags&flagWrite != 0 {
			return "Script attempted to execute a write command while the cluster is down and readonly"
		}
		return "Script attempted to execute a command while the cluster is down"
	}
	slot := -1
	for _, p := range pos {
		if p >= len(args) {
			continue
		}
		ks := keySlot(bstr(args[p]))
		if slot >= 0 && ks != slot {
			return "Script attempted to access a non local key in a cluster node"
		}
		slot = ks
		if owner := rt.Owner[ks]; owner != rt.Me && !(h.c.hasFlag(clientReadOnly) && cmd.flags&flagWrite == 0 && rt.MyMaster >= 0 && rt.MyMaster == owner) {
			return "Script attempted to access a non local key in a cluster node"
		}
	}
	if slot >= 0 && !h.crossSlot {
		if h.slot == -1 {
			h.slot = slot
		} else if h.slot != slot {
			return "Script attempted to access keys that do not hash to the same slot"
		}
	}
	return ""
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
	if len(args) > 3 {
		c.addError("ERR unknown subcommand or wrong number of arguments for 'flush'. Try SCRIPT HELP.")
		return
	}
	if len(args) == 3 && !eqFold(args[2], "sync") && !eqFold(args[2], "async") {
		c.addError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
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
	switch {
	case r == nil:
		c.addError(errNotBusy)
	case r.fromMaster:
		c.addError(errUnkillableMst)
	case r.wrote.Load():
		c.addError(errUnkillable)
	case eval && !r.eval:
		c.addError(errBusyFunction)
	case !eval && r.eval:
		c.addError(errBusyEval)
	default:
		r.kill.fire()
		c.addOK()
	}
}

// SCRIPT DEBUG YES|SYNC|NO: this node has no Lua debugger. NO is
// accepted (it is the state already); YES and SYNC are refused.
func cmdScriptDebug(c *Client, args [][]byte) {
	switch {
	case eqFold(args[2], "no"):
		c.addOK()
	case eqFold(args[2], "yes"), eqFold(args[2], "sync"):
		c.addError("ERR SCRIPT DEBUG is not supported by this server (no Lua debugger)")
	default:
		c.addError("ERR Use SCRIPT DEBUG YES/SYNC/NO")
	}
}

// SCRIPT HELP
func cmdScriptHelp(c *Client, args [][]byte) {
	c.addHelp("SCRIPT", []string{
		"DEBUG (YES|SYNC|NO)",
		"    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
	})
}

var _ = keyspace.NumShards
