//go:build amd64 && !race

package node

import "unsafe"

// prefetchEnabled turns pipeline prefetching on (perf_prefetch.go).
const prefetchEnabled = true

// loadSlot reads a bucket slot without the shard's lock.
func loadSlot(p unsafe.Pointer) *entry { return *(**entry)(p) }
