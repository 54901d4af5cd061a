package cluster

import (
	"testing"
	"time"
)

// streamLocal is a replica's data as the freeze sees it: the offset it
// applied and the master address the machine holds (ReplHolder).
type streamLocal struct {
	off  int64
	held string
}

func (l *streamLocal) KeysInSlot(int) int          { return 0 }
func (l *streamLocal) DBSize() int                 { return 0 }
func (l *streamLocal) ReplOffset() int64           { return l.off }
func (l *streamLocal) HoldReplication(addr string) { l.held = addr }

// shardModel is master 0's replication stream and min-replicas-ack gate
// on the in-memory network: after every tick a running master that
// still sees itself as a master and is not fenced writes one command;
// each replica that follows it (its machine's master, reachable, and, if
// freeze is set, not holding its address) applies it; the write is
// acknowledged (a success reply) when need replicas applied it.
type shardModel struct {
	w        *simNet
	replicas []int
	locals   map[int]*streamLocal
	need     int
	freeze   bool // false: replicas ignore the hold, as a redis-server replica
	stopped  bool
	off      int64
	acked    []int64 // offsets of the acknowledged writes
}

func (sm *shardModel) step() {
	w := sm.w
	mn := w.nodes[0]
	if sm.stopped || mn.down || !mn.m.IsMaster() || mn.m.Fenced(w.now) {
		return
	}
	sm.off += 10
	id0 := mn.m.MyID()
	n := 0
	for _, r := range sm.replicas {
		rn, l := w.nodes[r], sm.locals[r]
		if rn.m.IsMaster() || rn.m.Myself().Master != id0 || !w.reachable(0, r) {
			continue
		}
		if ni, _ := rn.m.Node(id0); sm.freeze && l.held == joinHostPort(ni.IP, ni.Port) {
			continue
		}
		l.off = sm.off
		n++
	}
	if n >= sm.need {
		sm.acked = append(sm.acked, sm.off)
	}
}

// freezeShard: 3 masters, master 0 with replicas 3 and 4, min-replicas-ack
// 1, the stream model running.
func freezeShard(t *testing.T, freeze bool, tweak func(i int, c *Config)) (*simNet, *shardModel) {
	t.Helper()
	sm := &shardModel{replicas: []int{3, 4}, locals: map[int]*streamLocal{3: {}, 4: {}}, need: 1, freeze: freeze}
	w := replicaCluster(t, 5, 3, map[int]int{3: 0, 4: 0}, func(i int, c *Config) {
		if l, ok := sm.locals[i]; ok {
			c.Local = l
		}
		c.MinReplicasAck = 1
		if tweak != nil {
			tweak(i, c)
		}
	})
	sm.w = w
	w.delay = 30 * time.Millisecond // one hop per tick: rounds, votes and news take ticks
	w.onTick = sm.step
	w.run(3 * time.Second)
	if len(sm.acked) == 0 {
		t.Fatal("the model acknowledged no write before the fault")
	}
	return w, sm
}

// resumeMidFailover stops master 0 (cut from every node, writing
// nothing) until a replica has won the election, then resumes it for 3 s
// while the news of the new master (its packets announcing it a master,
// and UPDATEs) is held back from master 0 and the other replica from the
// start: the window in which a resumed master could acknowledge through
// a replica whose offset the winner read. It returns the new master, the
// other replica and the new master's offset at promotion.
func resumeMidFailover(t *testing.T, w *simNet, sm *shardModel) (winner, sibling int, offAtPromotion int64) {
	t.Helper()
	w.filter = func(from, to int, msg *Msg) bool {
		news := (from == 3 || from == 4) && msg.SlaveOf.IsNull() || msg.Type == TypeUpdate
		return news && (to == 0 || to == 3 || to == 4)
	}
	sm.stopped = true
	w.isolate(0)
	w.until(20*time.Second, "a replica promoted", func() bool {
		return w.nodes[3].m.IsMaster() || w.nodes[4].m.IsMaster()
	})
	winner, sibling = 4, 3
	if w.nodes[3].m.IsMaster() {
		winner, sibling = 3, 4
	}
	offAtPromotion = sm.locals[winner].off
	w.heal()
	sm.stopped = false
	w.run(3 * time.Second)
	w.filter = nil
	return winner, sibling, offAtPromotion
}

