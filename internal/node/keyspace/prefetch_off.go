//go:build !amd64 || race

package keyspace

import "unsafe"

// PrefetchEnabled is off under the race detector and on architectures with
// a weaker memory order than amd64 (perf_prefetch.go).
const PrefetchEnabled = false

func loadSlot(p unsafe.Pointer) *Entry { return nil }
