package netio

import (
	"math"
	"sync"
	"sync/atomic"
)

// Sequencer runs sequenced commands in the order the kernel received them
// across connections. Its guarantee: when Wait(self, ns) returns, no other
// member connection that is not exempt has input received before ns (ties
// broken by the lower id) that it has not run, whether that input is
// still unread in its socket (in the receive queue, or in the socket's
// backlog behind a read or write system call of ours under way) or read
// and not yet run (Conn.Done). A
// connection is exempt while its owner is blocked (the node says so) or
// its writes wait for room (the peer does not read its replies): such a
// connection's input runs when it moves again.
//
// Each member tracks its own busy time with atomics (Conn.read, Done); a
// waiting command looks at the members' busy times and, through one
// level-triggered epoll set, at the receive time of the oldest unread data
// in their sockets (MSG_PEEK). It sleeps until a member moves on (finishes
// its input, blocks, stalls, leaves), never on a timer: since every
// sequenced command waits only for input older than its own, and the
// owners run their input without waiting for newer input, the waits end.
//
// Receive times are the kernel's; the first connection's set-up confirms
// that the kernel stamps segments (keepStampsOn), so no member's input
// arrives unstamped.
//
// The Sequencer is off until Enable; members join with Add.
type Sequencer struct {
	on       atomic.Bool
	sleepers atomic.Int32 // Wait calls under way

	mu      sync.Mutex // guards the rest
	poller  *poller
	members map[int]*Conn // by socket
	peekSt  rxStampState
	peekB   [1]byte
	fds     []int
	// wake is closed (and cleared) when a member moves on; Wait calls
	// that found older input pending sleep on it.
	wake chan struct{}
}

// On reports whether the sequencer is on.
func (s *Sequencer) On() bool { return s.on.Load() }

// Enable turns the sequencer on. It reports false when the platform has
// no receive timestamps or epoll (the sequencer then stays off). The
// caller adds the existing connections next, holding off new ones.
func (s *Sequencer) Enable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on.Load() {
		return true
	}
	if !rxStampsSupported {
		return false
	}
	p, err := newPoller()
	if err != nil {
		return false
	}
	s.poller = p
	s.members = make(map[int]*Conn)
	s.on.Store(true)
	return true
}

// Add makes c a member: id orders it among connections whose input has
// the same receive time, exempt reports that its owner is blocked. It does
// nothing while the sequencer is off or for a connection without
// timestamps.
func (s *Sequencer) Add(c *Conn, id int64, exempt func() bool) {
	if !s.on.Load() || !c.stamps {
		return
	}
	s.mu.Lock()
	c.id, c.exempt = id, exempt
	s.members[c.fd] = c
	s.poller.add(c.fd)
	s.mu.Unlock()
}

// Remove ends c's membership (it is closing).
func (s *Sequencer) Remove(c *Conn) {
	if !s.on.Load() || !c.stamps {
		return
	}
	s.mu.Lock()
	if s.members[c.fd] == c {
		delete(s.members, c.fd)
		s.poller.remove(c.fd)
	}
	s.mu.Unlock()
	s.notify()
}

// Done records that c's owner ran all the input it read.
func (c *Conn) Done() {
	if c.busy.Load() != 0 {
		c.busy.Store(0)
		c.seq.notify()
	}
}

// Notify wakes the Wait calls, to look again: a member's owner blocked.
func (s *Sequencer) Notify() { s.notify() }

func (s *Sequencer) notify() {
	if s.sleepers.Load() == 0 {
		return
	}
	s.mu.Lock()
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
	s.mu.Unlock()
}

// Wait returns once no other member has older input pending (see
// Sequencer), or when cancel is closed (the caller's connection closed).
// self is the calling connection, nil when it is not a *Conn; ns is the
// receive time of its command.
func (s *Sequencer) Wait(self *Conn, ns int64, cancel <-chan struct{}) {
	if !s.on.Load() {
		return
	}
	selfID := int64(math.MaxInt64)
	if self != nil && self.seq == s && self.exempt != nil {
		selfID = self.id
	}
	// Counted before looking, so a member that moves on after the look
	// sees a sleeper and wakes it (notify).
	s.sleepers.Add(1)
	defer s.sleepers.Add(-1)
	for {
		s.mu.Lock()
		if !s.pendingLocked(self, selfID, ns) {
			s.mu.Unlock()
			return
		}
		if s.wake == nil {
			s.wake = make(chan struct{})
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-cancel:
			return
		}
	}
}

// before reports whether input received at ts on connection id comes
// before the command received at ns on connection self.
func before(ts int64, id int64, ns int64, self int64) bool {
	return ts < ns || ts == ns && id < self
}

// pendingLocked reports whether a member other than self that is not
// exempt has input before ns that it has not run.
//
// Input received before ns reached its socket before the caller read its
// own command, but it may not be visible in the socket yet: while a system
// call holds the socket's lock (the owner's read, any goroutine's write of
// its replies), arriving segments wait in the socket's backlog, and the
// call moves them to the receive queue only as it returns. So the look has
// three steps: every member's write and busy state first (a write under
// way, or a read under way, is waited for: it notifies as it ends); then
// the unread data of the sockets the poller calls readable; then each
// member's read count again: a read that started during the look may have
// moved backlog data into the queue after the poller looked, and is
// waited for. Not covered: a socket locked by something other than these
// calls (the kernel's own timers and acknowledgement processing, for the
// µs they hold it), and segments still queued on another CPU.
func (s *Sequencer) pendingLocked(self *Conn, selfID, ns int64) bool {
	for _, m := range s.members {
		if m == self || m.isExempt() {
			m.snapBusy = 1 // not looked at below
			continue
		}
		if m.writing.Load() {
			return true
		}
		m.snapReads = m.reads.Load()
		b := m.busy.Load()
		if b != 0 && (b == 1 || before(b, m.id, ns, selfID)) {
			return true
		}
		m.snapBusy = b
	}
	s.fds = s.poller.readable(s.fds[:0], len(s.members))
	for _, fd := range s.fds {
		m := s.members[fd]
		if m == nil || m.snapBusy != 0 {
			continue // busy: its unread data is newer than its busy time
		}
		if _, ts := s.peekSt.peek(fd, s.peekB[:]); ts != 0 && before(ts, m.id, ns, selfID) {
			return true
		}
	}
	for _, m := range s.members {
		if m.snapBusy != 0 {
			continue
		}
		// A read started during the look (its end notifies: busy was 0).
		if m.reads.Load() != m.snapReads {
			return true
		}
	}
	return false
}

// isExempt reports whether c's input need not be waited for: its owner is
// blocked, or its writes wait for room.
func (c *Conn) isExempt() bool {
	return c.stalled.Load() || c.exempt != nil && c.exempt()
}