// TestFreezeResumedMasterAcknowledgesNothingLost: master 0 resumes while
// its replacement is being announced. With the freeze, the sibling whose
// offset the winner read stopped acknowledging when the winner's offset
// round reached it, so every acknowledged write is within the winner's
// offset. The control (replicas that ignore the hold, as redis-server
// replicas do) loses acknowledged writes in the same schedule: the model
// reaches the gap.
func TestFreezeResumedMasterAcknowledgesNothingLost(t *testing.T) {
	for _, freeze := range []bool{true, false} {
		w, sm := freezeShard(t, freeze, nil)
		before := len(sm.acked)
		winner, sibling, off := resumeMidFailover(t, w, sm)
		lost := 0
		for _, a := range sm.acked {
			if a > off {
				lost++
			}
		}
		t.Logf("freeze %v: winner %d (offset %d), acknowledged %d before the fault, %d after; lost %d",
			freeze, winner, off, before, len(sm.acked)-before, lost)
		if freeze && lost > 0 {
			t.Fatalf("%d acknowledged writes beyond the new master's offset %d (sibling %d)", lost, off, sibling)
		}
		if !freeze && lost == 0 {
			t.Fatal("control: no acknowledged write lost without the freeze; the schedule misses the gap")
		}
		if freeze && sm.locals[sibling].off > off {
			t.Fatalf("sibling %d applied up to %d past the winner's %d while frozen", sibling, sm.locals[sibling].off, off)
		}
	}
}

// TestFreezeSiblingReconfigured: after the resumed-master schedule, the
// frozen sibling is reconfigured to the new master: its last role change
// names the winner, and the hold still names only the old master's
// address (the old link stays held until the node stops it; the new one
// is not held), which it releases never while it does not replicate
// from the old master again.
func TestFreezeSiblingReconfigured(t *testing.T) {
	w, sm := freezeShard(t, true, nil)
	winner, sibling, _ := resumeMidFailover(t, w, sm)
	sn := w.nodes[sibling]
	wid := w.nodes[winner].m.MyID()
	w.until(10*time.Second, "the sibling replicates from the winner", func() bool {
		return sn.m.Myself().Master == wid
	})
	if len(sn.roles) == 0 || sn.roles[len(sn.roles)-1].Master != wid {
		t.Fatalf("sibling's role changes %v: the last does not name the winner %s", sn.roles, wid)
	}
	ni0, _ := sn.m.Node(w.nodes[0].m.MyID())
	wi, _ := sn.m.Node(wid)
	held := sm.locals[sibling].held
	if held == joinHostPort(wi.IP, wi.Port) {
		t.Fatalf("the new master's address %s is held", held)
	}
	if held != "" && held != joinHostPort(ni0.IP, ni0.Port) {
		t.Fatalf("held %q: neither none nor the old master", held)
	}
	if !sn.hasEvent(EventReplHold, w.nodes[0].m.MyID()) {
		t.Fatal("the sibling never froze")
	}
}

// TestFreezeEndsWhenFailCleared: with no replica allowed to fail over,
// master 0 cut off for 5 s is flagged FAIL and both replicas freeze (the
// model's writes are no longer acknowledged); after the heal master 0's
// FAIL is cleared (2 × node timeout after it was set) and the replicas
// resume: writes are acknowledged again, and the release came only once
// the replica saw the FAIL cleared.
func TestFreezeEndsWhenFailCleared(t *testing.T) {
	w, sm := freezeShard(t, true, func(i int, c *Config) { c.ReplicaNoFailover = true })
	id0 := w.nodes[0].m.MyID()
	r3 := w.nodes[3]
	sm.stopped = true
	w.isolate(0)
	w.until(10*time.Second, "node 3 holds master 0", func() bool { return sm.locals[3].held != "" })
	if ni, _ := r3.m.Node(id0); !ni.Failed() {
		t.Fatal("node 3 holds master 0 which it does not see FAIL")
	}
	w.run(2 * time.Second)
	w.heal()
	sm.stopped = false
	n := len(sm.acked)
	// Observe the release: the FAIL flag must be gone by then.
	w.onTick = func() {
		if sm.locals[3].held == "" {
			if ni, _ := r3.m.Node(id0); ni.Failed() {
				t.Fatal("node 3 released the hold while master 0 is FAIL")
			}
		}
		sm.step()
	}
	w.until(15*time.Second, "node 3 releases the hold", func() bool { return sm.locals[3].held == "" })
	w.until(5*time.Second, "writes acknowledged again", func() bool { return len(sm.acked) > n })
	var on, off bool
	for _, e := range r3.eventsOf(EventReplHold) {
		on = on || e.Detail == "on"
		off = off || e.Detail == "off"
	}
	if !on || !off {
		t.Fatalf("node 3's repl-hold events %v: want on then off", r3.eventsOf(EventReplHold))
	}
}

