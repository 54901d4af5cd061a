package repl

import (
	"slices"
	"testing"
)

func TestAckGateAcked(t *testing.T) {
	g := NewAckGate(2)
	if g.Acked() != -1 {
		t.Fatalf("no replica: Acked = %d, want -1", g.Acked())
	}
	g.Join(1, true, 100)
	if g.Acked() != -1 {
		t.Fatalf("1 of 2 replicas: Acked = %d, want -1", g.Acked())
	}
	g.Join(2, true, 50)
	g.Join(3, false, 500) // cannot be promoted: never counts
	if g.Acked() != 50 || g.Eligible() != 2 {
		t.Fatalf("Acked = %d eligible %d, want 50 and 2", g.Acked(), g.Eligible())
	}
	g.Ack(2, 300)
	if g.Acked() != 100 {
		t.Fatalf("after ack: Acked = %d, want 100 (the 2nd highest)", g.Acked())
	}
	if n := g.CountAt(200); n != 1 {
		t.Fatalf("CountAt(200) = %d, want 1 (replica 3 is not eligible)", n)
	}
	g.Ack(2, 10) // offsets never go back
	if g.Acked() != 100 {
		t.Fatalf("an older ack moved Acked to %d", g.Acked())
	}
	g.SetEligible(3, true)
	if g.Acked() != 300 {
		t.Fatalf("replica 3 eligible: Acked = %d, want 300", g.Acked())
	}
	g.Leave(2)
	if g.Acked() != 100 {
		t.Fatalf("replica 2 left: Acked = %d, want 100", g.Acked())
	}
	g.SetNeed(0)
	if g.Acked() != -1 {
		t.Fatalf("need 0: Acked = %d, want -1", g.Acked())
	}
	if g.Ack(9, 1) {
		t.Fatal("Ack of an unknown replica reported known")
	}
}

func TestAckGateWaitRelease(t *testing.T) {
	g := NewAckGate(1)
	g.Join(1, true, 0)
	if g.Wait(7, 0) {
		t.Fatal("Wait for an offset already acked registered a waiter")
	}
	g.Wait(10, 300)
	g.Wait(11, 100)
	g.Wait(12, 200)
	g.Ack(1, 150)
	if got := g.Release(nil); !slices.Equal(got, []int64{11}) {
		t.Fatalf("released %v, want [11]", got)
	}
	g.Ack(1, 300)
	if got := g.Release(nil); !slices.Equal(got, []int64{12, 10}) {
		t.Fatalf("released %v, want [12 10] (offset order)", got)
	}
	if g.Waiting() != 0 {
		t.Fatalf("%d still waiting", g.Waiting())
	}
	g.Wait(13, 400)
	if !g.Cancel(13) || g.Cancel(13) {
		t.Fatal("Cancel: want true once, then false")
	}
	g.Ack(1, 500)
	if got := g.Release(nil); len(got) != 0 {
		t.Fatalf("a cancelled writer was released: %v", got)
	}
}

// TestAckGateGroupCommit: one GETACK round serves every writer waiting
// when it is sent; writers arriving during the round wait for its answer
// and share the next round; a round left unanswered expires.
func TestAckGateGroupCommit(t *testing.T) {
	g := NewAckGate(1)
	g.Join(1, true, 0)
	now := int64(1e9)
	if g.NeedGetAck(now) {
		t.Fatal("GETACK with no writer waiting")
	}
	g.Wait(1, 100)
	if !g.NeedGetAck(now) {
		t.Fatal("a writer waits and no round is open: want a GETACK")
	}
	g.SentGetAck(now, 137)
	for id := int64(2); id <= 16; id++ { // a pipeline's worth of writers
		g.Wait(id, 100+id)
		if g.NeedGetAck(now + 1000) {
			t.Fatalf("writer %d: a second GETACK while the round is open", id)
		}
	}
	g.Wait(17, 200) // past the open round
	if g.NeedGetAck(now + 2000) {
		t.Fatal("a writer past the open round must wait for its answer")
	}
	g.Ack(1, 137) // the round's answer
	if got := g.Release(nil); len(got) != 16 {
		t.Fatalf("the round released %d writers, want 16", len(got))
	}
	if g.RoundOpen(now + 3000) {
		t.Fatal("round still open after its answer")
	}
	if !g.NeedGetAck(now + 3000) {
		t.Fatal("writer 17 waits with no round open: want the next GETACK")
	}
	g.SentGetAck(now+3000, 240)
	if g.NeedGetAck(now + 3000 + RoundTimeout - 1) {
		t.Fatal("GETACK before the round expired")
	}
	if !g.NeedGetAck(now + 3000 + RoundTimeout) {
		t.Fatal("an unanswered round must expire")
	}
}
