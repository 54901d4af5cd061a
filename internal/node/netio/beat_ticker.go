package netio

import "time"

// BeatTicker is a Beat in the shape of a ticker (the node's clock.Ticker):
// a goroutine waits for the beat and hands each tick on its channel; a
// tick the reader has not taken yet when the next one comes is dropped,
// as a time.Ticker drops it. No runtime timer is armed where the Beat
// arms none.
type BeatTicker struct {
	b *Beat
	c chan time.Time
}

// NewBeatTicker starts a BeatTicker of the given period (> 0).
func NewBeatTicker(period time.Duration) *BeatTicker {
	t := &BeatTicker{b: NewBeat(period), c: make(chan time.Time, 1)}
	go func() {
		for {
			now, ok := t.b.Wait()
			if !ok {
				return
			}
			select {
			case t.c <- now:
			default:
			}
		}
	}()
	return t
}

// C is the channel the ticks are sent on.
func (t *BeatTicker) C() <-chan time.Time { return t.c }

// Done reports a tick handled (nothing to do on the real clock).
func (t *BeatTicker) Done() {}

// Stop ends the beat; no tick is sent after it returns but the one that
// may already be in the channel.
func (t *BeatTicker) Stop() { t.b.Stop() }
