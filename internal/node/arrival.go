package node

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/value"
)

// Arrival order for blocking commands and pub/sub.
//
// Redis runs every command in one event loop, in about the order the
// commands reached the machine, and blocking commands depend on it: two
// clients that block on a list one after the other are served in that
// order, and a push sent right after them serves both. shardnode runs a
// goroutine per connection, and the Go scheduler does not keep the order
// in which connections became readable (a connection whose goroutine is
// still running reads its next command without waiting in the netpoller,
// and the netpoller hands a batch of ready connections out in reverse).
// These measures restore Redis's order where it is observable:
//
//   - Every read returns the kernel's receive time of its data
//     (SO_TIMESTAMPNS, conn_rxstamp_linux.go); waiters of a key are queued
//     by that time (Client.arrivalNs), not by the time their goroutine ran.
//   - A blocking command that finds a key ready while clients wait on it
//     queues behind them (Client.behindWaiters).
//   - The blocking barrier: while blocking commands are in use (one ran
//     in the last arrivalWindow), a list or sorted-set write (blocking
//     commands included) first lets the blocking commands, and the EXEC
//     of a transaction, that reached the machine before it be queued or
//     run: it waits while another client runs such a command of an older
//     arrival that is not queued (EXEC: not run) yet, or has one unread
//     in its socket (a level-triggered epoll set of the client sockets
//     says which have unread data; a MSG_PEEK of the first bytes gives
//     its receive time and command name). An EXEC counts because its
//     WATCH check and its commands run before the later write in Redis's
//     order (a push that serves a blocked BRPOPLPUSH into a WATCHed key
//     must not fail the transaction). The wait ends when that command is
//     queued or done (notify), after arrivalMaxWait at most. The epoll
//     set exists only once a barrier is on, so servers that never block
//     or subscribe pay nothing; clients whose last list or sorted-set
//     write was not a blocking command (producers) are only peeked at
//     while in MULTI.
//   - The pub/sub barrier: once a client has subscribed, a PUBLISH first
//     waits (arrivalMaxWait at most) while a client that is in pub/sub
//     mode, or may (un)subscribe next, has a command of an older arrival
//     unread in its socket or read and not run yet, so an (UN)SUBSCRIBE
//     sent before the PUBLISH takes effect first. Clients whose last data
//     command (a key read or write, or PUBLISH) came while not subscribed
//     (publishers, ordinary clients) are not looked at. Each check also
//     records a time before which no such command is pending (pubClear);
//     a PUBLISH that arrived before it goes without a lock or system
//     call, which keeps a loaded server's PUBLISH cheap.
//
// rawIO.watch says which barriers look at a client's unread data, and
// rawIO.busyFor which barriers its busy time (read, not run) concerns. The
// two barriers share the peek and the wake channel. The pub/sub barrier
// has its own epoll set and client map holding only the clients it
// watches (arrivalOrder.pubPoller, pubByFd): a loaded server's clients are
// mostly publishers and ordinary clients, whose sockets are often
// readable, and a check that polled and walked all of them cost a PUBLISH
// about 10 % of its throughput once a client had subscribed. A barrier
// that waited the full arrivalMaxWait for a client gives up on that
// client's commands up to that arrival (rawIO.stuck): a client that does
// not read its socket delays one command, not every one.

const (
	// arrivalWindow is how long after the last blocking command writes to
	// lists and sorted sets wait for earlier arrivals.
	arrivalWindow = 2 * time.Second
	// arrivalMaxWait bounds one command's wait for earlier arrivals (a
	// client that does not read its socket must not stall the others).
	arrivalMaxWait = 10 * time.Millisecond
	// arrivalMaxWalk is the number of clients up to which a barrier also
	// looks at commands read but not yet run (or queued).
	arrivalMaxWalk = 256
	// arrivalPeek is how much unread data is peeked at: enough for the
	// command name of any blocking command.
	arrivalPeek = 64
	// arrivalStampSlack is how far back from a check's clock reading
	// pubClear is set: the kernel stamps a packet shortly before it
	// queues it on its socket, where the check can see it.
	arrivalStampSlack = 20 * time.Microsecond
)

// Barriers (bits of rawIO.watch, rawIO.busyFor, arrivalOrder.used and
// arrivalOrder.active).
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
	// epoll sets exist). Neither is ever cleared.
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
	// pubPoller and pubByFd hold the clients of byFd that the pub/sub
	// barrier watches (rawIO.watch has watchPubSub; that bit changes
	// under mu while the poller exists). Made with poller, and like it
	// nil until a barrier is first turned on.
	pubPoller *readyPoller
	pubByFd   map[int]*Client
	peekSt    rxStampState
	peekB     [arrivalPeek]byte
	fds       []int
	// wake is closed (and cleared) when a client a barrier may wait for
	// moves on (a command read, queued or run; a client gone); barriers
	// that found an older command pending wait on it.
	wake chan struct{}
}

