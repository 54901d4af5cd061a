package keyspace

// Lock-free prefetch hints for pipelined batches (the root's
// perf_prefetch.go explains the scheme). The loads read a shard's bucket
// array without its lock: memory safe because a shard publishes the array
// with its mask atomically (bucketView) and pointer reads do not tear;
// nothing read decides anything. They are compiled out under the race
// detector and off amd64 (prefetch_on.go, prefetch_off.go).

import (
	"github.com/shardis/shardis/internal/node/value"
	"unsafe"
)

// PrefetchMembers touches the table cells of key's collection that
// looking up ms will read.
func (db *DB) PrefetchMembers(key string, ms [][]byte) uint32 {
	s := &db.Shards[ShardOf(key)]
	s.Mu.Lock()
	defer s.Mu.Unlock()
	e := s.find(key, KeyHash(key))
	if e == nil {
		return 0
	}
	switch v := e.Obj.(type) {
	case *value.Hash:
		if v.Dict != nil {
			return prefetchDict(v.Dict, ms)
		}
	case *value.Set:
		if v.Dict != nil {
			return prefetchDict(v.Dict, ms)
		}
	case *value.ZSet:
		if v.Dict != nil {
			return value.PrefetchZSetMembers(v.Dict, ms)
		}
	}
	return 0
}

// prefetchDict loads ms's bucket slots in d, then the first node of each
// and its member's first byte.
func prefetchDict[V any](d *value.Dict[V], ms [][]byte) uint32 {
	if len(d.Buckets) == 0 {
		return 0
	}
	var heads [value.MaxPrefetch]*value.DictNode[V]
	for i, m := range ms {
		heads[i] = d.Buckets[d.BucketOf(value.DictHash(bstr(m)))]
	}
	var sink uint32
	for _, n := range heads[:len(ms)] {
		if n != nil {
			sink += n.Hash
			if len(n.Key) > 0 {
				sink += uint32(*unsafe.StringData(n.Key))
			}
		}
	}
	return sink
}

// PrefetchKeys warms the cache lines looking up keys will read: every
// key's bucket slot, then every slot's first entry and its key bytes, in
// tight loops of independent loads so the misses overlap. It takes no
// lock and returns a sum of what it read. At most len(keys) <= 64.
func (db *DB) PrefetchKeys(keys []string) uint32 {
	if !PrefetchEnabled {
		return 0
	}
	var slots [64]unsafe.Pointer
	n := 0
	for _, key := range keys[:min(len(keys), len(slots))] {
		v := db.Shards[ShardOf(key)].view.Load()
		if v == nil {
			continue
		}
		i := KeyHash(key) & v.mask
		slots[n] = unsafe.Add(v.base, uintptr(i)*unsafe.Sizeof((*Entry)(nil)))
		n++
	}
	var heads [64]*Entry
	for i := 0; i < n; i++ {
		heads[i] = loadSlot(slots[i])
	}
	var sink uint32
	for i := 0; i < n; i++ {
		if e := heads[i]; e != nil {
			sink += e.hash
			if len(e.Key) > 0 {
				sink += uint32(*unsafe.StringData(e.Key))
			}
		}
	}
	return sink
}
