package migrate

import (
	"testing"
	"time"
)

// A guarded key is found in its database only; Wait returns once the
// guard is released, counted in Waiting meanwhile.
func TestGuards(t *testing.T) {
	var g Guards
	if g.Lookup(0, "k") != nil || g.Count() != 0 {
		t.Fatal("empty Guards guards something")
	}
	ch := g.Add(0, []string{"k", "l"})
	if g.Count() != 2 || g.Lookup(0, "k") != ch || g.Lookup(1, "k") != nil || g.Lookup(0, "m") != nil {
		t.Fatalf("after Add: count %d", g.Count())
	}
	done := make(chan struct{})
	go func() { g.Wait(g.Lookup(0, "l")); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for g.Waiting() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the waiter was not counted")
		}
		time.Sleep(time.Millisecond)
	}
	g.Release(0, []string{"k", "l"}, ch)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after Release")
	}
	if g.Count() != 0 || g.Waiting() != 0 || g.Lookup(0, "k") != nil {
		t.Fatalf("after Release: count %d, waiting %d", g.Count(), g.Waiting())
	}
}
