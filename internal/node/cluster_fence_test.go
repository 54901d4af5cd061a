package node

import (
	"strconv"
	"testing"

	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/testutil"
)

// TestClusterFenceRealConnections: three shardnode masters and a replica
// of the first, min-replicas-ack 1, over real bus connections. The first
// master dropping every PONG it receives (DEBUG
// DROP-CLUSTER-PACKET-FILTER 1) still receives the others' PINGs, so no
// node times out, but it hears no master (cluster/fence.go: only a PONG
// answering its PING counts): within the lease its writes are refused
// with the cluster fence's NOQUORUM and do not run; once PONGs count
// again, writes are acknowledged.
func TestClusterFenceRealConnections(t *testing.T) {
	extra := []string{"min-replicas-ack", "1"}
	var masters []*clNode
	for i := 0; i < 3; i++ {
		masters = append(masters, startShardNode(t, 0, 0, "", extra...))
	}
	replica := startShardNode(t, 0, 0, "", extra...)
	buildCluster(t, masters, []*clNode{replica}, false)
	m0 := masters[0]
	c := ctx(t)
	key := ""
	for i := 0; i < 100 && key == ""; i++ {
		if s := m0.rc.ClusterKeySlot(c, "k"+strconv.Itoa(i)).Val(); s < 16384/3 {
			key = "k" + strconv.Itoa(i)
		}
	}
	if key == "" {
		t.Fatal("no key of the first master's slots")
	}
	testutil.WaitFor(t, clusterTimeout, "a write acknowledged by the replica", func() bool {
		return m0.rc.Set(c, key, "0", 0).Err() == nil
	})
	m0.do(t, "debug", "drop-cluster-packet-filter", 1)
	var last error
	n := 0
	testutil.WaitFor(t, clusterTimeout, "the cluster fence up", func() bool {
		n++
		last = m0.rc.Set(c, key, "fenced"+strconv.Itoa(n), 0).Err()
		return last != nil && last.Error() == repl.ErrClusterFenced
	})
	if got := replInfoField(t, m0.rc, "min_replicas_ack_fenced"); got != "1" {
		t.Fatalf("min_replicas_ack_fenced = %q while writes are refused, want 1", got)
	}
	if v := m0.rc.Get(c, key).Val(); v == "fenced"+strconv.Itoa(n) {
		t.Fatalf("%s = %q: the refused write ran", key, v)
	}
	m0.do(t, "debug", "drop-cluster-packet-filter", -1)
	testutil.WaitFor(t, clusterTimeout, "writes acknowledged again", func() bool {
		return m0.rc.Set(c, key, "healed", 0).Err() == nil
	})
	if v := m0.rc.Get(c, key).Val(); v != "healed" {
		t.Fatalf("%s = %q, want healed", key, v)
	}
	if got := replInfoField(t, m0.rc, "min_replicas_ack_fenced"); got != "0" {
		t.Fatalf("min_replicas_ack_fenced = %q after the heal, want 0", got)
	}
}
