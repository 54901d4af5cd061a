package node

// The server's side of persistence (internal/node/persist): the Host the
// package works through, SAVE/BGSAVE/LASTSAVE/BGREWRITEAOF, the MISCONF
// refusal, the snapshot guard the dispatcher runs before a write, and the
// AOF's command replay.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/persist"
)

// persistHost is the Server as persistence sees it.
type persistHost struct {
	s *Server
	// settings caches the directives for the configuration snapshot
	// they were built from.
	settings persist.SettingsCache
}

var _ persist.Host = (*persistHost)(nil)

func (h *persistHost) DBs() []*keyspace.DB { return h.s.dbs }
func (h *persistHost) LockAll()            { h.s.LockAll() }
func (h *persistHost) UnlockAll()          { h.s.UnlockAll() }
func (h *persistHost) SetLoading(on bool)  { h.s.loading.Store(on) }
func (h *persistHost) Loading() bool       { return h.s.loading.Load() }
func (h *persistHost) AsyncLoading() bool  { return h.s.asyncLoading.Load() }
func (h *persistHost) ExpireOnLoad() bool  { return h.s.expireDeletes() }
func (h *persistHost) Dirty() int64        { return h.s.dirty.Load() }
func (h *persistHost) LastSave() int64     { return h.s.lastSave.Load() }
func (h *persistHost) UsedMemory() int64   { return h.s.usedMemory() }
func (h *persistHost) LRUClock() uint32    { return h.s.lruClock() }
func (h *persistHost) Now() time.Time      { return h.s.now() }
func (h *persistHost) KeyDelay(usec int64) { persist.DebugDelay(usec) }
func (h *persistHost) Done() <-chan struct{} {
	return h.s.shutdownC
}
func (h *persistHost) CommandsProcessed() int64 { return h.s.stats.commands.Load() }

func (h *persistHost) Saved(dirty, at int64) {
	h.s.dirty.Add(-dirty)
	h.s.lastSave.Store(at)
}

func (h *persistHost) RDBAux() [][2]string            { return h.s.repl.rdbAux() }
func (h *persistHost) LoadAux(key, val []byte)        { h.s.repl.loadAux(key, val) }
func (h *persistHost) LoadExpired(db int, key []byte) { h.s.repl.loadExpired(db, key) }
func (h *persistHost) LoadExpiredKeys() int64         { return h.s.repl.loadExpiredKeys.Load() }
func (h *persistHost) BeforeStartupLoad()             { h.s.repl.beforeStartupLoad() }
func (h *persistHost) AfterStartupLoad(ok bool)       { h.s.repl.afterStartupLoad(ok) }

// Replayer returns a connection-less client that replays one AOF file.
func (h *persistHost) Replayer() persist.Applier { return aofApplier{newLoaderClient(h.s)} }

// Settings returns the directives persistence reads, rebuilt when the
// configuration changes (persist.SettingsCache).
func (h *persistHost) Settings() *persist.Settings {
	return h.settings.Get(h.s.cfg, h.s.persistLimits)
}

// persistLimits are the encoding thresholds loaded and restored values
// are built with.
func (s *Server) persistLimits() persist.Limits {
	h := s.hot()
	return persist.Limits{Hash: h.hashLim, ZSet: h.zsetLim, Intset: h.intsetLimit}
}

// initPersistence wires persistence into a new server: the RDB loader and
// snapshot hooks replication uses, the shutdown save and the AOF.
func initPersistence(s *Server) {
	p := persist.New(&persistHost{s: s}, s.log, Version)
	s.persist = p
	s.loadRDB = s.LoadRDB
	s.snapshotRDB = func() func(w io.Writer) error {
		return p.OpenLocked().Encode
	}
	s.AddPropagator(p.AOF())
	s.AddShutdownHook(func(ctx context.Context) error {
		o := ShutdownOptionsFrom(ctx)
		return p.Shutdown(ctx, persist.ShutdownOptions{Save: o.Save, NoSave: o.NoSave, Force: o.Force})
	})
	s.persistInfo = p.Info
	registerPersistenceDebug(s)
}

// StartPersistence loads the dataset (the AOF when appendonly is on, else
// the RDB file); its save-rule cron runs on the server cron's 100 ms beat.
// Run calls it before accepting clients; a load failure stops start-up.
func (s *Server) StartPersistence() error {
	if s.persist == nil {
		return nil
	}
	return s.persist.StartDriven()
}

// WriteRDB writes a consistent snapshot of every database, with the aux
// fields, to w. Clients keep being served while it runs.
func (s *Server) WriteRDB(w io.Writer) error { return s.persist.WriteRDB(w) }

// LoadRDB replaces the dataset with the RDB stream r. The loading flag is
// set while it runs. On error the dataset is left empty: a node never
// serves a partial dataset from a broken file.
func (s *Server) LoadRDB(r io.Reader) error { return s.persist.LoadRDB(r) }

// persistRefused is Redis's MISCONF: with stop-writes-on-bgsave-error and
// save rules, writes are refused after a failed background save; with the
// AOF on, after a failed AOF write.
func (s *Server) persistRefused() string {
	if s.persist == nil {
		return ""
	}
	return s.persist.Refusal(s.hot().stopWritesOnBgsaveErr && s.hot().saveRules)
}

// ---- the snapshot guard --------------------------------------------------

// snapGuard completes, in every open snapshot, the copies of the held
// shards: the caller may change anything in them (commands that lock a
// whole database or every shard, blocked clients being served, loads).
func (s *Server) snapGuard(held []*sync.Mutex) { keyspace.SnapGuard(held) }

