package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// newCluster joins n nodes and gives the first masters slots evenly.
func newCluster(t *testing.T, n, masters int, tweak func(int, *Config)) *simNet {
	t.Helper()
	w := newSimNet(t, n, tweak)
	joinChain(t, w, 30*time.Second)
	addSlotsEvenly(t, w, masters)
	w.until(10*time.Second, "cluster ok", func() bool {
		for _, sn := range w.nodes {
			if sn.m.State() != ClusterOK {
				return false
			}
		}
		return true
	})
	return w
}

func TestReplicate(t *testing.T) {
	w := newCluster(t, 4, 3, nil)
	master := w.nodes[0]
	replica := w.nodes[3]
	if err := replica.m.Replicate(w.now, master.m.MyID()); err != nil {
		t.Fatal(err)
	}
	w.pump()
	want := RoleChange{Master: master.m.MyID(), IP: master.ip, Port: master.port}
	if len(replica.roles) != 1 || replica.roles[0] != want {
		t.Fatalf("role changes %+v, want [%+v]", replica.roles, want)
	}
	if replica.m.IsMaster() || replica.m.Myself().Master != master.m.MyID() {
		t.Fatalf("replica role: master=%v of %q", replica.m.IsMaster(), replica.m.Myself().Master)
	}
	// The replica's shard now serves its master's slots.
	if sc := replica.slotChanges; len(sc) != 1 || len(sc[0].Gained) != 5461 || sc[0].Gained[0] != 0 || len(sc[0].Lost) != 0 {
		t.Fatalf("replica slot changes %+v", len(sc))
	}
	w.until(5*time.Second, "everyone sees the replica", func() bool {
		for _, sn := range w.nodes {
			l := parseNodes(sn.m.Nodes(false))[replica.m.MyID()]
			wantFlags := "slave"
			if sn == replica {
				wantFlags = "myself,slave"
			}
			if l.flags != wantFlags || l.master != master.m.MyID() {
				return false
			}
		}
		return true
	})
	// A replica shows its master's config epoch; CLUSTER REPLICAS lists it.
	lines, err := w.nodes[1].m.Replicas(master.m.MyID(), false)
	if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], replica.m.MyID()+" ") {
		t.Fatalf("REPLICAS: %q %v", lines, err)
	}
	if _, err := w.nodes[1].m.Replicas(replica.m.MyID(), false); err == nil || err.Error() != "ERR The specified node is not a master" {
		t.Fatalf("REPLICAS of a replica: %v", err)
	}
	// The replica sends its master's slots in its headers, flagged slave:
	// nobody binds them to the replica.
	for _, sn := range w.nodes {
		if o, _ := sn.m.SlotOwner(0); o.ID != master.m.MyID() {
			t.Fatalf("node %d: slot 0 owner %s", sn.idx, o.ID)
		}
	}
	// CLUSTER SHARDS on node 1: master 0's shard has the replica.
	for _, sh := range w.nodes[1].m.Shards() {
		if sh.Nodes[0].ID == master.m.MyID() {
			if len(sh.Nodes) != 2 || sh.Nodes[1].ID != replica.m.MyID() || sh.Nodes[1].Role != "replica" ||
				sh.Nodes[1].Health != "loading" || len(sh.Slots) != 1 || sh.Slots[0] != [2]int{0, 5460} {
				t.Fatalf("shard %+v", sh)
			}
		}
	}
	// Errors.
	cases := []struct {
		m    *Machine
		id   string
		want string
	}{
		{replica.m, "0000000000000000000000000000000000000000", "ERR Unknown node 0000000000000000000000000000000000000000"},
		{replica.m, replica.m.MyID(), "ERR Can't replicate myself"},
		{w.nodes[2].m, replica.m.MyID(), "ERR I can only replicate a master, not a replica."},
		{w.nodes[2].m, master.m.MyID(), "ERR To set a master the node must be empty and without assigned slots."},
	}
	for _, c := range cases {
		if err := c.m.Replicate(w.now, c.id); err == nil || err.Error() != c.want {
			t.Fatalf("REPLICATE %s: %v, want %q", c.id, err, c.want)
		}
	}
	// FORGET my master is refused.
	if err := replica.m.Forget(w.now, master.m.MyID()); err == nil || err.Error() != "ERR Can't forget my master!" {
		t.Fatalf("FORGET master: %v", err)
	}
}

