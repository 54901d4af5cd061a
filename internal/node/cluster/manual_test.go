package cluster

import (
	"testing"
	"time"
)

// mfCluster is 3 masters × 1 replica with settable offsets on master 0
// and its replica 3.
func mfCluster(t *testing.T) (*simNet, *testLocal, *testLocal) {
	t.Helper()
	ml, rl := &testLocal{off: 1000}, &testLocal{off: 900}
	w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, func(i int, c *Config) {
		switch i {
		case 0:
			c.Local = ml
		case 3:
			c.Local = rl
		}
	})
	w.run(3 * time.Second)
	return w, ml, rl
}

func TestManualFailoverErrors(t *testing.T) {
	w, _, _ := mfCluster(t)
	cases := []struct {
		node       int
		mode, want string
	}{
		{0, "", "ERR You should send CLUSTER FAILOVER to a replica"},
		{3, "soft", "ERR syntax error"},
	}
	for _, c := range cases {
		if err := w.nodes[c.node].m.Failover(w.now, c.mode); err == nil || err.Error() != c.want {
			t.Fatalf("node %d FAILOVER %q: %v, want %q", c.node, c.mode, err, c.want)
		}
	}
	// Without a link to its master, only FORCE or TAKEOVER.
	w.crash(0)
	if err := w.nodes[3].m.Failover(w.now, ""); err == nil ||
		err.Error() != "ERR Master is down or failed, please use CLUSTER FAILOVER FORCE" {
		t.Fatalf("FAILOVER with the master down: %v", err)
	}
	// A replica whose master is unknown (a master's replica after a
	// CLUSTER FORGET of it cannot happen: simulate the table state).
	r := w.nodes[4].m
	r.myself.slaveOf.removeSlave(r.myself)
	r.myself.slaveOf = nil
	if err := r.Failover(w.now, "force"); err == nil || err.Error() != "ERR I'm a replica but my master is unknown to me" {
		t.Fatalf("FAILOVER without a master: %v", err)
	}
}

func TestManualFailoverDefault(t *testing.T) {
	// CLUSTER FAILOVER: MFSTART, the master pauses writes and announces
	// offset 1000 flagged PAUSED; the replica (at 900) waits; at 1000 it
	// runs an election at once, with FORCEACK since its master is up,
	// wins, and the old master becomes its replica and unpauses.
	w, _, rl := mfCluster(t)
	m0, r3 := w.nodes[0], w.nodes[3]
	var paused []uint64
	w.readyHook = func(sn *simNode, rd Ready) {
		for _, s := range rd.Sends {
			if sn == m0 && s.Msg.MFlags[0]&MFlagPaused != 0 {
				paused = append(paused, s.Msg.Offset)
			}
			if s.Msg.Type == TypeFailoverAuthRequest && s.Msg.MFlags[0]&MFlagForceAck == 0 {
				t.Fatal("vote request without FORCEACK")
			}
		}
	}
	if err := r3.m.Failover(w.now, ""); err != nil {
		t.Fatal(err)
	}
	w.pump()
	if r3.sent[TypeMFStart] != 1 {
		t.Fatalf("%d MFSTART sent", r3.sent[TypeMFStart])
	}
	if len(m0.pauses) != 1 || m0.pauses[0] != 10*time.Second {
		t.Fatalf("master pauses %v, want [10s]", m0.pauses)
	}
	if len(paused) == 0 || paused[0] != 1000 {
		t.Fatalf("PAUSED offsets %v", paused)
	}
	// The replica has not caught up: no election however long it waits
	// within the 5 s.
	w.run(2 * time.Second)
	if r3.sent[TypeFailoverAuthRequest] != 0 || r3.m.IsMaster() {
		t.Fatal("election before the offset was reached")
	}
	// The master pings the replica at every tick while it waits.
	if n := len(paused); n < 15 {
		t.Fatalf("%d PAUSED packets in 2 s", n)
	}
	rl.off = 1000
	took := w.until(time.Second, "replica promoted", func() bool { return r3.m.IsMaster() })
	if took > 2*cronPeriod {
		t.Fatalf("promoted %v after the offset was reached", took)
	}
	if r3.eventsOf(EventElectionDelayed)[0].Detail != "0 rank 0 offset 1000" {
		t.Fatalf("manual election delay %+v", r3.eventsOf(EventElectionDelayed))
	}
	w.until(5*time.Second, "old master is a replica, unpaused, agreed", func() bool {
		return !m0.m.IsMaster() && m0.m.Myself().Master == r3.m.MyID() && m0.unpauses == 1 &&
			w.agree(0, r3.m.MyID(), r3.m.Myself().ConfigEpoch)
	})
}

