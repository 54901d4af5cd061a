package cluster

import (
	"strings"
	"testing"
	"time"
)

func flagsOf(sn *simNode, id string) uint16 {
	n, _ := sn.m.Node(id)
	return n.Flags
}

func TestFailureDetection(t *testing.T) {
	// 5 masters serving slots (quorum 3) and one replica; node timeout 2 s.
	w := newCluster(t, 6, 5, nil)
	if err := w.nodes[5].m.Replicate(w.now, w.nodes[0].m.MyID()); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.run(5 * time.Second)
	timeout := 2 * time.Second
	dead := w.nodes[4]
	id := dead.m.MyID()
	crashed := w.now
	w.crash(4)
	pfailAt := map[int]time.Duration{}
	failAt := map[int]time.Duration{}
	failMsgs := 0
	w.filter = func(from, to int, msg *Msg) bool {
		if msg.Type == TypeFail && msg.FailAbout.String() == id {
			failMsgs++
		}
		return false
	}
	for w.now.Sub(crashed) < 3*timeout {
		w.tick()
		for _, sn := range w.nodes[:4] {
			f := flagsOf(sn, id)
			if _, ok := pfailAt[sn.idx]; !ok && f&(FlagPFail|FlagFail) != 0 {
				pfailAt[sn.idx] = w.now.Sub(crashed)
			}
			if _, ok := failAt[sn.idx]; !ok && f&FlagFail != 0 {
				failAt[sn.idx] = w.now.Sub(crashed)
			}
		}
	}
	t.Logf("PFAIL after %v, FAIL after %v", pfailAt, failAt)
	for i := 0; i < 4; i++ {
		p, ok := pfailAt[i]
		if !ok {
			t.Fatalf("node %d never flagged PFAIL", i)
		}
		if _, ok := failAt[i]; !ok {
			t.Fatalf("node %d never flagged FAIL", i)
		}
		// No PONG for more than the timeout is needed: the last PING may
		// have left up to timeout/2 before the crash.
		if p < timeout/2 {
			t.Fatalf("node %d flagged PFAIL %v after the crash, before the node timeout could pass", i, p)
		}
	}
	if failMsgs == 0 {
		t.Fatal("no FAIL broadcast")
	}
	// The replica sees it too, and counts failure reports from masters.
	if flagsOf(w.nodes[5], id)&FlagFail == 0 {
		t.Fatal("replica did not learn FAIL")
	}
	if !strings.Contains(w.nodes[5].m.Nodes(false), id+" 10.0.0.5:7004@17004 master,fail -") {
		t.Fatalf("CLUSTER NODES does not show fail:\n%s", w.nodes[5].m.Nodes(false))
	}
	// Full coverage required and a failed master's slots: state fail.
	for _, sn := range w.nodes[:4] {
		if sn.m.State() != ClusterFail || !strings.Contains(sn.m.Info(0), "cluster_slots_fail:3277\r\n") {
			t.Fatalf("node %d: %v\n%s", sn.idx, sn.m.State(), sn.m.Info(0))
		}
	}
	// The node comes back. Its slots were not taken over, so FAIL is
	// cleared, but only once 2 × node timeout passed since it was set.
	failedAt := w.now.Add(-(3*timeout - failAt[0]))
	dead.down = false
	w.pump()
	for w.now.Sub(failedAt) < 2*timeout-cronPeriod {
		w.tick()
		if flagsOf(w.nodes[0], id)&FlagFail == 0 {
			t.Fatalf("FAIL cleared %v after it was set, before 2 × node timeout", w.now.Sub(failedAt))
		}
	}
	w.until(5*time.Second, "FAIL cleared everywhere and state ok", func() bool {
		for _, sn := range w.nodes[:4] {
			if flagsOf(sn, id)&(FlagFail|FlagPFail) != 0 || sn.m.State() != ClusterOK {
				return false
			}
		}
		return true
	})
	if !w.nodes[0].hasEvent(EventFailCleared, id) {
		t.Fatal("no fail-cleared event")
	}
}

