package repl

import "sync"

// LocalExpires is the set of keys that local writes gave a TTL on a
// writable replica (replica-read-only no), per database: they are the
// replica's own, and it expires them itself (Redis's
// rememberSlaveKeyWithExpire and expireSlaveKeys), while the keys of its
// master's dataset die only by the master's DEL. Its methods are safe for
// concurrent use.
type LocalExpires struct {
	mu   sync.Mutex
	keys map[int]map[string]struct{}
}

// DBKey is a key of database DB.
type DBKey struct {
	DB  int
	Key string
}

// Remember adds keys of database db.
func (le *LocalExpires) Remember(db int, keys []string) {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.keys == nil {
		le.keys = make(map[int]map[string]struct{})
	}
	m := le.keys[db]
	if m == nil {
		m = make(map[string]struct{})
		le.keys[db] = m
	}
	for _, k := range keys {
		m[k] = struct{}{}
	}
}

// Keys returns the remembered keys, in no order.
func (le *LocalExpires) Keys() []DBKey {
	le.mu.Lock()
	defer le.mu.Unlock()
	var out []DBKey
	for db, m := range le.keys {
		for k := range m {
			out = append(out, DBKey{db, k})
		}
	}
	return out
}

// Forget drops one key (it expired, or no longer has a TTL).
func (le *LocalExpires) Forget(db int, key string) {
	le.mu.Lock()
	delete(le.keys[db], key)
	le.mu.Unlock()
}

// Reset drops every key (the node became a master, or a full resync
// replaced the dataset).
func (le *LocalExpires) Reset() {
	le.mu.Lock()
	le.keys = nil
	le.mu.Unlock()
}
