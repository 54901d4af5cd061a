package node

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/shardis/shardis/internal/node/admin"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/gcpace"
)

func registerServerCommands(t *commandTable) {
	t.add(&command{name: "flushall", arity: -1, flags: flagWrite | flagLockAll, fn: cmdFlushAll, group: "server", since: "1.0.0"})
	t.add(&command{name: "flushdb", arity: -1, flags: flagWrite | flagLockDB, fn: cmdFlushDB, group: "server", since: "1.0.0"})
	t.add(&command{name: "function", arity: -2, fn: cmdHelpDispatch, group: "scripting", since: "7.0.0"})
	t.add(&command{name: "config", arity: -2, fn: cmdHelpDispatch, group: "server", since: "2.0.0"})
	t.addSub("config", &command{name: "get", arity: -3, flags: flagAdmin | flagNoScript | flagLoading | flagStale, fn: cmdConfigGet})
	t.addSub("config", &command{name: "set", arity: -4, flags: flagAdmin | flagNoScript | flagLoading | flagStale, fn: cmdConfigSet})
	t.addSub("config", &command{name: "resetstat", arity: 2, flags: flagAdmin | flagNoScript | flagLoading | flagStale, fn: cmdConfigResetStat})
	t.addSub("config", &command{name: "rewrite", arity: 2, flags: flagAdmin | flagNoScript | flagLoading | flagStale, fn: cmdConfigRewrite})
	t.addSub("config", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdConfigHelp})
	t.add(&command{name: "dbsize", arity: 1, flags: flagReadOnly | flagFast, fn: cmdDBSize, group: "server", since: "1.0.0"})
	t.add(&command{name: "time", arity: 1, flags: flagLoading | flagStale | flagFast, fn: cmdTime, group: "server", since: "2.6.0"})
	t.add(&command{name: "swapdb", arity: 3, flags: flagWrite | flagFast | flagLockAll, fn: cmdSwapDB, group: "server", since: "4.0.0"})
	t.add(&command{name: "shutdown", arity: -1, flags: flagAdmin | flagNoScript | flagLoading | flagStale | flagNoMulti | flagAllowBusy, fn: cmdShutdown, group: "server", since: "1.0.0"})
	t.add(&command{name: "monitor", arity: 1, flags: flagAdmin | flagNoScript | flagLoading | flagStale, fn: cmdMonitor, group: "server", since: "1.0.0"})
	t.add(&command{name: "slowlog", arity: -2, fn: cmdHelpDispatch, group: "server", since: "2.2.12"})
	t.addSub("slowlog", &command{name: "get", arity: -2, flags: flagAdmin | flagLoading | flagStale, fn: cmdSlowlogGet})
	t.addSub("slowlog", &command{name: "len", arity: 2, flags: flagAdmin | flagLoading | flagStale, fn: cmdSlowlogLen})
	t.addSub("slowlog", &command{name: "reset", arity: 2, flags: flagAdmin | flagLoading | flagStale, fn: cmdSlowlogReset})
	t.addSub("slowlog", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdSlowlogHelp})
	t.add(&command{name: "latency", arity: -2, fn: cmdHelpDispatch, group: "server", since: "2.8.13"})
	lf := flagAdmin | flagNoScript | flagLoading | flagStale
	t.addSub("latency", &command{name: "latest", arity: 2, flags: lf, fn: cmdLatencyLatest})
	t.addSub("latency", &command{name: "reset", arity: -2, flags: lf, fn: cmdLatencyReset})
	t.addSub("latency", &command{name: "history", arity: 3, flags: lf, fn: cmdLatencyHistory})
	t.addSub("latency", &command{name: "graph", arity: 3, flags: lf, fn: cmdLatencyGraph})
	t.addSub("latency", &command{name: "doctor", arity: 2, flags: lf, fn: cmdLatencyDoctor})
	t.addSub("latency", &command{name: "histogram", arity: -2, flags: lf, fn: cmdLatencyHistogram})
	t.addSub("latency", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdLatencyHelp})
	t.add(&command{name: "memory", arity: -2, fn: cmdHelpDispatch, group: "server", since: "4.0.0"})
	t.addSub("memory", &command{name: "usage", arity: -3, flags: flagReadOnly, first: 2, last: 2, step: 1, fn: cmdMemoryUsage})
	t.addSub("memory", &command{name: "doctor", arity: 2, fn: cmdMemoryDoctor})
	t.addSub("memory", &command{name: "stats", arity: 2, fn: cmdMemoryStats})
	t.addSub("memory", &command{name: "malloc-stats", arity: 2, fn: cmdMemoryMallocStats})
	t.addSub("memory", &command{name: "purge", arity: 2, fn: cmdMemoryPurge})
	t.addSub("memory", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdMemoryHelp})
	registerClientCommands(t)
	registerInfoCommands(t)
	registerCommandCommands(t)
	registerDebugCommands(t)
	registerModuleCommands(t)
}

