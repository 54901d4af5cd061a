package cluster

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// testLocal is a data set with a settable replication offset.
type testLocal struct{ off int64 }

func (l *testLocal) KeysInSlot(int) int { return 0 }
func (l *testLocal) DBSize() int        { return 0 }
func (l *testLocal) ReplOffset() int64  { return l.off }

// linkLocal also reports its replication link (MasterLink).
type linkLocal struct {
	testLocal
	lastIO time.Time
}

func (l *linkLocal) MasterLastIO() time.Time { return l.lastIO }

// replicaCluster builds n nodes, the first `masters` serving slots, and
// makes node r a replica of master replicaOf[r]; it waits until every
// node sees every replica.
func replicaCluster(t *testing.T, n, masters int, replicaOf map[int]int, tweak func(int, *Config)) *simNet {
	t.Helper()
	w := newCluster(t, n, masters, tweak)
	for r := masters; r < n; r++ {
		mi, ok := replicaOf[r]
		if !ok {
			continue
		}
		if err := w.nodes[r].m.Replicate(w.now, w.nodes[mi].m.MyID()); err != nil {
			t.Fatal(err)
		}
		w.pump()
	}
	w.until(10*time.Second, "replicas known everywhere", func() bool {
		for _, sn := range w.nodes {
			for r, mi := range replicaOf {
				if ni, _ := sn.m.Node(w.nodes[r].m.MyID()); ni.Master != w.nodes[mi].m.MyID() {
					return false
				}
			}
		}
		return true
	})
	return w
}

