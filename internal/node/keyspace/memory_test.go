package keyspace

import (
	"fmt"
	"runtime"
	"testing"
)

// nopObserver ignores the keyspace's reports.
type nopObserver struct{}

func (nopObserver) Expired(int, string)    {}
func (nopObserver) Added(int, string, any) {}

// TestMemoryPerKey measures the heap a database holds per small string
// key (16-byte key and value, as the inline entry of entry_inline.go
// stores them), for 1M keys: the entry, the bucket slots and, with the
// per-slot index, its links. docs/ARCHITECTURE.md quotes the figure. It
// checks the figure is within the expected size class, so a change of the
// entry's layout that costs a size class fails here.
func TestMemoryPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1M keys")
	}
	const n = 1 << 20
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
	}
	val := []byte("val:000000000000")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	db := NewDB(NewShared(nopObserver{}), 0)
	for _, k := range keys {
		sh := &db.Shards[ShardOf(string(k))]
		sh.Mu.Lock()
		db.AddString(k, val, 0)
		sh.Mu.Unlock()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d keys: %.1f bytes per key (entry %d bytes)", n, per, entrySize)
	if per > 160 {
		t.Fatalf("%.1f bytes per key, want at most 160", per)
	}
	runtime.KeepAlive(db)
	runtime.KeepAlive(keys)
}
