package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestForgetBlacklist(t *testing.T) {
	w := newCluster(t, 3, 3, nil)
	m0 := w.nodes[0].m
	gone := w.nodes[2].m.MyID()
	if err := m0.Forget(w.now, gone); err != nil {
		t.Fatal(err)
	}
	w.pump()
	if _, ok := m0.Node(gone); ok {
		t.Fatal("node still known right after FORGET")
	}
	if !w.nodes[0].hasEvent(EventNodeForgotten, gone) {
		t.Fatal("no forgotten event")
	}
	// Node 1 keeps gossiping about node 2 and node 2 keeps pinging node 0:
	// for 60 s node 0 must not take it back. Observe every tick.
	start := w.now
	gossipSeen := 0
	w.filter = func(from, to int, msg *Msg) bool {
		if to == 0 && from == 1 {
			for _, g := range msg.Gossip {
				if g.Name.String() == gone {
					gossipSeen++
				}
			}
		}
		return false
	}
	for w.now.Sub(start) < 59*time.Second {
		w.tick()
		if _, ok := m0.Node(gone); ok {
			t.Fatalf("node re-added after %v, within the blacklist", w.now.Sub(start))
		}
	}
	if gossipSeen == 0 {
		t.Fatal("node 1 never gossiped about the forgotten node: the test proves nothing")
	}
	took := w.until(30*time.Second, "node re-added after the blacklist", func() bool {
		_, ok := m0.Node(gone)
		return ok
	})
	if total := w.now.Sub(start); total <= 60*time.Second {
		t.Fatalf("re-added after %v", total)
	}
	t.Logf("re-added %v after the blacklist's 59 s mark", took)
	// Errors.
	if err := m0.Forget(w.now, m0.MyID()); err == nil || err.Error() != "ERR I tried hard but I can't forget myself..." {
		t.Fatal(err)
	}
	if err := m0.Forget(w.now, "abc"); err == nil || err.Error() != "ERR Unknown node abc" {
		t.Fatal(err)
	}
}

type fakeLocal struct {
	keys   map[int]int
	offset int64
}

func (f *fakeLocal) KeysInSlot(s int) int { return f.keys[s] }
func (f *fakeLocal) DBSize() int {
	n := 0
	for _, c := range f.keys {
		n += c
	}
	return n
}
func (f *fakeLocal) ReplOffset() int64 { return f.offset }

