package slotmig

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// Gate holds writes to the slots a source task is moving. Outside the
// pause a write passes after counting itself in (Enter); during it a
// write waits on Wait. The pause sets paused and then waits for the
// writes counted in to leave: a write either counted itself before paused
// was set (and the pause waits for it) or sees paused and waits
// (sequentially consistent atomics), so once the pause is in force no
// write to the slots runs.
type Gate struct {
	task   *Task
	in     [cluster.NumSlots]bool        // the task's slots; fixed
	live   [cluster.NumSlots]atomic.Bool // slots whose snapshot was taken: the tap forwards their writes
	paused atomic.Bool
	// done is set once the slots belong to the target: the gate stays
	// installed, every write meeting it re-checks the routing.
	done     atomic.Bool
	inflight atomic.Int64
	mu       sync.Mutex
	wake     chan struct{} // closed when the pause is lifted
}

func newGate(t *Task) *Gate {
	g := &Gate{task: t, wake: make(chan struct{})}
	for _, s := range t.slots {
		g.in[s] = true
	}
	return g
}

// Covers reports whether slot is one of the slots being moved.
func (g *Gate) Covers(slot int) bool { return slot >= 0 && slot < cluster.NumSlots && g.in[slot] }

// Released reports whether the slots belong to the target now: a write
// meeting the gate must check the routing again (and get MOVED).
func (g *Gate) Released() bool { return g.done.Load() }

// Enter counts a write to the slots in and reports true, unless the
// writes are paused: then it reports false and the write waits on Wait.
// A write let in calls Exit once it has run.
func (g *Gate) Enter() bool {
	g.inflight.Add(1)
	if !g.paused.Load() {
		return true
	}
	g.inflight.Add(-1)
	return false
}

// Exit counts out a write Enter let in.
func (g *Gate) Exit() { g.inflight.Add(-1) }

// Wait returns a channel closed when the current pause is lifted.
func (g *Gate) Wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wake
}

func (g *Gate) pause() {
	g.mu.Lock()
	g.wake = make(chan struct{})
	g.paused.Store(true)
	g.mu.Unlock()
}

func (g *Gate) unpause() {
	g.mu.Lock()
	if g.paused.Load() {
		g.paused.Store(false)
		close(g.wake)
	}
	g.mu.Unlock()
}

// drain waits until no write to the slots is running, for at most d.
func (g *Gate) drain(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for g.inflight.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Microsecond)
	}
	return true
}
