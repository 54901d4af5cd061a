package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// joinChain meets node i with node i+1 and waits until everyone knows
// everyone.
func joinChain(t *testing.T, w *simNet, max time.Duration) time.Duration {
	t.Helper()
	for i := 0; i+1 < len(w.nodes); i++ {
		w.meet(i, i+1)
	}
	return w.until(max, "all nodes know each other", w.allKnow)
}

func TestJoinChain(t *testing.T) {
	for _, n := range []int{3, 6} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := newSimNet(t, n, nil)
			took := joinChain(t, w, 20*time.Second)
			t.Logf("%d nodes joined in %v", n, took)
			for _, a := range w.nodes {
				view := parseNodes(a.m.Nodes(false))
				if len(view) != n {
					t.Fatalf("node %d knows %d nodes, want %d:\n%s", a.idx, len(view), n, a.m.Nodes(false))
				}
				for _, b := range w.nodes {
					l := view[b.m.MyID()]
					wantFlags := "master"
					if a == b {
						wantFlags = "myself,master"
					}
					if l.flags != wantFlags || l.master != "-" || l.link != "connected" {
						t.Fatalf("node %d sees %s as %+v", a.idx, b.m.MyID(), l)
					}
					if want := fmt.Sprintf("%s:%d@%d", b.ip, b.port, b.cport); l.addr != want {
						t.Fatalf("node %d sees %s at %s, want %s", a.idx, b.m.MyID(), l.addr, want)
					}
				}
			}
			// Node 0 met node 1 under a random handshake name, renamed
			// when node 1's PONG arrived.
			renamed := false
			for _, e := range w.nodes[0].events {
				if e.Type == EventNodeRenamed && e.Detail == w.nodes[1].m.MyID() {
					renamed = true
				}
			}
			if !renamed {
				t.Fatalf("node 0 never renamed its handshake node to %s: %v", w.nodes[1].m.MyID(), w.nodes[0].events)
			}
			// Every node learnt its own address from the MEET it received
			// (node 0 from node 1's reply path is not a MEET: it learns it
			// from the first PING).
			for _, a := range w.nodes {
				if got := a.m.Myself().IP; got != a.ip {
					t.Fatalf("node %d thinks its ip is %q, want %q", a.idx, got, a.ip)
				}
			}
			// Two links per peer, once each peer's inbound link carried a
			// packet that names it.
			w.until(3*time.Second, "two links per peer", func() bool {
				for _, a := range w.nodes {
					if len(a.m.Links()) != 2*(n-1) {
						return false
					}
				}
				return true
			})
			for _, a := range w.nodes {
				to, from := map[string]bool{}, map[string]bool{}
				for _, l := range a.m.Links() {
					if l.Direction == "to" {
						to[l.Node] = true
					} else {
						from[l.Node] = true
					}
				}
				if len(to) != n-1 || len(from) != n-1 {
					t.Fatalf("node %d: outbound to %d nodes, inbound from %d", a.idx, len(to), len(from))
				}
			}
		})
	}
}

// addSlotsEvenly gives each of the first k nodes a contiguous share.
func addSlotsEvenly(t *testing.T, w *simNet, k int) {
	t.Helper()
	for i := 0; i < k; i++ {
		lo, hi := i*NumSlots/k, (i+1)*NumSlots/k-1
		if err := w.nodes[i].m.AddSlotsRange(w.now, fmt.Sprint(lo), fmt.Sprint(hi)); err != nil {
			t.Fatal(err)
		}
	}
	w.pump()
}

func TestSlotsSpreadAndState(t *testing.T) {
	w := newSimNet(t, 3, nil)
	joinChain(t, w, 20*time.Second)
	addSlotsEvenly(t, w, 3)
	took := w.until(10*time.Second, "cluster state ok everywhere", func() bool {
		for _, sn := range w.nodes {
			if sn.m.State() != ClusterOK {
				return false
			}
		}
		return true
	})
	t.Logf("state ok after %v", took)
	for _, a := range w.nodes {
		view := parseNodes(a.m.Nodes(false))
		for i, b := range w.nodes {
			lo, hi := i*NumSlots/3, (i+1)*NumSlots/3-1
			want := fmt.Sprintf("%d-%d", lo, hi)
			if got := view[b.m.MyID()].slots; len(got) != 1 || got[0] != want {
				t.Fatalf("node %d sees slots %v for node %d, want %s", a.idx, got, i, want)
			}
		}
		info := a.m.Info(0)
		for _, f := range []string{"cluster_state:ok\r\n", "cluster_slots_assigned:16384\r\n", "cluster_slots_ok:16384\r\n",
			"cluster_known_nodes:3\r\n", "cluster_size:3\r\n"} {
			if !strings.Contains(info, f) {
				t.Fatalf("node %d CLUSTER INFO lacks %q:\n%s", a.idx, f, info)
			}
		}
		if got := a.states; len(got) != 1 || got[0] != ClusterOK {
			t.Fatalf("node %d state changes %v, want [ok]", a.idx, got)
		}
	}
	// SlotsChanged told node 1 what it gained.
	sc := w.nodes[1].slotChanges
	if len(sc) != 1 || len(sc[0].Gained) != NumSlots/3 || sc[0].Gained[0] != NumSlots/3 || len(sc[0].Lost) != 0 {
		t.Fatalf("node 1 slot changes: %d entries", len(sc))
	}
	// Unassign one slot on its owner: with full coverage required the
	// owner goes to fail. The others keep the slot bound to node 2, which
	// no longer claims it (Redis 7.0's owner_not_claiming_slot), and stay ok.
	if err := w.nodes[2].m.DelSlots(w.now, "16383"); err != nil {
		t.Fatal(err)
	}
	w.pump()
	if w.nodes[2].m.State() != ClusterFail {
		t.Fatalf("node 2 state %v after DELSLOTS, want fail", w.nodes[2].m.State())
	}
	w.run(3 * time.Second)
	for _, sn := range w.nodes[:2] {
		if sn.m.State() != ClusterOK {
			t.Fatalf("node %d state %v, want ok", sn.idx, sn.m.State())
		}
		if o, ok := sn.m.SlotOwner(16383); !ok || o.ID != w.nodes[2].m.MyID() {
			t.Fatalf("node %d: slot 16383 owner %v %v", sn.idx, o.ID, ok)
		}
		if !sn.m.ownerNotClaiming.Has(16383) || sn.m.ownerNotClaiming.Count() != 1 {
			t.Fatalf("node %d: owner-not-claiming bitmap has %d slots", sn.idx, sn.m.ownerNotClaiming.Count())
		}
	}
	// Deleting it everywhere makes every node fail.
	for _, sn := range w.nodes[:2] {
		if err := sn.m.DelSlots(w.now, "16383"); err != nil {
			t.Fatal(err)
		}
	}
	w.pump()
	for _, sn := range w.nodes {
		if sn.m.State() != ClusterFail || !strings.Contains(sn.m.Info(0), "cluster_slots_assigned:16383\r\n") {
			t.Fatalf("node %d: state %v\n%s", sn.idx, sn.m.State(), sn.m.Info(0))
		}
	}
	// Without full coverage, the same cluster is ok.
	for _, sn := range w.nodes {
		cfg := sn.m.Config()
		cfg.RequireFullCoverage = false
		if err := sn.m.SetConfig(w.now, cfg); err != nil {
			t.Fatal(err)
		}
	}
	w.pump()
	w.until(10*time.Second, "state ok without full coverage", func() bool {
		for _, sn := range w.nodes {
			if sn.m.State() != ClusterOK {
				return false
			}
		}
		return true
	})
}