func parseFlushMode(c *Client, args [][]byte) bool {
	if err := admin.ParseFlush(args[1:]); err != nil {
		c.addError(err.Error())
		return false
	}
	return true
}

// FLUSHALL [ASYNC|SYNC]
func cmdFlushAll(c *Client, args [][]byte) {
	if !parseFlushMode(c, args) {
		return
	}
	c.srv.touchWatchedDBs(-1, -1)
	for i, db := range c.srv.dbs {
		db.Flush()
		c.srv.blocking.markDBReady(i) // blocked XREADGROUPs: key gone
	}
	c.markDirty(1)
	c.propagateAs([][]byte{[]byte("FLUSHALL")})
	c.addOK()
}

// FLUSHDB [ASYNC|SYNC]
func cmdFlushDB(c *Client, args [][]byte) {
	if !parseFlushMode(c, args) {
		return
	}
	c.srv.touchWatchedDBs(c.db, -1)
	c.curDB().Flush()
	c.srv.blocking.markDBReady(c.db) // blocked XREADGROUPs: key gone
	c.markDirty(1)
	c.propagateAs([][]byte{[]byte("FLUSHDB")})
	c.addOK()
}

// DBSIZE
func cmdDBSize(c *Client, args [][]byte) { c.addInt(c.curDB().Size()) }

// CONFIG GET parameter [parameter ...] (config.Config.GetCommand).
func cmdConfigGet(c *Client, args [][]byte) {
	pairs := c.srv.cfg.GetCommand(args[2:])
	c.addMapLen(len(pairs) / 2)
	for _, p := range pairs {
		c.addBulkString(p)
	}
}

// CONFIG SET parameter value [parameter value ...]: all or nothing
// (config.Config.SetCommand), applied to the server by configApplier.
func cmdConfigSet(c *Client, args [][]byte) {
	if err := c.srv.cfg.SetCommand(args[2:], c.protectedAllowed, configApplier{c.srv}); err != nil {
		c.addError(err.Error())
		return
	}
	c.srv.configChanged()
	c.addOK()
}

// touchWatchedDBs marks dirty the watchers of keys of db (all databases
// when db < 0) that exist in it or, for SWAPDB, in other: Redis's
// touchAllWatchedKeysInDb, called before the databases change. The
// caller holds every shard lock involved.
func (s *Server) touchWatchedDBs(db, other int) {
	w := s.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	for wk, m := range w.keys {
		if db >= 0 && wk.db != db {
			continue
		}
		exists := s.dbs[wk.db].GetEntry(wk.key) != nil
		if !exists && other >= 0 {
			exists = s.dbs[other].GetEntry(wk.key) != nil
		}
		if !exists {
			continue
		}
		for c := range m {
			c.setFlag(clientDirtyCAS, true)
		}
	}
}