// noteBlocking records that a blocking command runs, turning the
// blocking barrier on.
func (s *Server) noteBlocking() {
	s.arrival.lastBlock.Store(time.Now().UnixNano())
	s.enableArrival(watchBlocking)
}

// noteSubscription records that a subscription command runs, turning the
// pub/sub barrier on.
func (s *Server) noteSubscription() {
	s.enableArrival(watchPubSub)
}

// enableArrival turns barrier on, making the epoll sets of the client
// sockets if there are none yet.
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
		pp, err := newReadyPoller()
		if err != nil {
			p.close()
			return // as above
		}
		a.poller, a.pubPoller = p, pp
		a.byFd = make(map[int]*Client)
		a.pubByFd = make(map[int]*Client)
		for _, c := range s.clients {
			a.addLocked(c)
		}
	}
	a.active.Or(barrier)
}

// clientAdmitted adds a new client to the arrival pollers; called with
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

// clientGone removes a client from the arrival pollers; called with
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
		a.unwatchPubLocked(c)
	}
	a.mu.Unlock()
	a.notify() // barriers waiting for it look again
}

// addLocked adds c to the poller, and to the pub/sub barrier's set when
// that watches it.
func (a *arrivalOrder) addLocked(c *Client) {
	if r := c.raw; r != nil && r.stamps && !c.closed.Load() {
		a.byFd[r.fd] = c
		a.poller.add(r.fd)
		if r.watch.Load()&watchPubSub != 0 {
			a.watchPubLocked(c)
		}
	}
}

// watchPubLocked adds c, a client of byFd, to the pub/sub barrier's set.
func (a *arrivalOrder) watchPubLocked(c *Client) {
	r := c.raw
	if a.byFd[r.fd] != c || a.pubByFd[r.fd] == c {
		return
	}
	a.pubByFd[r.fd] = c
	a.pubPoller.add(r.fd)
}

// unwatchPubLocked removes c from the pub/sub barrier's set.
func (a *arrivalOrder) unwatchPubLocked(c *Client) {
	r := c.raw
	if a.pubByFd[r.fd] != c {
		return
	}
	delete(a.pubByFd, r.fd)
	a.pubPoller.remove(r.fd)
}

// busySince returns the receive time of what r read and has not run yet
// (or 1 while it reads) when that concerns barrier and the barriers have
// not given up on it, else 0. Called with mu held (rawIO.stuck).
func (r *rawIO) busySince(barrier uint32) int64 {
	// busy is loaded before busyFor, which is stored before it.
	b := r.busy.Load()
	if b == 0 || r.busyFor.Load()&barrier == 0 {
		return 0
	}
	// 1 (reading) is pending even for a stuck client: what it reads is
	// newer than what a barrier gave up on.
	if b != 1 && b <= r.stuck {
		return 0
	}
	return b
}

// earlierPending reports whether a client other than self has a command
// that arrived before ns and that barrier must let run first
// (blockingPendingLocked, pubPendingLocked). If so it returns that client
// and its command's arrival (for giveUp) and a channel closed at the next
// change; otherwise culprit is nil.
func (a *arrivalOrder) earlierPending(s *Server, self *Client, ns int64, barrier uint32) (culprit *Client, ts int64, wake <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if barrier == watchPubSub {
		culprit, ts = a.pubPendingLocked(self, ns)
	} else {
		culprit, ts = a.blockingPendingLocked(s, self, ns)
	}
	if culprit == nil {
		return nil, 0, nil
	}
	if a.wake == nil {
		a.wake = make(chan struct{})
	}
	return culprit, ts, a.wake
}

