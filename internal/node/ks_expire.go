package node

// expireSample samples up to n keys of shard i's volatile set under its
// lock and deletes the expired ones (reported to the observer).
func (db *DB) expireSample(i int, now int64, n int) (sampled, expired int) {
	sh := &db.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.volatile) == 0 {
		return 0, 0
	}
	var deadBuf [64]string
	dead := deadBuf[:0]
	for k := range sh.volatile { // map iteration starts at a random key
		sampled++
		if e := sh.find(k, keyHash(k)); e != nil && e.expired(now) {
			dead = append(dead, k)
		}
		if sampled >= n {
			break
		}
	}
	for _, k := range dead {
		db.expireEntry(k)
	}
	return sampled, len(dead)
}