func TestReplicaFailClearedWhenReachable(t *testing.T) {
	w := newCluster(t, 4, 3, nil)
	r := w.nodes[3]
	if err := r.m.Replicate(w.now, w.nodes[0].m.MyID()); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.run(5 * time.Second)
	id := r.m.MyID()
	w.crash(3)
	w.until(10*time.Second, "replica FAIL", func() bool { return flagsOf(w.nodes[0], id)&FlagFail != 0 })
	// A failed replica does not change the cluster state.
	if w.nodes[0].m.State() != ClusterOK {
		t.Fatal("state changed for a replica")
	}
	r.down = false
	w.pump()
	// A replica's FAIL is cleared as soon as we reach it again.
	took := w.until(3*time.Second, "replica FAIL cleared", func() bool { return flagsOf(w.nodes[0], id)&FlagFail == 0 })
	t.Logf("cleared %v after it came back", took)
}

func TestMinorityPartition(t *testing.T) {
	w := newCluster(t, 5, 5, func(i int, c *Config) { c.RequireFullCoverage = false })
	w.run(5 * time.Second)
	cutAt := w.now
	w.isolate(0)
	took := w.until(10*time.Second, "isolated master goes to fail", func() bool { return w.nodes[0].m.State() == ClusterFail })
	if took < 2*time.Second {
		t.Fatalf("fail after %v, before node timeout", took)
	}
	// The majority keeps serving (full coverage not required) and agrees
	// on FAIL for node 0.
	w.until(5*time.Second, "majority flags FAIL", func() bool {
		for _, sn := range w.nodes[1:] {
			if flagsOf(sn, w.nodes[0].m.MyID())&FlagFail == 0 {
				return false
			}
		}
		return true
	})
	for _, sn := range w.nodes[1:] {
		if sn.m.State() != ClusterOK {
			t.Fatalf("majority node %d state %v", sn.idx, sn.m.State())
		}
	}
	_ = cutAt
	healed := w.now
	w.heal()
	took = w.until(10*time.Second, "isolated master back to ok", func() bool { return w.nodes[0].m.State() == ClusterOK })
	// The rejoin delay: min(max(node timeout, 500 ms), 5 s) after it last
	// found itself in the minority.
	if took < 2*time.Second {
		t.Fatalf("ok %v after the partition healed, before the rejoin delay", took)
	}
	t.Logf("fail after %v; ok %v after heal (%v)", w.now.Sub(cutAt), took, healed.Sub(cutAt))
}

func TestPubSubOverBus(t *testing.T) {
	w := newCluster(t, 4, 3, nil)
	if err := w.nodes[3].m.Replicate(w.now, w.nodes[0].m.MyID()); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.run(3 * time.Second)
	w.nodes[1].m.Publish(w.now, []byte("ch"), []byte("hello"))
	w.pump()
	for _, sn := range w.nodes {
		want := 1
		if sn.idx == 1 {
			want = 0
		}
		if len(sn.deliveries) != want {
			t.Fatalf("node %d got %d deliveries", sn.idx, len(sn.deliveries))
		}
		if want == 1 {
			d := sn.deliveries[0]
			if d.Shard || string(d.Channel) != "ch" || string(d.Message) != "hello" {
				t.Fatalf("delivery %+v", d)
			}
		}
		sn.deliveries = nil
	}
	// Sharded: from the master to its replica only.
	w.nodes[0].m.PublishShard(w.now, []byte("{s}"), []byte("x"))
	w.pump()
	for _, sn := range w.nodes {
		want := 0
		if sn.idx == 3 {
			want = 1
		}
		if len(sn.deliveries) != want {
			t.Fatalf("shard publish: node %d got %d deliveries", sn.idx, len(sn.deliveries))
		}
	}
	if !w.nodes[3].deliveries[0].Shard {
		t.Fatal("not flagged shard")
	}
}
