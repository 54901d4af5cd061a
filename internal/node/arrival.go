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
)

// arrivalOrder is the server's state for the above.
type arrivalOrder struct {
	lastBlock atomic.Int64 // unix ns of the last blocking command, 0 never
	enabled   atomic.Bool
	sleepers  atomic.Int32 // barriers waiting on wake

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
	if s.arrival.enabled.Load() {
		return
	}
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	a := &s.arrival
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.enabled.Load() {
		return
	}
	p, err := newReadyPoller()
	if err != nil {
		return // no epoll: waiters are still ordered by receive time
	}
	a.poller = p
	a.byFd = make(map[int]*Client)
	for _, c := range s.clients {
		a.addLocked(c)
	}
	a.enabled.Store(true)
}

// clientAdmitted adds a new client to the arrival poller; called with
// s.clientsMu held.
func (s *Server) clientAdmitted(c *Client) {
	if !s.arrival.enabled.Load() {
		return
	}
	s.arrival.mu.Lock()
	s.arrival.addLocked(c)
	s.arrival.mu.Unlock()
}

// clientGone removes a client from the arrival poller; called with
// s.clientsMu held.
func (s *Server) clientGone(c *Client) {
	if !s.arrival.enabled.Load() {
		return
	}
	a := &s.arrival
	a.mu.Lock()
	if r := c.raw; r != nil && r.stamps && a.byFd[r.fd] == c {
		delete(a.byFd, r.fd)
		a.poller.remove(r.fd)
	}
	a.mu.Unlock()
}

func (a *arrivalOrder) addLocked(c *Client) {
	if r := c.raw; r != nil && r.stamps && !c.closed.Load() {
		a.byFd[r.fd] = c
		a.poller.add(r.fd)
	}
}

// earlierPending reports whether another client has a blocking command
// that arrived before ns and is not queued yet; if so it also returns a
// channel closed at the next change.
func (a *arrivalOrder) earlierPending(s *Server, self *Client, ns int64) (bool, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	wake := func() <-chan struct{} {
		if a.wake == nil {
			a.wake = make(chan struct{})
		}
		return a.wake
	}
	walk := len(a.byFd) <= arrivalMaxWalk
	if walk && !a.anyProneLocked(self) {
		return false, nil // e.g. every consumer waits, producers push
	}
	// Unread, from clients that may send a blocking command. Looked at
	// before the busy walk below: a prone client is busy from before its
	// data leaves the socket.
	a.fds = a.poller.readable(a.fds[:0])
	for _, fd := range a.fds {
		c := a.byFd[fd]
		multi := c != nil && c.hasFlag(clientMulti)
		if c == nil || c == self || c.hasFlag(clientBlocked) || !c.raw.prone.Load() && !multi {
			continue
		}
		n, ts := a.peekSt.peek(fd, a.peekB[:])
		if ts == 0 || ts >= ns {
			continue
		}
		// A blocking command, or the EXEC of a transaction (its
		// commands, and its WATCH check, run before this write in
		// Redis's order).
		if cmd := s.table.lookup(firstCommandName(a.peekB[:n])); cmd != nil && (cmd.flags&flagBlocking != 0 || multi && cmd.name == "exec") {
			return true, wake()
		}
	}
	// Read and running, not queued yet (waiting for a CPU, or in its own
	// barrier).
	if walk {
		for _, c := range a.byFd {
			if c != self && !c.hasFlag(clientBlocked) {
				if b := c.raw.busy.Load(); b != 0 && b < ns {
					return true, wake()
				}
			}
		}
	}
	return false, nil
}

// anyProneLocked reports whether a client other than self may send a
// blocking command and is not blocked, or runs one.
func (a *arrivalOrder) anyProneLocked(self *Client) bool {
	for _, c := range a.byFd {
		if c != self && !c.hasFlag(clientBlocked) && (c.raw.prone.Load() || c.raw.busy.Load() != 0 || c.hasFlag(clientMulti)) {
			return true
		}
	}
	return false
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

// arrivalEnter runs before a command takes its locks, when blocking
// commands are or become in use: it records a blocking command as running
// and not queued, and waits for older ones (arrivalBarrier).
func (c *Client) arrivalEnter(cmd *command, args [][]byte) {
	r := c.raw
	if cmd.flags&flagBlocking != 0 {
		c.srv.noteBlocking()
		if r != nil {
			r.prone.Store(true)
			r.busy.Store(r.rx.ns)
		}
	} else if r != nil {
		if r.prone.Load() && cmd.flags&flagWrite != 0 && (cmd.group == "list" || cmd.group == "sorted-set") {
			r.prone.Store(false) // a producer
		}
		if r.busy.Load() != 0 && cmd.name != "exec" {
			// Not a blocking command: nothing to wait for. An EXEC
			// stays busy until its commands ran (Client.call).
			c.arrivalLeave()
		}
	}
	c.arrivalBarrier(cmd, args)
}

// arrivalLeave runs after every command (Client.call): it ends the busy
// state a blocking command (served, timed out, or answered at once) or an
// EXEC (its commands ran) kept; other commands ended theirs on entry.
func (c *Client) arrivalLeave() {
	if r := c.raw; r != nil && r.busy.Load() != 0 {
		r.busy.Store(0)
		c.srv.arrival.notify()
	}
}

// arrivalBarrier lets the blocking commands that reached the machine
// before this one be queued first, when blocking commands are in use and
// cmd is a list or sorted-set write (it may make a key ready for them, or
// is one of them). It returns at once otherwise.
func (c *Client) arrivalBarrier(cmd *command, args [][]byte) {
	s := c.srv
	a := &s.arrival
	last := a.lastBlock.Load()
	if last == 0 || cmd.flags&flagWrite == 0 || (cmd.group != "list" && cmd.group != "sorted-set") || !a.enabled.Load() {
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
	var timer *time.Timer
	for {
		pending, ch := a.earlierPending(s, c, r.rx.ns)
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
