package node

import (
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
)

// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, and the
// sorted-set BZPOPMIN, BZPOPMAX, BZMPOP) follow Redis's model:
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
// Lock order: shard locks (in (db, shard) order), then a waiter's mu, then
// the registry's mu. The registry lock is a leaf.

// hangupWatchDelay is how long a client waits blocked before a watcher
// looks for its peer hanging up.
const hangupWatchDelay = 2 * time.Millisecond

// errUnblocked is the reply of a client unblocked by CLIENT UNBLOCK ... ERROR.
const errUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

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
}

// unblockMode is how a waiter is unblocked from outside.
type unblockMode int

const (
	unblockTimeout  unblockMode = iota // reply as on timeout
	unblockError                       // reply the UNBLOCKED error
	unblockRole                        // role change: UNBLOCKED error, then close
	unblockRedirect                    // cluster: the key's slot left (waiter.redirect)
)

// errUnblockedRole is the reply of clients unblocked because this node
// became a replica.
const errUnblockedRole = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"

// Waiter states.
const (
	waitWaiting = iota
	waitServed
	waitCancelled
)

// waiter is a client blocked on keys.
type waiter struct {
	c     *Client
	db    int
	keys  []string
	locks []keyspace.ShardRef // shards to lock to serve it, sorted and unique
	spec  *blockSpec
	// arrival orders the waiters of a key: when the command reached the
	// machine (unix ns; see Client.arrivalNs).
	arrival int64

	mu    sync.Mutex // guards state; held while serving
	state int
	wake  chan struct{} // closed once served
	// unblock receives CLIENT UNBLOCK requests and role changes.
	unblock chan unblockMode
	// redirect is the error of an unblockRedirect, set before it is sent
	// (cluster_redirect.go).
	redirect atomic.Pointer[string]
}

// blockRegistry holds the waiters of a server.
type blockRegistry struct {
	mu       sync.Mutex
	byKey    map[watchKey][]*waiter // FIFO per (db, key)
	byClient map[int64]*waiter
	// pending are keys made ready outside a handler's readyKeys (db.add,
	// SWAPDB); any goroutine finishing a command drains them.
	pending []watchKey
	npend   atomic.Int32
	// count is the number of blocked clients (INFO blocked_clients).
	count atomic.Int64
	// waiting counts keys with waiters, to make signals free when none.
	waiting atomic.Int64
}

func (r *blockRegistry) init() {
	if r.byKey == nil {
		r.byKey = make(map[watchKey][]*waiter)
		r.byClient = make(map[int64]*waiter)
	}
}

func (r *blockRegistry) add(w *waiter) {
	r.mu.Lock()
	r.init()
	for _, k := range w.keys {
		wk := watchKey{w.db, k}
		q := r.byKey[wk]
		if len(q) == 0 {
			r.waiting.Add(1)
		}
		// After every waiter whose command arrived no later than w's
		// (usually the tail: commands run in about the order they came).
		i := len(q)
		for i > 0 && q[i-1].arrival > w.arrival {
			i--
		}
		r.byKey[wk] = slices.Insert(q, i, w)
	}
	r.byClient[w.c.id] = w
	r.mu.Unlock()
}

func (r *blockRegistry) remove(w *waiter) {
	r.mu.Lock()
	for _, k := range w.keys {
		wk := watchKey{w.db, k}
		q := r.byKey[wk]
		if i := slices.Index(q, w); i >= 0 {
			q = slices.Delete(q, i, i+1)
		}
		if len(q) == 0 {
			if _, ok := r.byKey[wk]; ok {
				delete(r.byKey, wk)
				r.waiting.Add(-1)
			}
		} else {
			r.byKey[wk] = q
		}
	}
	if r.byClient[w.c.id] == w {
		delete(r.byClient, w.c.id)
	}
	r.mu.Unlock()
}

// first returns the oldest waiter of key, or nil.
func (r *blockRegistry) first(wk watchKey) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.byKey[wk]; len(q) > 0 {
		return q[0]
	}
	return nil
}

