package clients

import (
	"testing"
	"time"

	"github.com/shardis/shardis/internal/node/clock"
)

// pauseView is what a test reads of a Pause: whether it holds a write
// and a read of an ordinary client.
type pauseView struct{ on, writes, reads bool }

func viewOf(p *Pause) pauseView {
	return pauseView{p.On(), p.Holds(false, true), p.Holds(false, false)}
}

func TestPauseSetUndoable(t *testing.T) {
	start := time.Unix(1000, 0)
	none := pauseView{}
	write := pauseView{on: true, writes: true}
	all := pauseView{on: true, writes: true, reads: true}
	for _, tc := range []struct {
		name string
		// before sets the pause the undoable one finds (nil: none).
		before func(p *Pause)
		// between runs after SetUndoable and before undo.
		between func(p *Pause, m *clock.Manual)
		// want is the pause after undo, and wantLater 5 s after that.
		want, wantLater pauseView
	}{
		{name: "no pause before", want: none, wantLater: none},
		{
			name:   "a shorter WRITE pause before",
			before: func(p *Pause) { p.Set(start.Add(3*time.Second), false) },
			want:   write, wantLater: none,
		},
		{
			name:   "an ended pause before",
			before: func(p *Pause) { p.Set(start.Add(-time.Second), false) },
			want:   none, wantLater: none,
		},
		{
			name:    "another Set between: undo keeps it",
			between: func(p *Pause, m *clock.Manual) { p.Set(start.Add(20*time.Second), true) },
			want:    all, wantLater: all,
		},
		{
			name:    "an Unpause between: undo keeps it",
			before:  func(p *Pause) { p.Set(start.Add(30*time.Second), false) },
			between: func(p *Pause, m *clock.Manual) { p.Unpause() },
			want:    none, wantLater: none,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := clock.NewManual(start)
			p := &Pause{Clk: m}
			if tc.before != nil {
				tc.before(p)
			}
			undo := p.SetUndoable(start.Add(10*time.Second), true)
			if got := viewOf(p); got != all {
				t.Fatalf("after SetUndoable: %+v, want %+v", got, all)
			}
			if tc.between != nil {
				tc.between(p, m)
			}
			undo()
			if got := viewOf(p); got != tc.want {
				t.Fatalf("after undo: %+v, want %+v", got, tc.want)
			}
			m.Advance(5 * time.Second)
			p.Expire(m.Now())
			if got := viewOf(p); got != tc.wantLater {
				t.Fatalf("5 s after undo: %+v, want %+v", got, tc.wantLater)
			}
		})
	}
}

// waiter is a client for Pause.Wait.
type waiter struct{ done chan struct{} }

func (waiter) Exempt() bool            { return false }
func (waiter) SetBlocked(bool)         {}
func (w waiter) Done() <-chan struct{} { return w.done }
func (waiter) Closed() bool            { return false }

// TestPauseUndoWakesHeld: a client held by the undone pause is released
// when undo puts back "no pause", not when the undone pause would have
// ended.
func TestPauseUndoWakesHeld(t *testing.T) {
	m := clock.NewManual(time.Unix(1000, 0))
	p := &Pause{Clk: m}
	undo := p.SetUndoable(m.Now().Add(time.Hour), false)
	released := make(chan bool, 1)
	go func() { released <- p.Wait(waiter{make(chan struct{})}, func() bool { return true }) }()
	deadline := time.Now().Add(10 * time.Second)
	for p.Waiting() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the write not held")
		}
		time.Sleep(time.Millisecond)
	}
	undo()
	select {
	case held := <-released:
		if !held {
			t.Fatal("Wait reported not held")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held write not released by undo")
	}
}
