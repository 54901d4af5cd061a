package clock

import (
	"testing"
	"time"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fired reports whether t's channel holds a time (without waiting: a
// manual timer's send happens inside Advance).
func fired(t Timer) (time.Time, bool) {
	select {
	case at := <-t.C():
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestManualTimerFiresAtDeadline(t *testing.T) {
	m := NewManual(start)
	tm := m.TimerAt(start.Add(time.Second))
	m.Advance(999 * time.Millisecond)
	if _, ok := fired(tm); ok {
		t.Fatal("timer fired 1 ms before its deadline")
	}
	if got := m.Pending(); got != 1 {
		t.Fatalf("pending %d, want 1", got)
	}
	m.Advance(time.Millisecond)
	at, ok := fired(tm)
	if !ok || !at.Equal(start.Add(time.Second)) {
		t.Fatalf("fired %v at %v, want true at %v", ok, at, start.Add(time.Second))
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}
	if got := m.Pending(); got != 0 {
		t.Fatalf("pending %d after firing, want 0", got)
	}
}

func TestManualTimerPastDeadlineAndStop(t *testing.T) {
	m := NewManual(start)
	if _, ok := fired(m.TimerAt(start)); !ok {
		t.Fatal("a timer at the current time did not fire at once")
	}
	tm := m.TimerAt(start.Add(time.Minute))
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer reported false")
	}
	m.Advance(time.Hour)
	if _, ok := fired(tm); ok {
		t.Fatal("a stopped timer fired")
	}
	if !m.Now().Equal(start.Add(time.Hour)) {
		t.Fatalf("now %v, want %v", m.Now(), start.Add(time.Hour))
	}
}

// TestManualFiresInDeadlineOrder checks that timers and ticks due within
// one Advance fire in deadline order with Now at each deadline.
func TestManualFiresInDeadlineOrder(t *testing.T) {
	m := NewManual(start)
	tk := m.NewTicker(100 * time.Millisecond)
	late := m.TimerAt(start.Add(250 * time.Millisecond))
	var seen []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			at := <-tk.C()
			if !m.Now().Equal(at) {
				t.Errorf("tick %v read now %v", at, m.Now())
			}
			// The 250 ms timer has fired exactly when the tick at 300
			// comes, not before the one at 200.
			_, f := fired(late)
			if f != (at.Sub(start) == 300*time.Millisecond) {
				t.Errorf("at %v: timer fired %v", at.Sub(start), f)
			}
			if f {
				late = m.TimerAt(start.Add(time.Hour)) // consumed; park it
			}
			seen = append(seen, at.Sub(start))
			tk.Done()
		}
	}()
	m.Advance(300 * time.Millisecond)
	<-done
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	if len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Fatalf("ticks %v, want %v", seen, want)
	}
	tk.Stop()
}

// TestManualAdvanceWaitsForTickHandled checks the Done handshake: when
// Advance returns, the loop has finished the tick's work.
func TestManualAdvanceWaitsForTickHandled(t *testing.T) {
	m := NewManual(start)
	tk := m.NewTicker(time.Second)
	var work int
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer tk.Stop()
		for at := range tk.C() {
			work++
			tk.Done()
			if at.Sub(start) >= 3*time.Second {
				return
			}
		}
	}()
	m.Advance(2500 * time.Millisecond)
	if work != 2 { // read without a lock: Advance's handshake orders it
		t.Fatalf("work %d after 2.5 s of 1 s ticks, want 2", work)
	}
	m.Advance(time.Second)
	<-stopped
	if work != 3 {
		t.Fatalf("work %d, want 3", work)
	}
	// The loop stopped its ticker: further advances do not wait for it.
	m.Advance(10 * time.Second)
	if got := m.Pending(); got != 0 {
		t.Fatalf("pending %d after the ticker stopped, want 0", got)
	}
}

func TestRealTimer(t *testing.T) {
	c := Real()
	tm := c.TimerAt(c.Now().Add(-time.Second))
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("a real timer with a past deadline did not fire")
	}
	tk := c.NewTicker(time.Millisecond)
	select {
	case <-tk.C():
		tk.Done()
	case <-time.After(5 * time.Second):
		t.Fatal("a real ticker did not tick")
	}
	tk.Stop()
}
