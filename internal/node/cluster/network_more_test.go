package cluster

import (
	"strings"
	"testing"
	"time"
)

// tickAt advances the clock in steps of d instead of 100 ms.
func (w *simNet) tickAt(d time.Duration) {
	w.now = w.now.Add(d)
	w.deliverDue()
	for _, sn := range w.nodes {
		if !sn.down {
			sn.m.Tick(w.now)
		}
	}
	w.pump()
}

func TestOtherTickRates(t *testing.T) {
	// Tick every 250 ms or every 40 ms: the cluster still forms, and a
	// dead node is still flagged PFAIL after the node timeout.
	for _, step := range []time.Duration{40 * time.Millisecond, 250 * time.Millisecond} {
		t.Run(step.String(), func(t *testing.T) {
			w := newSimNet(t, 5, nil)
			for i := 0; i+1 < 5; i++ {
				w.meet(i, i+1)
			}
			start := w.now
			for !w.allKnow() {
				if w.now.Sub(start) > 30*time.Second {
					t.Fatal("did not join")
				}
				w.tickAt(step)
			}
			id := w.nodes[4].m.MyID()
			w.crash(4)
			crashed := w.now
			for flagsOf(w.nodes[0], id)&(FlagPFail|FlagFail) == 0 {
				if w.now.Sub(crashed) > 10*time.Second {
					t.Fatal("no PFAIL")
				}
				w.tickAt(step)
			}
			took := w.now.Sub(crashed)
			if took < time.Second || took > 2*time.Second+time.Second+step {
				t.Fatalf("PFAIL after %v with node timeout 2 s", took)
			}
			t.Logf("joined in %v, PFAIL after %v", crashed.Sub(start), took)
		})
	}
}

func TestLossAndDelay(t *testing.T) {
	// 6 nodes with a 30 ms one-way delay join. Then with 10 % of the
	// packets lost (a MEET is sent once, as in Redis, so the join itself
	// is done before the loss starts) slots still spread and agree, and no
	// node is falsely flagged FAIL.
	w := newSimNet(t, 6, func(i int, c *Config) { c.NodeTimeout = 5 * time.Second })
	w.delay = 30 * time.Millisecond
	took := joinChain(t, w, 60*time.Second)
	w.dropRate = 0.10
	addSlotsEvenly(t, w, 6)
	w.until(30*time.Second, "state ok everywhere", func() bool {
		for _, sn := range w.nodes {
			if sn.m.State() != ClusterOK {
				return false
			}
		}
		return true
	})
	w.run(10 * time.Second)
	for _, sn := range w.nodes {
		for _, n := range sn.m.KnownNodes() {
			if n.Flags&(FlagFail) != 0 {
				t.Fatalf("node %d flags %s FAIL under 10%% loss", sn.idx, n.ID)
			}
		}
	}
	t.Logf("joined in %v under loss and delay", took)
}

func TestHostnameAndAnnouncedIP(t *testing.T) {
	w := newSimNet(t, 3, func(i int, c *Config) {
		if i == 1 {
			c.Hostname = "node1.example"
			c.IP = "10.0.0.2"
		}
	})
	joinChain(t, w, 20*time.Second)
	w.run(3 * time.Second)
	for _, sn := range w.nodes {
		l := parseNodes(sn.m.Nodes(false))[w.nodes[1].m.MyID()]
		if l.addr != "10.0.0.2:7001@17001,node1.example" {
			t.Fatalf("node %d sees %s", sn.idx, l.addr)
		}
	}
	// The header carries the announced ip; pings carry the extension.
	var seen *Msg
	w.filter = func(from, to int, msg *Msg) bool {
		if from == 1 && msg.Type == TypePing {
			seen = msg
		}
		return false
	}
	w.run(3 * time.Second)
	if seen == nil || seen.IP() != "10.0.0.2" || seen.Hostname() != "node1.example" || seen.MFlags[0]&MFlagExtData == 0 {
		t.Fatalf("ping from node 1: %+v", seen)
	}
}

