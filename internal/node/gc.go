package node

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Garbage collector pacing.
//
// Go collects when the heap has grown by gc-percent % over what the last
// collection found live. A low percentage keeps the RSS of a large
// dataset near its live size (gc-percent defaults to 50), but on a small
// dataset it means a collection every few megabytes of allocation: a
// keyspace growing from empty to 12 MB under a write load went through six
// cycles (2, 3, 4.5, 7, 10, 15 MB), each marking concurrently with the
// commands for 10-40 ms and slowing them (with io-threads 1 the collector
// shares the one thread that runs commands). gc-min-headroom (default
// 16 MB) is a floor under the headroom: the percentage is raised so the
// heap may grow by at least that much between collections. Datasets whose
// gc-percent headroom is already larger (live ≥ 32 MB at the default 50 %)
// are not affected, so the RSS of large datasets stays as it was; a small
// one may hold up to 16 MB of garbage before a collection.

// gcLive is the metric tuneGC reads: the heap the last cycle marked live.
const gcLive = "/gc/heap/live:bytes"

// gcPercentSet is the percentage last given to the runtime (0: none).
var gcPercentSet atomic.Int64

// tuneGC sets the collector's percentage from gc-percent, gc-min-headroom
// and the live heap. The cron calls it every tick; configuration changes
// call it at once.
func (s *Server) tuneGC() {
	base := s.cfg.Int(DirGCPercent)
	if base == 0 {
		return // 0 leaves the runtime's own setting (GOGC)
	}
	var live int64
	sample := []metrics.Sample{{Name: gcLive}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		live = int64(sample[0].Value.Uint64())
	}
	p := gcPercentFor(base, s.cfg.Int(DirGCMinHeadroom), live)
	// Small changes of the live heap (±10 %) do not move the percentage.
	last := gcPercentSet.Load()
	if p == last || last != 0 && p != base && last != base && p*10 > last*9 && p*10 < last*11 {
		return
	}
	gcPercentSet.Store(p)
	debug.SetGCPercent(int(p))
}

// gcPercentFor is the percentage that lets a heap of live bytes grow by
// base % and by at least headroom bytes before the next collection.
func gcPercentFor(base, headroom, live int64) int64 {
	if base <= 0 || headroom <= 0 || live <= 0 {
		return base
	}
	return min(max(base, headroom*100/live), 1<<20)
}
