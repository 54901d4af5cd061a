package clock

import (
	"sync"
	"time"
)

// Manual is a Clock that moves only when Advance is called. Its
// guarantees, which tests rely on:
//   - Now returns the start time plus the sum of the advances so far.
//   - Advance(d) fires every timer and ticker tick due at or before the
//     new time, in deadline order (ties in the order they were armed),
//     with Now reading the deadline while each fires; a timer's channel
//     then holds its time, and a ticker's tick has been received and
//     handled (Ticker.Done) or the ticker was stopped.
//   - Nothing fires outside Advance, so a timer due later than the
//     clock's time has not fired, whatever the wall clock did.
//
// Advance calls are serialised. Advance must not be called from a loop
// driven by one of the clock's tickers (it would wait for itself).
type Manual struct {
	adv sync.Mutex // serialises Advance
	mu  sync.Mutex
	now time.Time
	seq uint64
	due []*event // armed timers and tickers, unordered
}

// event is one armed timer or ticker.
type event struct {
	when   time.Time
	seq    uint64
	timer  *manualTimer
	ticker *manualTicker
}

// NewManual returns a manual clock reading start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start.Round(0)}
}

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Pending returns how many timers and tickers are armed (a test checks
// that a waiter armed its timeout before it advances past it).
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.due)
}

// arm adds ev (m.mu held).
func (m *Manual) arm(ev *event) {
	m.seq++
	ev.seq = m.seq
	m.due = append(m.due, ev)
}

// disarm removes ev if armed (m.mu held) and reports whether it was.
func (m *Manual) disarm(ev *event) bool {
	for i, e := range m.due {
		if e == ev {
			m.due[i] = m.due[len(m.due)-1]
			m.due = m.due[:len(m.due)-1]
			return true
		}
	}
	return false
}

// next removes and returns the earliest event due at or before t.
func (m *Manual) next(t time.Time) *event {
	m.mu.Lock()
	defer m.mu.Unlock()
	best := -1
	for i, e := range m.due {
		if e.when.After(t) {
			continue
		}
		if best < 0 || e.when.Before(m.due[best].when) || (e.when.Equal(m.due[best].when) && e.seq < m.due[best].seq) {
			best = i
		}
	}
	if best < 0 {
		m.now = t
		return nil
	}
	ev := m.due[best]
	m.disarm(ev)
	if ev.when.After(m.now) {
		m.now = ev.when
	}
	if t := ev.timer; t != nil {
		t.ev = nil
	}
	if tk := ev.ticker; tk != nil {
		next := &event{when: ev.when.Add(tk.period), ticker: tk}
		tk.ev = next
		m.arm(next)
	}
	return ev
}

// Advance moves the clock forward by d (d < 0 counts as 0), firing what
// falls due on the way (see Manual).
func (m *Manual) Advance(d time.Duration) {
	m.adv.Lock()
	defer m.adv.Unlock()
	target := m.Now().Add(max(d, 0))
	for {
		ev := m.next(target)
		if ev == nil {
			return
		}
		if t := ev.timer; t != nil {
			t.c <- ev.when // cap 1, and a timer fires once
			continue
		}
		tk := ev.ticker
		select {
		case tk.c <- ev.when:
			select {
			case <-tk.ack:
			case <-tk.stop:
			}
		case <-tk.stop:
		}
	}
}

// TimerAt arms a timer firing when the clock reaches t.
func (m *Manual) TimerAt(t time.Time) Timer {
	mt := &manualTimer{m: m, c: make(chan time.Time, 1)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !t.After(m.now) {
		mt.c <- m.now
		return mt
	}
	mt.ev = &event{when: t, timer: mt}
	m.arm(mt.ev)
	return mt
}

// NewTicker arms a ticker firing every d from now.
func (m *Manual) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	tk := &manualTicker{m: m, period: d, c: make(chan time.Time), ack: make(chan struct{}), stop: make(chan struct{})}
	m.mu.Lock()
	defer m.mu.Unlock()
	tk.ev = &event{when: m.now.Add(d), ticker: tk}
	m.arm(tk.ev)
	return tk
}

type manualTimer struct {
	m  *Manual
	c  chan time.Time
	ev *event // nil once fired or stopped
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.ev == nil {
		return false
	}
	ok := t.m.disarm(t.ev)
	t.ev = nil
	return ok
}

type manualTicker struct {
	m      *Manual
	period time.Duration
	c      chan time.Time
	ack    chan struct{}
	stop   chan struct{}
	once   sync.Once
	ev     *event // the next tick (guarded by m.mu)
}

func (t *manualTicker) C() <-chan time.Time { return t.c }

func (t *manualTicker) Done() {
	select {
	case t.ack <- struct{}{}:
	case <-t.stop:
	}
}

func (t *manualTicker) Stop() {
	t.once.Do(func() {
		t.m.mu.Lock()
		t.m.disarm(t.ev)
		t.m.mu.Unlock()
		close(t.stop)
	})
}