func TestMeetIsTheFirstPacket(t *testing.T) {
	w := newSimNet(t, 2, nil)
	var first []MsgType
	w.filter = func(from, to int, msg *Msg) bool {
		if from == 0 {
			first = append(first, msg.Type)
		}
		return false
	}
	w.meet(0, 1)
	w.tick()
	if len(first) == 0 || first[0] != TypeMeet {
		t.Fatalf("first packets %v", first)
	}
	w.until(5*time.Second, "joined", w.allKnow)
	for _, ty := range first[1:] {
		if ty == TypeMeet {
			t.Fatalf("a second MEET: %v", first)
		}
	}
}

func TestWrongNodeAtAddress(t *testing.T) {
	// Node 0 knows node 1 at 10.0.0.2:7001. A different node (a hard
	// reset gave it a new id) answers there: node 0 marks the old entry
	// noaddr and drops its link.
	w := newSimNet(t, 2, nil)
	w.meet(0, 1)
	w.until(5*time.Second, "joined", w.allKnow)
	old := w.nodes[1].m.MyID()
	if err := w.nodes[1].m.Reset(w.now, true); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.until(10*time.Second, "old id noaddr", func() bool {
		l, ok := parseNodes(w.nodes[0].m.Nodes(false))[old]
		return ok && strings.Contains(l.flags, "noaddr") && l.addr == ":0@0"
	})
}

func TestSlotsAndFailureReports(t *testing.T) {
	locals := make([]*fakeLocal, 4)
	for i := range locals {
		locals[i] = &fakeLocal{keys: map[int]int{}, offset: 1000}
	}
	w := newCluster(t, 4, 3, func(i int, c *Config) { c.Local = locals[i] })
	if err := w.nodes[3].m.Replicate(w.now, w.nodes[0].m.MyID()); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.run(5 * time.Second)
	slots := w.nodes[1].m.Slots()
	if len(slots) != 3 {
		t.Fatalf("%d ranges", len(slots))
	}
	r0 := slots[0]
	if r0.Start != 0 || r0.End != 5460 || r0.Master.ID != w.nodes[0].m.MyID() || r0.Master.Port != 7000 ||
		len(r0.Replicas) != 1 || r0.Replicas[0].ID != w.nodes[3].m.MyID() || r0.Replicas[0].ReplOffset != 1000 {
		t.Fatalf("range 0: %+v", r0)
	}
	// A replica with offset 0 (still syncing) is left out.
	locals[3].offset = 0
	w.run(3 * time.Second)
	if rs := w.nodes[1].m.Slots()[0].Replicas; len(rs) != 0 {
		t.Fatalf("a replica at offset 0 listed: %+v", rs)
	}
	// Failure reports: isolate node 2; the other masters report it.
	id := w.nodes[2].m.MyID()
	w.isolate(2)
	w.until(10*time.Second, "reports", func() bool {
		c, err := w.nodes[3].m.CountFailureReports(w.now, id)
		return err == nil && c == 2
	})
	if _, err := w.nodes[3].m.CountFailureReports(w.now, "x"); err == nil || err.Error() != "ERR Unknown node x" {
		t.Fatal(err)
	}
	// Reports expire after 2 × node timeout once masters stop sending them.
	w.heal()
	w.until(15*time.Second, "reports gone", func() bool {
		c, _ := w.nodes[3].m.CountFailureReports(w.now, id)
		return c == 0
	})
}

func TestKillLink(t *testing.T) {
	w := newSimNet(t, 2, nil)
	w.meet(0, 1)
	w.until(5*time.Second, "joined", w.allKnow)
	w.until(3*time.Second, "links", func() bool { return len(w.nodes[0].m.Links()) == 2 })
	id := w.nodes[1].m.MyID()
	if err := w.nodes[0].m.KillLink(w.now, "TO", id); err != nil {
		t.Fatal(err)
	}
	rd := w.nodes[0].m.Ready()
	if len(rd.Closes) != 1 {
		t.Fatalf("closes %v", rd.Closes)
	}
	w.apply(w.nodes[0], rd)
	if l := w.nodes[0].m.Links(); len(l) != 1 || l[0].Direction != "from" {
		t.Fatalf("links %+v", l)
	}
	// The next tick reconnects.
	w.tick()
	w.until(3*time.Second, "relinked", func() bool { return len(w.nodes[0].m.Links()) == 2 })
	if err := w.nodes[0].m.KillLink(w.now, "all", "nope"); err == nil || err.Error() != "ERR Unknown node nope" {
		t.Fatal(err)
	}
	if err := w.nodes[0].m.KillLink(w.now, "sideways", id); err == nil || err.Error() != "ERR Unknown direction sideways" {
		t.Fatal(err)
	}
}

