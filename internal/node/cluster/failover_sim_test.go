package cluster

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The large-cluster simulation (issue 22, must show 5): go test
// -run TestSimFailover -cluster.sim=1000 ./internal/node/cluster
// builds 500 masters × 1 replica from one nodes.conf, measures idle
// gossip and a master's failover on the virtual clock, with 0 % and 1 %
// packet loss. Without the flag a small cluster runs the same steps.
var simNodes = flag.Int("cluster.sim", 0, "nodes of the large-cluster failover simulation (masters × 1 replica); 0: a small one")
var simTimeout = flag.Duration("cluster.sim-timeout", 15*time.Second, "cluster-node-timeout of the simulation")

// simFromConf gives n simulated nodes one shared nodes.conf: the first
// n/2 masters serve the slots evenly at config epochs 1..n/2, node
// n/2+i replicates master i.
func simFromConf(t *testing.T, n int, timeout time.Duration) *simNet {
	t.Helper()
	w := newSimNet(t, n, func(i int, c *Config) { c.NodeTimeout = timeout })
	w.noConf = true
	if n > 100 {
		w.tickGroup = 25
	}
	masters := n / 2
	lines := make([]string, n)
	for i, sn := range w.nodes {
		id := sn.m.MyID()
		addr := fmt.Sprintf("%s:%d@%d", sn.ip, sn.port, sn.cport)
		if i < masters {
			lo, hi := i*NumSlots/masters, (i+1)*NumSlots/masters-1
			lines[i] = fmt.Sprintf("%s %s %%smaster - 0 0 %d connected %d-%d", id, addr, i+1, lo, hi)
		} else {
			lines[i] = fmt.Sprintf("%s %s %%sslave %s 0 0 %d connected", id, addr, w.nodes[i-masters].m.MyID(), i-masters+1)
		}
	}
	vars := fmt.Sprintf("vars currentEpoch %d lastVoteEpoch 0\n", masters)
	for i, sn := range w.nodes {
		var b strings.Builder
		for j, l := range lines {
			me := ""
			if j == i {
				me = "myself,"
			}
			fmt.Fprintf(&b, l+"\n", me)
		}
		b.WriteString(vars)
		if err := sn.m.LoadNodesConf(w.now, b.String()); err != nil {
			t.Fatal(err)
		}
	}
	w.pump()
	return w
}

// simProgress logs the virtual and wall time every virtual 10 s.
func simProgress(t *testing.T, w *simNet, what string, wallStart time.Time) {
	if int(w.now.Unix())%10 == 0 && w.now.Nanosecond() == 0 {
		t.Logf("%s: virtual %v, wall %v", what, w.now.Format("15:04:05"), time.Since(wallStart).Round(time.Second))
	}
}

// simResult is what simFailover measured from the crash on (zero: not
// reached).
type simResult struct {
	replicaFail time.Duration // the replica flags its master FAIL
	allFail     time.Duration // every live node flags it FAIL
	promoted    time.Duration // the replica is a master
	agreed      time.Duration // every live node sees the replica own the slots, state ok
	missedFail  int           // live nodes without the FAIL flag at the end
}

// simFailover crashes master victim and measures until every live node
// sees its replica own its first slot with the cluster state ok.
func simFailover(t *testing.T, w *simNet, victim, replica int, max time.Duration) simResult {
	t.Helper()
	vid := w.nodes[victim].m.MyID()
	rid := w.nodes[replica].m.MyID()
	rep := w.nodes[replica].m
	first := victim * NumSlots / (len(w.nodes) / 2)
	w.crash(victim)
	start := w.now
	var r simResult
	r.agreed = w.until(max, "promotion agreed", func() bool {
		allFail, allOwner := true, true
		r.missedFail = 0
		for _, sn := range w.nodes {
			if sn.down {
				continue
			}
			if n := sn.m.lookup(vid); n == nil || !n.failed() {
				allFail = false
				r.missedFail++
			}
			if o := sn.m.slots[first]; o == nil || o.name.String() != rid || sn.m.State() != ClusterOK {
				allOwner = false
			}
		}
		el := w.now.Sub(start)
		if allFail && r.allFail == 0 {
			r.allFail = el
		}
		if r.replicaFail == 0 && rep.lookup(vid).failed() {
			r.replicaFail = el
		}
		if r.promoted == 0 && rep.IsMaster() {
			r.promoted = el
		}
		return allOwner
	})
	return r
}

// idleGossip measures the bytes (Redis 7.0 wire sizes) and messages sent
// per node per second over window.
func idleGossip(w *simNet, window time.Duration) (bytes, msgs float64) {
	var nb, nm int
	w.filter = func(from, to int, msg *Msg) bool {
		nm++
		nb += HeaderLen + GossipLen*len(msg.Gossip)
		return false
	}
	w.run(window)
	w.filter = nil
	live := 0
	for _, sn := range w.nodes {
		if !sn.down {
			live++
		}
	}
	return float64(nb) / float64(live) / window.Seconds(), float64(nm) / float64(live) / window.Seconds()
}

func TestSimFailover(t *testing.T) {
	n, timeout := *simNodes, *simTimeout
	if n == 0 {
		if testing.Short() {
			t.Skip("long")
		}
		n, timeout = 40, 2*time.Second
	}
	wallStart := time.Now()
	w := simFromConf(t, n, timeout)
	if *simNodes > 0 {
		w.onTick = func() { simProgress(t, w, "progress", wallStart) }
	}
	w.until(4*timeout, "state ok everywhere", func() bool {
		for _, sn := range w.nodes {
			if sn.m.State() != ClusterOK {
				return false
			}
		}
		return true
	})
	w.run(timeout)
	window := 2 * timeout
	bps, mps := idleGossip(w, window)
	t.Logf("%d nodes, node timeout %v: idle %.0f bytes/s and %.1f messages/s sent per node (over %v)", n, timeout, bps, mps, window)
	masters := n / 2
	for k, loss := range []float64{0, 0.01} {
		w.dropRate = loss
		r := simFailover(t, w, k, k+masters, 10*timeout)
		t.Logf("loss %.0f%%: replica sees FAIL after %v, promoted after %v, every node agrees on the new owner after %v; "+
			"every node flags FAIL after %v (%d live nodes without FAIL at the end); wall so far %v",
			loss*100, r.replicaFail, r.promoted, r.agreed, r.allFail, r.missedFail, time.Since(wallStart).Round(time.Second))
		// Detection takes the node timeout; the election at rank 0 at most
		// 1 s after FAIL when no vote is lost.
		if r.replicaFail < timeout/2 || r.promoted < r.replicaFail {
			t.Fatalf("%+v", r)
		}
		if loss == 0 && r.promoted-r.replicaFail > time.Second+cronPeriod {
			t.Fatalf("promoted %v after FAIL with no loss", r.promoted-r.replicaFail)
		}
	}
}