func (sn *simNode) eventsOf(t EventType) []Event {
	var out []Event
	for _, e := range sn.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// agree reports whether every live node sees id as the owner of slot,
// at config epoch epoch, with cluster state ok.
func (w *simNet) agree(slot int, id string, epoch uint64) bool {
	for _, sn := range w.nodes {
		if sn.down {
			continue
		}
		o, ok := sn.m.SlotOwner(slot)
		if !ok || o.ID != id || o.ConfigEpoch != epoch || sn.m.State() != ClusterOK {
			return false
		}
	}
	return true
}

func TestElectionFormulas(t *testing.T) {
	for _, c := range []struct {
		timeout, want time.Duration
	}{{500 * time.Millisecond, 2 * time.Second}, {time.Second, 2 * time.Second}, {2 * time.Second, 4 * time.Second}, {15 * time.Second, 30 * time.Second}} {
		if got := authTimeout(c.timeout); got != c.want {
			t.Errorf("authTimeout(%v) = %v, want %v", c.timeout, got, c.want)
		}
	}
	for _, c := range []struct {
		rank, random int
		want         time.Duration
	}{{0, 0, 500 * time.Millisecond}, {0, 499, 999 * time.Millisecond}, {1, 0, 1500 * time.Millisecond}, {3, 250, 3750 * time.Millisecond}} {
		if got := electionDelay(c.rank, c.random); got != c.want {
			t.Errorf("electionDelay(%d, %d) = %v, want %v", c.rank, c.random, got, c.want)
		}
	}
}

func TestReplicaPromotedAfterMasterCrash(t *testing.T) {
	// 3 masters × 1 replica, node timeout 2 s. Master 0 crashes; its
	// replica 3 is elected with the votes of masters 1 and 2 and every
	// live node agrees on the new owner and its epoch.
	w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, nil)
	w.run(3 * time.Second)
	old, rep := w.nodes[0], w.nodes[3]
	oldID, repID := old.m.MyID(), rep.m.MyID()
	epochBefore := rep.m.CurrentEpoch()
	crashed := w.now
	w.crash(0)
	var failSeen time.Duration
	took := w.until(10*time.Second, "replica promoted", func() bool {
		if failSeen == 0 && flagsOf(rep, oldID)&FlagFail != 0 {
			failSeen = w.now.Sub(crashed)
		}
		return rep.m.IsMaster()
	})
	timeout := 2 * time.Second
	// PFAIL needs the node timeout; FAIL needs the reports of a majority,
	// gossiped within another half timeout; then the election delay is
	// at most 1 s for rank 0, and the votes come back within the tick.
	if failSeen == 0 || failSeen > timeout+timeout/2+cronPeriod {
		t.Fatalf("replica saw FAIL %v after the crash", failSeen)
	}
	if d := took - failSeen; d < 500*time.Millisecond || d > time.Second+cronPeriod {
		t.Fatalf("promoted %v after FAIL: want within the election delay [500 ms, 1 s]", d)
	}
	t.Logf("FAIL after %v, promoted after %v", failSeen, took)
	// One election, in the next epoch, won with both votes.
	started := rep.eventsOf(EventElectionStarted)
	want := strconv.FormatUint(epochBefore+1, 10)
	if len(started) != 1 || started[0].Detail != want {
		t.Fatalf("elections %+v, want one for epoch %s", started, want)
	}
	if won := rep.eventsOf(EventFailoverWon); len(won) != 1 || won[0].Detail != want {
		t.Fatalf("failover-won %+v", won)
	}
	if d := rep.eventsOf(EventElectionDelayed); len(d) != 1 || !strings.Contains(d[0].Detail, " rank 0 ") {
		t.Fatalf("election delay events %+v", d)
	}
	for _, v := range []*simNode{w.nodes[1], w.nodes[2]} {
		g := v.eventsOf(EventVoteGranted)
		if len(g) != 1 || g[0].Node != repID || g[0].Detail != want || v.m.LastVoteEpoch() != epochBefore+1 {
			t.Fatalf("node %d votes %+v, lastVoteEpoch %d", v.idx, g, v.m.LastVoteEpoch())
		}
	}
	// Replicas and the replica itself never vote.
	for _, sn := range []*simNode{rep, w.nodes[4], w.nodes[5]} {
		if sn.sent[TypeFailoverAuthAck] != 0 {
			t.Fatalf("replica %d sent a vote", sn.idx)
		}
	}
	// The runner was told to stop replicating.
	if r := rep.roles; len(r) != 2 || r[1] != (RoleChange{}) {
		t.Fatalf("role changes %+v, want the last one to master", r)
	}
	if rep.m.Myself().ConfigEpoch != epochBefore+1 {
		t.Fatalf("config epoch %d", rep.m.Myself().ConfigEpoch)
	}
	w.until(3*time.Second, "everyone agrees on the new owner", func() bool {
		return w.agree(0, repID, epochBefore+1) && w.agree(5460, repID, epochBefore+1)
	})
	l := parseNodes(w.nodes[1].m.Nodes(false))
	if l[repID].flags != "master" || l[oldID].flags != "master,fail" || len(l[oldID].slots) != 0 ||
		l[repID].epoch != want {
		t.Fatalf("CLUSTER NODES after the failover:\n%s", w.nodes[1].m.Nodes(false))
	}
	if !strings.Contains(rep.m.Info(0), "cluster_my_epoch:"+want+"\r\n") {
		t.Fatalf("CLUSTER INFO:\n%s", rep.m.Info(0))
	}

	// The old master comes back with its stale configuration: it is told
	// (UPDATE, or the new owner's PING) and becomes a replica of node 3.
	updatesBefore := 0
	for _, sn := range w.nodes {
		updatesBefore += sn.sent[TypeUpdate]
	}
	old.down = false
	w.until(10*time.Second, "old master is a replica of the winner", func() bool {
		return !old.m.IsMaster() && old.m.Myself().Master == repID
	})
	if r := old.roles; len(r) == 0 || r[len(r)-1].Master != repID {
		t.Fatalf("old master's role changes %+v", r)
	}
	w.until(5*time.Second, "the cluster agrees, old master as replica", func() bool {
		for _, sn := range w.nodes {
			if ni, _ := sn.m.Node(oldID); ni.Master != repID || ni.Failed() {
				return false
			}
		}
		return w.agree(0, repID, epochBefore+1)
	})
	updates := -updatesBefore
	for _, sn := range w.nodes {
		updates += sn.sent[TypeUpdate]
	}
	t.Logf("old master rejoined; %d UPDATE messages", updates)
}

