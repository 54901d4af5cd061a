package keyspace

import (
	"github.com/shardis/shardis/internal/node/value"
	"math/rand/v2"
)

// EvictionSample picks one key of shard i (one with an expiry if
// volatile, else any: the first of a random bucket) and returns it with
// its score, computed under the shard's lock; ok is false if the shard
// had no candidate.
func (db *DB) EvictionSample(i int, volatile bool, score func(e *Entry) int64) (key string, sc int64, ok bool) {
	sh := &db.Shards[i]
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	var e *Entry
	if volatile {
		for k := range sh.volatile {
			e = sh.find(k, KeyHash(k))
			break
		}
	} else if len(sh.buckets) > 0 {
		sh.FinishRehash()
		start := rand.IntN(len(sh.buckets))
		for i := 0; i < len(sh.buckets) && e == nil; i++ {
			e = sh.buckets[(start+i)%len(sh.buckets)]
		}
	}
	if e == nil {
		return "", 0, false
	}
	return e.Key, score(e), true
}

// MemUsage estimates the bytes used by the entry (MEMORY USAGE).
func (e *Entry) MemUsage() int64 {
	n := int64(entrySize) + int64(len(e.Key)) + 8
	if e.Obj == nil {
		return n + int64(cap(e.Str))
	}
	if v, ok := e.Obj.(value.Value); ok {
		return n + v.MemUsage()
	}
	return n + 64
}
