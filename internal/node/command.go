package node

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/shardis/shardis/internal/node/acl"
)

// cmdFlag is a command's metadata flag, as Redis's COMMAND INFO reports.
type cmdFlag uint32

const (
	flagWrite cmdFlag = 1 << iota
	flagReadOnly
	flagAdmin
	flagPubSub
	flagNoScript
	flagBlocking
	flagLoading // allowed while loading
	flagStale   // allowed on a replica with a broken link
	flagSkipMonitor
	flagSkipSlowlog
	flagFast
	flagNoAuth       // allowed before AUTH
	flagMayReplicate // propagated although not a write (PUBLISH)
	flagDenyOOM      // refused when over maxmemory
	flagNoMulti      // cannot be queued in MULTI
	flagAllowBusy
	flagNoPropagate // never propagate (the handler propagates itself)
	// flagLockAll makes the dispatcher lock every shard of every database
	// (FLUSHALL, SWAPDB, KEYS ...). Commands with neither a key spec nor
	// flagLockAll run without keyspace locks and lock what they touch.
	flagLockAll
	// flagLockDB locks every shard of the client's current database.
	flagLockDB
	// flagProtected is Redis's CMD_PROTECTED (DEBUG, MODULE LOAD ...): the
	// command runs only where enable-debug-command or
	// enable-module-command allows it (security.go). COMMAND INFO hides
	// it, as Redis does.
	flagProtected
	// flagLockScript: the handler takes its own locks (EVAL, FCALL; see
	// scripting in commands_scripting.go); an EXEC holding such a command
	// locks everything.
	flagLockScript
	// flagSequenced: the command runs in arrival order across connections
	// (sequence.go); set by setSequenced, and on EXEC's row.
	flagSequenced
)

var flagNames = []struct {
	f    cmdFlag
	name string
}{
	{flagWrite, "write"}, {flagReadOnly, "readonly"}, {flagDenyOOM, "denyoom"},
	{flagAdmin, "admin"}, {flagPubSub, "pubsub"}, {flagNoScript, "noscript"},
	{flagBlocking, "blocking"}, {flagLoading, "loading"}, {flagStale, "stale"},
	{flagSkipMonitor, "skip_monitor"}, {flagSkipSlowlog, "skip_slowlog"},
	{flagFast, "fast"}, {flagNoAuth, "no_auth"}, {flagMayReplicate, "may_replicate"},
	{flagNoMulti, "no_multi"}, {flagAllowBusy, "allow_busy"},
}

// handlerFunc runs one command. args[0] is the command name; the slices are
// only valid during the call. Replies go to c's output buffer.
type handlerFunc func(c *Client, args [][]byte)

// keysFunc returns the positions of the keys in args for commands whose
// keys cannot be described by first/last/step (movable keys).
type keysFunc func(args [][]byte) []int

// command is a row of the command table: Redis's metadata plus a handler.
type command struct {
	name  string
	arity int // > 0 exact, < 0 at least -arity
	flags cmdFlag
	first int // position of the first key, 0 if none
	last  int // position of the last key, -1 for the last argument
	step  int
	keys  keysFunc // movable keys; overrides first/last/step
	fn    handlerFunc
	// group and since feed COMMAND DOCS.
	group string
	since string
	// subs holds subcommands (CLIENT, CONFIG ...), keyed by lower-case
	// name. When set, fn dispatches to them.
	subs map[string]*command
	// parent is set on subcommands.
	parent *command
	// members locates hash fields and set/sorted-set members in the
	// arguments, for pipeline prefetching (perf_prefetch.go).
	members memberSpec
	// mayBlock, for a blocking command whose arguments decide whether a
	// call can block (XREAD and XREADGROUP block only with BLOCK),
	// reports whether this call may; nil means every call may. A call for
	// which it reports false runs as a plain read or write: it neither
	// leaves the connection's read loop nor turns the sequencer on, and it
	// is sequenced only when plain writes are (sequence.go).
	mayBlock func(args [][]byte) bool
	// prelock, when set, runs before the command's shard locks are taken
	// for a call of the command on its own (not queued in EXEC, not from a
	// script: those run with the locks held already, and fn does all the
	// work there). It does the part of the work that needs no keyspace
	// state, parsing and decoding a big argument, so that the key's shard
	// is locked only for the keyspace part; what it returns is
	// c.prepared while fn runs (nil on the other paths), and fn must
	// give the same replies with or without it. RESTORE decodes its
	// payload there (commands_dump.go).
	prelock func(c *Client, args [][]byte) any
	// acl is the command in the ACL table; aclPerm caches the key
	// permission its calls need when one key spec covers them all
	// (aclstate.go).
	acl     *acl.Command
	aclPerm atomic.Int32

	stats cmdStats
}

// fullName is "client|list" for subcommands.
func (c *command) fullName() string {
	if c.parent != nil {
		return c.parent.name + "|" + c.name
	}
	return c.name
}

// blocks reports whether this call of the command may block: a
// blocking command, and for one with mayBlock, arguments that ask to.
func (c *command) blocks(args [][]byte) bool {
	return c.flags&flagBlocking != 0 && (c.mayBlock == nil || c.mayBlock(args))
}

// keyPositions returns the argument positions of the command's keys in args.
func (c *command) keyPositions(args [][]byte) []int {
	if c.keys != nil {
		return c.keys(args)
	}
	if c.first == 0 {
		return nil
	}
	last := c.last
	if last < 0 {
		last = len(args) + last
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	step := c.step
	if step <= 0 {
		step = 1
	}
	var pos []int
	for i := c.first; i <= last; i += step {
		pos = append(pos, i)
	}
	return pos
}

// commandTable maps lower-case names to commands.
type commandTable struct {
	cmds map[string]*command
}

// add registers cmd; registering a name twice panics (a programming error
// caught at start-up).
func (t *commandTable) add(cmd *command) {
	name := strings.ToLower(cmd.name)
	if _, dup := t.cmds[name]; dup {
		panic(fmt.Sprintf("node: command %q registered twice", name))
	}
	cmd.name = name
	if cmd.step == 0 && cmd.first > 0 {
		cmd.step = 1
	}
	for _, s := range cmd.subs {
		s.parent = cmd
	}
	t.cmds[name] = cmd
}

// addSub registers a subcommand of an already registered parent.
func (t *commandTable) addSub(parent string, sub *command) {
	p := t.cmds[parent]
	if p == nil {
		panic("node: no parent command " + parent)
	}
	if p.subs == nil {
		p.subs = make(map[string]*command)
	}
	name := strings.ToLower(sub.name)
	if _, dup := p.subs[name]; dup {
		panic(fmt.Sprintf("node: subcommand %s|%s registered twice", parent, name))
	}
	sub.name = name
	sub.parent = p
	if sub.step == 0 && sub.first > 0 {
		sub.step = 1
	}
	p.subs[name] = sub
}

func (t *commandTable) lookup(name []byte) *command {
	var buf [32]byte
	if len(name) <= len(buf) {
		lower := buf[:len(name)]
		for i, ch := range name {
			if ch >= 'A' && ch <= 'Z' {
				ch += 'a' - 'A'
			}
			lower[i] = ch
		}
		return t.cmds[string(lower)]
	}
	return t.cmds[strings.ToLower(string(name))]
}

// newCommandTable builds the table of every command family. Each family
// registers itself from its own file.
func newCommandTable() *commandTable {
	t := &commandTable{cmds: make(map[string]*command)}
	for _, register := range commandFamilies {
		register(t)
	}
	setMemberSpecs(t)
	setSequenced(t)
	return t
}
