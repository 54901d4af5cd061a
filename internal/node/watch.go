package node

import (
	"sync"
	"sync/atomic"
)

// watchKey is a key a client WATCHes.
type watchKey struct {
	db  int
	key string
}

// watchRegistry maps watched keys to the clients watching them. Every write
// calls touch; it is a leaf lock (never held while taking a shard lock).
// n, the number of (client, key) watches, is an atomic so a write with
// nothing watched anywhere does not take the registry's lock.
type watchRegistry struct {
	mu   sync.Mutex
	keys map[watchKey]map[*Client]struct{}
	n    atomic.Int64
	// forked is the forked Lua debugging session in progress, whose
	// writes neither touch WATCHes nor notify (ldb.go).
	forked atomic.Pointer[ldbUndo]
}

func newWatchRegistry() *watchRegistry {
	return &watchRegistry{keys: make(map[watchKey]map[*Client]struct{})}
}

func (w *watchRegistry) watch(c *Client, db int, key string) {
	wk := watchKey{db, key}
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.keys[wk]
	if m == nil {
		m = make(map[*Client]struct{})
		w.keys[wk] = m
	}
	if _, ok := m[c]; ok {
		return
	}
	m[c] = struct{}{}
	w.n.Add(1)
	c.watched = append(c.watched, wk)
}

func (w *watchRegistry) unwatchAll(c *Client) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wk := range c.watched {
		if m := w.keys[wk]; m != nil {
			if _, ok := m[c]; ok {
				delete(m, c)
				w.n.Add(-1)
			}
			if len(m) == 0 {
				delete(w.keys, wk)
			}
		}
	}
	c.watched = nil
}

// touch marks the watchers of key dirty. A WATCH that starts while a
// write of its key is running is ordered by the key's shard lock (WATCH
// takes it too), so the lock-free n == 0 check cannot miss a watcher that
// the write must break.
func (w *watchRegistry) touch(db int, key string) {
	if w.n.Load() == 0 || w.forked.Load().Muted(db, key) {
		return
	}
	w.mu.Lock()
	for c := range w.keys[watchKey{db, key}] {
		c.setFlag(clientDirtyCAS, true)
	}
	w.mu.Unlock()
}

// touchDB marks every watcher of a key in db dirty (FLUSHDB, SWAPDB);
// db < 0 means all databases.
func (w *watchRegistry) touchDB(db int) {
	w.mu.Lock()
	for wk, m := range w.keys {
		if db < 0 || wk.db == db {
			for c := range m {
				c.setFlag(clientDirtyCAS, true)
			}
		}
	}
	w.mu.Unlock()
}

// touchWatchedKey is called by every keyspace write.
func (s *Server) touchWatchedKey(db int, key string) { s.watches.touch(db, key) }

// signalModifiedKey is what write handlers call after changing key: it
// invalidates WATCHes and wakes clients blocked on the key.
func (c *Client) signalModifiedKey(key string) {
	c.srv.watches.touch(c.db, key)
	// A deleted or overwritten stream unblocks its XREADGROUP clients
	// (Redis signals the key from dbGenericDelete and dbOverwrite).
	c.signalKeyAsReady(key)
}

// watchedExpired reports whether a watched key has expired since WATCH (an
// expired key breaks the transaction, as in Redis).
func (c *Client) watchedExpired() bool {
	for _, wk := range c.watched {
		db := c.srv.dbs[wk.db]
		e := db.GetEntry(wk.key)
		if e != nil && e.Expired(c.now) {
			return true
		}
	}
	return false
}
