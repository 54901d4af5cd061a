package clients

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/clock"
)

// Pause is CLIENT PAUSE's state: until when commands are held, and which
// (every command with ALL, the writes with WRITE). Its zero value is no
// pause; Clk must be set before use.
type Pause struct {
	mu    sync.Mutex
	until time.Time
	all   bool // ALL (true) or WRITE (false)
	wake  chan struct{}
	// on is set with until and cleared when the pause ends: commands read
	// it without the lock. A write increments the node's in-flight count
	// before checking it and a pause sets it before draining them, so one
	// of the two always sees the other.
	on atomic.Bool
	// waiting counts the clients a pause holds (INFO blocked_clients, as
	// Redis counts its postponed clients).
	waiting atomic.Int64
	// Changed, if set, is called (with the lock held) after On changes.
	Changed func()
	// Clk is the server's clock: a pause ends when it reaches until.
	Clk clock.Clock
	// gen counts the changes of until and all (Set, Unpause, the end of
	// a pause), so that SetUndoable's undo knows whether the pause is
	// still the one it set.
	gen uint64
}

// Waiter is a client as a pause holds it.
type Waiter interface {
	// Exempt reports a client no pause holds (a replica, the master link).
	Exempt() bool
	// SetBlocked marks the client held (CLIENT LIST's b flag) or not.
	SetBlocked(on bool)
	// Done is closed when the client's connection ends.
	Done() <-chan struct{}
	// Closed reports that the client was closed (killed while held).
	Closed() bool
}

// On reports an active pause, without the lock.
func (p *Pause) On() bool { return p.on.Load() }

// Waiting is the number of clients the pause holds now.
func (p *Pause) Waiting() int64 { return p.waiting.Load() }

// Set pauses until the given time, every command (all) or the writes. A
// new pause never shortens an active one of a stricter kind.
func (p *Pause) Set(until time.Time, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(until, all)
}

// SetUndoable is Set, and returns a function that puts back the pause as
// it was before (none, or an earlier one), unless the pause changed since
// (another Set, an Unpause, its end): an EXEC that paused before running
// its transaction undoes the pause when the transaction aborts.
func (p *Pause) SetUndoable(until time.Time, all bool) (undo func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prevUntil, prevAll := p.until, p.all
	if !p.Clk.Now().Before(prevUntil) {
		prevUntil = time.Time{} // the earlier pause is over
	}
	p.setLocked(until, all)
	gen := p.gen
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.gen != gen {
			return
		}
		if prevUntil.IsZero() || !p.Clk.Now().Before(prevUntil) {
			p.endLocked()
			return
		}
		p.gen++
		p.until, p.all = prevUntil, prevAll
		p.notify()
		// The held clients wait for the later end: wake them to wait
		// for the earlier one (or to run, if the pause no longer
		// holds them).
		if p.wake != nil {
			close(p.wake)
			p.wake = nil
		}
	}
}

// setLocked is Set with p.mu held.
func (p *Pause) setLocked(until time.Time, all bool) {
	p.gen++
	if p.wake == nil {
		p.wake = make(chan struct{})
	}
	now := p.Clk.Now()
	if now.Before(p.until) && p.all && !all {
		all = true
	}
	if until.After(p.until) || !now.Before(p.until) {
		p.until = until
	}
	p.all = all
	p.on.Store(true)
	p.notify()
}

// notify calls the Changed hook; p.mu is held.
func (p *Pause) notify() {
	if p.Changed != nil {
		p.Changed()
	}
}

// Unpause ends the pause and wakes the held clients.
func (p *Pause) Unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
}

// endLocked ends the pause and wakes the held clients; p.mu is held.
func (p *Pause) endLocked() {
	p.gen++
	p.until = time.Time{}
	p.on.Store(false)
	p.notify()
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

// Expire ends the pause if now reached its end.
func (p *Pause) Expire(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.until.IsZero() && !now.Before(p.until) {
		p.endLocked()
	}
}

// Holds reports whether an active pause holds back a command of a client
// (exempt: a replica or the master link) that writes or not.
func (p *Pause) Holds(exempt, writes bool) bool {
	if !p.on.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until.IsZero() || !p.Clk.Now().Before(p.until) || exempt {
		return false
	}
	return p.all || writes
}

// Wait blocks w while the pause applies to its command (writes: the
// command writes) and reports whether it did. It returns when the pause
// ends or no longer applies, or when w's connection ends.
func (p *Pause) Wait(w Waiter, writes func() bool) (held bool) {
	for {
		p.mu.Lock()
		if p.until.IsZero() || !p.Clk.Now().Before(p.until) || w.Exempt() {
			p.mu.Unlock()
			return held
		}
		if !p.all && !writes() {
			p.mu.Unlock()
			return held
		}
		if p.wake == nil {
			p.wake = make(chan struct{})
		}
		wake, until := p.wake, p.until
		p.mu.Unlock()
		held = true
		w.SetBlocked(true)
		p.waiting.Add(1)
		t := p.Clk.TimerAt(until)
		select {
		case <-wake:
		case <-t.C():
		case <-w.Done():
		}
		t.Stop()
		p.waiting.Add(-1)
		w.SetBlocked(false)
		if w.Closed() {
			return held // killed while paused: its command never runs
		}
	}
}