// blockingPendingLocked is the blocking barrier's check: another client
// that is not blocked has a blocking command of an arrival before ns that
// is not queued yet, or an EXEC (it is in MULTI) that has not run yet,
// unread in its socket or read.
func (a *arrivalOrder) blockingPendingLocked(s *Server, self *Client, ns int64) (*Client, int64) {
	walk := len(a.byFd) <= arrivalMaxWalk
	if walk && !a.anyBlockingWatchedLocked(self) {
		return nil, 0 // e.g. every consumer waits, producers push
	}
	// Unread. Looked at before the busy walk below: a watched client is
	// busy from before its data leaves the socket.
	a.fds = a.poller.readable(a.fds[:0])
	for _, fd := range a.fds {
		c := a.byFd[fd]
		if c == nil || c == self || c.hasFlag(clientBlocked) {
			continue
		}
		multi := c.hasFlag(clientMulti)
		if c.raw.watch.Load()&watchBlocking == 0 && !multi {
			continue
		}
		n, ts := a.peekSt.peek(fd, a.peekB[:])
		if ts == 0 || ts >= ns || ts <= c.raw.stuck {
			continue
		}
		if cmd := s.table.lookup(firstCommandName(a.peekB[:n])); cmd != nil && (cmd.flags&flagBlocking != 0 || multi && cmd.name == "exec") {
			return c, ts
		}
	}
	// Read and not queued (blocking) or not run (EXEC) yet: waiting for
	// a CPU, or in its own barrier.
	if walk {
		for _, c := range a.byFd {
			if c == self || c.hasFlag(clientBlocked) {
				continue
			}
			if b := c.raw.busySince(watchBlocking); b != 0 && b < ns {
				return c, b
			}
		}
	}
	return nil, 0
}

// anyBlockingWatchedLocked reports whether a client other than self that
// is not blocked may send a blocking command or an EXEC, or is busy for
// the blocking barrier.
func (a *arrivalOrder) anyBlockingWatchedLocked(self *Client) bool {
	for _, c := range a.byFd {
		if c == self || c.hasFlag(clientBlocked) {
			continue
		}
		r := c.raw
		if r.watch.Load()&watchBlocking != 0 || c.hasFlag(clientMulti) || r.busy.Load() != 0 && r.busyFor.Load()&watchBlocking != 0 {
			return true
		}
	}
	return false
}

// pubPendingLocked is the pub/sub barrier's check: another client it
// watches that is not blocked has a command of an arrival before ns
// unread in its socket or read and not run. It also raises pubClear to
// the oldest such command of any arrival (self's included: pubClear is
// for everyone's PUBLISH), or to the time of the check when there is
// none.
func (a *arrivalOrder) pubPendingLocked(self *Client, ns int64) (*Client, int64) {
	// Before looking: data stamped later is not seen below.
	now := time.Now().UnixNano() - int64(arrivalStampSlack)
	walk := len(a.pubByFd) <= arrivalMaxWalk
	if walk && !a.anyPubWatchedLocked(self) {
		if self.raw.watch.Load()&watchPubSub == 0 {
			a.raiseClearLocked(now) // nobody can (un)subscribe unseen
		}
		return nil, 0
	}
	oldest := now
	var culprit *Client
	var cts int64
	pending := func(c *Client, ts int64) {
		oldest = min(oldest, ts)
		if c != self && ts < ns && culprit == nil {
			culprit, cts = c, ts
		}
	}
	// Unread; looked at before the busy walk, as above.
	a.fds = a.pubPoller.readable(a.fds[:0])
	for _, fd := range a.fds {
		c := a.pubByFd[fd]
		if c == nil || c.hasFlag(clientBlocked) {
			continue
		}
		if _, ts := a.peekSt.peek(fd, a.peekB[:]); ts != 0 && ts > c.raw.stuck {
			pending(c, ts)
		}
	}
	if walk {
		for _, c := range a.pubByFd {
			if c.hasFlag(clientBlocked) {
				continue
			}
			if b := c.raw.busySince(watchPubSub); b != 0 {
				pending(c, b)
			}
		}
		// Only a full walk knows the oldest pending command.
		a.raiseClearLocked(oldest)
	}
	return culprit, cts
}