// snapOpen reports whether a snapshot is open (a cheap check before
// snapGuardKeys).
func (s *Server) snapOpen() bool {
	return s.persist != nil && s.persist.SnapshotsOpen()
}

// snapGuardAll copies, into every open snapshot, every shard not copied
// yet. All shard locks must be held (whole-keyspace replacements).
func (s *Server) snapGuardAll() {
	if s.persist != nil {
		s.persist.GuardAllLocked()
	}
}

// snapGuardKeys copies, in every open snapshot, the buckets holding the
// keys of a write command about to run (its locks are held, in the
// client's current database). The dispatcher calls it for write commands
// while a snapshot is open; commands that lock whole databases were
// guarded when they locked.
func (c *Client) snapGuardKeys(cmd *command, args [][]byte) {
	if cmd.flags&(flagLockAll|flagLockDB) != 0 {
		return
	}
	db := c.srv.dbs[c.db]
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				db.SnapTouchKey(bstr(args[p]))
			}
		}
		return
	}
	if cmd.first <= 0 {
		return
	}
	last := cmd.last
	if last < 0 {
		last = len(args) + last
	}
	last = min(last, len(args)-1)
	for i := cmd.first; i <= last; i += max(cmd.step, 1) {
		db.SnapTouchKey(bstr(args[i]))
	}
}

// ---- AOF replay ----------------------------------------------------------

// aofApplier runs the AOF's commands on a loader client (its SELECTs
// change its database, as a client's do).
type aofApplier struct{ c *Client }

// Apply runs one command.
func (a aofApplier) Apply(argv [][]byte) error { return a.c.replay(argv) }

// newLoaderClient returns a connection-less client that replays commands
// (AOF loading, DEBUG LOADAOF). It never blocks: a blocking command runs
// as if its timeout had expired (clientDenyBlocking).
func newLoaderClient(s *Server) *Client {
	c := &Client{srv: s, id: -1, proto: 2, done: make(chan struct{}), user: "default", created: s.now()}
	c.authed.Store(true)
	c.setFlag(clientDenyBlocking, true)
	return c
}

// replay runs one command from the AOF: no propagation, no statistics.
func (c *Client) replay(args [][]byte) error {
	cmd := c.srv.table.lookup(args[0])
	if cmd == nil {
		return fmt.Errorf("unknown command '%s' reading the append only file", truncArg(args[0]))
	}
	if cmd.subs != nil && len(args) >= 2 {
		if sub := cmd.subs[strings.ToLower(string(args[1]))]; sub != nil {
			cmd = sub
		}
	}
	if !arityOK(cmd, len(args)) {
		return fmt.Errorf("wrong number of arguments for '%s' reading the append only file", cmd.fullName())
	}
	c.now = c.srv.nowMs()
	c.cmd = cmd
	c.dirty = 0
	c.propArgs = nil
	c.lockFor(cmd, args)
	if cmd.flags&flagWrite != 0 && c.srv.snapOpen() {
		c.snapGuardKeys(cmd, args)
	}
	cmd.fn(c, args)
	c.unlockHeld()
	c.readyKeys = nil
	c.out = c.out[:0]
	return nil
}

// ---- commands ----------------------------------------------------------

func registerPersistenceCommands(t *commandTable) {
	t.add(&command{name: "save", arity: 1, flags: flagAdmin | flagNoScript | flagNoAsyncLoading | flagLockAll | flagNoMulti, fn: cmdSave, group: "server", since: "1.0.0"})
	t.add(&command{name: "bgsave", arity: -1, flags: flagAdmin | flagNoScript | flagNoAsyncLoading | flagLockAll, fn: cmdBgsave, group: "server", since: "1.0.0"})
	t.add(&command{name: "lastsave", arity: 1, flags: flagLoading | flagStale | flagFast, fn: cmdLastSave, group: "server", since: "1.0.0"})
	t.add(&command{name: "bgrewriteaof", arity: 1, flags: flagAdmin | flagNoScript | flagNoAsyncLoading, fn: cmdBgRewriteAOF, group: "server", since: "1.0.0"})
}

// flagNoAsyncLoading is a documentation marker (Redis's no-async-loading).
const flagNoAsyncLoading cmdFlag = 0

// SAVE
func cmdSave(c *Client, args [][]byte) {
	if msg := c.srv.persist.SaveCommand(); msg != "" {
		c.addError(msg)
		return
	}
	c.addOK()
}

// BGSAVE [SCHEDULE]
func cmdBgsave(c *Client, args [][]byte) {
	schedule := false
	if len(args) > 1 {
		if len(args) == 2 && eqFold(args[1], "schedule") {
			schedule = true
		} else {
			c.addError(errSyntax)
			return
		}
	}
	status, msg := c.srv.persist.BgsaveCommand(schedule, c.inExec)
	if msg != "" {
		c.addError(msg)
		return
	}
	c.addSimple(status)
}

// LASTSAVE
func cmdLastSave(c *Client, args [][]byte) { c.addInt(c.srv.lastSave.Load()) }

// BGREWRITEAOF
func cmdBgRewriteAOF(c *Client, args [][]byte) {
	status, errText := c.srv.persist.AOF().BackgroundRewrite()
	if errText != "" {
		c.addError(errText)
		return
	}
	c.addSimple(status)
}

func init() {
	onConfigSet(config.DirAppendonly, func(s *Server, v string) {
		if s.persist != nil {
			s.persist.AOF().SetAppendOnly(v == "yes")
		}
	})
}

// appendCommand appends args to b as a RESP array of bulk strings.
func appendCommand(b []byte, args ...[]byte) []byte { return persist.AppendCommand(b, args...) }
