package node

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// freezeGate stops the whole server during DEBUG SLEEP, as Redis's
// single thread does when it sleeps: no other client's command runs (the
// replication link's included), the replica link does not reconnect and
// the replication cron skips its work. Commands wait in enterWrite, before
// any lock; the sleeper also holds every shard lock, so commands already
// past the gate finish first or wait too.
type freezeGate struct {
	on    atomic.Bool
	mu    sync.Mutex
	owner *Client
	done  chan struct{}
}

// freeze stops the server for d on behalf of c.
func (s *Server) freeze(c *Client, d time.Duration) {
	g := &s.pause.freeze
	g.mu.Lock()
	done := make(chan struct{})
	g.owner, g.done = c, done
	g.on.Store(true)
	g.mu.Unlock()
	time.Sleep(d)
	g.mu.Lock()
	if g.done == done {
		g.owner, g.done = nil, nil
		g.on.Store(false)
	}
	g.mu.Unlock()
	close(done)
}

// frozen reports whether a DEBUG SLEEP stops the server.
func (s *Server) frozen() bool { return s.pause.freeze.on.Load() }

// waitUnfrozen waits while a DEBUG SLEEP of another client stops the
// server; c may be nil (the server's own goroutines). It returns early if
// c goes away.
func (s *Server) waitUnfrozen(c *Client) {
	g := &s.pause.freeze
	for g.on.Load() {
		g.mu.Lock()
		owner, done := g.owner, g.done
		g.mu.Unlock()
		if done == nil || (c != nil && owner == c) {
			return
		}
		if c == nil {
			<-done
			continue
		}
		select {
		case <-done:
		case <-c.done:
			return
		}
	}
}

// debugDelay sleeps usec microseconds per key for rdb-key-save-delay and
// key-load-delay, as Redis's debugDelay: a negative value sleeps 1 µs with
// probability 1/-usec (short sleeps, statistically).
func debugDelay(usec int64) {
	if usec < 0 {
		if rand.Int64N(-usec) != 0 {
			return
		}
		usec = 1
	}
	time.Sleep(time.Duration(usec) * time.Microsecond)
}
