package node

import (
	"runtime"
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
//   - Every read returns the kernel's receive time of its data (SO_TIMESTAMPNS,
//     conn_rxstamp_linux.go); waiters of a key are queued by that time
//     (Client.arrivalNs), not by the time their goroutine ran.
//   - A blocking command that finds a key ready while clients wait on it
//     queues behind them (Client.behindWaiters).
//   - While blocking commands are in use (one ran in the last
//     arrivalWindow), a list or sorted-set write first lets the commands
//     that reached the machine before it run: it waits (briefly, bounded
//     by arrivalMaxWait) while another client has read older data it has
//     not run yet, or has older data unread in its socket (a
//     level-triggered epoll set of the client sockets says which have
//     unread data; a peek gives its receive time)
//     (Client.arrivalBarrier). The epoll set exists only once a blocking
//     command has run, so servers that never block pay nothing.

const (
	// arrivalWindow is how long after the last blocking command writes to
	// lists and sorted sets wait for earlier arrivals.
	arrivalWindow = 2 * time.Second
	// arrivalMaxWait bounds one command's wait for earlier arrivals (a
	// client that does not read its socket must not stall the others).
	arrivalMaxWait = 10 * time.Millisecond
	// arrivalMaxWalk is the number of clients up to which the barrier
	// also looks at data read but not yet run.
	arrivalMaxWalk = 256
)

// arrivalOrder is the server's state for the above.
type arrivalOrder struct {
	lastBlock atomic.Int64 // unix ns of the last blocking command, 0 never
	enabled   atomic.Bool

	mu     sync.Mutex // guards the rest; after Server.clientsMu
	poller *readyPoller
	byFd   map[int]*Client
	peek   rxStampState
	fds    []int
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

// earlierPending reports whether another client's socket holds unread
// data received before ns (a command that arrived before the caller's and
// has not run yet). Blocked clients are skipped: what they sent after
// their blocking command runs only once they are served.
func (a *arrivalOrder) earlierPending(self *Client, ns int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Not read yet: checked first, as data leaves the socket only after
	// the reader marked itself busy (conn_raw.go).
	a.fds = a.poller.readable(a.fds[:0])
	for _, fd := range a.fds {
		c := a.byFd[fd]
		if c == nil || c == self || c.hasFlag(clientBlocked) {
			continue
		}
		if ts := a.peek.peekStamp(fd); ts != 0 && ts < ns {
			return true
		}
	}
	// Read, not yet run (the goroutine waits for a CPU, or for this
	// barrier itself). Looked at only with few clients: with many, a walk
	// over all of them per write would cost more than the order is worth
	// (the window it covers is one read-to-run delay).
	if len(a.byFd) > arrivalMaxWalk {
		return false
	}
	for _, c := range a.byFd {
		if c != self && !c.hasFlag(clientBlocked) {
			if b := c.raw.busy.Load(); b != 0 && b < ns {
				return true
			}
		}
	}
	return false
}

// arrivalBarrier lets commands that reached the machine before this one
// run first, when blocking commands are in use and cmd is a list or
// sorted-set write (it may make a key ready for a blocking command that
// arrived before it but has not run yet). It returns at once otherwise.
func (c *Client) arrivalBarrier(cmd *command) {
	a := &c.srv.arrival
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
	mine := r.rx.ns
	deadline := now.Add(arrivalMaxWait)
	for a.earlierPending(c, mine) && time.Now().Before(deadline) {
		// Park so the scheduler polls the network and runs the earlier
		// connections' goroutines (a Gosched alone would pick this one
		// again before polling).
		time.Sleep(20 * time.Microsecond)
	}
	runtime.Gosched() // and let them finish their command
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