func TestUpdateDemotesStaleMaster(t *testing.T) {
	// The old master rejoins while the winner is unreachable from it: only
	// an UPDATE from a third node can tell it.
	w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, nil)
	w.run(3 * time.Second)
	old, rep := w.nodes[0], w.nodes[3]
	w.crash(0)
	w.until(10*time.Second, "replica promoted", func() bool { return rep.m.IsMaster() })
	w.run(time.Second)
	w.cutLink(0, 3)
	old.down = false
	w.until(10*time.Second, "old master demoted", func() bool { return !old.m.IsMaster() })
	if old.m.Myself().Master != rep.m.MyID() {
		t.Fatalf("old master replicates %q", old.m.Myself().Master)
	}
	got := 0
	for _, sn := range w.nodes[1:3] {
		got += sn.sent[TypeUpdate]
	}
	if got == 0 {
		t.Fatal("no UPDATE sent")
	}
}

func TestVoteRules(t *testing.T) {
	// Masters 0, 1, 2; replicas 3 and 4 of master 0 that never start an
	// election themselves (nofailover): vote requests are built by hand.
	w := replicaCluster(t, 5, 3, map[int]int{3: 0, 4: 0}, func(i int, c *Config) {
		c.ReplicaNoFailover = i >= 3
	})
	w.run(3 * time.Second)
	voter := w.nodes[1]
	timeout := 2 * time.Second
	request := func(from *simNode, epoch uint64, edit func(*Msg)) Ready {
		t.Helper()
		msg := from.m.buildHeader(TypeFailoverAuthRequest)
		msg.CurrentEpoch = epoch
		if edit != nil {
			edit(msg)
		}
		in := voter.m.lookup(from.m.MyID()).inbound
		if in == nil {
			t.Fatalf("no link from node %d", from.idx)
		}
		voter.m.HandlePacket(w.now, in.id, msg)
		rd := voter.m.Ready()
		voter.events = append(voter.events, rd.Events...)
		return rd
	}
	acks := func(rd Ready) int {
		n := 0
		for _, s := range rd.Sends {
			if s.Msg.Type == TypeFailoverAuthAck {
				n++
			}
		}
		return n
	}
	lastDenial := func() string {
		d := voter.eventsOf(EventVoteDenied)
		if len(d) == 0 {
			return ""
		}
		return d[len(d)-1].Detail
	}
	r3, r4 := w.nodes[3], w.nodes[4]
	e := voter.m.CurrentEpoch() + 1

	// Its master is up: no vote, unless the request is flagged FORCEACK.
	if rd := request(r3, e, nil); acks(rd) != 0 || lastDenial() != "its master is up" {
		t.Fatalf("vote for a replica of a live master: %d acks, %q", acks(rd), lastDenial())
	}
	if voter.m.LastVoteEpoch() == e {
		t.Fatal("lastVoteEpoch moved without a vote")
	}

	// Master 0 fails.
	w.crash(0)
	w.until(10*time.Second, "FAIL", func() bool { return flagsOf(voter, w.nodes[0].m.MyID())&FlagFail != 0 })
	e = voter.m.CurrentEpoch() + 1

	// A vote: lastVoteEpoch saved with fsync in the Ready that sends the
	// ACK (the runner writes nodes.conf before any Send).
	rd := request(r3, e, nil)
	if acks(rd) != 1 || !rd.SaveConfig || !rd.Fsync || rd.FsyncLearned || voter.m.LastVoteEpoch() != e {
		t.Fatalf("vote: %d acks, save %v fsync %v, lastVoteEpoch %d", acks(rd), rd.SaveConfig, rd.Fsync, voter.m.LastVoteEpoch())
	}
	for _, s := range rd.Sends {
		if s.Msg.Type == TypeFailoverAuthAck && s.Link != voter.m.lookup(r3.m.MyID()).link.id {
			t.Fatal("ACK not on the outbound link of the requester")
		}
	}
	if conf := voter.m.RenderNodesConf(); !strings.Contains(conf, "lastVoteEpoch "+strconv.FormatUint(e, 10)+"\n") {
		t.Fatalf("nodes.conf:\n%s", conf)
	}

	// One vote per epoch.
	if rd := request(r4, e, nil); acks(rd) != 0 || lastDenial() != "already voted for epoch "+strconv.FormatUint(e, 10) {
		t.Fatalf("second vote in epoch %d: %d acks, %q", e, acks(rd), lastDenial())
	}
	// A stale epoch.
	if rd := request(r4, e-1, nil); acks(rd) != 0 || !strings.HasPrefix(lastDenial(), "reqEpoch (") {
		t.Fatalf("stale request: %d acks, %q", acks(rd), lastDenial())
	}
	// A new epoch, but a vote for this master's replicas is recent.
	if rd := request(r4, e+1, nil); acks(rd) != 0 ||
		lastDenial() != "can't vote about this master before "+strconv.FormatInt(int64(2*timeout/time.Millisecond), 10)+" milliseconds" {
		t.Fatalf("vote within 2 × node timeout: %d acks, %q", acks(rd), lastDenial())
	}
	// Masters never get votes, nor do replicas claiming slots whose owner
	// has a greater config epoch.
	if rd := request(w.nodes[2], e+2, nil); acks(rd) != 0 || lastDenial() != "it is a master node" {
		t.Fatalf("vote for a master: %d acks, %q", acks(rd), lastDenial())
	}
	w.run(2*timeout + cronPeriod)
	e = voter.m.CurrentEpoch() + 1
	owner := voter.m.lookup(w.nodes[1].m.MyID())
	if o2 := voter.m.lookup(w.nodes[2].m.MyID()); o2.configEpoch > owner.configEpoch {
		owner = o2
	}
	if owner.configEpoch == 0 {
		t.Fatal("masters 1 and 2 both at config epoch 0")
	}
	first := 0
	for !owner.slots.Has(first) {
		first++
	}
	if rd := request(r4, e, func(msg *Msg) {
		msg.MySlots = owner.slots
		msg.ConfigEpoch = owner.configEpoch - 1
	}); acks(rd) != 0 || !strings.HasPrefix(lastDenial(), "slot "+strconv.Itoa(first)+" epoch (") {
		t.Fatalf("vote for stale slots: %d acks, %q", acks(rd), lastDenial())
	}
	// After 2 × node timeout, a replica of the same master gets a vote.
	e = voter.m.CurrentEpoch() + 1
	if rd := request(r4, e, nil); acks(rd) != 1 || voter.m.LastVoteEpoch() != e {
		t.Fatalf("vote after 2 × node timeout: %d acks, %q", acks(rd), lastDenial())
	}
	// A replica does not vote at all.
	msg := r4.m.buildHeader(TypeFailoverAuthRequest)
	msg.CurrentEpoch = e + 5
	in := r3.m.lookup(r4.m.MyID()).inbound
	r3.m.HandlePacket(w.now, in.id, msg)
	if rd := r3.m.Ready(); acks(rd) != 0 || r3.m.LastVoteEpoch() != 0 {
		t.Fatal("a replica voted")
	}
}

