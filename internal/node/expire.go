package node

import "time"

// activeExpireCycle samples keys with an expiry and deletes the expired
// ones, as Redis's activeExpireCycle does: per shard, take up to 20 keys
// from the volatile set; if more than a quarter were expired, sample again,
// until the time budget is used.
func (s *Server) activeExpireCycle(now int64, budget time.Duration) {
	start := time.Now()
	for _, db := range s.dbs {
		if db.expires.Load() == 0 {
			continue
		}
		for i := range db.shards {
			sh := &db.shards[i]
			for {
				sh.mu.Lock()
				if len(sh.volatile) == 0 {
					sh.mu.Unlock()
					break
				}
				sampled, expired := 0, 0
				var dead []string
				for k := range sh.volatile {
					sampled++
					if e := sh.find(k, keyHash(k)); e != nil && e.expired(now) {
						dead = append(dead, k)
					}
					if sampled >= 20 {
						break
					}
				}
				for _, k := range dead {
					db.expireEntry(k)
					expired++
				}
				sh.mu.Unlock()
				if expired*4 <= sampled || time.Since(start) > budget {
					break
				}
			}
			if time.Since(start) > budget {
				return
			}
		}
	}
}
