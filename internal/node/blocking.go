package node

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/block"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/netio"
	"github.com/shardis/shardis/internal/node/value"
)

// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, the
// sorted-set BZPOPMIN, BZPOPMAX, BZMPOP, and the stream XREAD and
// XREADGROUP) follow Redis's model:
//
//   - A handler that finds nothing to serve calls c.blockForKeys with a
//     blockSpec while its shard locks are still held. The client is put at
//     the tail of a FIFO of waiters for each of its keys (per database),
//     releases its locks and parks until it is served, times out, is
//     unblocked (CLIENT UNBLOCK), is killed or its peer hangs up.
//   - A command that adds elements to a key calls c.signalKeyAsReady(key)
//     (db.add also signals new list/zset keys, so RENAME, SORT ... STORE,
//     COPY and MOVE wake waiters). After that command has released its
//     locks, the dispatcher calls handleReadyKeys on the same goroutine:
//     for each ready key it takes the key's waiters in FIFO order, locks the
//     shards the waiter needs (its keys and its destination), and runs the
//     waiter's serve function, which pops and writes the reply into the
//     WAITING client's output buffer, then wakes that client. It goes on
//     until serve reports the key cannot serve more (missing, emptied or
//     of another type). So the first client blocked is the first served,
//     pushes inside MULTI/EXEC serve after EXEC, and a chain of BLMOVEs is
//     served before the pusher gets its reply.
//
// The queues, the serving loop and the wait are package block; this file
// is the node's side: what a waiter locks and how it is served.
// Lock order: shard locks (in (db, shard) order), then a waiter's lock,
// then the registry's. The registry lock is a leaf.

// hangupWatchDelay is how long a client waits blocked before a watcher
// looks for its peer hanging up.
const hangupWatchDelay = 2 * time.Millisecond

// blockSpec describes what a blocking command waits for.
type blockSpec struct {
	// keys are the keys to wait on, in the command's order (duplicates are
	// ignored). They are copied.
	keys []string
	// target is an extra key the serve function writes (BLMOVE's
	// destination); its shard is locked too when serving. Empty: none.
	target string
	// timeout is the absolute deadline in unix ms; 0 waits forever.
	timeout int64
	// serve runs on the serving goroutine, with the shards of keys and
	// target locked and c being the BLOCKED client (parked, so its fields
	// and output buffer are safe to use; c.now is fresh). key is the key
	// that became ready. It returns false, without replying, when key
	// cannot serve the client (missing, empty, another type): the client
	// stays blocked. Otherwise it does what the command does when data is
	// there: pops, replies with c.addXxx, notifies, signals modified keys,
	// and uses c.markDirty / c.propagateAs exactly like a handler (BLPOP
	// served propagates as LPOP): the serving side propagates them under
	// the locks. A reply that is an error (WRONGTYPE destination) counts as
	// served.
	serve func(c *Client, key string) bool
	// kick: some keys may already be ready (behindWaiters); once queued,
	// the blocking client serves its keys' waiters itself, in order, up to
	// and including itself if the elements last.
	kick bool
	// timeoutReply replies on timeout and CLIENT UNBLOCK [TIMEOUT]; nil
	// means a null array (RESP2 *-1, RESP3 _), as Redis replies for lists,
	// sorted sets and streams.
	timeoutReply func(c *Client)
	// each: every waiter of the key is offered it, not only up to the
	// first that cannot be served (streams: XREAD waits for entries after
	// its own ID, so one waiter's refusal says nothing about the next;
	// Redis's serveClientsBlockedOnStreamKey).
	each bool
}

// errUnblockedRole is the reply of clients unblocked because this node
// became a replica.
const errUnblockedRole = block.ErrUnblockedRole

// waiter is a client blocked on keys (package block); blocked is the
// node's side of it.
type waiter = block.Waiter[watchKey, *blocked]

// blocked is what the node keeps of a blocked client.
type blocked struct {
	c     *Client
	db    int
	locks []keyspace.ShardRef // shards to lock to serve it, sorted and unique
	spec  *blockSpec
}

// blockRegistry holds the waiters of a server (package block).
type blockRegistry struct {
	block.Registry[watchKey, *blocked]
	// count is the number of blocked clients (INFO blocked_clients).
	count atomic.Int64
	// streamReads is set once an XREAD or XREADGROUP has blocked: from
	// then on any write may wake a blocked reader (a write that deletes or
	// overwrites a stream ends a blocked XREADGROUP), so every write is
	// sequenced (sequence.go), as WATCH makes them.
	streamReads atomic.Bool
}

// markDBReady queues every waited key of db (SWAPDB, FLUSHDB).
func (r *blockRegistry) markDBReady(db int) {
	r.MarkReadyWhere(func(k watchKey) bool { return k.db == db })
}