func TestRankDelay(t *testing.T) {
	// Two replicas of master 0: node 4 has the greater offset (rank 0),
	// node 3 rank 1. Node 4 asks first and wins; node 3 never asks and
	// follows the new master.
	locals := map[int]*testLocal{3: {off: 100}, 4: {off: 200}}
	w := replicaCluster(t, 5, 3, map[int]int{3: 0, 4: 0}, func(i int, c *Config) {
		if l, ok := locals[i]; ok {
			c.Local = l
		}
	})
	w.run(3 * time.Second)
	r3, r4 := w.nodes[3], w.nodes[4]
	w.crash(0)
	w.until(10*time.Second, "node 4 promoted", func() bool { return r4.m.IsMaster() })
	d3, d4 := r3.eventsOf(EventElectionDelayed), r4.eventsOf(EventElectionDelayed)
	if len(d4) != 1 || !strings.Contains(d4[0].Detail, " rank 0 offset 200") {
		t.Fatalf("node 4 delays %+v", d4)
	}
	if len(d3) != 1 || !strings.Contains(d3[0].Detail, " rank 1 offset 100") {
		t.Fatalf("node 3 delays %+v", d3)
	}
	if ms, _ := strconv.Atoi(strings.Fields(d3[0].Detail)[0]); ms < 1500 || ms >= 2000 {
		t.Fatalf("rank 1 delay %d ms, want [1500, 2000)", ms)
	}
	w.until(5*time.Second, "node 3 follows node 4", func() bool { return r3.m.Myself().Master == r4.m.MyID() })
	w.run(3 * time.Second)
	if r3.sent[TypeFailoverAuthRequest] != 0 || r3.m.IsMaster() {
		t.Fatalf("rank 1 replica asked for votes (%d) or got promoted", r3.sent[TypeFailoverAuthRequest])
	}
	if e := r4.eventsOf(EventElectionStarted); len(e) != 1 {
		t.Fatalf("node 4 ran %d elections", len(e))
	}
}

