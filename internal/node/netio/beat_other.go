//go:build !linux

package netio

import (
	"errors"
	"time"
)

// timerFD exists on linux only (beat_linux.go); elsewhere Beat uses a
// time.Ticker.
type timerFD struct{}

func newTimerFD(time.Duration) (*timerFD, error) {
	return nil, errors.New("netio: no timerfd on this platform")
}

func (t *timerFD) wait() bool { return false }
func (t *timerFD) close()     {}
