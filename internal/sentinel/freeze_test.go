package sentinel

import (
	"testing"
	"time"
)

// The replica freeze (freeze.go), on the in-memory network: a master with
// min-replicas-ack 1 of 2 (ackSetup: r1 at offset 100 with priority 100,
// r2 at 60 with the better priority 10).

// firstIndex is the index in w.acts of the first action of kind to addr,
// -1 if none.
func firstIndex(w *world, kind ActionKind, addr Addr) int {
	for i, a := range w.acts {
		if a.Kind == kind && a.Addr == addr {
			return i
		}
	}
	return -1
}

// TestFreezeBeforeReading: the leader pauses every replica and takes the
// offset from the INFO that follows the pause; the promotion comes after
// both freezes, the promoted replica and the reconfigured one are unpaused
// in their REPLICAOF MULTIs, and no hello reaches a paused replica.
func TestFreezeBeforeReading(t *testing.T) {
	w, m, r1, r2 := ackSetup(t, 1)
	m.up = false
	s := w.sents[0]
	w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
	f1, f2 := firstIndex(w, ActFreeze, r1.addr), firstIndex(w, ActFreeze, r2.addr)
	p := firstIndex(w, ActReplicaOf, r1.addr)
	if f1 < 0 || f2 < 0 || p < 0 || p < f1 || p < f2 {
		t.Fatalf("actions %+v: want CLIENT PAUSE to r1 and r2 before r1's REPLICAOF NO ONE", w.acts)
	}
	for _, i := range []int{f1, f2} {
		if a := w.acts[i]; a.Refreeze || a.Pause != 10*time.Second || a.Epoch == 0 {
			t.Fatalf("freeze %+v: want a pause of failover-timeout (10 s) and an INFO, in the failover's epoch", a)
		}
	}
	promo, reconf := w.acts[p], w.acts[firstIndex(w, ActReplicaOf, r2.addr)]
	if !promo.Target.IsZero() || !promo.Unpause {
		t.Fatalf("promotion %+v: want REPLICAOF NO ONE with CLIENT UNPAUSE", promo)
	}
	if reconf.Target != r1.addr || !reconf.Unpause {
		t.Fatalf("reconfiguration %+v: want REPLICAOF r1 with CLIENT UNPAUSE", reconf)
	}
	if r1.paused(w.now) || r2.paused(w.now) {
		t.Fatal("a replica is still paused after the failover")
	}
	if w.helloWhilePaused != 0 {
		t.Fatalf("%d hellos reached a paused replica (a PUBLISH would hold the link)", w.helloWhilePaused)
	}
	if got := s.count(EventFreeze); got != 2 {
		t.Fatalf("+freeze-slave events = %d, want 2", got)
	}
}