func TestRankUpdatedByLaterOffsets(t *testing.T) {
	// Both replicas start at the same offset (rank 0). Once node 3 has
	// computed its delay, node 4 announces a greater offset: node 3 adds
	// a second for the rank it lost. Node 4's vote requests are dropped,
	// so node 3 is elected, a second later than first planned.
	locals := map[int]*testLocal{3: {off: 100}, 4: {off: 100}}
	w := replicaCluster(t, 5, 3, map[int]int{3: 0, 4: 0}, func(i int, c *Config) {
		if l, ok := locals[i]; ok {
			c.Local = l
		}
	})
	w.run(3 * time.Second)
	r3, r4 := w.nodes[3], w.nodes[4]
	w.filter = func(from, to int, msg *Msg) bool { return from == 4 && msg.Type == TypeFailoverAuthRequest }
	w.crash(0)
	w.until(10*time.Second, "node 3 scheduled", func() bool { return len(r3.eventsOf(EventElectionDelayed)) > 0 })
	scheduled := w.now
	planned, _ := strconv.Atoi(strings.Fields(r3.eventsOf(EventElectionDelayed)[0].Detail)[0])
	if !strings.Contains(r3.eventsOf(EventElectionDelayed)[0].Detail, " rank 0 ") {
		t.Fatalf("delay %+v", r3.eventsOf(EventElectionDelayed))
	}
	locals[4].off = 300
	pong := r4.m.buildHeader(TypePong)
	r3.m.HandlePacket(w.now, r3.m.lookup(r4.m.MyID()).inbound.id, pong)
	w.pump()
	w.until(5*time.Second, "node 3 elected", func() bool { return r3.m.IsMaster() })
	if u := r3.eventsOf(EventRankUpdated); len(u) != 1 || u[0].Detail != "1 +1000" {
		t.Fatalf("rank updates %+v", u)
	}
	if took := w.now.Sub(scheduled); took < time.Duration(planned)*time.Millisecond+time.Second {
		t.Fatalf("elected %v after scheduling, planned %d ms + 1 s", took, planned)
	}
}

func TestAuthTimeoutAndRetry(t *testing.T) {
	// No vote reaches the replica: the election expires after the auth
	// timeout (2 × node timeout = 4 s) and a new one, in a new epoch, is
	// scheduled after the retry time (8 s) from the first one's start.
	w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, nil)
	w.run(3 * time.Second)
	rep := w.nodes[3]
	w.filter = func(from, to int, msg *Msg) bool { return msg.Type == TypeFailoverAuthAck }
	w.crash(0)
	var starts []time.Time
	w.until(20*time.Second, "two elections", func() bool {
		if n := len(rep.eventsOf(EventElectionStarted)); n > len(starts) {
			starts = append(starts, w.now)
		}
		return len(starts) == 2
	})
	gap := starts[1].Sub(starts[0])
	if gap <= 8*time.Second || gap > 8*time.Second+time.Second+cronPeriod {
		t.Fatalf("second election %v after the first, want (8 s, 9.1 s]", gap)
	}
	el := rep.eventsOf(EventElectionStarted)
	e0, _ := strconv.Atoi(el[0].Detail)
	e1, _ := strconv.Atoi(el[1].Detail)
	if e1 <= e0 || rep.m.IsMaster() {
		t.Fatalf("epochs %d then %d, master %v", e0, e1, rep.m.IsMaster())
	}
	// The votes are lost but the masters did vote (one vote each per
	// election: the second one came after 2 × node timeout).
	if g := w.nodes[1].eventsOf(EventVoteGranted); len(g) != 2 {
		t.Fatalf("votes of node 1: %+v", g)
	}
	// Let the votes through: the third election wins.
	w.filter = nil
	w.until(12*time.Second, "promoted", func() bool { return rep.m.IsMaster() })
}

