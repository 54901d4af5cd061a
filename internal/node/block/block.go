// Package block is the node's registry of clients blocked on keys
// (BLPOP, BLMOVE, BZPOPMIN, XREAD ... BLOCK): per key a queue of waiters
// in arrival order, the keys made ready by writes, the serving loop that
// hands a ready key to its waiters in that order, and a waiter's wait for
// being served, timing out, being unblocked or hanging up.
//
// Guarantee: the waiters of a key are offered it in the order their
// commands arrived (Waiter.Arrival), and a key made ready is served,
// waiter by waiter, until it cannot serve the next one; a waiter is
// served at most once, and a waiter that gave up (timeout, CLIENT
// UNBLOCK, disconnect) is never served afterwards.
//
// The registry knows nothing of connections or the keyspace: a key is any
// comparable value, a waiter carries the node's data in Data, and serving
// is a function the node passes in (it locks the keys' shards, pops and
// replies). Lock order: the node's shard locks, then a waiter's lock,
// then the registry's lock, which is a leaf.
package block

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/clock"
)

// Mode is how a waiter was unblocked from outside.
type Mode int

// The unblock modes.
const (
	Timeout  Mode = iota // CLIENT UNBLOCK [TIMEOUT]: reply as on timeout
	Error                // CLIENT UNBLOCK ERROR: the UNBLOCKED error
	Role                 // the node became a replica: the error, then close
	Redirect             // cluster: the key's slot left (Outcome.Redirect)
)

// Redis's replies to unblocked clients.
const (
	ErrUnblocked     = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
	ErrUnblockedRole = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
)

// Waiter states.
const (
	waiting = iota
	served
	cancelled
)

// Waiter is a client blocked on keys. Build it with NewWaiter.
type Waiter[K comparable, T any] struct {
	// ID is the client's id (CLIENT UNBLOCK id).
	ID int64
	// Keys are the keys waited on, without duplicates.
	Keys []K
	// Arrival orders the waiters of a key: when the command reached the
	// node (unix ns).
	Arrival int64
	// Each: every waiter of a ready key is offered it, not only those up
	// to the first that cannot be served (streams: XREAD waits for
	// entries after its own ID, so one waiter's refusal says nothing
	// about the next).
	Each bool
	// Data is the node's own state of the waiter.
	Data T

	mu    sync.Mutex // guards state; held while serving
	state int
	wake  chan struct{} // closed once served
	// unblock receives CLIENT UNBLOCK requests, role changes and
	// redirects.
	unblock  chan Mode
	redirect atomic.Pointer[string]
}

// NewWaiter returns a waiter on keys (duplicates dropped, order kept).
func NewWaiter[K comparable, T any](id int64, keys []K, arrival int64, each bool, data T) *Waiter[K, T] {
	w := &Waiter[K, T]{ID: id, Arrival: arrival, Each: each, Data: data,
		wake: make(chan struct{}), unblock: make(chan Mode, 1)}
	for _, k := range keys {
		if !slices.Contains(w.Keys, k) {
			w.Keys = append(w.Keys, k)
		}
	}
	return w
}

// Unblock asks the waiter to stop waiting with mode (at most one request
// is kept).
func (w *Waiter[K, T]) Unblock(mode Mode) {
	select {
	case w.unblock <- mode:
	default:
	}
}

// RedirectWith unblocks the waiter with msg as its reply (cluster: MOVED
// or CLUSTERDOWN).
func (w *Waiter[K, T]) RedirectWith(msg string) {
	w.redirect.Store(&msg)
	w.Unblock(Redirect)
}

// Registry holds the waiters of a server. The zero value is ready.
type Registry[K comparable, T any] struct {
	mu       sync.Mutex
	byKey    map[K][]*Waiter[K, T] // arrival order per key
	byClient map[int64]*Waiter[K, T]
	// pending are keys made ready outside a command's own list (a new
	// key, SWAPDB, FLUSHALL); any goroutine finishing a command drains
	// them.
	pending []K
	npend   atomic.Int32
	// waiting counts keys with waiters, to make signals free when none.
	waiting atomic.Int64
}

func (r *Registry[K, T]) init() {
	if r.byKey == nil {
		r.byKey = make(map[K][]*Waiter[K, T])
		r.byClient = make(map[int64]*Waiter[K, T])
	}
}

// Waiting reports whether any client waits on any key (cheap: one atomic
// load).
func (r *Registry[K, T]) Waiting() bool { return r.waiting.Load() > 0 }

