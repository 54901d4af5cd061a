package netio

import (
	"runtime"
	"testing"
	"time"
)

func TestBeatPeriod(t *testing.T) {
	const period = 20 * time.Millisecond
	b := NewBeat(period)
	defer b.Stop()
	if runtime.GOOS == "linux" && !b.Timerless() {
		t.Fatal("linux beat fell back to a runtime timer")
	}
	start := time.Now()
	const n = 5
	for i := 0; i < n; i++ {
		if _, ok := b.Wait(); !ok {
			t.Fatalf("Wait %d: beat stopped", i)
		}
	}
	// n expirations of a periodic timer started at start take at least
	// n periods (a late read collapses missed periods, never adds any).
	if el := time.Since(start); el < n*period-time.Millisecond {
		t.Fatalf("%d beats of %v in %v", n, period, el)
	}
}

func TestBeatStopEndsWait(t *testing.T) {
	b := NewBeat(time.Hour)
	res := make(chan bool, 1)
	go func() {
		_, ok := b.Wait()
		res <- ok
	}()
	b.Stop()
	select {
	case ok := <-res:
		if ok {
			t.Fatal("Wait reported a beat after Stop")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not end a Wait under way")
	}
	if _, ok := b.Wait(); ok {
		t.Fatal("Wait after Stop reported a beat")
	}
	b.Stop() // twice is fine
}