func TestSetSlot(t *testing.T) {
	locals := []*fakeLocal{{keys: map[int]int{}}, {keys: map[int]int{}}, {keys: map[int]int{}}}
	w := newCluster(t, 3, 3, func(i int, c *Config) { c.Local = locals[i] })
	w.until(20*time.Second, "distinct epochs", func() bool {
		seen := map[uint64]bool{}
		for _, sn := range w.nodes {
			seen[sn.m.Myself().ConfigEpoch] = true
		}
		return len(seen) == 3
	})
	w.run(3 * time.Second)
	src, dst := w.nodes[0], w.nodes[1]
	sid, did := src.m.MyID(), dst.m.MyID()
	errs := []struct {
		m    *Machine
		args []string
		want string
	}{
		{src.m, []string{"100", "importing", did}, "ERR I'm already the owner of hash slot 100"},
		{dst.m, []string{"100", "migrating", sid}, "ERR I'm not the owner of hash slot 100"},
		{src.m, []string{"100", "migrating", "nope"}, "ERR I don't know about node nope"},
		{src.m, []string{"100", "node", "nope"}, "ERR Unknown node nope"},
		{src.m, []string{"100", "stable", "x"}, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"},
		{src.m, []string{"100", "bogus"}, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"},
		{src.m, []string{"16384", "stable"}, "ERR Invalid or out of range slot"},
		{src.m, []string{"-1", "stable"}, "ERR Invalid or out of range slot"},
	}
	for _, e := range errs {
		if err := e.m.SetSlot(w.now, e.args[0], e.args[1], e.args[2:]...); err == nil || err.Error() != e.want {
			t.Fatalf("SETSLOT %v: %v, want %q", e.args, err, e.want)
		}
	}
	// Open the slot on both sides; CLUSTER NODES and nodes.conf show it.
	if err := dst.m.SetSlot(w.now, "100", "IMPORTING", sid); err != nil {
		t.Fatal(err)
	}
	if err := src.m.SetSlot(w.now, "100", "MIGRATING", did); err != nil {
		t.Fatal(err)
	}
	w.pump()
	if !strings.Contains(src.m.Nodes(false), fmt.Sprintf(" [100->-%s]\n", did)) ||
		!strings.Contains(src.conf, fmt.Sprintf(" [100->-%s]\n", did)) {
		t.Fatalf("migrating slot not shown:\n%s", src.m.Nodes(false))
	}
	if !strings.Contains(dst.m.Nodes(false), fmt.Sprintf(" [100-<-%s]\n", sid)) {
		t.Fatalf("importing slot not shown:\n%s", dst.m.Nodes(false))
	}
	if n, ok := src.m.IsMigrating(100); !ok || n.ID != did {
		t.Fatal("IsMigrating")
	}
	if n, ok := dst.m.IsImporting(100); !ok || n.ID != sid {
		t.Fatal("IsImporting")
	}
	// While the source still holds keys it refuses to give the slot away.
	locals[0].keys[100] = 3
	if err := src.m.SetSlot(w.now, "100", "node", did); err == nil ||
		err.Error() != "ERR Can't assign hashslot 100 to a different node while I still hold keys for this hash slot." {
		t.Fatal(err)
	}
	delete(locals[0].keys, 100)
	// The importing side still sees the slot at the source even when the
	// source claims it no more: importing slots only change by hand.
	srcEpoch := src.m.Myself().ConfigEpoch
	dstEpoch := dst.m.Myself().ConfigEpoch
	if err := src.m.SetSlot(w.now, "100", "node", did); err != nil {
		t.Fatal(err)
	}
	w.pump()
	if _, ok := src.m.IsMigrating(100); ok {
		t.Fatal("migrating state survived SETSLOT NODE")
	}
	if src.m.Myself().ConfigEpoch != srcEpoch {
		t.Fatal("the source bumped its epoch")
	}
	last := src.slotChanges[len(src.slotChanges)-1]
	if !slices.Equal(last.Lost, []int{100}) || len(last.Gained) != 0 || len(last.DeleteKeys) != 0 {
		t.Fatalf("source slot change %+v", last)
	}
	w.run(2 * time.Second)
	if o, _ := dst.m.SlotOwner(100); o.ID != sid {
		t.Fatalf("importing node rebound slot 100 to %s by itself", o.ID)
	}
	// Closing the import on the destination takes the slot and a new
	// config epoch without consensus, and broadcasts a PONG at once.
	pongs := dst.sent[TypePong]
	maxEpoch := uint64(0)
	for _, sn := range w.nodes {
		if e := sn.m.Myself().ConfigEpoch; e > maxEpoch {
			maxEpoch = e
		}
	}
	if err := dst.m.SetSlot(w.now, "100", "node", did); err != nil {
		t.Fatal(err)
	}
	rd := dst.m.Ready()
	if !rd.SaveConfig || !rd.Fsync || rd.FsyncLearned {
		t.Fatalf("epoch bump: save %v fsync %v learned %v, want a save with an fsync of its own", rd.SaveConfig, rd.Fsync, rd.FsyncLearned)
	}
	if rd.SlotsChanged == nil || !slices.Equal(rd.SlotsChanged.Gained, []int{100}) {
		t.Fatalf("destination slot change %+v", rd.SlotsChanged)
	}
	// The others learn the new epoch (and the third master the slot)
	// from the destination's PONG: an fsync of what was learned.
	learned := map[*simNode]int{}
	w.readyHook = func(sn *simNode, rd Ready) {
		if sn == dst || !rd.Fsync {
			return
		}
		if !rd.FsyncLearned {
			t.Errorf("node %d: fsync of its own after the destination's PONG", sn.idx)
		}
		learned[sn]++
	}
	w.apply(dst, rd)
	if dst.sent[TypePong]-pongs != 2 {
		t.Fatalf("%d PONGs broadcast, want 2", dst.sent[TypePong]-pongs)
	}
	if got := dst.m.Myself().ConfigEpoch; got != maxEpoch+1 || got == dstEpoch {
		t.Fatalf("destination epoch %d, want %d", got, maxEpoch+1)
	}
	if _, ok := dst.m.IsImporting(100); ok {
		t.Fatal("importing state survived")
	}
	w.pump()
	w.until(5*time.Second, "everyone sees the new owner", func() bool {
		for _, sn := range w.nodes {
			if o, _ := sn.m.SlotOwner(100); o.ID != did {
				return false
			}
		}
		return true
	})
	w.run(time.Second) // the PONGs delivered
	w.readyHook = nil
	for _, sn := range w.nodes {
		if sn != dst && learned[sn] == 0 {
			t.Fatalf("node %d learned the destination's new epoch without an fsync", sn.idx)
		}
	}
	// STABLE clears both states.
	if err := src.m.SetSlot(w.now, "200", "migrating", did); err != nil {
		t.Fatal(err)
	}
	if err := src.m.SetSlot(w.now, "200", "stable"); err != nil {
		t.Fatal(err)
	}
	if _, ok := src.m.IsMigrating(200); ok {
		t.Fatal("STABLE kept migrating")
	}
}

func TestSlotCommandErrors(t *testing.T) {
	w := newSimNet(t, 1, nil)
	m := w.nodes[0].m
	cases := []struct {
		f    func() error
		want string
	}{
		{func() error { return m.AddSlots(w.now, "1", "x") }, "ERR Invalid or out of range slot"},
		{func() error { return m.AddSlots(w.now, "1", "1") }, "ERR Slot 1 specified multiple times"},
		{func() error { return m.AddSlotsRange(w.now, "5", "1") }, "ERR start slot number 5 is greater than end slot number 1"},
		{func() error { return m.AddSlotsRange(w.now, "1", "2", "3") }, "ERR wrong number of arguments for 'cluster|addslotsrange' command"},
		{func() error { return m.AddSlotsRange(w.now, "0", "10", "5", "20") }, "ERR Slot 5 specified multiple times"},
		{func() error { return m.DelSlots(w.now, "3") }, "ERR Slot 3 is already unassigned"},
		{func() error { return m.Meet(w.now, "10.0.0.9", "x", "") }, "ERR Invalid TCP base port specified: x"},
		{func() error { return m.Meet(w.now, "10.0.0.9", "1", "y") }, "ERR Invalid TCP bus port specified: y"},
		{func() error { return m.Meet(w.now, "not-an-ip", "7000", "") }, "ERR Invalid node address specified: not-an-ip:7000"},
		{func() error { return m.Meet(w.now, "10.0.0.9", "60000", "") }, "ERR Invalid node address specified: 10.0.0.9:60000"},
	}
	for i, c := range cases {
		if err := c.f(); err == nil || err.Error() != c.want {
			t.Fatalf("case %d: %v, want %q", i, err, c.want)
		}
	}
	// Nothing was assigned by the failed commands.
	if strings.Contains(m.Info(0), "cluster_slots_assigned:0\r\n") == false {
		t.Fatal(m.Info(0))
	}
	if err := m.AddSlots(w.now, "1", "2", "3"); err != nil {
		t.Fatal(err)
	}
	if err := m.AddSlots(w.now, "3"); err == nil || err.Error() != "ERR Slot 3 is already busy" {
		t.Fatal(err)
	}
	if err := m.DelSlotsRange(w.now, "2", "3"); err != nil {
		t.Fatal(err)
	}
	if got := parseNodes(m.Nodes(false))[m.MyID()].slots; !slices.Equal(got, []string{"1"}) {
		t.Fatalf("slots %v", got)
	}
	if err := m.FlushSlots(w.now); err != nil {
		t.Fatal(err)
	}
	if m.Myself().Flags&FlagMaster == 0 || strings.Contains(m.Info(0), "cluster_slots_assigned:0\r\n") == false {
		t.Fatal("FLUSHSLOTS")
	}
	// A MEET already in progress for the address is not an error, and
	// adds no second handshake node.
	if err := m.Meet(w.now, "10.0.0.9", "7000", ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Meet(w.now, "10.0.0.9", "7000", ""); err != nil {
		t.Fatal(err)
	}
	if n := len(m.KnownNodes()); n != 2 {
		t.Fatalf("%d nodes after two MEETs", n)
	}
	// The handshake node expires after max(node timeout, 1 s).
	w.pump()
	w.until(3*time.Second, "handshake expires", func() bool { return len(m.KnownNodes()) == 1 })
	if !w.nodes[0].hasEvent(EventHandshakeTimeout, "") {
		t.Fatal("no handshake timeout event")
	}
}

func TestKeysGuardedCommands(t *testing.T) {
	loc := &fakeLocal{keys: map[int]int{5: 1}}
	w := newSimNet(t, 2, func(i int, c *Config) {
		if i == 0 {
			c.Local = loc
		}
	})
	m := w.nodes[0].m
	if err := m.FlushSlots(w.now); err == nil || err.Error() != "ERR DB must be empty to perform CLUSTER FLUSHSLOTS." {
		t.Fatal(err)
	}
	if err := m.Reset(w.now, true); err == nil || err.Error() != "ERR CLUSTER RESET can't be called with master nodes containing keys" {
		t.Fatal(err)
	}
	w.meet(0, 1)
	w.until(5*time.Second, "joined", w.allKnow)
	if err := m.Replicate(w.now, w.nodes[1].m.MyID()); err == nil ||
		err.Error() != "ERR To set a master the node must be empty and without assigned slots." {
		t.Fatal(err)
	}
}

func TestResetHardAndSoft(t *testing.T) {
	w := newCluster(t, 4, 3, nil)
	r := w.nodes[3]
	if err := r.m.Replicate(w.now, w.nodes[0].m.MyID()); err != nil {
		t.Fatal(err)
	}
	w.pump()
	oldID := r.m.MyID()
	if err := r.m.Reset(w.now, false); err != nil {
		t.Fatal(err)
	}
	rd := r.m.Ready()
	if rd.RoleChange == nil || *rd.RoleChange != (RoleChange{}) {
		t.Fatalf("soft reset of a replica: role change %+v, want become master", rd.RoleChange)
	}
	if r.m.MyID() != oldID || !r.m.IsMaster() || len(r.m.KnownNodes()) != 1 || r.m.CurrentEpoch() == 0 {
		t.Fatalf("soft reset: id kept %v, master %v, %d nodes, epoch %d", r.m.MyID() == oldID, r.m.IsMaster(), len(r.m.KnownNodes()), r.m.CurrentEpoch())
	}
	if len(rd.Closes) != 6 {
		t.Fatalf("soft reset closed %d links, want 6", len(rd.Closes))
	}
	w.apply(r, rd)
	m0 := w.nodes[0].m
	if err := m0.FlushSlots(w.now); err != nil {
		t.Fatal(err)
	}
	if err := m0.Reset(w.now, true); err != nil {
		t.Fatal(err)
	}
	lines := parseNodes(m0.Nodes(false))
	if len(lines) != 1 || m0.CurrentEpoch() != 0 || m0.Myself().ConfigEpoch != 0 {
		t.Fatalf("hard reset: %v epoch %d", lines, m0.CurrentEpoch())
	}
	if _, ok := lines[m0.MyID()]; !ok || !validName(m0.MyID()) {
		t.Fatal("hard reset: bad new id")
	}
}

func TestGossipSelection(t *testing.T) {
	cases := []struct {
		total, wanted, fresh int
	}{
		{1, -1, -1}, {2, 0, 0}, {3, 1, 1}, {4, 2, 2}, {5, 3, 3}, {10, 3, 8}, {29, 3, 27}, {30, 3, 28},
		{31, 3, 29}, {40, 4, 38}, {100, 10, 98}, {1000, 100, 998},
	}
	for _, c := range cases {
		wanted, fresh := gossipCounts(c.total)
		if wanted != c.wanted || fresh != c.fresh {
			t.Errorf("gossipCounts(%d) = %d, %d; want %d, %d", c.total, wanted, fresh, c.wanted, c.fresh)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(n int, f func(i int, c *gossipCandidate)) []gossipCandidate {
		cs := make([]gossipCandidate, n)
		for i := range cs {
			cs[i] = gossipCandidate{linked: true}
			f(i, &cs[i])
		}
		return cs
	}
	for _, tc := range []struct {
		name  string
		cands []gossipCandidate
		check func(t *testing.T, sel []int, cands []gossipCandidate)
	}{
		{"100 healthy: 10 distinct, never myself", mk(100, func(i int, c *gossipCandidate) { c.myself = i == 0 }),
			func(t *testing.T, sel []int, cands []gossipCandidate) {
				if len(sel) < 8 || len(sel) > 10 {
					t.Fatalf("%d entries", len(sel))
				}
				seen := map[int]bool{}
				for _, i := range sel {
					if i == 0 || seen[i] {
						t.Fatalf("entry %d (seen %v)", i, seen[i])
					}
					seen[i] = true
				}
			}},
		{"every PFAIL node is appended", mk(50, func(i int, c *gossipCandidate) {
			c.myself = i == 0
			c.pfail = i%10 == 5
			c.handshake = i == 15 // PFAIL but in handshake: left out
		}), func(t *testing.T, sel []int, cands []gossipCandidate) {
			tail := sel[len(sel)-4:]
			if !slices.Equal(tail, []int{5, 25, 35, 45}) {
				t.Fatalf("PFAIL tail %v of %v", tail, sel)
			}
			for _, i := range sel[:len(sel)-4] {
				if cands[i].pfail {
					t.Fatalf("PFAIL node %d in the random part", i)
				}
			}
		}},
		{"handshake, noaddr, unlinked slotless nodes are skipped", mk(40, func(i int, c *gossipCandidate) {
			c.myself = i == 0
			c.handshake = i%4 == 1
			c.noaddr = i%4 == 2
			c.linked = i%4 != 3
			c.numSlots = 0
			if i == 7 { // unlinked but serving slots: eligible
				c.numSlots = 10
			}
		}), func(t *testing.T, sel []int, cands []gossipCandidate) {
			for _, i := range sel {
				c := cands[i]
				if c.handshake || c.noaddr || (!c.linked && c.numSlots == 0) {
					t.Fatalf("ineligible %d selected", i)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := 0; round < 50; round++ {
				pf := 0
				for _, c := range tc.cands {
					if c.pfail {
						pf++
					}
				}
				cands := tc.cands
				tc.check(t, selectGossip(rng, len(cands), pf, func(i int) gossipCandidate { return cands[i] }), cands)
			}
		})
	}
}

func TestGossipInPackets(t *testing.T) {
	// In a joined 12-node cluster, every PING carries max(3, 12/10) = 3
	// entries at most, plus one for each PFAIL node.
	w := newSimNet(t, 12, nil)
	joinChain(t, w, 30*time.Second)
	counts := map[int]int{}
	w.filter = func(from, to int, msg *Msg) bool {
		if msg.Type == TypePing {
			counts[len(msg.Gossip)]++
		}
		return false
	}
	w.run(5 * time.Second)
	if counts[3] == 0 || len(counts) != 1 {
		t.Fatalf("gossip sizes %v, want only 3", counts)
	}
}

func TestPingAppendsPFailNodes(t *testing.T) {
	// A node knowing 40 others, 2 of them PFAIL: a PING carries
	// max(3, 41/10) = 4 random healthy entries, then both PFAIL nodes.
	cfg := DefaultConfig()
	cfg.Port = 7000
	m, err := New(cfg, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	m.Ready()
	now := time.Unix(1_700_000_000, 0)
	m.begin(now)
	var peers []*node
	for i := 0; i < 40; i++ {
		n := m.createNode(now, Name{}, FlagMaster)
		n.ip, n.port, n.cport = fmt.Sprintf("10.0.1.%d", i), 7000, 17000
		m.addNode(n)
		m.newLink(n, false).up = true
		peers = append(peers, n)
	}
	peers[7].flags |= FlagPFail
	peers[30].flags |= FlagPFail
	m.statsPFail = 2 // as the cron counts them
	for round := 0; round < 20; round++ {
		m.sendPing(peers[0].link, TypePing)
		sends := m.Ready().Sends
		msg := sends[len(sends)-1].Msg
		if len(msg.Gossip) != 6 {
			t.Fatalf("%d gossip entries, want 6", len(msg.Gossip))
		}
		tail := msg.Gossip[4:]
		if tail[0].Name != peers[7].name || tail[1].Name != peers[30].name || tail[0].Flags&FlagPFail == 0 {
			t.Fatalf("PFAIL entries missing from the tail: %+v", tail)
		}
		seen := map[Name]bool{}
		for _, g := range msg.Gossip[:4] {
			if g.Name == m.myself.name || g.Flags&FlagPFail != 0 || seen[g.Name] {
				t.Fatalf("bad random entry %s", g.Name)
			}
			seen[g.Name] = true
		}
	}
}