func (r *Registry[K, T]) add(w *Waiter[K, T]) {
	r.mu.Lock()
	r.init()
	for _, k := range w.Keys {
		q := r.byKey[k]
		if len(q) == 0 {
			r.waiting.Add(1)
		}
		// After every waiter whose command arrived no later than w's
		// (usually the tail: commands run in about the order they came).
		i := len(q)
		for i > 0 && q[i-1].Arrival > w.Arrival {
			i--
		}
		r.byKey[k] = slices.Insert(q, i, w)
	}
	r.byClient[w.ID] = w
	r.mu.Unlock()
}

func (r *Registry[K, T]) remove(w *Waiter[K, T]) {
	r.mu.Lock()
	for _, k := range w.Keys {
		q := r.byKey[k]
		if i := slices.Index(q, w); i >= 0 {
			q = slices.Delete(q, i, i+1)
		}
		if len(q) == 0 {
			if _, ok := r.byKey[k]; ok {
				delete(r.byKey, k)
				r.waiting.Add(-1)
			}
		} else {
			r.byKey[k] = q
		}
	}
	if r.byClient[w.ID] == w {
		delete(r.byClient, w.ID)
	}
	r.mu.Unlock()
}

// first returns the oldest waiter of k, or nil.
func (r *Registry[K, T]) first(k K) *Waiter[K, T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.byKey[k]; len(q) > 0 {
		return q[0]
	}
	return nil
}

// waitersOf returns a copy of k's waiters, oldest first.
func (r *Registry[K, T]) waitersOf(k K) []*Waiter[K, T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byKey[k])
}

// HasWaiters reports whether clients wait on k.
func (r *Registry[K, T]) HasWaiters(k K) bool {
	if !r.Waiting() {
		return false
	}
	r.mu.Lock()
	n := len(r.byKey[k])
	r.mu.Unlock()
	return n > 0
}

// MarkReady queues k for serving if clients wait on it.
func (r *Registry[K, T]) MarkReady(k K) {
	if !r.Waiting() {
		return
	}
	r.mu.Lock()
	if len(r.byKey[k]) > 0 {
		r.pending = append(r.pending, k)
		r.npend.Add(1)
	}
	r.mu.Unlock()
}

// MarkReadyWhere queues every waited key that match selects (a whole
// database: SWAPDB, FLUSHDB).
func (r *Registry[K, T]) MarkReadyWhere(match func(K) bool) {
	if !r.Waiting() {
		return
	}
	r.mu.Lock()
	for k := range r.byKey {
		if match(k) {
			r.pending = append(r.pending, k)
			r.npend.Add(1)
		}
	}
	r.mu.Unlock()
}

// Pending reports whether keys queued by MarkReady wait to be served.
func (r *Registry[K, T]) Pending() bool { return r.npend.Load() > 0 }

