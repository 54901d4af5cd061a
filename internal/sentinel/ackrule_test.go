package sentinel

import (
	"slices"
	"testing"
	"time"
)

func TestAckReadsNeeded(t *testing.T) {
	tests := []struct{ eligible, need, want int }{
		{2, 0, 0}, // rule off
		{2, 1, 2}, // 1 of 2: both offsets must be read
		{2, 2, 1}, // every replica acknowledges: any one holds all
		{3, 1, 3},
		{3, 2, 2},
		{5, 3, 3},
		{1, 2, 1}, // more needed than eligible: writes were refused; one read
	}
	for _, tt := range tests {
		if got := ackReadsNeeded(tt.eligible, tt.need); got != tt.want {
			t.Errorf("ackReadsNeeded(%d, %d) = %d, want %d", tt.eligible, tt.need, got, tt.want)
		}
	}
}

// ackSetup: a master with min-replicas-ack need (0: a redis-server
// master), r1 holding every acknowledged write (offset 100) with the worse
// priority, r2 behind (offset 60) with the better priority, so Redis's
// ranking alone would pick r2.
func ackSetup(t *testing.T, need int) (*world, *fakeRedis, *fakeRedis, *fakeRedis) {
	w, m, r1, r2 := setup(t, 1, 1, nil)
	m.ackNeed = need
	r1.priority, r1.offset = 100, 100
	r2.priority, r2.offset = 10, 60
	w.run(11 * time.Second) // INFO of the master with the fields
	return w, m, r1, r2
}

func promoted(w *world, r *fakeRedis) bool {
	return slices.Contains(w.replicaofs, r.addr.String()+" -> "+Addr{}.String())
}

// TestAckRulePromotesTheReplicaWithEveryWrite (must-show 4): with
// min-replicas-ack 1 of 2, the replica holding every acknowledged write
// is promoted, although Redis's ranking (priority first) prefers the
// other; with the rule off, Redis's ranking decides.
func TestAckRulePromotesTheReplicaWithEveryWrite(t *testing.T) {
	t.Run("RuleOn", func(t *testing.T) {
		w, m, r1, r2 := ackSetup(t, 1)
		m.up = false
		s := w.sents[0]
		w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
		if !promoted(w, r1) || promoted(w, r2) {
			t.Fatalf("promotions %v: want r1 %s only (it holds every acknowledged write)", w.replicaofs, r1.addr)
		}
	})
	t.Run("RuleOff", func(t *testing.T) {
		w, m, r1, r2 := ackSetup(t, 0)
		m.up = false
		s := w.sents[0]
		w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
		if !promoted(w, r2) || promoted(w, r1) {
			t.Fatalf("promotions %v: want r2 %s (Redis's ranking: lower priority first)", w.replicaofs, r2.addr)
		}
	})
}

// TestAckRuleNeverPromotesAReplicaMissingWrites (must-show 4): with
// min-replicas-ack 1 of 2 and r1 (the one with every write) unreachable,
// r2 may lack acknowledged writes, so it is never promoted; once r1 is
// reachable again it is.
func TestAckRuleNeverPromotesAReplicaMissingWrites(t *testing.T) {
	w, m, r1, r2 := ackSetup(t, 1)
	s := w.sents[0]
	w.setCut(s.addr, r1.addr, true)
	m.up = false
	// Through several failover attempts (failover-timeout 10 s).
	w.run(45 * time.Second)
	if promoted(w, r2) || promoted(w, r1) {
		t.Fatalf("promotions %v with r1 unreachable: r2 lacks writes, nothing may be promoted", w.replicaofs)
	}
	if s.count(EventAbortNoGoodReplica) == 0 {
		t.Fatal("no -failover-abort-no-good-slave: the failover did not wait for the rule")
	}
	w.setCut(s.addr, r1.addr, false)
	w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
	if !promoted(w, r1) || promoted(w, r2) {
		t.Fatalf("promotions %v: want r1 %s once reachable", w.replicaofs, r1.addr)
	}
}

// TestAckRuleEveryReplicaAcks: with min-replicas-ack 2 of 2 every
// replica holds every acknowledged write, so one reachable replica is
// enough (availability is kept).
func TestAckRuleEveryReplicaAcks(t *testing.T) {
	w, m, r1, r2 := ackSetup(t, 2)
	r2.offset = 100 // both acknowledged everything
	s := w.sents[0]
	w.setCut(s.addr, r1.addr, true)
	m.up = false
	w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
	if !promoted(w, r2) {
		t.Fatalf("promotions %v: want r2 %s", w.replicaofs, r2.addr)
	}
}

// TestAckRuleWaitsForTheFence models the partial partition: the Sentinels
// are cut from the master, which still reaches both replicas and keeps
// acknowledging writes through whichever is still its replica and not
// paused (each step, every such replica acknowledges one more write),
// until its Sentinel fence is up: a lease after the last PING it got (the
// cut, at the latest). The lease (5 s, down-after 1 s) outlasts the
// failover (3.4 s here). Before the replica freeze, the run without a
// fence lost the writes the other replica acknowledged after the
// promotion; with the freeze (freeze.go) a frozen replica acknowledges
// nothing more, so the promoted replica holds every acknowledged write
// with the fence and without it.
func TestAckRuleWaitsForTheFence(t *testing.T) {
	run := func(t *testing.T, lease time.Duration) (lost int64) {
		w, m, r1, r2 := setup(t, 3, 2, nil)
		m.ackNeed, m.ackLease = 1, lease
		r1.priority, r1.offset = 10, 100 // Redis's ranking prefers r1
		r2.priority, r2.offset = 100, 100
		w.run(11 * time.Second) // INFO of the master with the fields
		cut := w.now
		for _, s := range w.sents {
			w.setCut(s.addr, m.addr, true)
		}
		var acked int64
		ack := func() {
			if lease > 0 && w.now.Sub(cut) >= lease {
				return // fenced: nothing acknowledged any more
			}
			for _, r := range []*fakeRedis{r1, r2} {
				if r.master == m.addr && !r.paused(w.now) {
					r.offset++
					acked = max(acked, r.offset)
				}
			}
		}
		w.runUntil(60*time.Second, "+failover-end", func() bool {
			ack()
			return w.total(EventFailoverEnd) > 0
		})
		for i := 0; i < 100 && (r1.master == m.addr || r2.master == m.addr); i++ {
			w.run(100 * time.Millisecond)
			ack()
		}
		var p *fakeRedis
		switch {
		case promoted(w, r1) && !promoted(w, r2):
			p = r1
		case promoted(w, r2) && !promoted(w, r1):
			p = r2
		default:
			t.Fatalf("promotions %v: want exactly one replica promoted", w.replicaofs)
		}
		return acked - p.offset
	}
	t.Run("Fence", func(t *testing.T) {
		if lost := run(t, 5*time.Second); lost != 0 {
			t.Fatalf("%d acknowledged writes missing on the promoted replica, want 0", lost)
		}
	})
	t.Run("NoFence", func(t *testing.T) {
		if lost := run(t, 0); lost != 0 {
			t.Fatalf("%d acknowledged writes missing on the promoted replica, want 0 (the freeze)", lost)
		}
	})
}
