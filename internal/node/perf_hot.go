package node

import (
	"sync/atomic"
	"time"
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
}

// procStart is the origin of the monotonic command clock.
var procStart = time.Now()

// clockNow returns the current Unix time in ms and the monotonic time
// since procStart (for durations): one clock read instead of time.Now's
// two plus time.Since's one.
func (s *Server) clockNow() (unixMs int64, mono time.Duration) {
	mono = time.Since(procStart)
	off := s.perf.wallOffset.Load()
	if off == 0 {
		off = s.syncClock()
	}
	return (off + int64(mono)) / int64(time.Millisecond), mono
}

// syncClock re-reads the wall clock (cron, first use).
func (s *Server) syncClock() int64 {
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
	snap          *configSnapshot
	maxmemory     int64
	slowlogSlower int64 // slowlog-log-slower-than (µs; < 0 disables)
	timeout       int64 // client idle timeout (s)
	notifyFlags   int   // parsed notify-keyspace-events
}

// hot returns the current hotConfig: two atomic loads of read-mostly
// pointers when nothing changed.
func (s *Server) hot() *hotConfig {
	sn := s.cfg.snap.Load()
	h := s.perf.hot.Load()
	if h != nil && h.snap == sn && sn != nil {
		return h
	}
	h = &hotConfig{
		snap:          sn,
		maxmemory:     s.cfg.Int("maxmemory"),
		slowlogSlower: s.cfg.Int("slowlog-log-slower-than"),
		timeout:       s.cfg.Int("timeout"),
	}
	h.notifyFlags, _ = parseNotifyFlags(s.cfg.Get("notify-keyspace-events"))
	if sn != nil {
		s.perf.hot.Store(h)
	}
	return h
}