// CONFIG RESETSTAT
func cmdConfigResetStat(c *Client, args [][]byte) {
	s := c.srv
	s.stats.reset()
	for _, cmd := range s.allCommands() {
		cmd.stats.reset()
	}
	s.info.ResetPeak()
	s.repl.resetSyncCounters()
	c.addOK()
}

// CONFIG REWRITE
func cmdConfigRewrite(c *Client, args [][]byte) {
	if c.srv.cfg.Path() == "" {
		c.addError("ERR The server is running without a config file")
		return
	}
	if err := c.srv.cfg.Rewrite(); err != nil {
		c.srv.log.Warn("CONFIG REWRITE failed", "err", err)
		c.addError("ERR Rewriting config file: " + rewriteErrText(err))
		return
	}
	c.addOK()
}

func rewriteErrText(err error) string {
	var pe *os.PathError
	if e, ok := err.(*os.PathError); ok {
		pe = e
	}
	if pe != nil {
		return pe.Err.Error()
	}
	return err.Error()
}

// CONFIG HELP
func cmdConfigHelp(c *Client, args [][]byte) { c.addHelp("CONFIG", admin.ConfigHelp) }

// TIME
func cmdTime(c *Client, args [][]byte) {
	now := c.srv.now()
	c.addArrayLen(2)
	c.addBulkInt(now.Unix())
	c.addBulkInt(int64(now.Nanosecond() / 1000))
}

// SWAPDB index1 index2
func cmdSwapDB(c *Client, args [][]byte) {
	s := c.srv
	if s.cfg.Bool(config.DirClusterEnabled) {
		c.addError("ERR SWAPDB is not allowed in cluster mode")
		return
	}
	a, b, err := admin.ParseSwapDB(args[1], args[2], len(s.dbs))
	if err != nil {
		c.addError(err.Error())
		return
	}
	if a != b {
		s.touchWatchedDBs(a, b)
		s.touchWatchedDBs(b, a)
		s.dbs[a].SwapContents(s.dbs[b])
		s.signalDBsSwapped(a, b) // wakes clients blocked on keys that now exist
	}
	c.markDirty(1)
	c.addOK()
}

// ShutdownOptions are SHUTDOWN's flags, passed to shutdown hooks in their
// context (see ShutdownOptionsFrom). The zero value is a plain shutdown
// (SIGTERM): save if save points are configured.
type ShutdownOptions struct {
	NoSave, Save, Now, Force bool
}

type shutdownOptsKey struct{}

