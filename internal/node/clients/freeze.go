package clients

import (
	"sync"
	"sync/atomic"
	"time"
)

// Freeze stops the whole server during DEBUG SLEEP, as Redis's single
// thread does when it sleeps: while one owner (the sleeping client,
// compared by identity) holds it, everyone else that calls Wait waits,
// the server's own goroutines (owner nil) until the sleep ends. The zero
// Freeze is open.
type Freeze struct {
	on    atomic.Bool
	mu    sync.Mutex
	owner any
	done  chan struct{}
}

// Hold stops the server for d on behalf of owner (not nil).
func (g *Freeze) Hold(owner any, d time.Duration) {
	g.mu.Lock()
	done := make(chan struct{})
	g.owner, g.done = owner, done
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

// On reports whether a Hold stops the server (one atomic load).
func (g *Freeze) On() bool { return g.on.Load() }

// Wait waits while a Hold of another owner runs. owner nil is the
// server's own goroutines, which wait until the end; a client waits
// until the end or until gone is closed (it went away).
func (g *Freeze) Wait(owner any, gone <-chan struct{}) {
	for g.on.Load() {
		g.mu.Lock()
		cur, done := g.owner, g.done
		g.mu.Unlock()
		if done == nil || (owner != nil && cur == owner) {
			return
		}
		if owner == nil {
			<-done
			continue
		}
		select {
		case <-done:
		case <-gone:
			return
		}
	}
}