func TestTwoSimultaneousElections(t *testing.T) {
	// 5 masters × 1 replica; masters 0 and 1 crash together. Both
	// replicas are elected, with distinct config epochs, and everyone
	// agrees on them.
	w := replicaCluster(t, 10, 5, map[int]int{5: 0, 6: 1, 7: 2, 8: 3, 9: 4}, nil)
	w.run(3 * time.Second)
	w.crash(0)
	w.crash(1)
	r5, r6 := w.nodes[5], w.nodes[6]
	w.until(30*time.Second, "both promoted", func() bool { return r5.m.IsMaster() && r6.m.IsMaster() })
	e5, e6 := r5.m.Myself().ConfigEpoch, r6.m.Myself().ConfigEpoch
	if e5 == e6 {
		t.Fatalf("same config epoch %d", e5)
	}
	w.until(5*time.Second, "agreement", func() bool {
		return w.agree(0, r5.m.MyID(), e5) && w.agree(3277, r6.m.MyID(), e6)
	})
	// No voter gave two votes in one epoch.
	for _, sn := range w.nodes[2:5] {
		seen := map[string]bool{}
		for _, g := range sn.eventsOf(EventVoteGranted) {
			if seen[g.Detail] {
				t.Fatalf("node %d voted twice in epoch %s", sn.idx, g.Detail)
			}
			seen[g.Detail] = true
		}
	}
}

func TestTakeoverEpochCollision(t *testing.T) {
	// Two replicas take over at the same moment, before either hears of
	// the other: both bump to the same config epoch without consensus; the
	// collision rule moves the one with the smaller name to a new epoch.
	w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, nil)
	w.run(3 * time.Second)
	r3, r4 := w.nodes[3], w.nodes[4]
	if err := r3.m.Failover(w.now, "TAKEOVER"); err != nil {
		t.Fatal(err)
	}
	if err := r4.m.Failover(w.now, "takeover"); err != nil {
		t.Fatal(err)
	}
	if r3.m.Myself().ConfigEpoch != r4.m.Myself().ConfigEpoch {
		t.Fatalf("epochs %d and %d: not a collision", r3.m.Myself().ConfigEpoch, r4.m.Myself().ConfigEpoch)
	}
	w.pump()
	w.until(10*time.Second, "distinct epochs, agreed", func() bool {
		e3, e4 := r3.m.Myself().ConfigEpoch, r4.m.Myself().ConfigEpoch
		return e3 != e4 && w.agree(0, r3.m.MyID(), e3) && w.agree(5461, r4.m.MyID(), e4)
	})
	smaller := r3
	if r4.m.MyID() < r3.m.MyID() {
		smaller = r4
	}
	if len(smaller.eventsOf(EventEpochCollision)) == 0 {
		t.Fatal("the smaller name did not handle the collision")
	}
	for _, sn := range []*simNode{r3, r4} {
		if sn.sent[TypeFailoverAuthRequest] != 0 {
			t.Fatal("takeover asked for votes")
		}
	}
}

