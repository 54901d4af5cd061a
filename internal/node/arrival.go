package node

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"
)

// Arrival order for blocking commands.
//
// Redis runs every command in one event loop, in about the order the
// commands reached the machine, and blocking commands depend on it: two
// clients that block on a list one after the other are served in that
// order, and a push sent right after them serves both. shardnode runs a
// goroutine per connection, and the Go scheduler does not keep the order
// in which connections became readable (a connection whose goroutine is
// still running reads its next command without waiting in the netpoller,
// and the netpoller hands a batch of ready connections out in reverse).
// Three measures restore Redis's order where it is observable:
//
//   - Every read returns the kernel's receive time of its data
//     (SO_TIMESTAMPNS, conn_rxstamp_linux.go); waiters of a key are queued
//     by that time (Client.arrivalNs), not by the time their goroutine ran.
//   - A blocking command that finds a key ready while clients wait on it
//     queues behind them (Client.behindWaiters).
//   - While blocking commands are in use (one ran in the last
//     arrivalWindow), a list or sorted-set write (blocking commands
//     included) first lets the blocking commands that reached the machine
//     before it be queued: it waits while another client runs a blocking
//     command of an older arrival that is not queued yet, or has one
//     unread in its socket (a level-triggered epoll set of the client
//     sockets says which have unread data; a MSG_PEEK of the first bytes
//     gives its receive time and command name). The wait ends when that
//     command is queued or done (notify), after arrivalMaxWait at most.
//     The epoll set exists only once a blocking command has run, so
//     servers that never block pay nothing; clients whose last list or
//     sorted-set write was not a blocking command (producers) are not
//     peeked at.
//   - Pub/sub uses the same barrier: once a client has subscribed, a
//     PUBLISH first waits (arrivalMaxWait at most) while a client that is
//     in pub/sub mode, or may (un)subscribe next, has a command of an
//     older arrival unread in its socket or read and not run yet, so an
//     (UN)SUBSCRIBE sent before the PUBLISH takes effect first. Clients
//     whose last data command (a key read or write, or PUBLISH) came
//     while not subscribed (publishers, ordinary clients) are not looked
//     at. Each check also records a time before which no such command is
//     pending (pubClear); a PUBLISH that arrived before it goes without
//     a lock or system call, which keeps a loaded server's PUBLISH cheap.
//
// The two barriers share the epoll set, the peek and the wake channel;
// rawIO.watch says which barriers look at a client, and rawIO.busyFor
// which barriers its busy time (read, not run) concerns.

const (
	// arrivalWindow is how long after the last blocking command writes to
	// lists and sorted sets wait for earlier arrivals.
	arrivalWindow = 2 * time.Second
	// arrivalMaxWait bounds one command's wait for earlier arrivals (a
	// client that does not read its socket must not stall the others).
	arrivalMaxWait = 10 * time.Millisecond
	// arrivalMaxWalk is the number of clients up to which the barrier
	// also looks at blocking commands read but not yet queued.
	arrivalMaxWalk = 256
	// arrivalPeek is how much unread data is peeked at: enough for the
	// command name of any blocking command.
	arrivalPeek = 64
	// arrivalStampSlack is how far back from a check's clock reading
	// pubClear is set: the kernel stamps a packet shortly before it
	// queues it on its socket, where the check can see it.
	arrivalStampSlack = 20 * time.Microsecond
)

// Barriers (bits of rawIO.watch, rawIO.busyFor, arrivalOrder.active).
const (
	// watchBlocking: the client may send a blocking command next (its
	// last list or sorted-set write was one, or it sent none yet).
	watchBlocking uint32 = 1 << iota
	// watchPubSub: the client is in pub/sub mode or may (un)subscribe
	// next (it is new, or its last data command came while subscribed,
	// or it ran a subscription command since).
	watchPubSub
)

