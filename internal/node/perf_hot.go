package node

import (
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/clients"
	"github.com/shardis/shardis/internal/node/clock"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/value"
)

// perfState holds what the per-command path reads instead of shared
// locks, maps and clock reads.
type perfState struct {
	hot atomic.Pointer[hotConfig]
	// wallOffset is the Unix time in ns minus the monotonic time since
	// procStart, so one monotonic clock read gives both the command's
	// wall time (c.now) and its duration. The cron re-syncs it every
	// tick, so a step of the wall clock is picked up within 1/hz s.
	wallOffset atomic.Int64
	// virt is the server's clock when it is not the real one (WithClock):
	// the command clock's wall part then comes from it, and wallOffset
	// stays 0 so that every reading takes wallSlow. The real clock leaves
	// it nil; its path is the one monotonic read and no check of virt.
	virt clock.Clock
}

// procStart is the origin of the monotonic command clock.
var procStart = time.Now()

// clockNow returns the current Unix time in ms and the monotonic time
// since procStart (for durations): one clock read instead of time.Now's
// two plus time.Since's one.
//
// mono always measures real time: it times work (a command's duration),
// it schedules nothing. unixMs is the server clock's time.
func (s *Server) clockNow() (unixMs int64, mono time.Duration) {
	mono = time.Since(procStart)
	off := s.perf.wallOffset.Load()
	if off == 0 {
		return s.wallSlow(mono), mono
	}
	return (off + int64(mono)) / int64(time.Millisecond), mono
}

// wallSlow is wallMs's path when no offset is set: the first use, or a
// clock other than the real one (WithClock), which never sets it, so the
// real clock's path pays no check for the injected one.
func (s *Server) wallSlow(mono time.Duration) int64 {
	if v := s.perf.virt; v != nil {
		return v.Now().UnixMilli()
	}
	return (s.syncClock() + int64(mono)) / int64(time.Millisecond)
}

// syncClock re-reads the wall clock (cron, first use).
func (s *Server) syncClock() int64 {
	if s.perf.virt != nil {
		return 0 // the offset stays 0: wallSlow reads the clock
	}
	now := time.Now()
	off := now.UnixNano() - int64(now.Sub(procStart))
	s.perf.wallOffset.Store(off)
	return off
}

// hotConfig holds the directives the per-command path reads, parsed once
// per configuration change: a command must not pay map lookups and string
// parsing for settings that almost never change. It is rebuilt lazily when
// the Config publishes a new snapshot (every CONFIG SET does).
type hotConfig struct {
	snap          *config.Snapshot
	maxmemory     int64
	slowlogSlower int64 // slowlog-log-slower-than (µs; < 0 disables)
	timeout       int64 // client idle timeout (s)
	notifyFlags   int   // parsed notify-keyspace-events
	// Write refusals (writeRefused, persistRefused).
	replicaReadOnly, stopWritesOnBgsaveErr, saveRules bool
	minReplicasToWrite                                int64
	// minReplicasAck and minReplicasAckTimeout (ms) are
	// min-replicas-ack and its timeout (replication_ack.go).
	minReplicasAck, minReplicasAckTimeout int64
	// Encoding thresholds of the collection types.
	hashLim     value.HashLimits
	zsetLim     value.ZSetLimits
	intsetLimit int
	// outLimits is client-output-buffer-limit per client class.
	outLimits [clients.Classes]clients.OutputLimit
}

// hot returns the current hotConfig: two atomic loads of read-mostly
// pointers when nothing changed.
func (s *Server) hot() *hotConfig {
	sn := s.cfg.Snapshot()
	h := s.perf.hot.Load()
	if h != nil && h.snap == sn && sn != nil {
		return h
	}
	h = &hotConfig{
		snap:          sn,
		maxmemory:     s.cfg.Int(config.DirMaxmemory),
		slowlogSlower: s.cfg.Int(config.DirSlowlogLogSlowerThan),
		timeout:       s.cfg.Int(config.DirTimeout),
	}
	h.notifyFlags, _ = config.ParseNotifyFlags(s.cfg.Get(config.DirNotifyKeyspaceEvents))
	h.replicaReadOnly = s.cfg.Bool(config.DirReplicaReadOnly)
	h.stopWritesOnBgsaveErr = s.cfg.Bool(config.DirStopWritesOnBgsaveError)
	h.saveRules = s.cfg.Get(config.DirSave) != ""
	h.minReplicasToWrite = s.cfg.Int(config.DirMinReplicasToWrite)
	h.minReplicasAck = s.cfg.Int(config.DirMinReplicasAck)
	h.minReplicasAckTimeout = s.cfg.Int(config.DirMinReplicasAckTimeout)
	h.hashLim = value.HashLimits{Entries: int(s.cfg.Int(config.DirHashMaxListpackEntries)), Value: int(s.cfg.Int(config.DirHashMaxListpackValue))}
	h.zsetLim = value.ZSetLimits{Entries: int(s.cfg.Int(config.DirZsetMaxListpackEntries)), Value: int(s.cfg.Int(config.DirZsetMaxListpackValue))}
	h.intsetLimit = int(s.cfg.Int(config.DirSetMaxIntsetEntries))
	h.outLimits = clients.ParseOutputLimits(s.cfg.Get(config.DirClientOutputBufferLimit))
	if sn != nil {
		s.perf.hot.Store(h)
	}
	return h
}