// ShutdownOptionsFrom returns the SHUTDOWN flags a shutdown hook runs
// with.
func ShutdownOptionsFrom(ctx context.Context) ShutdownOptions {
	o, _ := ctx.Value(shutdownOptsKey{}).(ShutdownOptions)
	return o
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: on success the connection
// closes without a reply.
func cmdShutdown(c *Client, args [][]byte) {
	p, err := admin.ParseShutdown(args[1:])
	if err != nil {
		c.addError(err.Error())
		return
	}
	if p.Abort {
		c.addError("ERR No shutdown in progress.")
		return
	}
	o := ShutdownOptions{NoSave: p.NoSave, Save: p.Save, Now: p.Now, Force: p.Force}
	c.srv.log.Warn("user requested shutdown...")
	ctx := context.WithValue(context.Background(), shutdownOptsKey{}, o)
	if err := c.srv.Shutdown(ctx); err != nil && !o.Force {
		c.addError("ERR Errors trying to SHUTDOWN. Check logs.")
		return
	}
	c.out = c.out[:0]
	c.close()
}

// MONITOR
func cmdMonitor(c *Client, args [][]byte) {
	if c.inExec {
		c.addError("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if c.hasFlag(clientReplica | clientMonitor) {
		return
	}
	c.setFlag(clientMonitor, true)
	c.addOK()
	c.srv.monitor.add(c)
}

// SLOWLOG GET [count]
func cmdSlowlogGet(c *Client, args [][]byte) {
	count, err := admin.ParseSlowlogCount(args[2:])
	if err != nil {
		c.addError(err.Error())
		return
	}
	entries := c.srv.slowlog.Entries(count)
	c.addArrayLen(len(entries))
	for _, e := range entries {
		c.addArrayLen(6)
		c.addInt(e.ID)
		c.addInt(e.Time)
		c.addInt(e.Duration)
		c.addStrings(e.Args)
		c.addBulkString(e.Addr)
		c.addBulkString(e.Name)
	}
}

// SLOWLOG LEN
func cmdSlowlogLen(c *Client, args [][]byte) {
	c.addInt(int64(c.srv.slowlog.Len()))
}

// SLOWLOG RESET
func cmdSlowlogReset(c *Client, args [][]byte) {
	c.srv.slowlog.Reset()
	c.addOK()
}

// SLOWLOG HELP
func cmdSlowlogHelp(c *Client, args [][]byte) { c.addHelp("SLOWLOG", admin.SlowlogHelp) }

// LATENCY LATEST: no latency events are recorded.
func cmdLatencyLatest(c *Client, args [][]byte) { c.addArrayLen(0) }

// LATENCY RESET [event ...]
func cmdLatencyReset(c *Client, args [][]byte) { c.addInt(0) }

// LATENCY HISTORY event
func cmdLatencyHistory(c *Client, args [][]byte) { c.addArrayLen(0) }

// LATENCY GRAPH event
func cmdLatencyGraph(c *Client, args [][]byte) {
	c.addError("ERR No samples available for event '" + string(args[2]) + "'")
}

// LATENCY DOCTOR
func cmdLatencyDoctor(c *Client, args [][]byte) { c.addVerbatim(admin.LatencyDoctor) }

// LATENCY HISTOGRAM [command ...]
func cmdLatencyHistogram(c *Client, args [][]byte) { c.addMapLen(0) }

// LATENCY HELP
func cmdLatencyHelp(c *Client, args [][]byte) { c.addHelp("LATENCY", admin.LatencyHelp) }

// MEMORY USAGE key [SAMPLES count]
func cmdMemoryUsage(c *Client, args [][]byte) {
	if err := admin.ParseMemoryUsage(args[3:]); err != nil {
		c.addError(err.Error())
		return
	}
	e := c.curDB().Lookup(string(args[2]), c.now)
	if e == nil {
		c.addNull()
		return
	}
	c.addInt(e.MemUsage())
}

// MEMORY DOCTOR
func cmdMemoryDoctor(c *Client, args [][]byte) { c.addVerbatim(admin.MemoryDoctor) }

// MEMORY STATS
func cmdMemoryStats(c *Client, args [][]byte) {
	s := c.srv
	used := s.usedMemory()
	peak := s.info.Peak(used)
	var dbs []admin.DBStat
	for i, db := range s.dbs {
		if n := db.Size(); n > 0 {
			dbs = append(dbs, admin.DBStat{ID: i, Keys: n, Expires: db.Expires.Load()})
		}
	}
	c.addAppended(func(b []byte, proto int) []byte { return admin.AppendMemoryStats(b, proto, used, peak, dbs) })
}

// MEMORY MALLOC-STATS
func cmdMemoryMallocStats(c *Client, args [][]byte) { c.addVerbatim(admin.MallocStats) }

// MEMORY PURGE: where redis-server asks jemalloc to release dirty pages,
// shardnode runs a garbage collection and returns freed memory to the
// system, so that used_memory (the Go heap's objects, garbage included)
// afterwards counts only what is live. It blocks the caller for the
// collection; other clients keep running.
func cmdMemoryPurge(c *Client, args [][]byte) {
	debug.FreeOSMemory() // forces a collection first
	gcpace.InvalidateUsedMemory()
	c.addOK()
}

// MEMORY HELP
func cmdMemoryHelp(c *Client, args [][]byte) { c.addHelp("MEMORY", admin.MemoryHelp) }