func TestEpochCollision(t *testing.T) {
	// Three masters all at config epoch 0 (as after ADDSLOTS on fresh
	// nodes): the collision rule spreads them to distinct epochs.
	w := newCluster(t, 3, 3, nil)
	w.until(20*time.Second, "distinct config epochs", func() bool {
		seen := map[uint64]bool{}
		for _, sn := range w.nodes {
			seen[sn.m.Myself().ConfigEpoch] = true
		}
		return len(seen) == 3
	})
	// The node with the greatest name never moves; the others took new
	// epochs and logged the collision.
	greatest := w.nodes[0]
	for _, sn := range w.nodes {
		if sn.m.MyID() > greatest.m.MyID() {
			greatest = sn
		}
	}
	if greatest.m.Myself().ConfigEpoch != 0 || greatest.hasEvent(EventEpochCollision, "") {
		t.Fatalf("greatest-named node moved to epoch %d", greatest.m.Myself().ConfigEpoch)
	}
	for _, sn := range w.nodes {
		if sn != greatest && !sn.hasEvent(EventEpochCollision, "") {
			t.Fatalf("node %d never handled a collision", sn.idx)
		}
		if sn.fsyncs == 0 {
			t.Fatalf("node %d never fsynced", sn.idx)
		}
	}
	// Everyone converges on the same view of the epochs.
	w.until(10*time.Second, "same epochs everywhere", func() bool {
		for _, a := range w.nodes {
			for _, b := range w.nodes {
				l := parseNodes(a.m.Nodes(false))[b.m.MyID()]
				if l.epoch != fmt.Sprint(b.m.Myself().ConfigEpoch) {
					return false
				}
			}
			if a.m.CurrentEpoch() != 2 {
				return false
			}
		}
		return true
	})
}

func TestSetConfigEpochAndBump(t *testing.T) {
	w := newSimNet(t, 2, nil)
	m := w.nodes[0].m
	if err := m.SetConfigEpoch(w.now, "-1"); err == nil || err.Error() != "ERR Invalid config epoch specified: -1" {
		t.Fatal(err)
	}
	if err := m.SetConfigEpoch(w.now, "x"); err == nil || err.Error() != "ERR value is not an integer or out of range" {
		t.Fatal(err)
	}
	if err := m.SetConfigEpoch(w.now, "5"); err != nil {
		t.Fatal(err)
	}
	if m.Myself().ConfigEpoch != 5 || m.CurrentEpoch() != 5 {
		t.Fatalf("epochs %d %d", m.Myself().ConfigEpoch, m.CurrentEpoch())
	}
	if err := m.SetConfigEpoch(w.now, "6"); err == nil || err.Error() != "ERR Node config epoch is already non-zero" {
		t.Fatal(err)
	}
	if got := m.BumpEpoch(w.now); got != "STILL 5" {
		t.Fatalf("BUMPEPOCH %q", got)
	}
	w.meet(0, 1)
	w.until(5*time.Second, "joined", w.allKnow)
	m1 := w.nodes[1].m
	w.until(5*time.Second, "current epoch learnt", func() bool { return m1.CurrentEpoch() == 5 })
	if err := m1.SetConfigEpoch(w.now, "1"); err == nil || err.Error() != "ERR The user can assign a config epoch only when the node does not know any other node." {
		t.Fatal(err)
	}
	// Node 1 (epoch 0) bumps past the current epoch it learnt from node 0.
	if got := m1.BumpEpoch(w.now); got != "BUMPED 6" {
		t.Fatalf("BUMPEPOCH %q", got)
	}
	rd := m1.Ready()
	if !rd.SaveConfig || !rd.Fsync {
		t.Fatalf("bump did not ask for an fsynced save: %+v", rd)
	}
}