// hasWaiters reports whether clients wait on key.
func (r *blockRegistry) hasWaiters(db int, key string) bool {
	if r.waiting.Load() == 0 {
		return false
	}
	r.mu.Lock()
	n := len(r.byKey[watchKey{db, key}])
	r.mu.Unlock()
	return n > 0
}

// markReady queues a key for serving if clients wait on it.
func (r *blockRegistry) markReady(db int, key string) {
	if r.waiting.Load() == 0 {
		return
	}
	wk := watchKey{db, key}
	r.mu.Lock()
	if len(r.byKey[wk]) > 0 {
		r.pending = append(r.pending, wk)
		r.npend.Add(1)
	}
	r.mu.Unlock()
}

// markDBReady queues every waited key of db (SWAPDB).
func (r *blockRegistry) markDBReady(db int) {
	if r.waiting.Load() == 0 {
		return
	}
	r.mu.Lock()
	for wk := range r.byKey {
		if wk.db == db {
			r.pending = append(r.pending, wk)
			r.npend.Add(1)
		}
	}
	r.mu.Unlock()
}

func (r *blockRegistry) takePending(dst []watchKey) []watchKey {
	if r.npend.Load() == 0 {
		return dst
	}
	r.mu.Lock()
	dst = append(dst, r.pending...)
	r.pending = r.pending[:0]
	r.npend.Store(0)
	r.mu.Unlock()
	return dst
}

// signalKeyAsReady records that key (in the client's database) received
// elements, so clients blocked on it are served after the command releases
// its locks (see handleReadyKeys).
func (c *Client) signalKeyAsReady(key string) {
	if c.srv.blocking.waiting.Load() == 0 {
		return
	}
	c.readyKeys = append(c.readyKeys, watchKey{c.db, key})
}