// TakePending appends the keys queued by MarkReady to dst and clears
// them.
func (r *Registry[K, T]) TakePending(dst []K) []K {
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

// Lookup returns the waiter of the client id, or nil.
func (r *Registry[K, T]) Lookup(id int64) *Waiter[K, T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byClient[id]
}

// All returns every waiter, in no particular order.
func (r *Registry[K, T]) All() []*Waiter[K, T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := make([]*Waiter[K, T], 0, len(r.byClient))
	for _, w := range r.byClient {
		ws = append(ws, w)
	}
	return ws
}

// Register queues w on its keys and then runs parked (the node marks the
// client blocked and releases the command's locks) with w's lock held, so
// that no serving goroutine touches the client before parked returns.
func (r *Registry[K, T]) Register(w *Waiter[K, T], parked func()) {
	w.mu.Lock()
	r.add(w)
	parked()
	w.mu.Unlock()
}

// Serve offers w one ready key: unless w gave up or was served, serve
// runs with w's lock held and reports whether it served w (popped and
// replied) and which keys it made ready. served is true also for a waiter
// that gave up meanwhile (skip it); more are the keys to serve next.
func (r *Registry[K, T]) Serve(w *Waiter[K, T], serve func() (ok bool, more []K)) (ok bool, more []K) {
	w.mu.Lock()
	if w.state != waiting {
		w.mu.Unlock()
		// Being cancelled: it removes itself; make sure it is gone.
		r.remove(w)
		return true, nil
	}
	ok, more = serve()
	if ok {
		w.state = served
		r.remove(w)
	}
	w.mu.Unlock()
	if ok {
		close(w.wake)
	}
	return ok, more
}

// ServeReady serves the waiters of the keys in queue, each key's in
// arrival order, until a key cannot serve its first waiter (each waiter,
// for Each waiters). serve locks what the node needs and calls Serve.
// Keys a serve made ready are queued after the others; a key is queued
// at most once while it waits to be processed.
func (r *Registry[K, T]) ServeReady(queue []K, serve func(w *Waiter[K, T], key K) (ok bool, more []K)) {
	queued := make(map[K]struct{}, len(queue))
	uniq := queue[:0]
	for _, k := range queue {
		if _, dup := queued[k]; !dup {
			queued[k] = struct{}{}
			uniq = append(uniq, k)
		}
	}
	queue = uniq
	enqueue := func(more []K) {
		for _, m := range more {
			if _, dup := queued[m]; !dup {
				queued[m] = struct{}{}
				queue = append(queue, m)
			}
		}
	}
	for i := 0; i < len(queue); i++ {
		k := queue[i]
		delete(queued, k)
		for {
			w := r.first(k)
			if w == nil {
				break
			}
			if w.Each {
				for _, w := range r.waitersOf(k) {
					_, more := serve(w, k)
					enqueue(more)
				}
				break
			}
			ok, more := serve(w, k)
			enqueue(more)
			if !ok {
				break
			}
		}
	}
}

// Outcome is how a wait ended.
type Outcome struct {
	// Served: a ready key served the waiter (its reply is written).
	Served bool
	// Killed: the client disconnected or was killed.
	Killed bool
	// Mode is the unblock request, Timeout also for a timeout.
	Mode Mode
	// Redirect is the reply of a Redirect unblock.
	Redirect string
}

// Hangup starts watching the client's connection for the peer hanging
// up; hup is closed if it does, stop ends the watch.
type Hangup func() (hup <-chan struct{}, stop func())

// Wait parks until w is served, the deadline (unix ms on clk, 0: none)
// passes, an unblock request comes, done is closed or the peer hangs up.
// The deadline is a timer of clk (the server's clock), armed at the
// absolute time: the wait times out once the clock is past the deadline's
// millisecond (Redis's timeout < now), so a manual clock times it out at
// deadline + 1 ms, and on the real clock a deadline computed from a
// command time truncated to the millisecond still waits at least the
// requested time. The hang-up watch starts only after watchDelay of
// real time: most waits in a busy queue end sooner, and a watch costs the
// node a goroutine (a cost, not a schedule). On return w is served or out
// of the registry.
func (r *Registry[K, T]) Wait(w *Waiter[K, T], deadline int64, clk clock.Clock, done <-chan struct{}, watchDelay time.Duration, hangup Hangup) Outcome {
	var timer <-chan time.Time
	// Deadlines beyond a century are as good as none.
	if deadline > 0 && deadline-clk.Now().UnixMilli() < 100*365*24*3600*1000 {
		t := clk.TimerAt(time.UnixMilli(deadline + 1))
		defer t.Stop()
		timer = t.C()
	}
	var hup <-chan struct{}
	stopWatch := func() {}
	delay := time.NewTimer(watchDelay)
	var out Outcome
wait:
	for {
		select {
		case <-w.wake:
		case <-timer:
		case out.Mode = <-w.unblock:
		case <-done:
			out.Killed = true
		case <-hup:
			out.Killed = true
		case <-delay.C:
			hup, stopWatch = hangup()
			continue wait
		}
		break
	}
	delay.Stop()
	stopWatch()

	w.mu.Lock()
	if w.state == served {
		w.mu.Unlock()
		<-w.wake
		return Outcome{Served: true}
	}
	w.state = cancelled
	r.remove(w)
	w.mu.Unlock()
	if out.Mode == Redirect {
		out.Redirect = *w.redirect.Load()
	}
	return out
}

// ParseTimeout turns a blocking command's timeout in seconds (already
// parsed as a float) into an absolute deadline in unix ms from now (0:
// forever), rounding up as Redis does; it returns Redis's error text for
// a negative timeout and for one of 2^63 ms or more (+inf included),
// which Redis's conversion to a long long turns negative.
func ParseTimeout(seconds float64, now int64) (int64, string) {
	ms := seconds * 1000
	// Redis converts ceill(ms) to a long long: at 2^63 and above (+inf
	// included) the conversion yields LLONG_MIN on x86-64, which its
	// next check calls negative.
	if ms < 0 || ms >= 1<<63 {
		return 0, "ERR timeout is negative"
	}
	ceil := int64(ms)
	if float64(ceil) < ms {
		ceil++
	}
	if ms >= 1<<62 {
		ceil = 1 << 62
	}
	if ceil == 0 {
		return 0, ""
	}
	return now + ceil, ""
}