func TestIdleGossipCost(t *testing.T) {
	// A joined idle cluster of 30 masters with the default 15 s timeout:
	// messages and bytes (at the wire sizes of Redis 7.0) per node per
	// second. Redis pings each node at least every timeout/2 plus one
	// random node a second; each PING gets a PONG.
	if testing.Short() {
		t.Skip("long")
	}
	const n = 30
	w := newSimNet(t, n, func(i int, c *Config) { c.NodeTimeout = 15 * time.Second })
	w.noConf = true // no nodes.conf renders or invariant checks: a measurement
	joinChain(t, w, 120*time.Second)
	addSlotsEvenly(t, w, n)
	w.run(30 * time.Second)
	var msgs, bytes int
	w.filter = func(from, to int, msg *Msg) bool {
		msgs++
		bytes += HeaderLen + GossipLen*len(msg.Gossip)
		return false
	}
	const window = 60 * time.Second
	w.run(window)
	perNode := float64(msgs) / n / window.Seconds()
	bps := float64(bytes) / n / window.Seconds()
	t.Logf("30 idle nodes: %.2f messages/s and %.0f bytes/s sent per node", perNode, bps)
	// Every peer is pinged (and answers) at least once per node timeout,
	// else it would be flagged PFAIL, and at most every timeout/2 plus one
	// random ping a second (PONG times learnt from gossip delay pings).
	if perNode < 2*29/15.0 || perNode > 2*(29/7.5+1) {
		t.Fatalf("%.2f messages/s per node out of the expected range", perNode)
	}
}

func TestDropFilter(t *testing.T) {
	// DEBUG DROP-CLUSTER-PACKET-FILTER 0 on nodes 0 and 1 (as
	// 27-endpoints does): each ignores the other's PINGs, so neither gets a
	// PONG nor any other data from the other, and after the node timeout
	// node 0 sees node 1 failing; node 2 is unaffected; -1 heals.
	w := newSimNet(t, 3, nil)
	joinChain(t, w, 20*time.Second)
	w.nodes[0].m.SetDropFilter(int(TypePing))
	w.nodes[1].m.SetDropFilter(int(TypePing))
	id := w.nodes[1].m.MyID()
	took := w.until(10*time.Second, "PFAIL with PONGs dropped", func() bool {
		return flagsOf(w.nodes[0], id)&(FlagPFail|FlagFail) != 0
	})
	if took < time.Second {
		t.Fatalf("PFAIL after %v", took)
	}
	if flagsOf(w.nodes[2], id)&(FlagPFail|FlagFail) != 0 || flagsOf(w.nodes[2], w.nodes[0].m.MyID())&(FlagPFail|FlagFail) != 0 {
		t.Fatal("node 2 affected by the filters")
	}
	w.nodes[0].m.SetDropFilter(-1)
	w.nodes[1].m.SetDropFilter(-1)
	w.until(10*time.Second, "healthy again", func() bool {
		return flagsOf(w.nodes[0], id)&(FlagPFail|FlagFail) == 0
	})
}

func TestSetConfigAtRunTime(t *testing.T) {
	w := newSimNet(t, 2, nil)
	joinChain(t, w, 10*time.Second)
	m := w.nodes[1].m
	cfg := m.Config()
	cfg.Hostname = "later.example"
	cfg.ReplicaNoFailover = true
	if err := m.SetConfig(w.now, cfg); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.until(5*time.Second, "the peer sees the new hostname and nofailover", func() bool {
		l := parseNodes(w.nodes[0].m.Nodes(false))[m.MyID()]
		return l.addr == "10.0.0.2:7001@17001,later.example" && l.flags == "master,nofailover"
	})
	if !strings.Contains(m.Nodes(false), "myself,master,nofailover") {
		t.Fatal(m.Nodes(false))
	}
	bad := cfg
	bad.Port = 70000
	if err := m.SetConfig(w.now, bad); err == nil || m.Config().Port != 7001 {
		t.Fatalf("invalid config accepted: %v", err)
	}
}
