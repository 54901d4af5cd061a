package netio

import (
	"testing"
	"time"
)

// TestBeatTickerTicks: the ticker delivers beats on its channel at about
// its period, and Stop ends them.
func TestBeatTickerTicks(t *testing.T) {
	bt := NewBeatTicker(10 * time.Millisecond)
	start := time.Now()
	for i := 0; i < 3; i++ {
		select {
		case <-bt.C():
		case <-time.After(5 * time.Second):
			t.Fatalf("tick %d did not come", i)
		}
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("3 ticks of 10 ms in %v", d)
	}
	bt.Stop()
	// After Stop at most the tick already buffered remains; the goroutine
	// has ended once Wait reports the stop, so the channel stays empty.
	select {
	case <-bt.C():
	default:
	}
	if _, ok := bt.b.Wait(); ok {
		t.Fatal("Wait after Stop reported a beat")
	}
}
