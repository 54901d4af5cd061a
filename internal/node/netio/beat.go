package netio

import (
	"sync"
	"time"
)

// Beat is a periodic wake-up that arms no runtime timer where the
// platform allows it: on Linux a timerfd whose expirations are read
// through the runtime's netpoller, so an idle process sleeps in one
// epoll_wait that the beat and socket input both end, as Redis's event
// loop does. A runtime timer (time.Ticker) also wakes Go's sysmon thread,
// which sleeps until the next timer and polls once more after it: twice
// the thread wake-ups of the beat itself. Elsewhere, or if the timerfd
// cannot be made, Beat falls back to a time.Ticker.
//
// The guarantee is the ticker's: Wait returns once per period (a late
// reader sees one return for all the periods it missed, never a burst),
// until Stop.
type Beat struct {
	period   time.Duration
	mu       sync.Mutex // guards fd and t against Stop
	fd       *timerFD   // nil: the ticker
	t        *time.Ticker
	stop     chan struct{}
	stopOnce sync.Once
}

// NewBeat starts a beat of the given period (> 0).
func NewBeat(period time.Duration) *Beat {
	b := &Beat{period: period, stop: make(chan struct{})}
	if fd, err := newTimerFD(period); err == nil {
		b.fd = fd
		return b
	}
	b.t = time.NewTicker(period)
	return b
}

// Wait blocks until the next beat and returns the time then; ok is false
// once Stop was called (also for a Wait under way). One goroutine waits.
func (b *Beat) Wait() (now time.Time, ok bool) {
	b.mu.Lock()
	fd := b.fd
	b.mu.Unlock()
	if fd != nil {
		if fd.wait() {
			return time.Now(), true
		}
		select {
		case <-b.stop:
			return time.Time{}, false
		default:
		}
		// A read failed without Stop (never seen): go on with a ticker
		// rather than end the beat.
		b.mu.Lock()
		fd.close()
		b.fd = nil
		b.t = time.NewTicker(b.period)
		b.mu.Unlock()
	}
	select {
	case <-b.stop:
		return time.Time{}, false
	case now = <-b.t.C:
		return now, true
	}
}

// Stop ends the beat: a Wait under way returns, later ones return at
// once. Stop may be called more than once, from any goroutine.
func (b *Beat) Stop() {
	b.stopOnce.Do(func() {
		close(b.stop)
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.fd != nil {
			b.fd.close()
		} else {
			b.t.Stop()
		}
	})
}

// Timerless reports whether the beat runs without a runtime timer.
func (b *Beat) Timerless() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fd != nil
}