func TestUpdateFixesStaleNode(t *testing.T) {
	// Node 0 owns slots 0-99 at epoch 1. It is cut away; node 1 takes the
	// slots with SETSLOT NODE on itself and a greater epoch; node 2 learns
	// it. When node 0 returns claiming 0-99 with its stale epoch, node 2
	// (or 1) sends it an UPDATE and node 0 gives the slots up.
	w := newSimNet(t, 3, nil)
	for i, sn := range w.nodes {
		if err := sn.m.SetConfigEpoch(w.now, fmt.Sprint(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	joinChain(t, w, 30*time.Second)
	if err := w.nodes[0].m.AddSlotsRange(w.now, "0", "99"); err != nil {
		t.Fatal(err)
	}
	if err := w.nodes[0].m.AddSlotsRange(w.now, "200", "299"); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.until(5*time.Second, "slots known", func() bool {
		o, ok := w.nodes[2].m.SlotOwner(0)
		return ok && o.ID == w.nodes[0].m.MyID()
	})
	w.isolate(0)
	// Node 1 takes 0-99 over (as a failover would) with a new epoch.
	m1 := w.nodes[1].m
	for s := 0; s < 100; s++ {
		if err := m1.SetSlot(w.now, fmt.Sprint(s), "node", m1.MyID()); err != nil {
			t.Fatal(err)
		}
	}
	if got := m1.BumpEpoch(w.now); got != "BUMPED 4" {
		t.Fatalf("bump: %s", got)
	}
	w.pump()
	w.until(5*time.Second, "node 2 learns the new owner", func() bool {
		o, _ := w.nodes[2].m.SlotOwner(50)
		return o.ID == m1.MyID()
	})
	updatesBefore := w.nodes[1].sent[TypeUpdate] + w.nodes[2].sent[TypeUpdate]
	w.heal()
	w.until(10*time.Second, "node 0 gives up 0-99", func() bool {
		o, _ := w.nodes[0].m.SlotOwner(50)
		return o.ID == m1.MyID()
	})
	if w.nodes[1].sent[TypeUpdate]+w.nodes[2].sent[TypeUpdate] == updatesBefore {
		t.Fatal("no UPDATE was sent")
	}
	// Node 0 keeps 200-299 and stays a master; it was told to delete keys
	// of the slots it lost.
	if o, _ := w.nodes[0].m.SlotOwner(250); o.ID != w.nodes[0].m.MyID() || !w.nodes[0].m.IsMaster() {
		t.Fatal("node 0 lost slots it still owns")
	}
	lost := 0
	for _, sc := range w.nodes[0].slotChanges {
		lost += len(sc.Lost)
	}
	if lost != 100 {
		t.Fatalf("node 0 reported %d lost slots, want 100", lost)
	}
}

func TestUpdateDemotesEmptiedMaster(t *testing.T) {
	// Same, but node 0 loses all its slots: it becomes a replica of the
	// new owner (RoleChange), as after a failover.
	w := newSimNet(t, 3, nil)
	for i, sn := range w.nodes {
		if err := sn.m.SetConfigEpoch(w.now, fmt.Sprint(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	joinChain(t, w, 30*time.Second)
	if err := w.nodes[0].m.AddSlotsRange(w.now, "0", "99"); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.until(5*time.Second, "slots known", func() bool {
		o, ok := w.nodes[1].m.SlotOwner(0)
		return ok && o.ID == w.nodes[0].m.MyID()
	})
	w.isolate(0)
	m1 := w.nodes[1].m
	for s := 0; s < 100; s++ {
		if err := m1.SetSlot(w.now, fmt.Sprint(s), "NODE", m1.MyID()); err != nil {
			t.Fatal(err)
		}
	}
	w.pump()
	w.heal()
	w.until(10*time.Second, "node 0 demoted", func() bool { return !w.nodes[0].m.IsMaster() })
	want := RoleChange{Master: m1.MyID(), IP: w.nodes[1].ip, Port: w.nodes[1].port}
	if r := w.nodes[0].roles; len(r) != 1 || r[0] != want {
		t.Fatalf("node 0 role changes %+v, want %+v", r, want)
	}
	if o, _ := w.nodes[0].m.SlotOwner(99); o.ID != m1.MyID() {
		t.Fatalf("node 0 sees slot 99 at %s", o.ID)
	}
	w.until(5*time.Second, "everyone sees node 0 as replica of node 1", func() bool {
		for _, sn := range w.nodes {
			l := parseNodes(sn.m.Nodes(false))[w.nodes[0].m.MyID()]
			if !strings.Contains(l.flags, "slave") || l.master != m1.MyID() {
				return false
			}
		}
		return true
	})
}
