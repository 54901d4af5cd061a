package cluster

import (
	"testing"
	"time"
)

func TestPingQueue(t *testing.T) {
	var q pingQueue
	t0 := time.Unix(1000, 0)
	q.push(t0)
	if q.stale(t0.Add(time.Second), time.Second) || !q.stale(t0.Add(time.Second+1), time.Second) {
		t.Fatal("stale: want false at the limit, true past it")
	}
	for i := 1; i < pingQueueCap+2; i++ {
		q.push(t0.Add(time.Duration(i) * time.Second))
	}
	if !q.stale(t0, time.Hour) {
		t.Fatal("PINGs beyond the capacity outstanding: not stale")
	}
	for i := 0; i < pingQueueCap; i++ {
		got, ok := q.pop()
		if want := t0.Add(time.Duration(i) * time.Second); !ok || !got.Equal(want) {
			t.Fatalf("pop %d = %v %v, want %v", i, got, ok, want)
		}
	}
	// A PING pushed behind the uncounted ones must not be credited to
	// their PONGs.
	q.push(t0.Add(time.Hour))
	for i := 0; i < 3; i++ {
		if got, ok := q.pop(); ok {
			t.Fatalf("pop of an uncounted PING's PONG credited %v", got)
		}
	}
	if _, ok := q.pop(); ok {
		t.Fatal("empty queue credited a PONG")
	}
}

// fenceCluster: 3 masters; master 0 with replicas 3 and 4 when replicas;
// every node with min-replicas-ack 1.
func fenceCluster(t *testing.T, n, masters int, replicaOf map[int]int) *simNet {
	t.Helper()
	w := replicaCluster(t, n, masters, replicaOf, func(i int, c *Config) {
		c.Local = &testLocal{off: 100}
		c.MinReplicasAck = 1
	})
	w.run(3 * time.Second)
	return w
}

// healthyFor checks that master i is not fenced at any tick for d.
func healthyFor(t *testing.T, w *simNet, i int, d time.Duration) {
	t.Helper()
	m := w.nodes[i].m
	for end := w.now.Add(d); w.now.Before(end); w.tick() {
		if m.Fenced(w.now) {
			t.Fatalf("node %d fenced at +%v while it hears every master", i, d-end.Sub(w.now))
		}
	}
}

// TestClusterFencePartialPartition: master 0 is cut from the other
// masters and from replica 3 but keeps replica 4 (which still reaches
// everyone): it is fenced at the latest Lease after the cut, and every
// instant it was unfenced precedes the FAIL decision, which the
// election's offsets follow (the bound of fence.go).
func TestClusterFencePartialPartition(t *testing.T) {
	w := fenceCluster(t, 5, 3, map[int]int{3: 0, 4: 0})
	m0 := w.nodes[0].m
	id0 := m0.MyID()
	healthyFor(t, w, 0, 10*time.Second)
	lease := Lease(2 * time.Second)
	cut := w.now
	for _, b := range []int{1, 2, 3} {
		w.cutLink(0, b)
	}
	var failAt, lastUnfenced time.Time
	fencedAt := time.Time{}
	w.onTick = func() {
		for _, sn := range w.nodes[1:] {
			if ni, ok := sn.m.Node(id0); ok && ni.Failed() && failAt.IsZero() {
				failAt = w.now
			}
		}
		if !m0.IsMaster() {
			return
		}
		until, on := m0.Fence()
		if !on {
			t.Fatalf("fence off on master 0 at +%v", w.now.Sub(cut))
		}
		if until.After(lastUnfenced) {
			lastUnfenced = until
		}
		fenced := m0.Fenced(w.now)
		if fenced && fencedAt.IsZero() {
			fencedAt = w.now
		}
		if !fenced && w.now.Sub(cut) > lease {
			t.Fatalf("master 0 unfenced at +%v after the cut (lease %v)", w.now.Sub(cut), lease)
		}
	}
	w.until(20*time.Second, "a replica promoted", func() bool {
		return w.nodes[3].m.IsMaster() || w.nodes[4].m.IsMaster()
	})
	if fencedAt.IsZero() || failAt.IsZero() {
		t.Fatalf("fenced at %v, FAIL at %v: want both", fencedAt, failAt)
	}
	if !lastUnfenced.Before(failAt) {
		t.Fatalf("master 0 unfenced until +%v, FAIL decided at +%v: it could acknowledge after the decision",
			lastUnfenced.Sub(cut), failAt.Sub(cut))
	}
	t.Logf("cut +0, fenced +%v (unfenced until +%v), FAIL +%v", fencedAt.Sub(cut), lastUnfenced.Sub(cut), failAt.Sub(cut))
}

