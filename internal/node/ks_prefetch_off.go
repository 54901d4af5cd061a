//go:build !amd64 || race

package node

import "unsafe"

// prefetchEnabled is off under the race detector and on architectures with
// a weaker memory order than amd64 (perf_prefetch.go).
const prefetchEnabled = false

func loadSlot(p unsafe.Pointer) *entry { return nil }
