package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// roleOf returns ROLE's first element ("master" or "slave").
func (n *clNode) roleOf(t testing.TB) string {
	t.Helper()
	v, err := n.rc.Do(context.Background(), "role").Slice()
	if err != nil || len(v) == 0 {
		return ""
	}
	s, _ := v[0].(string)
	return s
}

// TestClusterFailoverEndToEnd: 3 masters x 1 replica of in-process
// shardnodes, node timeout 1 s. A master that stops is failed by the
// others and its replica is elected and takes its slots, with its keys;
// the cluster goes back to ok. Then CLUSTER FAILOVER on a replica swaps it
// with its master (the manual failover's pause and offset handshake), and
// TAKEOVER does it without votes.
func TestClusterFailoverEndToEnd(t *testing.T) {
	extra := []string{"cluster-node-timeout", "1000"}
	var masters, replicas []*clNode
	for i := 0; i < 3; i++ {
		masters = append(masters, startShardNode(t, 0, 0, "", extra...))
	}
	for i := 0; i < 3; i++ {
		replicas = append(replicas, startShardNode(t, 0, 0, "", extra...))
	}
	buildCluster(t, masters, replicas, false)
	ctx := context.Background()
	// Keys in the second master's slots, replicated to its replica.
	var keys []string
	for i := 0; len(keys) < 20 && i < 100000; i++ {
		k := fmt.Sprintf("key:%d", i)
		if s := keySlot(k); s >= 16384/3 && s < 2*16384/3 {
			keys = append(keys, k)
			masters[1].do(t, "set", k, "v-"+k)
		}
	}
	masters[1].do(t, "wait", 1, 5000)

	victim, heir := masters[1], replicas[1]
	victimID := victim.id(t)
	victim.stop()
	live := []*clNode{masters[0], masters[2], replicas[0], heir, replicas[2]}
	testutil.WaitFor(t, 30*time.Second, "the replica to be promoted", func() bool { return heir.roleOf(t) == "master" })
	testutil.WaitFor(t, 30*time.Second, "every live node to report the victim failed and the cluster ok", func() bool {
		for _, n := range live {
			text, err := n.rc.Do(ctx, "cluster", "nodes").Text()
			if err != nil || n.clusterState() != "ok" {
				return false
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, victimID) && !strings.Contains(line, "fail") {
					return false
				}
			}
		}
		return true
	})
	for _, k := range keys {
		if v, err := heir.rc.Get(ctx, k).Result(); err != nil || v != "v-"+k {
			t.Fatalf("promoted replica: GET %s = %q, %v", k, v, err)
		}
	}
	// The new master owns the slots: no MOVED for them there.
	if err := heir.rc.Set(ctx, keys[0], "after", 0).Err(); err != nil {
		t.Fatalf("write to the promoted master: %v", err)
	}

	// Manual failover: the first pair swaps roles.
	if err := replicas[0].rc.Do(ctx, "cluster", "failover").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "CLUSTER FAILOVER to swap the first pair", func() bool {
		return replicas[0].roleOf(t) == "master" && masters[0].roleOf(t) == "slave"
	})
	// TAKEOVER: the third pair, without votes.
	if err := replicas[2].rc.Do(ctx, "cluster", "failover", "takeover").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "CLUSTER FAILOVER TAKEOVER to swap the third pair", func() bool {
		return replicas[2].roleOf(t) == "master" && masters[2].roleOf(t) == "slave"
	})
}
