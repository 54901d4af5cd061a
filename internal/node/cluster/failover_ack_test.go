package cluster

import (
	"testing"
	"time"
)

func TestAckReadsNeeded(t *testing.T) {
	for _, c := range []struct{ eligible, need, want int }{
		{2, 0, 0}, {2, 1, 2}, {2, 2, 1}, {3, 1, 3}, {3, 2, 2}, {1, 3, 1},
	} {
		if got := ackReadsNeeded(c.eligible, c.need); got != c.want {
			t.Errorf("ackReadsNeeded(%d, %d) = %d, want %d", c.eligible, c.need, got, c.want)
		}
	}
}

// ackShard: 3 masters, master 0 with replicas 3 (offset 100) and 4
// (offset 200: it alone acknowledged the latest writes), every node with
// min-replicas-ack need.
func ackShard(t *testing.T, need int) (*simNet, *simNode, *simNode) {
	t.Helper()
	locals := map[int]*testLocal{3: {off: 100}, 4: {off: 200}}
	w := replicaCluster(t, 5, 3, map[int]int{3: 0, 4: 0}, func(i int, c *Config) {
		if l, ok := locals[i]; ok {
			c.Local = l
		}
		c.MinReplicasAck = need
	})
	w.run(3 * time.Second) // the replicas' offsets are gossiped
	return w, w.nodes[3], w.nodes[4]
}

// TestAckRuleClusterNeverElectsAReplicaMissingWrites (must-show 4): with
// min-replicas-ack 1 of 2 and the replica holding every acknowledged
// write (node 4) down with the master, node 3 may lack acknowledged
// writes: it never asks for votes. Once node 4 is back, node 4 is elected.
func TestAckRuleClusterNeverElectsAReplicaMissingWrites(t *testing.T) {
	w, r3, r4 := ackShard(t, 1)
	w.crash(0)
	w.crash(4)
	// Several election periods (auth timeout 4 s), within the data age
	// node 4 may still fail over with (cluster-replica-validity-factor).
	w.run(15 * time.Second)
	if r3.sent[TypeFailoverAuthRequest] != 0 || r3.m.IsMaster() {
		t.Fatalf("node 3 (offset 100) asked for votes %d times / promoted while node 4 (200) is down",
			r3.sent[TypeFailoverAuthRequest])
	}
	if len(r3.eventsOf(EventCantFailover)) == 0 {
		t.Fatal("node 3 did not report why it cannot fail over")
	}
	r4.down = false
	w.until(20*time.Second, "node 4 promoted", func() bool { return r4.m.IsMaster() })
	if r3.m.IsMaster() || r3.sent[TypeFailoverAuthRequest] != 0 {
		t.Fatal("node 3 asked for votes after node 4 came back")
	}
}

// TestAckRuleClusterHighestReplicaElected: both replicas up, master down:
// the one with every write (node 4) is elected, node 3 never asks.
func TestAckRuleClusterHighestReplicaElected(t *testing.T) {
	w, r3, r4 := ackShard(t, 1)
	w.crash(0)
	w.until(10*time.Second, "node 4 promoted", func() bool { return r4.m.IsMaster() })
	if r3.sent[TypeFailoverAuthRequest] != 0 {
		t.Fatal("node 3 asked for votes")
	}
}

// TestAckRuleClusterEveryReplicaAcks: with min-replicas-ack 2 of 2 every
// replica holds every acknowledged write, so node 3 alone may be elected
// (node 4's extra offset was never acknowledged); with the rule off
// (Redis's election) it is elected too: the rule is what held it back in
// the 1-of-2 case.
func TestAckRuleClusterEveryReplicaAcks(t *testing.T) {
	for _, need := range []int{2, 0} {
		w, r3, _ := ackShard(t, need)
		w.crash(0)
		w.crash(4)
		w.until(15*time.Second, "node 3 promoted", func() bool { return r3.m.IsMaster() })
	}
}
