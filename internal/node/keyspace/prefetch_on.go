//go:build amd64 && !race

package keyspace

import "unsafe"

// PrefetchEnabled turns pipeline prefetching on (perf_prefetch.go).
const PrefetchEnabled = true

// loadSlot reads a bucket slot without the shard's lock.
func loadSlot(p unsafe.Pointer) *Entry { return *(**Entry)(p) }