// TestClusterFenceHeals: a master isolated from the other masters fences
// after the lease and is unfenced again once it reaches them.
func TestClusterFenceHeals(t *testing.T) {
	w := fenceCluster(t, 3, 3, nil)
	m0 := w.nodes[0].m
	healthyFor(t, w, 0, 5*time.Second)
	w.isolate(0)
	d := w.until(5*time.Second, "master 0 fenced", func() bool { return m0.Fenced(w.now) })
	if lease := Lease(2 * time.Second); d > lease+cronPeriod {
		t.Fatalf("fenced %v after the cut, lease %v", d, lease)
	}
	w.run(3 * time.Second)
	if !m0.Fenced(w.now) {
		t.Fatal("master 0 unfenced while isolated")
	}
	w.heal()
	w.until(5*time.Second, "master 0 unfenced", func() bool { return !m0.Fenced(w.now) })
	healthyFor(t, w, 0, 5*time.Second)
}

// TestClusterFenceQuorum: with 4 masters, the FAIL quorum is 3 of the
// other masters: master 0 hearing one of them is unfenced (the two
// others cannot flag it FAIL), hearing none it is fenced.
func TestClusterFenceQuorum(t *testing.T) {
	w := fenceCluster(t, 4, 4, nil)
	m0 := w.nodes[0].m
	w.cutLink(0, 1)
	w.cutLink(0, 2)
	healthyFor(t, w, 0, 10*time.Second)
	w.cutLink(0, 3)
	w.until(5*time.Second, "master 0 fenced", func() bool { return m0.Fenced(w.now) })
}

// TestClusterFenceOffWithoutAck: with min-replicas-ack 0 the machine
// keeps no fence.
func TestClusterFenceOffWithoutAck(t *testing.T) {
	w := newCluster(t, 3, 3, nil)
	w.isolate(0)
	w.run(5 * time.Second)
	if _, on := w.nodes[0].m.Fence(); on {
		t.Fatal("fence on with min-replicas-ack 0")
	}
}

// TestAckRuleClusterIgnoresOffsetsFromBeforeFail: node 4's header
// announcing offset 100, sent before the master was flagged FAIL but
// delivered after, does not count for node 3's election rule, though it
// arrived after FAIL (the rule needs offsets sent after the FAIL
// decision: a PONG answering a PING sent after it). Node 4 has since
// acknowledged up to 200 and its later headers to node 3 are delayed:
// node 3 must not ask for votes on the stale offset; once they arrive,
// node 4 is elected.
func TestAckRuleClusterIgnoresOffsetsFromBeforeFail(t *testing.T) {
	locals := map[int]*testLocal{3: {off: 100}, 4: {off: 100}}
	w := replicaCluster(t, 5, 3, map[int]int{3: 0, 4: 0}, func(i int, c *Config) {
		if l, ok := locals[i]; ok {
			c.Local = l
		}
		c.MinReplicasAck = 1
	})
	w.run(3 * time.Second)
	r3, r4 := w.nodes[3], w.nodes[4]
	// Capture a PING node 4 sends node 3 while at offset 100.
	var stale *Msg
	var staleLink LinkID
	w.readyHook = func(sn *simNode, rd Ready) {
		if sn.idx != 4 || stale != nil {
			return
		}
		for _, s := range rd.Sends {
			if c := w.conns[linkKey{4, s.Link}]; c != nil && c.a == 4 && c.b == 3 && s.Msg.Type == TypePing {
				stale, staleLink = s.Msg, c.lb
			}
		}
	}
	w.until(5*time.Second, "a PING from 4 to 3", func() bool { return stale != nil })
	w.readyHook = nil
	// Node 4 acknowledges more of the master's stream; what it sends node
	// 3 from now on is held back.
	locals[4].off = 200
	w.filter = func(from, to int, msg *Msg) bool { return from == 4 && to == 3 }
	w.crash(0)
	id0 := w.nodes[0].m.MyID()
	w.until(10*time.Second, "node 3 sees master FAIL", func() bool {
		ni, _ := r3.m.Node(id0)
		return ni.Failed()
	})
	r3.m.HandlePacket(w.now, staleLink, stale)
	w.pump()
	if ni, _ := r3.m.Node(r4.m.MyID()); ni.ReplOffset != 100 {
		t.Fatalf("node 3 knows node 4 at offset %d after the stale header, want 100 (not delivered?)", ni.ReplOffset)
	}
	w.run(8 * time.Second)
	if r3.sent[TypeFailoverAuthRequest] != 0 || r3.m.IsMaster() {
		t.Fatal("node 3 asked for votes on node 4's offset from before the FAIL")
	}
	w.filter = nil
	w.until(20*time.Second, "node 4 promoted", func() bool { return r4.m.IsMaster() })
	if r3.sent[TypeFailoverAuthRequest] != 0 {
		t.Fatal("node 3 asked for votes")
	}
}

// TestClusterFenceSlowNetwork: with a 300 ms one-way delay (a 600 ms
// round trip against a lease of 1.9 s) healthy masters stay unfenced:
// Redis's cadence alone renews a lease only after NT/2 + a tick + two
// round trips (2.3 s here); pingForFence's PINGs at Lease/2 do it in
// 1.65 s.
func TestClusterFenceSlowNetwork(t *testing.T) {
	w := fenceCluster(t, 3, 3, nil)
	w.delay = 300 * time.Millisecond
	w.run(3 * time.Second)
	for i := 0; i < 3; i++ {
		healthyFor(t, w, i, 7*time.Second)
	}
}
