// Package gcpace paces Go's garbage collector for the node and samples
// the heap it reports as used_memory (UsedMemory).
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
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// gcLive is the metric Tune reads: the heap the last cycle marked live.
const gcLive = "/gc/heap/live:bytes"

// gcPercentSet is the percentage last given to the runtime (0: none).
var gcPercentSet atomic.Int64

// gcCycles counts the collections seen to finish: a finalizer that every
// cycle runs (on an object made unreachable at once, re-armed by the
// finalizer) adds one. The live heap Tune reads changes only when a
// cycle ends, so the cron reads it (runtime/metrics takes locks and
// aggregates statistics: at ten reads a second, a noticeable part of an
// idle node's CPU) only after a cycle, within one beat of its sweep.
var (
	gcCycles    atomic.Uint64
	gcWatchOnce sync.Once
)

// gcSentinel is the finalized object: 16 bytes without pointers is above
// the tiny allocator's sizes, so each one is an allocation of its own that
// the next cycle frees.
type gcSentinel struct{ _ [2]uint64 }

func watchGC() {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		gcCycles.Add(1)
		watchGC()
	})
}

// AfterCycle runs tune only if a collection finished since its last run
// (seen is the caller's record of the cycles counted).
func AfterCycle(seen *uint64, tune func()) {
	gcWatchOnce.Do(watchGC)
	if c := gcCycles.Load(); c != *seen {
		*seen = c
		tune()
	}
}

// Tune sets the collector's percentage from base (gc-percent; 0 leaves the
// runtime's own setting, GOGC), headroom (gc-min-headroom) and the live
// heap.
func Tune(base, headroom int64) {
	if base == 0 {
		return
	}
	var live int64
	sample := []metrics.Sample{{Name: gcLive}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		live = int64(sample[0].Value.Uint64())
	}
	p := PercentFor(base, headroom, live)
	// Small changes of the live heap (±10 %) do not move the percentage.
	last := gcPercentSet.Load()
	if p == last || last != 0 && p != base && last != base && p*10 > last*9 && p*10 < last*11 {
		return
	}
	gcPercentSet.Store(p)
	debug.SetGCPercent(int(p))
}

// PercentFor is the percentage that lets a heap of live bytes grow by
// base % and by at least headroom bytes before the next collection.
func PercentFor(base, headroom, live int64) int64 {
	if base <= 0 || headroom <= 0 || live <= 0 {
		return base
	}
	return min(max(base, headroom*100/live), 1<<20)
}