// statAcc accumulates a client's INFO commandstats counters for a run of
// one command, so a pipeline of GETs does not hit the command's shared
// counters (and total_commands_processed) once per GET from both cores.
// It is flushed when the client runs another command and before a batch's
// replies are written (Client.flush): a count is visible before its reply
// is, and INFO on the same connection sees the commands before it.
type statAcc struct {
	cmd                 *command
	calls, usec, failed int64
	// batched is set by serve (the client's own read loop, which calls
	// flush); other clients (the master link) count each call at once.
	batched bool
}

// statsBefore is called before cmd runs: counts of another command are
// published first, so the command (INFO, CONFIG RESETSTAT) sees them.
func (c *Client) statsBefore(cmd *command) {
	if c.stat.cmd != cmd {
		c.flushStats()
		c.stat.cmd = cmd
	}
}

// countCall records one call of cmd that took usec µs.
func (c *Client) countCall(cmd *command, usec int64, failed bool) {
	a := &c.stat
	if a.cmd != cmd {
		c.flushStats()
		a.cmd = cmd
	}
	a.calls++
	a.usec += usec
	if failed {
		a.failed++
	}
	if !a.batched {
		c.flushStats()
	}
}

// flushStats adds the accumulated counts to the shared counters.
func (c *Client) flushStats() {
	a := &c.stat
	if a.calls == 0 {
		return
	}
	a.cmd.stats.calls.Add(a.calls)
	a.cmd.stats.usec.Add(a.usec)
	if a.failed > 0 {
		a.cmd.stats.failed.Add(a.failed)
	}
	c.srv.stats.commands.Add(a.calls)
	a.calls, a.usec, a.failed = 0, 0, 0
}

// wallMs converts a reading of the command clock to Unix ms.
// With a clock other than the real one the reading is ignored and the
// clock's current time returned.
func (s *Server) wallMs(mono time.Duration) int64 {
	off := s.perf.wallOffset.Load()
	if off == 0 {
		return s.wallSlow(mono)
	}
	return (off + int64(mono)) / int64(time.Millisecond)
}

// cmdClock chains the command clock through a batch: the reading taken
// when a read returned (serve) or when the previous command ended starts
// the next command, so a command costs one clock read, not two. Only the
// client's read loop sets it, and anything that can wait between two
// commands (a CLIENT PAUSE) drops it.
type cmdClock struct {
	mark time.Duration
	ok   bool
}

// commandStart returns the running command's time (c.now) and the clock
// reading its duration is measured from.
func (c *Client) commandStart() (unixMs int64, mono time.Duration) {
	if c.clock.ok {
		c.clock.ok = false
		return c.srv.wallMs(c.clock.mark), c.clock.mark
	}
	return c.srv.clockNow()
}

// commandEnd reads the clock at the end of a command; the reading starts
// the client's next command of the batch.
func (c *Client) commandEnd() time.Duration {
	m := time.Since(procStart)
	if c.stat.batched {
		c.clock = cmdClock{m, true}
	}
	return m
}

// markRead records the clock when the read loop got data (lastIO, and
// the start of the batch's first command).
func (c *Client) markRead() {
	m := time.Since(procStart)
	c.clock = cmdClock{m, true}
	c.lastIO.Store(c.srv.wallMs(m))
}

// lookupCmd is table.lookup with a one-entry cache: a pipeline usually
// repeats one command, whose name is then compared instead of hashed.
func (c *Client) lookupCmd(name []byte) *command {
	if last := c.cmdCache; last != nil && len(name) == len(last.name) {
		i := 0
		for ; i < len(name); i++ {
			ch := name[i]
			if ch >= 'A' && ch <= 'Z' {
				ch += 'a' - 'A'
			}
			if ch != last.name[i] {
				break
			}
		}
		if i == len(name) {
			return last
		}
	}
	cmd := c.srv.table.lookup(name)
	if cmd != nil {
		c.cmdCache = cmd
	}
	return cmd
}

// now is the server clock's time, for everything but the per-command
// clock (clockNow): timestamps, deadlines, ages.
func (s *Server) now() time.Time { return s.clk.Now() }

// nowMs is now in unix ms.
func (s *Server) nowMs() int64 { return s.clk.Now().UnixMilli() }
