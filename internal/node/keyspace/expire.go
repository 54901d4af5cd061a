package keyspace

// ExpireSample samples up to n keys of shard i's volatile set under its
// lock and deletes the expired ones (reported to the observer).
func (db *DB) ExpireSample(i int, now int64, n int) (sampled, expired int) {
	sh := &db.Shards[i]
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	if len(sh.volatile) == 0 {
		return 0, 0
	}
	var deadBuf [64]string
	dead := deadBuf[:0]
	for k := range sh.volatile { // map iteration starts at a random key
		sampled++
		if e := sh.find(k, KeyHash(k)); e != nil && e.Expired(now) {
			dead = append(dead, k)
		}
		if sampled >= n {
			break
		}
	}
	for _, k := range dead {
		db.ExpireEntry(k)
	}
	return sampled, len(dead)
}
