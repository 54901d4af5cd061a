package node

import (
	"math/rand/v2"
	"time"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// activeExpireCycle reclaims expired keys nobody reads, as Redis's
// activeExpireCycle does. Each database's shards are visited from a random
// starting shard (so a cycle cut short by its budget does not always favour
// the same shards); per shard, up to keysPerLoop keys are sampled from the
// volatile set and the expired ones deleted, again while more than the
// acceptable share of the sample was expired. The whole cycle stops when
// budget is used: the time is checked after every sample, and a shard lock
// is only held for one sample.
func (s *Server) activeExpireCycle(now int64, budget time.Duration) {
	effort := s.cfg.Int(config.DirActiveExpireEffort) - 1 // 0..9, as Redis
	if effort < 0 {
		effort = 0
	}
	keysPerLoop := 20 + 20/4*int(effort)
	acceptableStale := 10 - int(effort) // percent
	start := time.Now()
	for _, db := range s.dbs {
		if db.Expires.Load() == 0 {
			continue
		}
		first := rand.IntN(keyspace.NumShards)
		for n := 0; n < keyspace.NumShards; n++ {
			i := (first + n) % keyspace.NumShards
			for {
				sampled, expired := db.ExpireSample(i, now, keysPerLoop)
				if sampled == 0 || expired*100 <= sampled*acceptableStale {
					break
				}
				if time.Since(start) > budget {
					return
				}
			}
			if time.Since(start) > budget {
				return
			}
		}
	}
}
