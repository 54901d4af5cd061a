package slotmig

import (
	"testing"
	"time"
)

// TestGatePause: a write let in before the pause holds the pause's drain
// until it leaves; during the pause no write is let in, and the lift
// wakes the writers waiting.
func TestGatePause(t *testing.T) {
	g := newGate(newTask(OpMigrate, [][2]int{{5, 6}}, "a", "b"))
	if !g.Covers(5) || !g.Covers(6) || g.Covers(7) || g.Covers(-1) {
		t.Fatal("Covers does not match the task's slots")
	}
	if !g.Enter() {
		t.Fatal("a write was held before any pause")
	}
	g.pause()
	if g.drain(time.Millisecond) {
		t.Fatal("drain returned with a write still running")
	}
	if g.Enter() {
		t.Fatal("a write was let in during the pause")
	}
	wait := g.Wait()
	g.Exit()
	if !g.drain(time.Second) {
		t.Fatal("drain did not return once the write left")
	}
	select {
	case <-wait:
		t.Fatal("Wait's channel closed before the pause was lifted")
	default:
	}
	g.unpause()
	select {
	case <-wait:
	default:
		t.Fatal("Wait's channel still open after the pause was lifted")
	}
	if !g.Enter() {
		t.Fatal("a write was held after the pause was lifted")
	}
	g.Exit()
}
