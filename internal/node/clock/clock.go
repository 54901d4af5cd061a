// Package clock is the node's one source of time: key expiry, TTL
// replies, client idle timeouts, blocking-command timeouts, CLIENT PAUSE
// deadlines, the server and persistence crons, the LRU clock and slowlog
// timestamps all read the Clock a server was built with.
//
// Real is the operating system's clock (the default). Manual is a clock
// that only moves when a test advances it: Advance fires the timers and
// tickers that fall due, in deadline order, so a test of a TTL or a
// timeout steps time instead of sleeping for it.
package clock

import (
	"time"
)

// Clock tells the time and arms timers and tickers on it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// TimerAt returns a timer that sends on its channel once the clock
	// reaches t (at once if it already has). An absolute deadline leaves
	// no gap between reading the clock and arming the timer in which the
	// clock could move.
	TimerAt(t time.Time) Timer
	// NewTicker returns a ticker that sends the time every d (d > 0).
	NewTicker(d time.Duration) Ticker
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C is the channel the timer's time is sent on (buffered: the send
	// never waits for the receiver, as time.Timer's).
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// Ticker is a periodic ticker of a Clock.
//
// A loop driven by a Ticker calls Done after it handled each tick. The
// real clock ignores it; a Manual clock's Advance waits for it, so when
// Advance returns every tick it fired has been handled in full (a test
// steps a cron and then observes what the step did).
type Ticker interface {
	// C is the channel the ticks are sent on.
	C() <-chan time.Time
	// Done reports that the tick last received has been handled.
	Done()
	// Stop turns the ticker off; a tick being delivered is dropped. The
	// loop that owns the ticker must stop it before it exits.
	Stop()
}

// Real returns the operating system's clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) TimerAt(t time.Time) Timer { return realTimer{time.NewTimer(time.Until(t))} }

func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Done()               {}
func (t realTicker) Stop()               { t.t.Stop() }
