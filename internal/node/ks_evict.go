package node

import (
	"github.com/shardis/shardis/internal/node/value"
	"math/rand/v2"
)

// evictionSample picks one key of shard i (one with an expiry if
// volatile, else any: the first of a random bucket) and returns it with
// its score, computed under the shard's lock; ok is false if the shard
// had no candidate.
func (db *DB) evictionSample(i int, volatile bool, score func(e *entry) int64) (key string, sc int64, ok bool) {
	sh := &db.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var e *entry
	if volatile {
		for k := range sh.volatile {
			e = sh.find(k, keyHash(k))
			break
		}
	} else if len(sh.buckets) > 0 {
		sh.finishRehash()
		start := rand.IntN(len(sh.buckets))
		for i := 0; i < len(sh.buckets) && e == nil; i++ {
			e = sh.buckets[(start+i)%len(sh.buckets)]
		}
	}
	if e == nil {
		return "", 0, false
	}
	return e.key, score(e), true
}

// memUsage estimates the bytes used by the entry (MEMORY USAGE).
func (e *entry) memUsage() int64 {
	n := int64(80 + len(e.key) + 8)
	if e.obj == nil {
		return n + int64(cap(e.str))
	}
	if v, ok := e.obj.(value.Value); ok {
		return n + v.MemUsage()
	}
	return n + 64
}
