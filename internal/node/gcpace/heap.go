package gcpace

import (
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// memSampler caches the Go heap's live object bytes, which INFO reports as
// used_memory and maxmemory is checked against.
type memSampler struct {
	mu   sync.Mutex
	at   time.Time
	used atomic.Int64
}

var memStat = &memSampler{}

// UsedMemory is the Go heap's live object bytes, read from the runtime
// at most every 10 ms (INFO's used_memory, the maxmemory check).
func UsedMemory() int64 {
	m := memStat
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.at) > 10*time.Millisecond {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			m.used.Store(int64(s[0].Value.Uint64()))
		}
		m.at = time.Now()
	}
	return m.used.Load()
}

// InvalidateUsedMemory makes the next UsedMemory read the runtime's
// figure again.
func InvalidateUsedMemory() {
	m := memStat
	m.mu.Lock()
	m.at = time.Time{}
	m.mu.Unlock()
}

// Freed lowers the cached figure by n bytes just freed (eviction), until
// the next read of the runtime's.
func Freed(n int64) {
	m := memStat
	m.mu.Lock()
	m.used.Add(-n)
	m.mu.Unlock()
}
