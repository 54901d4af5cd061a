package node

import (
	"math/rand/v2"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/gcpace"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// usedMemory returns the estimate of memory used by the server.
func (s *Server) usedMemory() int64 { return gcpace.UsedMemory() }

// freeMemoryIfNeeded evicts keys by maxmemory-policy until the estimate is
// below maxmemory. It returns false when memory is still over the limit
// and nothing more can be evicted (the command gets the OOM error).
func (s *Server) freeMemoryIfNeeded() bool {
	max := s.cfg.Int(config.DirMaxmemory)
	if max <= 0 {
		return true
	}
	used := s.usedMemory()
	if used <= max {
		return true
	}
	policy := s.cfg.Get(config.DirMaxmemoryPolicy)
	if policy == "noeviction" {
		return false
	}
	toFree := used - max
	var freed int64
	samples := int(s.cfg.Int(config.DirMaxmemorySamples))
	for tries := 0; freed < toFree && tries < 10000; tries++ {
		db, key, ok := s.pickEvictionKey(policy, samples)
		if !ok {
			return false
		}
		sh := db.KeyShard(key)
		sh.Mu.Lock()
		if e := db.GetEntry(key); e != nil {
			freed += e.MemUsage()
			db.Remove(key)
			s.stats.evictedKeys.Add(1)
			s.propagateExpired(db.ID, key)
			s.notifyKeyspaceEvent(notifyEvicted, "evicted", key, db.ID)
			s.watches.touch(db.ID, key)
		}
		sh.Mu.Unlock()
	}
	gcpace.Freed(freed)
	return true
}

// pickEvictionKey samples keys and returns the best candidate for the
// policy (approximated LRU/LFU/TTL as Redis does).
func (s *Server) pickEvictionKey(policy string, samples int) (*keyspace.DB, string, bool) {
	volatile := policy[:8] == "volatile"
	var bestDB *keyspace.DB
	var bestKey string
	var bestScore int64 = -1
	for _, db := range s.dbs {
		if db.Size() == 0 || (volatile && db.Expires.Load() == 0) {
			continue
		}
		for n := 0; n < samples; n++ {
			key, score, ok := db.EvictionSample(rand.IntN(keyspace.NumShards), volatile, func(e *keyspace.Entry) int64 {
				switch policy {
				case "allkeys-lru", "volatile-lru":
					return int64(s.lruClock() - e.LRU)
				case "allkeys-lfu", "volatile-lfu":
					return 255 - int64(e.LRU&0xff)
				case "volatile-ttl":
					return 1<<62 - e.Expire
				default:
					return rand.Int64N(1 << 30)
				}
			})
			if ok && score > bestScore {
				bestScore, bestDB, bestKey = score, db, key
			}
		}
	}
	return bestDB, bestKey, bestDB != nil
}

// lruClock is the LRU clock in seconds, as stored in entry.lru: the
// server clock's (lookups store c.now/1000, the same clock).
func (s *Server) lruClock() uint32 { return uint32(s.now().Unix()) }
