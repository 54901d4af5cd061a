package node

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

// keyGuards is the server's set of keys MIGRATE is transferring.
type keyGuards struct {
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

// add guards keys of db, which the caller holds the shard locks of and
// which no other guard covers (the caller waited for those), and returns
// the channel that release closes.
func (g *keyGuards) add(db int, keys []string) chan struct{} {
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

// release drops the guards add set (the caller holds the keys' shard
// locks again) and wakes the commands waiting for them.
func (g *keyGuards) release(db int, keys []string, ch chan struct{}) {
	g.mu.Lock()
	for _, k := range keys {
		delete(g.keys, guardKey{db, k})
	}
	g.n.Add(-int64(len(keys)))
	g.mu.Unlock()
	close(ch)
}

// lookup returns the guard's channel of key in db, or nil.
func (g *keyGuards) lookup(db int, key string) chan struct{} {
	if g.n.Load() == 0 {
		return nil
	}
	g.mu.Lock()
	ch := g.keys[guardKey{db, key}]
	g.mu.Unlock()
	return ch
}

// guardOf returns the guard of the first guarded key among cmd's keys in
// the client's database, or nil.
func (c *Client) guardOf(cmd *command, args [][]byte) chan struct{} {
	g := &c.srv.keyGuards
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				if ch := g.lookup(c.db, string(args[p])); ch != nil {
					return ch
				}
			}
		}
		return nil
	}
	if cmd.first <= 0 {
		return nil
	}
	last := cmd.last
	if last < 0 {
		last = len(args) + last
	}
	last = min(last, len(args)-1)
	for i := cmd.first; i <= last; i += max(cmd.step, 1) {
		if ch := g.lookup(c.db, string(args[i])); ch != nil {
			return ch
		}
	}
	return nil
}

// guardOfMulti is guardOf for the commands queued in MULTI and the
// WATCHed keys.
func (c *Client) guardOfMulti() chan struct{} {
	saved := c.db
	defer func() { c.db = saved }()
	for _, q := range c.multi {
		cmd := c.srv.queuedCommand(q)
		if cmd == nil {
			continue
		}
		if cmd.name == "select" && len(q) == 2 {
			if n, ok := parseInt(q[1]); ok && n >= 0 && int(n) < len(c.srv.dbs) {
				c.db = int(n)
			}
			continue
		}
		if ch := c.guardOf(cmd, q); ch != nil {
			return ch
		}
	}
	for _, wk := range c.watched {
		if ch := c.srv.keyGuards.lookup(wk.db, wk.key); ch != nil {
			return ch
		}
	}
	return nil
}

// settleLocked runs once a command holds its locks: it waits out the key
// guards of its keys (relock takes the same locks again) and, in cluster
// mode, repeats the slot check under the locks when the dispatcher's
// check (which set slotRoute) saw a migrating or importing slot or the
// routing changed since. It returns
// the redirect error to reply instead of running the command, or "".
func (c *Client) settleLocked(cmd *command, args [][]byte, guard func() chan struct{}, relock func()) string {
	s := c.srv
	for s.keyGuards.n.Load() != 0 {
		ch := guard()
		if ch == nil {
			break
		}
		c.unlockHeld()
		s.keyGuards.waiting.Add(1)
		<-ch
		s.keyGuards.waiting.Add(-1)
		relock()
	}
	rt := c.slotRoute
	c.slotRoute = nil
	if rt == nil || !c.slotRecheck && s.cluster.route.Load() == rt {
		return ""
	}
	return c.clusterCheck(cmd, args, true)
}