// TestFreezeOffWithoutAck: with min-replicas-ack 0 (Redis's asynchronous
// replication) a replica never holds its stream.
func TestFreezeOffWithoutAck(t *testing.T) {
	w, sm := freezeShard(t, true, nil)
	for _, sn := range w.nodes {
		cfg := sn.m.Config()
		cfg.MinReplicasAck = 0
		if err := sn.m.SetConfig(w.now, cfg); err != nil {
			t.Fatal(err)
		}
	}
	sm.need = 0
	sm.stopped = true
	w.isolate(0)
	w.until(20*time.Second, "a replica promoted", func() bool {
		return w.nodes[3].m.IsMaster() || w.nodes[4].m.IsMaster()
	})
	for _, r := range []int{3, 4} {
		if sm.locals[r].held != "" || w.nodes[r].hasEvent(EventReplHold, w.nodes[0].m.MyID()) {
			t.Fatalf("node %d held its stream with min-replicas-ack 0", r)
		}
	}
}

// TestFreezeBeforeTheRoundsPong: the order the election rule relies on.
// Candidate 4's offset round reaches sibling 3, which has not seen
// master 0 fail: the FAIL and the PING come on one link, and node 3 has
// told its node to hold master 0's stream once it handled the FAIL,
// before the PING (whose PONG reads the offset) is handled; the PONG
// carries node 3's offset, and node 4 counts it.
func TestFreezeBeforeTheRoundsPong(t *testing.T) {
	w, sm := freezeShard(t, true, nil)
	w.onTick = nil // the offsets stay put
	r3, r4 := w.nodes[3], w.nodes[4]
	id0 := w.nodes[0].m.MyID()
	if sm.locals[3].held != "" {
		t.Fatal("node 3 holds its stream before any failure")
	}
	// Master 0 is FAIL for node 4 only (the decision has not reached
	// node 3 yet).
	r4.m.begin(w.now)
	r4.m.myself.slaveOf.flags |= FlagFail
	r4.m.myself.slaveOf.failTime = w.now
	var round []inFlight
	w.filter = func(from, to int, msg *Msg) bool {
		return from == 4 && to == 3 && (msg.Type == TypeFail || msg.Type == TypePing)
	}
	w.readyHook = func(sn *simNode, rd Ready) {
		if sn.idx != 4 {
			return
		}
		for _, s := range rd.Sends {
			if c := w.conns[linkKey{4, s.Link}]; c != nil && c.a == 4 && c.b == 3 &&
				(s.Msg.Type == TypeFail || s.Msg.Type == TypePing) {
				round = append(round, inFlight{to: 3, link: c.lb, msg: s.Msg})
			}
		}
	}
	r4.m.failoverAckRound()
	r4.m.end()
	w.pump()
	w.readyHook, w.filter = nil, nil
	if len(round) != 2 || round[0].msg.Type != TypeFail || round[1].msg.Type != TypePing || round[0].msg.FailAbout.String() != id0 {
		t.Fatalf("round sent to node 3: %v, want FAIL about master 0 then PING", round)
	}
	r3.m.HandlePacket(w.now, round[0].link, round[0].msg)
	ni0, _ := r3.m.Node(id0)
	if want := joinHostPort(ni0.IP, ni0.Port); sm.locals[3].held != want {
		t.Fatalf("after the FAIL node 3 holds %q, want %q (before the PING is handled)", sm.locals[3].held, want)
	}
	r3.m.HandlePacket(w.now, round[1].link, round[1].msg)
	rd := r3.m.Ready()
	pong := false
	for _, s := range rd.Sends {
		if s.Link == round[1].link && s.Msg.Type == TypePong {
			pong = true
			if s.Msg.Offset != uint64(sm.locals[3].off) {
				t.Fatalf("PONG offset %d, want node 3's %d", s.Msg.Offset, sm.locals[3].off)
			}
		}
	}
	if !pong {
		t.Fatal("node 3 did not answer the round's PING")
	}
	w.apply(r3, rd)
	w.tick() // the PONG's delay
	if ni3, _ := r4.m.Node(r3.m.MyID()); ni3.ReplOffset != sm.locals[3].off || r4.m.myself.slaveOf == nil ||
		r4.m.nodes[r3.m.myself.name].answeredPing.Before(r4.m.fo.round) {
		t.Fatal("node 4 did not count node 3's PONG for its round")
	}
}