func TestManualFailoverForce(t *testing.T) {
	// FORCE right after the master died, before anyone flags it FAIL: no
	// offset wait, votes granted thanks to FORCEACK.
	w, _, _ := mfCluster(t)
	r3 := w.nodes[3]
	w.crash(0)
	if err := r3.m.Failover(w.now, "FORCE"); err != nil {
		t.Fatal(err)
	}
	w.until(time.Second, "promoted", func() bool { return r3.m.IsMaster() })
	if r3.sent[TypeMFStart] != 0 {
		t.Fatal("FORCE sent MFSTART")
	}
	for _, sn := range w.nodes[1:3] {
		if flagsOf(sn, w.nodes[0].m.MyID())&FlagFail != 0 {
			t.Fatal("test assumption: the master is already FAIL")
		}
		if len(sn.eventsOf(EventVoteGranted)) != 1 {
			t.Fatalf("node %d did not vote", sn.idx)
		}
	}
}

func TestManualFailoverTakeover(t *testing.T) {
	// TAKEOVER with no master reachable: no vote, a new epoch of its own.
	w, _, _ := mfCluster(t)
	r3 := w.nodes[3]
	for _, m := range []int{0, 1, 2} {
		w.cutLink(3, m)
	}
	before := r3.m.CurrentEpoch()
	if err := r3.m.Failover(w.now, "takeover"); err != nil {
		t.Fatal(err)
	}
	if !r3.m.IsMaster() || r3.m.Myself().ConfigEpoch != before+1 {
		t.Fatalf("after TAKEOVER: master %v epoch %d (current was %d)", r3.m.IsMaster(), r3.m.Myself().ConfigEpoch, before)
	}
	rd := r3.m.Ready()
	if rd.RoleChange == nil || *rd.RoleChange != (RoleChange{}) || !rd.SaveConfig || !rd.Fsync {
		t.Fatalf("TAKEOVER Ready: %+v", rd)
	}
	r3.roles = append(r3.roles, *rd.RoleChange)
	if o, _ := r3.m.SlotOwner(0); o.ID != r3.m.MyID() {
		t.Fatal("slots not taken")
	}
	w.heal()
	w.until(10*time.Second, "agreement", func() bool {
		return w.agree(0, r3.m.MyID(), before+1) && !w.nodes[0].m.IsMaster()
	})
	if r3.sent[TypeFailoverAuthRequest] != 0 {
		t.Fatal("TAKEOVER asked for votes")
	}
}

func TestManualFailoverTimeout(t *testing.T) {
	// The replica never reaches the master's offset: after 5 s both sides
	// drop the manual failover, the master unpauses, nothing changes.
	w, _, _ := mfCluster(t)
	m0, r3 := w.nodes[0], w.nodes[3]
	if err := r3.m.Failover(w.now, ""); err != nil {
		t.Fatal(err)
	}
	w.pump()
	start := w.now
	took := w.until(6*time.Second, "master unpaused", func() bool { return m0.unpauses == 1 })
	if took < mfTimeout || took > mfTimeout+cronPeriod {
		t.Fatalf("unpaused after %v, want 5 s", took)
	}
	w.until(time.Second, "replica gave up", func() bool {
		for _, e := range r3.eventsOf(EventManualFailover) {
			if e.Detail == "timed out" {
				return true
			}
		}
		return false
	})
	if w.now.Sub(start) < mfTimeout {
		t.Fatal("replica gave up early")
	}
	// Nothing changes afterwards, and the master flags no packet PAUSED.
	pausedAfter := 0
	w.readyHook = func(sn *simNode, rd Ready) {
		for _, s := range rd.Sends {
			if sn == m0 && s.Msg.MFlags[0]&MFlagPaused != 0 {
				pausedAfter++
			}
		}
	}
	w.run(3 * time.Second)
	if r3.m.IsMaster() || !m0.m.IsMaster() || r3.sent[TypeFailoverAuthRequest] != 0 || pausedAfter != 0 {
		t.Fatalf("after a timed out manual failover: replica master %v, %d PAUSED packets", r3.m.IsMaster(), pausedAfter)
	}
}

func TestManualFailoverWaitsForPause(t *testing.T) {
	// Until the node reports the pause in force, the master announces no
	// PAUSED offset: the replica cannot start on an offset writes may
	// still move.
	w, _, rl := mfCluster(t)
	m0, r3 := w.nodes[0], w.nodes[3]
	m0.holdPause = true
	rl.off = 1000
	if err := r3.m.Failover(w.now, ""); err != nil {
		t.Fatal(err)
	}
	w.run(2 * time.Second)
	if r3.m.IsMaster() || r3.sent[TypeFailoverAuthRequest] != 0 {
		t.Fatal("failover without the master's pause")
	}
	m0.m.WritesPaused(w.now)
	w.pump()
	w.until(time.Second, "promoted", func() bool { return r3.m.IsMaster() })
}