// signalKeyAsReady records that key (in the client's database) received
// elements, so clients blocked on it are served after the command releases
// its locks (see handleReadyKeys).
func (c *Client) signalKeyAsReady(key string) {
	if !c.srv.blocking.Waiting() {
		return
	}
	c.readyKeys = append(c.readyKeys, watchKey{c.db, key})
}

// keyAdded is called by db.add for every new key: a new list or sorted set
// may serve blocked clients (RENAME, SORT ... STORE, COPY, MOVE, RESTORE).
func (s *Server) keyAdded(db int, key string, obj any) {
	if !s.blocking.Waiting() || obj == nil {
		return
	}
	if tv, ok := obj.(value.Value); ok {
		if n := tv.TypeName(); n == "list" || n == "zset" || n == "stream" {
			s.blocking.MarkReady(watchKey{db, key})
		}
	}
}

// signalDBsSwapped wakes clients blocked on keys of databases a and b
// after SWAPDB exchanged their contents (Redis's scanDatabaseForReadyKeys).
// The SWAPDB handler calls it while holding its locks.
func (s *Server) signalDBsSwapped(a, b int) {
	s.blocking.markDBReady(a)
	s.blocking.markDBReady(b)
}

// readyPending reports whether keys made ready by db.add or SWAPDB wait
// for handleReadyKeys.
func (s *Server) readyPending() bool { return s.blocking.Pending() }

// blockedOnKeys is the number of clients blocked on keys (they are also
// counted in s.blockedClients, which INFO reports as blocked_clients).
func (s *Server) blockedOnKeys() int64 { return s.blocking.count.Load() }

// handleReadyKeys serves clients blocked on the keys the last command made
// ready. It runs on the command's goroutine after the command released its
// locks.
func (s *Server) handleReadyKeys(c *Client) {
	queue := c.readyKeys
	c.readyKeys = nil
	queue = s.blocking.TakePending(queue)
	if s.blocking.count.Load() == 0 {
		if cap(queue) <= 64 {
			c.readyKeys = queue[:0]
		}
		return
	}
	s.serveReady(queue)
}

// serveReady serves the waiters of the keys in queue, each key's in
// arrival order, until a key cannot serve its first waiter. No shard lock
// may be held.
func (s *Server) serveReady(queue []watchKey) { s.blocking.ServeReady(queue, s.serveWaiter) }

// behindWaiters reports whether a blocking command that found key ready
// must nevertheless wait its turn: clients are blocked on key, so a push
// has just made it ready and is about to serve them (between the push
// releasing its locks and its handleReadyKeys). In Redis they are served
// before any later command runs; so the command queues behind them (with
// blockSpec.kick) instead of taking the elements first. Called with the
// key's shard locked.
func (c *Client) behindWaiters(key []byte) bool {
	return c.canBlock() && c.srv.blocking.HasWaiters(watchKey{c.db, string(key)})
}

// serveWaiter tries to serve w from key. served is false when the key
// could not serve it (the caller then stops serving this key); a waiter
// cancelled meanwhile counts as served (skipped). more are keys the serve
// made ready (BLMOVE's destination).
func (s *Server) serveWaiter(w *waiter, key watchKey) (served bool, more []watchKey) {
	b := w.Data
	ms := lockShards(s, b.locks)
	defer unlockShards(s, ms)
	return s.blocking.Serve(w, func() (bool, []watchKey) {
		c := b.c
		c.now = s.nowMs()
		c.dirty = 0
		c.propArgs = nil
		ok := b.spec.serve(c, key.key)
		if ok && c.dirty > 0 && c.propArgs != nil {
			s.dirty.Add(int64(c.dirty))
			if s.hasPropagators() {
				c.propagateWrite(b.db, c.propArgs) // the waiter's reply waits for min-replicas-ack
			}
		}
		c.dirty = 0
		c.propArgs = nil
		more := c.readyKeys
		c.readyKeys = nil
		return ok, more
	})
}

// lockShards locks keys' shards (sorted and unique), holding the scripting
// gate shared first when they are several (see Client.lockKeys); release
// with unlockShards.
func lockShards(s *Server, keys []keyspace.ShardRef) []*sync.Mutex {
	if len(keys) > 1 {
		s.scripting.gate.RLock()
	}
	ms := keyspace.LockShards(s.dbs, keys, make([]*sync.Mutex, 0, len(keys)))
	s.snapGuard(ms) // open snapshots copy these shards before they change
	return ms
}

// unlockShards releases lockShards.
func unlockShards(s *Server, ms []*sync.Mutex) {
	keyspace.UnlockShards(ms)
	if len(ms) > 1 {
		s.scripting.gate.RUnlock()
	}
}

// canBlock reports whether the running command may block: not inside
// MULTI/EXEC (a blocking command then acts as its non-blocking form), not
// on the master link, not while loading the AOF.
func (c *Client) canBlock() bool {
	return !c.inExec && !c.hasFlag(clientMaster|clientMulti|clientDenyBlocking)
}