func TestMinorityPartitionDoesNotElect(t *testing.T) {
	// Master 0 and its replica 3 are cut off from the rest. The replica
	// can reach its master and never asks for votes; the master goes to
	// cluster_state fail after the node timeout. Then master 0 dies on
	// the minority side: its replica sees PFAIL, but without a majority
	// of masters FAIL never comes, and still no election.
	w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, nil)
	w.run(3 * time.Second)
	small := map[int]bool{0: true, 3: true}
	for a := range w.nodes {
		for b := range w.nodes {
			if small[a] != small[b] {
				w.cutLink(a, b)
			}
		}
	}
	m0, r3 := w.nodes[0], w.nodes[3]
	took := w.until(10*time.Second, "minority master fails", func() bool { return m0.m.State() == ClusterFail })
	if took < 2*time.Second {
		t.Fatalf("minority master failed %v after the cut, before the node timeout", took)
	}
	w.run(5 * time.Second)
	if r3.sent[TypeFailoverAuthRequest] != 0 || !m0.m.IsMaster() || r3.m.IsMaster() {
		t.Fatal("an election ran in the minority")
	}
	w.crash(0)
	w.until(5*time.Second, "replica flags PFAIL", func() bool { return flagsOf(r3, m0.m.MyID())&FlagPFail != 0 })
	w.run(10 * time.Second)
	if flagsOf(r3, m0.m.MyID())&FlagFail != 0 || r3.sent[TypeFailoverAuthRequest] != 0 || r3.m.IsMaster() {
		t.Fatal("the minority replica failed its master over")
	}
	if !strings.Contains(r3.m.Nodes(false), "master,fail? - ") {
		t.Fatalf("CLUSTER NODES:\n%s", r3.m.Nodes(false))
	}
}

func TestNoFailoverAndDataAge(t *testing.T) {
	t.Run("nofailover", func(t *testing.T) {
		w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, func(i int, c *Config) {
			c.ReplicaNoFailover = i == 3
		})
		w.run(3 * time.Second)
		if l := parseNodes(w.nodes[1].m.Nodes(false))[w.nodes[3].m.MyID()]; l.flags != "slave,nofailover" {
			t.Fatalf("flags %q", l.flags)
		}
		w.crash(0)
		w.until(10*time.Second, "FAIL", func() bool { return flagsOf(w.nodes[3], w.nodes[0].m.MyID())&FlagFail != 0 })
		w.run(10 * time.Second)
		if w.nodes[3].sent[TypeFailoverAuthRequest] != 0 || w.nodes[3].m.IsMaster() {
			t.Fatal("a nofailover replica ran an election")
		}
	})
	// Replica 3 lost its master long before the master died: its data
	// is older than repl-ping-replica-period + node timeout × validity
	// factor (1 s + 2 s × 1) beyond the node timeout, so it does not fail
	// over; with the factor 0 it does.
	for _, factor := range []int{1, 0} {
		t.Run("validity-factor-"+strconv.Itoa(factor), func(t *testing.T) {
			w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, func(i int, c *Config) {
				c.ReplicaValidityFactor = factor
				c.ReplPingReplicaPeriod = time.Second
			})
			w.run(3 * time.Second)
			w.cutLink(0, 3)
			w.run(10 * time.Second)
			w.crash(0)
			rep := w.nodes[3]
			w.until(10*time.Second, "FAIL", func() bool { return flagsOf(rep, w.nodes[0].m.MyID())&FlagFail != 0 })
			if factor == 0 {
				w.until(5*time.Second, "promoted", func() bool { return rep.m.IsMaster() })
				return
			}
			w.run(10 * time.Second)
			if rep.sent[TypeFailoverAuthRequest] != 0 || rep.m.IsMaster() {
				t.Fatal("a replica with stale data failed over")
			}
			c := rep.eventsOf(EventCantFailover)
			if len(c) != 1 || !strings.HasPrefix(c[0].Detail, "Disconnected from master for longer than allowed.") {
				t.Fatalf("cant-failover events %+v", c)
			}
		})
	}
	t.Run("master-link", func(t *testing.T) {
		// The data age comes from the replication link when the data set
		// reports it: a bus that still works does not count.
		l := &linkLocal{}
		w := replicaCluster(t, 6, 3, map[int]int{3: 0, 4: 1, 5: 2}, func(i int, c *Config) {
			c.ReplicaValidityFactor = 1
			c.ReplPingReplicaPeriod = time.Second
			if i == 3 {
				c.Local = l
			}
		})
		l.lastIO = w.now
		w.run(10 * time.Second)
		w.crash(0)
		rep := w.nodes[3]
		w.until(10*time.Second, "FAIL", func() bool { return flagsOf(rep, w.nodes[0].m.MyID())&FlagFail != 0 })
		w.run(8 * time.Second)
		if rep.sent[TypeFailoverAuthRequest] != 0 || len(rep.eventsOf(EventCantFailover)) == 0 {
			t.Fatal("the replication link's age was not used")
		}
	})
}
