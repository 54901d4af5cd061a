package keyspace

import (
	"slices"
	"sync"
)

// ShardRef identifies a shard lock: database and shard index. Shard locks
// are always taken in (db, shard) order, which is what makes commands on
// several shards (and MULTI/EXEC, and blocked clients being served)
// deadlock-free.
type ShardRef struct {
	DB    int // database number
	Shard int // shard index in it
}

// SortShardRefs sorts refs in lock order, drops duplicates and returns
// the result (refs' backing array, reused).
func SortShardRefs(refs []ShardRef) []ShardRef {
	if len(refs) < 2 {
		return refs
	}
	slices.SortFunc(refs, func(a, b ShardRef) int {
		if a.DB != b.DB {
			return a.DB - b.DB
		}
		return a.Shard - b.Shard
	})
	return slices.Compact(refs)
}

// LockShards locks the shards of refs, which must be sorted and unique
// (SortShardRefs), in that order, and appends their mutexes to held.
func LockShards(dbs []*DB, refs []ShardRef, held []*sync.Mutex) []*sync.Mutex {
	for _, k := range refs {
		m := &dbs[k.DB].Shards[k.Shard].Mu
		m.Lock()
		held = append(held, m)
	}
	return held
}

// UnlockShards unlocks held in reverse order.
func UnlockShards(held []*sync.Mutex) {
	for i := len(held) - 1; i >= 0; i-- {
		held[i].Unlock()
	}
}
