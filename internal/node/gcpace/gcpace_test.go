package gcpace

import (
	"runtime"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct{ base, headroom, live, want int64 }{
		{50, 32 * mb, 2 * mb, 1600},  // small heap: 32 MB of headroom
		{50, 32 * mb, 20 * mb, 160},  // 20 MB live may grow to 52 MB
		{50, 32 * mb, 64 * mb, 50},   // 50 % of 64 MB is the floor already
		{50, 32 * mb, 1000 * mb, 50}, // large heap: gc-percent alone
		{50, 0, 2 * mb, 50},          // floor off
		{-1, 32 * mb, 2 * mb, -1},    // collector off stays off
		{50, 32 * mb, 0, 50},         // nothing measured yet
		{50, 1 << 40, 1, 1 << 20},    // bounded
	} {
		if got := PercentFor(c.base, c.headroom, c.live); got != c.want {
			t.Errorf("PercentFor(%d, %d, %d) = %d, want %d", c.base, c.headroom, c.live, got, c.want)
		}
	}
}

// A finished collection advances gcCycles, which is what lets AfterCycle
// read the live heap again.
func TestGCCyclesCountCollections(t *testing.T) {
	gcWatchOnce.Do(watchGC)
	c0 := gcCycles.Load()
	deadline := time.Now().Add(10 * time.Second)
	for gcCycles.Load() == c0 {
		if time.Now().After(deadline) {
			t.Fatal("no collection counted in 10 s of runtime.GC calls")
		}
		runtime.GC()
		time.Sleep(time.Millisecond) // let the finalizer goroutine run
	}
	// And again: the finalizer re-armed itself.
	c1 := gcCycles.Load()
	for gcCycles.Load() == c1 {
		if time.Now().After(deadline) {
			t.Fatal("the second collection was not counted")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}