// keyAdded is called by db.add for every new key: a new list or sorted set
// may serve blocked clients (RENAME, SORT ... STORE, COPY, MOVE, RESTORE).
func (s *Server) keyAdded(db int, key string, obj any) {
	if s.blocking.waiting.Load() == 0 || obj == nil {
		return
	}
	if tv, ok := obj.(value.Value); ok {
		if n := tv.TypeName(); n == "list" || n == "zset" {
			s.blocking.markReady(db, key)
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
func (s *Server) readyPending() bool { return s.blocking.npend.Load() > 0 }

// blockedOnKeys is the number of clients blocked on keys (they are also
// counted in s.blockedClients, which INFO reports as blocked_clients).
func (s *Server) blockedOnKeys() int64 { return s.blocking.count.Load() }

// handleReadyKeys serves clients blocked on the keys the last command made
// ready. It runs on the command's goroutine after the command released its
// locks.
func (s *Server) handleReadyKeys(c *Client) {
	queue := c.readyKeys
	c.readyKeys = nil
	queue = s.blocking.takePending(queue)
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
func (s *Server) serveReady(queue []watchKey) {
	// A key is queued at most once while it waits to be processed; a key
	// made ready again after it was processed (BRPOPLPUSH chains, circular
	// moves) is queued again.
	queued := make(map[watchKey]struct{}, len(queue))
	uniq := queue[:0]
	for _, rk := range queue {
		if _, dup := queued[rk]; !dup {
			queued[rk] = struct{}{}
			uniq = append(uniq, rk)
		}
	}
	queue = uniq
	for i := 0; i < len(queue); i++ {
		rk := queue[i]
		delete(queued, rk)
		for {
			w := s.blocking.first(rk)
			if w == nil {
				break
			}
			served, more := s.serveWaiter(w, rk.key)
			for _, m := range more {
				if _, dup := queued[m]; !dup {
					queued[m] = struct{}{}
					queue = append(queue, m)
				}
			}
			if !served {
				break
			}
		}
	}
}

// behindWaiters reports whether a blocking command that found key ready
// must nevertheless wait its turn: clients are blocked on key, so a push
// has just made it ready and is about to serve them (between the push
// releasing its locks and its handleReadyKeys). In Redis they are served
// before any later command runs; so the command queues behind them (with
// blockSpec.kick) instead of taking the elements first. Called with the
// key's shard locked.
func (c *Client) behindWaiters(key []byte) bool {
	return c.canBlock() && c.srv.blocking.hasWaiters(c.db, string(key))
}

// serveWaiter tries to serve w from key. served is false when the key
// could not serve it (the caller then stops serving this key); a waiter
// cancelled meanwhile counts as served (skipped). more are keys the serve
// made ready (BLMOVE's destination).
func (s *Server) serveWaiter(w *waiter, key string) (served bool, more []watchKey) {
	ms := lockShards(s, w.locks)
	defer unlockShards(s, ms)
	w.mu.Lock()
	if w.state != waitWaiting {
		w.mu.Unlock()
		// Being cancelled: it removes itself; make sure it is gone.
		s.blocking.remove(w)
		return true, nil
	}
	c := w.c
	c.now = time.Now().UnixMilli()
	c.dirty = 0
	c.propArgs = nil
	ok := w.spec.serve(c, key)
	if ok {
		if c.dirty > 0 && c.propArgs != nil {
			s.dirty.Add(int64(c.dirty))
			if s.hasPropagators() {
				c.propagateWrite(w.db, c.propArgs) // the waiter's reply waits for min-replicas-ack
			}
		}
		w.state = waitServed
		s.blocking.remove(w)
	}
	c.dirty = 0
	c.propArgs = nil
	more = c.readyKeys
	c.readyKeys = nil
	w.mu.Unlock()
	if ok {
		close(w.wake)
	}
	return ok, more
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
	w := &waiter{
		c:       c,
		db:      c.db,
		arrival: c.arrivalNs(),
		spec:    &spec,
		wake:    make(chan struct{}),
		unblock: make(chan unblockMode, 1),
	}
	for _, k := range spec.keys {
		if !slices.Contains(w.keys, k) {
			w.keys = append(w.keys, k)
		}
	}
	for _, k := range w.keys {
		w.locks = append(w.locks, keyspace.ShardRef{DB: c.db, Shard: keyspace.ShardOf(k)})
	}
	if spec.target != "" {
		w.locks = append(w.locks, keyspace.ShardRef{DB: c.db, Shard: keyspace.ShardOf(spec.target)})
	}
	w.locks = keyspace.SortShardRefs(w.locks)

	var timer <-chan time.Time
	// Deadlines beyond a century are as good as none (and would overflow
	// a Duration).
	if ms := spec.timeout - time.Now().UnixMilli(); spec.timeout > 0 && ms < 100*365*24*3600*1000 {
		t := time.NewTimer(max(time.Duration(ms)*time.Millisecond, 0))
		defer t.Stop()
		timer = t.C
	}
	s.blocking.count.Add(1)
	s.blockedClients.Add(1)
	defer func() {
		s.blockedClients.Add(-1)
		s.blocking.count.Add(-1)
		c.setFlag(clientBlocked, false)
	}()

	// Register and release the command's locks while holding w.mu, so no
	// serving goroutine touches c before this goroutine is done with it.
	// Blocked only once queued: a sequenced push that stops waiting for
	// this client's input (sequence.go) then finds it in the queue.
	w.mu.Lock()
	s.blocking.add(w)
	c.setFlag(clientBlocked, true)
	c.releaseForWait()
	w.mu.Unlock()
	s.seq.Notify()
	if spec.kick {
		q := make([]watchKey, 0, len(w.keys))
		for _, k := range w.keys {
			q = append(q, watchKey{w.db, k})
		}
		s.serveReady(q) // may serve w itself: then w.wake is closed
	}

	// A peer that hangs up is noticed by a watcher started only once the
	// wait lasts hangupWatchDelay: most waits in a busy queue end sooner,
	// and the watcher costs a goroutine and two deadline changes.
	var hup <-chan struct{}
	stopWatch := func() {}
	watchDelay := time.NewTimer(hangupWatchDelay)
	var killed bool
	mode := unblockTimeout
wait:
	for {
		select {
		case <-w.wake:
		case <-timer:
		case mode = <-w.unblock:
		case <-c.Done():
			killed = true
		case <-hup:
			killed = true
		case <-watchDelay.C:
			hup, stopWatch = c.watchHangup()
			continue wait
		}
		break
	}
	watchDelay.Stop()
	stopWatch()

	w.mu.Lock()
	if w.state == waitServed {
		w.mu.Unlock()
		<-w.wake
		return
	}
	w.state = waitCancelled
	s.blocking.remove(w)
	w.mu.Unlock()
	switch {
	case killed:
		c.close()
	case mode == unblockError:
		c.addError(errUnblocked)
	case mode == unblockRole:
		c.addError(errUnblockedRole)
		c.setFlag(clientCloseAfterReply, true)
	case mode == unblockRedirect:
		c.addError(*w.redirect.Load())
	case spec.timeoutReply != nil:
		spec.timeoutReply(c)
	default:
		c.addNullArray()
	}
}

// unblockClient unblocks the client with the given id if it is blocked on
// keys (CLIENT UNBLOCK id [TIMEOUT|ERROR]): it replies as on timeout, or
// with the UNBLOCKED error when withError. It reports whether the client
// was blocked. CLIENT UNBLOCK's handler should call it.
func (s *Server) unblockClient(id int64, withError bool) bool {
	s.blocking.mu.Lock()
	w := s.blocking.byClient[id]
	s.blocking.mu.Unlock()
	if w == nil {
		return false
	}
	mode := unblockTimeout
	if withError {
		mode = unblockError
	}
	select {
	case w.unblock <- mode:
	default:
	}
	return true
}

// disconnectBlockedClients unblocks every client blocked on keys with
// Redis's "-UNBLOCKED force unblock ..." error and closes them after the
// reply, as Redis does when a master becomes a replica (their commands
// could never be served). Replication calls it on REPLICAOF host port.
func (s *Server) disconnectBlockedClients() {
	s.blocking.mu.Lock()
	ws := make([]*waiter, 0, len(s.blocking.byClient))
	for _, w := range s.blocking.byClient {
		ws = append(ws, w)
	}
	s.blocking.mu.Unlock()
	for _, w := range ws {
		select {
		case w.unblock <- unblockRole:
		default:
		}
	}
}

// watchHangup watches the connection of a blocked client for the peer
// closing it, without consuming input (a MSG_PEEK on the socket): Redis
// frees a blocked client as soon as it disconnects, so it never steals an
// element. stop ends the watch and must be called before the client reads
// its connection again.
func (c *Client) watchHangup() (hup <-chan struct{}, stop func()) {
	sc, ok := c.conn.(syscall.Conn)
	if !ok {
		return nil, func() {}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, func() {}
	}
	h := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var buf [1]byte
		gone := false
		err := raw.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err == syscall.EAGAIN || err == syscall.EINTR {
				return false
			}
			gone = err != nil || n == 0
			return true
		})
		// The hang-up watch (netio) may end this wait with its wake-up
		// deadline before the peek sees the EOF.
		gone = gone || (c.raw != nil && c.raw.HungUp())
		if gone || (err != nil && !errors.Is(err, os.ErrDeadlineExceeded)) {
			close(h)
		}
	}()
	return h, func() {
		_ = c.conn.SetReadDeadline(time.Unix(1, 0))
		<-finished
		_ = c.conn.SetReadDeadline(time.Time{})
	}
}

// parseTimeout parses a blocking command's timeout in seconds (a float)
// into an absolute deadline in unix ms (0: forever), replying with Redis's
// errors on failure.
func parseTimeout(c *Client, arg []byte) (int64, bool) {
	f, ok := parseTimeoutFloat(arg)
	if !ok {
		c.addError("ERR timeout is not a float or out of range")
		return 0, false
	}
	ms := f * 1000
	if ms < 0 {
		c.addError("ERR timeout is negative")
		return 0, false
	}
	ceil := int64(ms)
	if float64(ceil) < ms {
		ceil++
	}
	if ms >= 1<<62 {
		ceil = 1 << 62
	}
	if ceil == 0 {
		return 0, true
	}
	return c.now + ceil, true
}

// parseTimeoutFloat parses a float argument as Redis's string2ld does (no
// NaN, no surrounding spaces).
func parseTimeoutFloat(b []byte) (float64, bool) { return parseFloat(b) }
