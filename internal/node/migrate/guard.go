package migrate

import (
	"sync"
	"sync/atomic"
)

// Key guards let MIGRATE transfer keys without holding their shard locks.
//
// Redis runs MIGRATE's transfer inside its one thread, so nothing else runs
// until the target has answered. shardnode's shard locks cover 1/64 of the
// slots each, so holding them for a 50 MB transfer would freeze the clients
// of 255 other slots. Instead MIGRATE guards its keys while it holds their
// shard locks, releases the locks for the transfer, and takes them again to
// delete the keys and drop the guards. A command that finds one of its keys
// guarded once it holds its locks releases them, waits for the guard, and
// locks again; so no command sees or changes a key between the moment
// MIGRATE serialised it and the moment it was deleted (or kept, on error),
// which is what Redis's single thread guarantees.

// guardKey names a guarded key.
type guardKey struct {
	db  int
	key string
}

// Guards is the server's set of keys MIGRATE is transferring. The zero
// Guards is empty and ready.
type Guards struct {
	// n is the number of guarded keys: the dispatcher's fast path reads
	// only this.
	n atomic.Int64
	// waiting counts the commands waiting for a guard.
	waiting atomic.Int64
	mu      sync.Mutex
	// keys maps a guarded key to a channel closed when its guard is
	// dropped.
	keys map[guardKey]chan struct{}
}

// Add guards keys of db, which the caller holds the shard locks of and
// which no other guard covers (the caller waited for those), and returns
// the channel that Release closes.
func (g *Guards) Add(db int, keys []string) chan struct{} {
	ch := make(chan struct{})
	g.mu.Lock()
	if g.keys == nil {
		g.keys = map[guardKey]chan struct{}{}
	}
	for _, k := range keys {
		g.keys[guardKey{db, k}] = ch
	}
	g.n.Add(int64(len(keys)))
	g.mu.Unlock()
	return ch
}

// Release drops the guards Add set (the caller holds the keys' shard
// locks again) and wakes the commands waiting for them.
func (g *Guards) Release(db int, keys []string, ch chan struct{}) {
	g.mu.Lock()
	for _, k := range keys {
		delete(g.keys, guardKey{db, k})
	}
	g.n.Add(-int64(len(keys)))
	g.mu.Unlock()
	close(ch)
}

// Lookup returns the guard's channel of key in db, or nil.
func (g *Guards) Lookup(db int, key string) chan struct{} {
	if g.n.Load() == 0 {
		return nil
	}
	g.mu.Lock()
	ch := g.keys[guardKey{db, key}]
	g.mu.Unlock()
	return ch
}

// Count is the number of guarded keys (one atomic load).
func (g *Guards) Count() int64 { return g.n.Load() }

// Wait waits until ch (a guard's channel) is closed, counted in Waiting.
func (g *Guards) Wait(ch chan struct{}) {
	g.waiting.Add(1)
	<-ch
	g.waiting.Add(-1)
}

// Waiting is the number of commands waiting for a guard.
func (g *Guards) Waiting() int64 { return g.waiting.Load() }