// blockForKeys blocks the client until one of spec.keys serves it, the
// timeout expires, CLIENT UNBLOCK, or a disconnect. It must be called from
// a handler with the command's shard locks held (so no push can slip
// between the handler's check and the registration); it releases them
// while waiting and returns with them released (the dispatcher then has
// nothing to unlock). On return the reply is in the client's buffer.
func (c *Client) blockForKeys(spec blockSpec) {
	s := c.srv
	keys := make([]watchKey, len(spec.keys))
	for i, k := range spec.keys {
		keys[i] = watchKey{c.db, k}
	}
	b := &blocked{c: c, db: c.db, spec: &spec}
	w := block.NewWaiter(c.id, keys, c.arrivalNs(), spec.each, b)
	for _, k := range w.Keys {
		b.locks = append(b.locks, keyspace.ShardRef{DB: c.db, Shard: keyspace.ShardOf(k.key)})
	}
	if spec.target != "" {
		b.locks = append(b.locks, keyspace.ShardRef{DB: c.db, Shard: keyspace.ShardOf(spec.target)})
	}
	b.locks = keyspace.SortShardRefs(b.locks)

	s.blocking.count.Add(1)
	s.blockedClients.Add(1)
	defer func() {
		s.blockedClients.Add(-1)
		s.blocking.count.Add(-1)
		c.setFlag(clientBlocked, false)
	}()
	// Register and release the command's locks while holding the
	// waiter's lock, so no serving goroutine touches c before this
	// goroutine is done with it. Blocked only once queued: a sequenced
	// push that stops waiting for this client's input (sequence.go) then
	// finds it in the queue.
	s.blocking.Register(w, func() {
		c.setFlag(clientBlocked, true)
		c.releaseForWait()
	})
	s.seq.Notify()
	if spec.kick {
		s.serveReady(slices.Clone(w.Keys)) // may serve w itself
	}
	// Parked, the client has no write in flight: a serve runs on the
	// serving goroutine, whose own command counts (CLIENT PAUSE and
	// FAILOVER wait for the writes in flight, not for blocked clients).
	if c.req.inflight {
		s.inflightWrites.Add(-1)
		c.req.inflight = false
	}
	out := s.blocking.Wait(w, spec.timeout, s.clk, c.Done(), hangupWatchDelay, c.watchHangup)
	switch {
	case out.Served:
	case out.Killed:
		c.close()
	case out.Mode == block.Error:
		c.addError(block.ErrUnblocked)
	case out.Mode == block.Role:
		c.addError(block.ErrUnblockedRole)
		c.setFlag(clientCloseAfterReply, true)
	case out.Mode == block.Redirect:
		c.addError(out.Redirect)
	case spec.timeoutReply != nil:
		spec.timeoutReply(c)
	default:
		c.addNullArray()
	}
}

// unblockClient unblocks the client with the given id if it is blocked on
// keys (CLIENT UNBLOCK id [TIMEOUT|ERROR]): it replies as on timeout, or
// with the UNBLOCKED error when withError. It reports whether the client
// was blocked.
func (s *Server) unblockClient(id int64, withError bool) bool {
	w := s.blocking.Lookup(id)
	if w == nil {
		return false
	}
	mode := block.Timeout
	if withError {
		mode = block.Error
	}
	w.Unblock(mode)
	return true
}

// disconnectBlockedClients unblocks every client blocked on keys with
// Redis's "-UNBLOCKED force unblock ..." error and closes them after the
// reply, as Redis does when a master becomes a replica (their commands
// could never be served). Replication calls it on REPLICAOF host port.
func (s *Server) disconnectBlockedClients() {
	for _, w := range s.blocking.All() {
		w.Unblock(block.Role)
	}
}

// watchHangup watches the connection of a blocked client for the peer
// closing it, without consuming input (netio.WatchHangup): Redis frees a
// blocked client as soon as it disconnects, so it never steals an
// element. stop ends the watch and must be called before the client reads
// its connection again.
func (c *Client) watchHangup() (hup <-chan struct{}, stop func()) {
	return netio.WatchHangup(c.conn, c.raw)
}

// parseTimeout parses a blocking command's timeout in seconds (a float)
// into an absolute deadline in unix ms (0: forever), replying with Redis's
// errors on failure.
func parseTimeout(c *Client, arg []byte) (int64, bool) {
	f, ok := parseFloat(arg) // as Redis's string2ld: no NaN, no surrounding spaces
	if !ok {
		c.addError("ERR timeout is not a float or out of range")
		return 0, false
	}
	deadline, msg := block.ParseTimeout(f, c.now)
	if msg != "" {
		c.addError(msg)
		return 0, false
	}
	return deadline, true
}