// arrivalOrder is the server's state for the above.
type arrivalOrder struct {
	lastBlock atomic.Int64 // unix ns of the last blocking command, 0 never
	// used holds the barriers whose commands ran at least once (blocking
	// commands, subscriptions); active those whose barrier is on (the
	// epoll set exists). Neither is ever cleared.
	used     atomic.Uint32
	active   atomic.Uint32
	sleepers atomic.Int32 // barriers waiting on wake
	// pubClear is a unix ns time before which no client watched by the
	// pub/sub barrier has a command unread or not run: a PUBLISH that
	// arrived before it need not wait. Raised by checks, reset to 0 when
	// a client starts being watched; written under mu.
	pubClear atomic.Int64

	mu     sync.Mutex // guards the rest; after Server.clientsMu
	poller *readyPoller
	byFd   map[int]*Client
	peekSt rxStampState
	peekB  [arrivalPeek]byte
	fds    []int
	// wake is closed (and cleared) when a blocking command is queued or
	// done; barriers that found an older one pending wait on it.
	wake chan struct{}
}

// noteBlocking records that a blocking command runs, enabling the arrival
// barrier.
func (s *Server) noteBlocking() {
	s.arrival.lastBlock.Store(time.Now().UnixNano())
	s.enableArrival(watchBlocking)
}

// noteSubscription records that a subscription command runs, enabling
// the pub/sub barrier.
func (s *Server) noteSubscription() {
	s.enableArrival(watchPubSub)
}

// enableArrival turns barrier on, making the epoll set of the client
// sockets if there is none yet.
func (s *Server) enableArrival(barrier uint32) {
	a := &s.arrival
	if a.active.Load()&barrier != 0 {
		return
	}
	if a.used.Load()&barrier == 0 {
		a.used.Or(barrier)
	}
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.active.Load()&barrier != 0 {
		return
	}
	if a.poller == nil {
		p, err := newReadyPoller()
		if err != nil {
			return // no epoll: waiters are still ordered by receive time
		}
		a.poller = p
		a.byFd = make(map[int]*Client)
		for _, c := range s.clients {
			a.addLocked(c)
		}
	}
	a.active.Or(barrier)
}

// clientAdmitted adds a new client to the arrival poller; called with
// s.clientsMu held.
func (s *Server) clientAdmitted(c *Client) {
	if s.arrival.active.Load() == 0 {
		return
	}
	s.arrival.mu.Lock()
	s.arrival.addLocked(c)
	s.arrival.pubClear.Store(0) // it may have data older than pubClear
	s.arrival.mu.Unlock()
}

// clientGone removes a client from the arrival poller; called with
// s.clientsMu held.
func (s *Server) clientGone(c *Client) {
	if s.arrival.active.Load() == 0 {
		return
	}
	a := &s.arrival
	a.mu.Lock()
	if r := c.raw; r != nil && r.stamps && a.byFd[r.fd] == c {
		delete(a.byFd, r.fd)
		a.poller.remove(r.fd)
	}
	a.mu.Unlock()
	a.notify() // barriers waiting for it look again
}

func (a *arrivalOrder) addLocked(c *Client) {
	if r := c.raw; r != nil && r.stamps && !c.closed.Load() {
		a.byFd[r.fd] = c
		a.poller.add(r.fd)
	}
}