// TestFreezeOffReadNotFrozen: a replica whose offset is read (INFO after
// the master stopped) but whose pause failed does not count: with 1 of 2
// both must be frozen, so nothing is promoted, and the replica that was
// frozen is unpaused when the failover aborts.
func TestFreezeOffReadNotFrozen(t *testing.T) {
	w, m, r1, r2 := ackSetup(t, 1)
	r2.noPause = true
	m.up = false
	s := w.sents[0]
	w.runUntil(30*time.Second, "-failover-abort-no-good-slave", func() bool { return s.count(EventAbortNoGoodReplica) > 0 })
	if promoted(w, r1) || promoted(w, r2) {
		t.Fatalf("promotions %v: r2 was read but not frozen, nothing may be promoted", w.replicaofs)
	}
	if s.m.masters["mymaster"].replicas[r2.addr.String()].infoRefresh.Before(s.m.masters["mymaster"].sDownSince) {
		t.Fatal("r2's INFO was not read after the master went down: the test does not test the rule")
	}
	u := firstIndex(w, ActUnpause, r1.addr)
	if u < 0 || u < firstIndex(w, ActFreeze, r1.addr) {
		t.Fatalf("actions %+v: want CLIENT UNPAUSE to r1 after the abort", w.acts)
	}
	if r1.paused(w.now) {
		t.Fatal("r1 still paused after the aborted failover")
	}
	if s.count(EventUnfreeze) == 0 {
		t.Fatal("no -freeze-slave event on the abort")
	}
	// r2 refused the pause: asked once in the epoch, never unpaused (a
	// CLIENT UNPAUSE it does not know would abort its REPLICAOF MULTI).
	n := 0
	for _, a := range w.acts {
		if a.Addr == r2.addr && (a.Kind == ActUnpause || a.Unpause) {
			t.Fatalf("action %+v: CLIENT UNPAUSE to the replica that refused the pause", a)
		}
		if a.Addr == r2.addr && a.Kind == ActFreeze {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d CLIENT PAUSEs to r2 in one failover attempt, want 1", n)
	}
}

// TestFreezeWriteBetweenFreezes models the sigstop-failover gap: the
// master is back while the leader freezes the replicas one after the
// other (r1 first: address order), and acknowledges writes (1 of 2
// suffices) through r2, not yet frozen. r1 has the better priority, so
// Redis's ranking would promote it without those writes; the election
// picks r2, whose frozen offset is the higher.
func TestFreezeWriteBetweenFreezes(t *testing.T) {
	w, m, r1, r2 := ackSetup(t, 1)
	r1.priority, r1.offset = 10, 100
	r2.priority, r2.offset = 100, 100
	w.run(11 * time.Second)
	m.up = false
	var acked int64 = 100
	w.onFreeze = func(r *fakeRedis) {
		// The master, back, acknowledges 50 writes through each
		// replica not paused (a paused one applies none).
		for _, o := range []*fakeRedis{r1, r2} {
			if !o.paused(w.now) && o.master == m.addr {
				o.offset += 50
				acked = max(acked, o.offset)
			}
		}
	}
	s := w.sents[0]
	w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
	var p *fakeRedis
	for _, r := range []*fakeRedis{r1, r2} {
		if promoted(w, r) {
			p = r
		}
	}
	if p == nil {
		t.Fatalf("promotions %v: want one", w.replicaofs)
	}
	if p.offset < acked {
		t.Fatalf("promoted %s at offset %d, acknowledged up to %d: writes lost", p.addr, p.offset, acked)
	}
	if acked == 100 || !promoted(w, r2) {
		t.Fatalf("acknowledged up to %d, promotions %v: want writes between the freezes and r2 promoted", acked, w.replicaofs)
	}
}

// TestFreezeRenewedUntilReconfigured: while the promotion waits (the
// replica takes 8 s to show as a master), the leader renews the other
// replica's pause every half failover-timeout, so that it never lapses
// before that replica is reconfigured.
func TestFreezeRenewedUntilReconfigured(t *testing.T) {
	w, m, r1, r2 := ackSetup(t, 1)
	m.up = false
	s := w.sents[0]
	r1.promoteOK = false
	var promoAt time.Time
	w.runUntil(60*time.Second, "+failover-end", func() bool {
		if promoAt.IsZero() && promoted(w, r1) {
			promoAt = w.now
		}
		if !promoAt.IsZero() && w.now.Sub(promoAt) >= 8*time.Second {
			r1.promoteOK, r1.master = true, Addr{}
		}
		if r2.master == m.addr && !r2.paused(w.now) && firstIndex(w, ActFreeze, r2.addr) >= 0 {
			t.Fatalf("r2's pause lapsed at %v before it was reconfigured", w.now)
		}
		return s.count(EventFailoverEnd) > 0
	})
	refreezes := 0
	for _, a := range w.acts {
		if a.Kind == ActFreeze && a.Refreeze && a.Addr == r2.addr {
			refreezes++
		}
	}
	if refreezes == 0 {
		t.Fatal("no re-freeze of r2 while the promotion waited 8 s (pause 10 s)")
	}
}

// TestFreezeOffWithoutAck: a master without min-replicas-ack (redis-server)
// gets Redis's failover: no pause, no unpause.
func TestFreezeOffWithoutAck(t *testing.T) {
	w, m, _, _ := ackSetup(t, 0)
	m.up = false
	s := w.sents[0]
	w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
	for _, a := range w.acts {
		if a.Kind == ActFreeze || a.Kind == ActUnpause || a.Unpause {
			t.Fatalf("action %+v in a failover without min-replicas-ack", a)
		}
	}
}

// TestFreezeForcedFailover: SENTINEL FAILOVER of a live master with
// min-replicas-ack freezes the replicas too (the master keeps writing:
// a write acknowledged through r2 after r1's freeze is on the promoted
// replica), and its pre-check does not need frozen offsets.
func TestFreezeForcedFailover(t *testing.T) {
	w, m, r1, r2 := ackSetup(t, 1)
	r1.priority, r2.priority = 10, 100
	r1.offset, r2.offset = 100, 100
	w.run(11 * time.Second)
	var acked int64 = 100
	w.onFreeze = func(r *fakeRedis) {
		for _, o := range []*fakeRedis{r1, r2} {
			if !o.paused(w.now) && o.master == m.addr {
				o.offset += 10
				acked = max(acked, o.offset)
			}
		}
	}
	s := w.sents[0]
	if err := s.m.Failover(w.now, "mymaster"); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
	if s.count(EventFreeze) != 2 {
		t.Fatalf("+freeze-slave events = %d, want 2", s.count(EventFreeze))
	}
	if !promoted(w, r2) || r2.offset < acked {
		t.Fatalf("promotions %v, r2 at %d, acknowledged up to %d: want r2 (it has every write)", w.replicaofs, r2.offset, acked)
	}
}

// TestFreezeResentOnNewLink: freezes whose replies are lost with their
// links (both replicas' links drop) are sent again on the new links, and
// the first failover attempt completes.
func TestFreezeResentOnNewLink(t *testing.T) {
	w, m, r1, r2 := ackSetup(t, 1)
	s := w.sents[0]
	w.drop[ActFreeze] = true // the first freezes never arrive
	m.up = false
	w.runUntil(30*time.Second, "+freeze-slave", func() bool { return s.count(EventFreeze) >= 2 })
	w.drop[ActFreeze] = false
	s.m.Step(w.now, LinkDown{r1.addr})
	s.m.Step(w.now, LinkDown{r2.addr})
	w.runUntil(30*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
	if !promoted(w, r1) && !promoted(w, r2) {
		t.Fatalf("promotions %v: want one", w.replicaofs)
	}
	if n := s.count(EventAbortNoGoodReplica); n != 0 {
		t.Fatalf("%d aborts: the freeze on r1's new link should have let the first attempt finish", n)
	}
}