// anyPubWatchedLocked reports whether a client other than self that is
// not blocked is in the pub/sub barrier's set. (A client leaves the set
// on its own goroutine, which then ends its busy time for the barrier.)
func (a *arrivalOrder) anyPubWatchedLocked(self *Client) bool {
	for _, c := range a.pubByFd {
		if c != self && !c.hasFlag(clientBlocked) {
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

// giveUp records that a barrier waited arrivalMaxWait for c's command
// that arrived at ts: no barrier waits for it or older ones again, so a
// client that does not read its socket stalls one command, not each.
func (a *arrivalOrder) giveUp(c *Client, ts int64) {
	a.mu.Lock()
	c.raw.stuck = max(c.raw.stuck, ts)
	a.mu.Unlock()
}

// notify wakes the barriers waiting for another client to move on.
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
// or becomes in use: it keeps rawIO.watch up to date, records a blocking
// command or an EXEC as busy until it is queued or run and ends the busy
// time other commands do not need, and waits for older commands
// (arrivalBarrier, publishBarrier).
func (c *Client) arrivalEnter(cmd *command, args [][]byte) {
	s := c.srv
	r := c.raw
	if cmd.flags&flagPubSub != 0 && isSubscription(cmd.name) {
		s.noteSubscription()
		if r != nil && r.watch.Load()&watchPubSub == 0 {
			s.arrival.watchPubSubAgain(c)
		}
	}
	if cmd.flags&flagBlocking != 0 {
		s.noteBlocking()
	}
	if r != nil {
		done := uint32(0) // barriers whose busy time this command ends
		w := r.watch.Load()
		if w&watchPubSub != 0 && (cmd.flags&(flagWrite|flagReadOnly|flagAdmin) != 0 || cmd.name == "publish") && !c.hasFlag(clientPubSub) {
			// A publisher, an ordinary client, a replica: its commands
			// no longer hold PUBLISH back.
			s.arrival.unwatchPub(c)
			done |= watchPubSub
		}
		switch {
		case cmd.flags&flagBlocking != 0:
			// Busy until queued or served (Client.call).
			if w&watchBlocking == 0 {
				r.watch.Or(watchBlocking)
			}
			r.busyFor.Or(watchBlocking) // before busy (busySince)
			r.busy.Store(r.rx.ns)
		case cmd.name == "exec":
			// Keeps the busy time its read began until its commands
			// ran (Client.call): a later list write lets them run
			// first.
		default:
			done |= watchBlocking // nothing for the blocking barrier to wait for
			if w&watchBlocking != 0 && cmd.flags&flagWrite != 0 && (cmd.group == "list" || cmd.group == "sorted-set") {
				r.watch.And(^watchBlocking) // a producer
			}
		}
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

// watchPubSubAgain makes the pub/sub barrier look at c again (it runs a
// subscription command), counting what it has read and not run yet as
// pending.
func (a *arrivalOrder) watchPubSubAgain(c *Client) {
	r := c.raw
	// Under mu, so no check raises pubClear past it unseen, and the
	// pub/sub barrier's set follows r.watch.
	a.mu.Lock()
	defer a.mu.Unlock()
	r.watch.Or(watchPubSub)
	if a.pubPoller != nil {
		a.watchPubLocked(c)
	}
	if a.active.Load()&watchPubSub == 0 {
		return
	}
	r.busyFor.Or(watchPubSub)
	r.busy.Store(r.rx.ns)
	a.pubClear.Store(0)
}

// unwatchPub makes the pub/sub barrier stop looking at c (its last data
// command came while not subscribed). c's own goroutine calls it as it
// runs that command, so what c read before it has run.
func (a *arrivalOrder) unwatchPub(c *Client) {
	a.mu.Lock()
	c.raw.watch.And(^watchPubSub)
	if a.pubPoller != nil {
		a.unwatchPubLocked(c)
	}
	a.mu.Unlock()
}

// arrivalLeave runs when everything the client read has run: it ends its
// busy time for every barrier.
func (c *Client) arrivalLeave() {
	if r := c.raw; r != nil && r.busy.Load() != 0 {
		r.busy.Store(0)
		c.srv.arrival.notify()
	}
}

// arrivalDone ends the client's busy time for barriers. Client.call runs
// it for the blocking barrier after every command (a blocking command
// queued, served, timed out or answered at once; an EXEC run; other
// commands ended theirs on entry), arrivalEnter for the barriers a
// command does not concern.
func (c *Client) arrivalDone(barriers uint32) {
	r := c.raw
	if r == nil || r.busy.Load() == 0 || r.busyFor.Load()&barriers == 0 {
		return
	}
	if old := r.busyFor.And(^barriers); old&^barriers == 0 {
		r.busy.Store(0)
	}
	c.srv.arrival.notify()
}

// arrivalBarrier lets the blocking commands and EXECs that reached the
// machine before this command be queued or run first, when blocking
// commands are in use and cmd is a list or sorted-set write (it may make
// a key ready for them, or is one of them). It returns at once otherwise.
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
// After a full wait it gives up on the client it waited for last.
func (c *Client) waitEarlier(barrier uint32, ns int64) {
	s := c.srv
	a := &s.arrival
	var timer *time.Timer
	for {
		culprit, ts, wake := a.earlierPending(s, c, ns, barrier)
		if culprit == nil {
			return
		}
		if timer == nil {
			timer = time.NewTimer(arrivalMaxWait)
			defer timer.Stop()
		}
		a.sleepers.Add(1)
		select {
		case <-wake:
			a.sleepers.Add(-1)
		case <-timer.C:
			a.sleepers.Add(-1)
			a.giveUp(culprit, ts)
			return
		}
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
		m := &db.KeyShard(key).Mu
		m.Lock()
		e := db.GetEntry(key)
		ok := e != nil && !e.Expired(c.now) // c.now: set by call() before arrivalEnter
		if ok {
			tv, isTyped := e.Obj.(value.Value)
			ok = isTyped && tv.Length() > 0
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