// earlierPending reports whether another client watched by barrier has a
// command that arrived before ns and matters to it (the blocking barrier:
// a blocking command not queued yet; the pub/sub barrier: any command not
// run yet); if so it also returns a channel closed at the next change and
// that client and its command's arrival (for giveUp). Commands a barrier
// gave up waiting for (rawIO.stuck) are not pending any more. The pub/sub
// barrier's check also raises pubClear.
func (a *arrivalOrder) earlierPending(s *Server, self *Client, ns int64, barrier uint32) (bool, <-chan struct{}, *Client, int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var culprit *Client
	var cts int64
	wake := func() (bool, <-chan struct{}, *Client, int64) {
		if a.wake == nil {
			a.wake = make(chan struct{})
		}
		return true, a.wake, culprit, cts
	}
	pub := barrier == watchPubSub
	var now int64
	if pub {
		// Before looking: data stamped later is not seen below.
		now = time.Now().UnixNano() - int64(arrivalStampSlack)
	}
	walk := len(a.byFd) <= arrivalMaxWalk
	if walk && !a.anyWatchedLocked(self, barrier) {
		if pub && self.raw.watch.Load()&watchPubSub == 0 {
			a.raiseClearLocked(now) // nobody can (un)subscribe unseen
		}
		return false, nil, nil, 0 // e.g. every consumer waits, producers push
	}
	// oldest is the pub/sub barrier's oldest pending command, self's
	// included (pubClear is for everyone's PUBLISH); culprit is another
	// client with a pending command older than ns.
	oldest := now
	// Unread, from watched clients. Looked at before the busy walk
	// below: a watched client is busy from before its data leaves the
	// socket.
	a.fds = a.poller.readable(a.fds[:0])
	for _, fd := range a.fds {
		c := a.byFd[fd]
		if c == nil || (c == self && !pub) || c.hasFlag(clientBlocked) || c.raw.watch.Load()&barrier == 0 {
			continue
		}
		n, ts := a.peekSt.peek(fd, a.peekB[:])
		if ts == 0 || ts <= c.raw.stuck {
			continue
		}
		if pub {
			oldest = min(oldest, ts)
			if c != self && ts < ns && culprit == nil {
				culprit, cts = c, ts
			}
			continue
		}
		if ts >= ns {
			continue
		}
		if cmd := s.table.lookup(firstCommandName(a.peekB[:n])); cmd != nil && cmd.flags&flagBlocking != 0 {
			culprit, cts = c, ts
			return wake()
		}
	}
	// Read and not run (blocking: running, not queued yet), waiting for
	// a CPU or in its own barrier. busy is loaded before busyFor, which
	// is stored before it.
	if walk {
		for _, c := range a.byFd {
			if c.hasFlag(clientBlocked) || (c == self && !pub) {
				continue
			}
			// 1 (reading) is pending even for a stuck client: what it
			// reads is newer than what a barrier gave up on.
			if b := c.raw.busy.Load(); b != 0 && (b == 1 || b > c.raw.stuck) && c.raw.busyFor.Load()&barrier != 0 {
				if b < ns && c != self && culprit == nil {
					culprit, cts = c, b
				}
				if !pub && culprit != nil {
					return wake()
				}
				oldest = min(oldest, b)
			}
		}
	}
	if pub && walk {
		a.raiseClearLocked(oldest)
	}
	if culprit != nil {
		return wake()
	}
	return false, nil, nil, 0
}

// giveUp records that a barrier waited arrivalMaxWait for c's command
// that arrived at ts: no barrier waits for it or older ones again, so a
// client that does not read its socket stalls one command, not each.
func (a *arrivalOrder) giveUp(c *Client, ts int64) {
	a.mu.Lock()
	c.raw.stuck = max(c.raw.stuck, ts)
	a.mu.Unlock()
}

// anyWatchedLocked reports whether a client other than self is watched by
// barrier and not blocked, or is busy for it.
func (a *arrivalOrder) anyWatchedLocked(self *Client, barrier uint32) bool {
	for _, c := range a.byFd {
		if c != self && !c.hasFlag(clientBlocked) && (c.raw.watch.Load()&barrier != 0 || c.raw.busy.Load() != 0 && c.raw.busyFor.Load()&barrier != 0) {
			return true
		}
	}
	return false
}

// raiseClearLocked raises pubClear to ns.
func (a *arrivalOrder) raiseClearLocked(ns int64) {
	if ns > a.pubClear.Load() {
		a.pubClear.Store(ns)
	}
}

// notify wakes the barriers waiting for a blocking command to be queued.
func (a *arrivalOrder) notify() {
	if a.sleepers.Load() == 0 {
		return
	}
	a.mu.Lock()
	if a.wake != nil {
		close(a.wake)
		a.wake = nil
	}
	a.mu.Unlock()
}

// firstCommandName returns the name of the first command in p (RESP array
// or inline), or nil when p does not hold all of it.
func firstCommandName(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	if p[0] != '*' {
		i := 0
		for i < len(p) && p[i] != ' ' && p[i] != '\r' && p[i] != '\n' {
			i++
		}
		if i == len(p) {
			return nil
		}
		return p[:i]
	}
	i := bytes.IndexByte(p, '\n')
	if i < 0 || i+1 >= len(p) || p[i+1] != '$' {
		return nil
	}
	p = p[i+2:]
	n := 0
	j := 0
	for ; j < len(p) && p[j] >= '0' && p[j] <= '9'; j++ {
		n = n*10 + int(p[j]-'0')
		if n > arrivalPeek {
			return nil
		}
	}
	if j+2+n > len(p) || j == 0 {
		return nil
	}
	return p[j+2 : j+2+n]
}

// arrivalEnter runs before a command takes its locks, when a barrier is
// or becomes in use: it records a blocking command as running and not
// queued, keeps rawIO.watch up to date, and waits for older commands
// (arrivalBarrier, publishBarrier).
func (c *Client) arrivalEnter(cmd *command, args [][]byte) {
	s := c.srv
	r := c.raw
	if cmd.flags&flagPubSub != 0 && isSubscription(cmd.name) {
		s.noteSubscription()
		if r != nil && r.watch.Load()&watchPubSub == 0 {
			s.arrival.watchPubSubAgain(r)
		}
	}
	if cmd.flags&flagBlocking != 0 {
		s.noteBlocking()
	}
	if r == nil {
		c.arrivalBarrier(cmd, args)
		return
	}
	done := uint32(0) // barriers this command ends r.busy for
	w := r.watch.Load()
	if w&watchPubSub != 0 && (cmd.flags&(flagWrite|flagReadOnly|flagAdmin) != 0 || cmd.name == "publish") && !c.hasFlag(clientPubSub) {
		// A publisher, an ordinary client, a replica: its commands
		// no longer hold PUBLISH back.
		r.watch.And(^watchPubSub)
		done |= watchPubSub
	}
	if cmd.flags&flagBlocking != 0 {
		if w&watchBlocking == 0 {
			r.watch.Or(watchBlocking)
		}
		r.busyFor.Or(watchBlocking) // before busy (earlierPending)
		r.busy.Store(r.rx.ns)
	} else {
		done |= watchBlocking // not a blocking command: nothing to wait for
		if w&watchBlocking != 0 && cmd.flags&flagWrite != 0 && (cmd.group == "list" || cmd.group == "sorted-set") {
			r.watch.And(^watchBlocking) // a producer
		}
	}
	if done != 0 && r.busy.Load() != 0 {
		c.arrivalDone(done)
	}
	c.arrivalBarrier(cmd, args)
	if cmd.flags&flagPubSub != 0 && cmd.name == "publish" {
		c.publishBarrier()
	}
}

// isSubscription reports whether the pub/sub command name changes the
// client's subscriptions.
func isSubscription(name string) bool {
	switch name {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe":
		return true
	}
	return false
}

// watchPubSubAgain makes the pub/sub barrier look at r's client again
// (it runs a subscription command), counting what it has read and not
// run yet as pending.
func (a *arrivalOrder) watchPubSubAgain(r *rawIO) {
	r.watch.Or(watchPubSub)
	if a.active.Load()&watchPubSub == 0 {
		return
	}
	// Under mu, so no check raises pubClear past it unseen.
	a.mu.Lock()
	r.busyFor.Or(watchPubSub)
	r.busy.Store(r.rx.ns)
	a.pubClear.Store(0)
	a.mu.Unlock()
}

// arrivalLeave runs when everything the client read has run.
func (c *Client) arrivalLeave() {
	if r := c.raw; r != nil && r.busy.Load() != 0 {
		r.busy.Store(0)
		c.srv.arrival.notify()
	}
}

// arrivalDone ends the client's busy time for the given barriers (after
// a blocking command is served, timed out or answered at once; at a
// command that does not concern a barrier).
func (c *Client) arrivalDone(barriers uint32) {
	r := c.raw
	if r == nil || r.busy.Load() == 0 {
		return
	}
	if old := r.busyFor.And(^barriers); old&^barriers == 0 {
		r.busy.Store(0)
	}
	c.srv.arrival.notify()
}

// arrivalBarrier lets the blocking commands that reached the machine
// before this one be queued first, when blocking commands are in use and
// cmd is a list or sorted-set write (it may make a key ready for them, or
// is one of them). It returns at once otherwise.
func (c *Client) arrivalBarrier(cmd *command, args [][]byte) {
	s := c.srv
	a := &s.arrival
	last := a.lastBlock.Load()
	if last == 0 || cmd.flags&flagWrite == 0 || (cmd.group != "list" && cmd.group != "sorted-set") || a.active.Load()&watchBlocking == 0 {
		return
	}
	now := time.Now()
	if now.UnixNano()-last > int64(arrivalWindow) {
		return
	}
	r := c.raw
	if r == nil || !r.stamps || r.rx.ns == 0 {
		return
	}
	if c.arrivalKeysReady(cmd, args) {
		return
	}
	c.waitEarlier(watchBlocking, r.rx.ns)
}

// publishBarrier lets the commands of subscribers, and of clients that
// may subscribe, that reached the machine before this PUBLISH run first,
// once a client has subscribed. A PUBLISH older than pubClear goes at
// once.
func (c *Client) publishBarrier() {
	a := &c.srv.arrival
	r := c.raw
	if a.active.Load()&watchPubSub == 0 || r == nil || !r.stamps || r.rx.ns == 0 || r.rx.ns < a.pubClear.Load() {
		return
	}
	c.waitEarlier(watchPubSub, r.rx.ns)
}

// waitEarlier waits, arrivalMaxWait at most, while another client has a
// command that arrived before ns and matters to barrier (earlierPending).
func (c *Client) waitEarlier(barrier uint32, ns int64) {
	s := c.srv
	a := &s.arrival
	var timer *time.Timer
	for {
		pending, ch, culprit, cts := a.earlierPending(s, c, ns, barrier)
		if !pending {
			break
		}
		if timer == nil {
			timer = time.NewTimer(arrivalMaxWait)
			defer timer.Stop()
		}
		a.sleepers.Add(1)
		select {
		case <-ch:
			a.sleepers.Add(-1)
			continue
		case <-timer.C:
			a.sleepers.Add(-1)
			a.giveUp(culprit, cts)
		}
		break
	}
}

// arrivalKeysReady reports whether the keys cmd works on (its first key,
// and a move's destination) all hold elements and have no waiters: then
// an older blocking command on them, had it run first, would have taken
// an element already there, so this command need not wait for it (the
// common state of a job queue with a backlog). A missing, empty or
// expired key, or one with waiters, needs the order.
func (c *Client) arrivalKeysReady(cmd *command, args [][]byte) bool {
	if len(args) < 2 {
		return false
	}
	n := 1
	switch cmd.name {
	case "lmove", "rpoplpush", "blmove", "brpoplpush":
		n = 2
	}
	db := c.srv.dbs[c.db]
	for _, k := range args[1:min(1+n, len(args))] {
		key := bstr(k)
		m := &db.shards[shardOf(key)].mu
		m.Lock()
		e := db.getEntry(key)
		ok := e != nil && !e.expired(c.now) // c.now: set by call() before arrivalEnter
		if ok {
			tv, isTyped := e.obj.(typedValue)
			ok = isTyped && tv.length() > 0
		}
		m.Unlock()
		if !ok || c.srv.blocking.hasWaiters(c.db, key) {
			return false
		}
	}
	return true
}

// arrivalNs is when the command being run reached the machine, in unix ns:
// the kernel's receive time of the data the client's last read returned
// (the read that completed this command), or now when that is unknown
// (no timestamps on this platform or connection type).
func (c *Client) arrivalNs() int64 {
	if r := c.raw; r != nil {
		if ns := r.rxTime(); ns != 0 {
			return ns
		}
	}
	return time.Now().UnixNano()
}
