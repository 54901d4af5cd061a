package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	manualFailover(t, replicas[0], masters[0])
	// TAKEOVER: the third pair, without votes.
	if err := replicas[2].rc.Do(ctx, "cluster", "failover", "takeover").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "CLUSTER FAILOVER TAKEOVER to swap the third pair", func() bool {
		return replicas[2].roleOf(t) == "master" && masters[2].roleOf(t) == "slave"
	})
}

// TestClusterPausedWriteRedirectedAfterDemotion: a write a pause holds on
// a master that meanwhile becomes a replica (its replica took over) is
// answered by the slot map it finds when released, MOVED to the new
// master, as Redis runs processCommand again for a postponed client; not
// READONLY (10-manual-failover's load loop got READONLY from the old
// master after CLUSTER FAILOVER).
func TestClusterPausedWriteRedirectedAfterDemotion(t *testing.T) {
	m, r := startShardNode(t, 0, 0, ""), startShardNode(t, 0, 0, "")
	buildCluster(t, []*clNode{m}, []*clNode{r}, false)
	ctx := context.Background()
	m.do(t, "client", "pause", 20000, "write")
	// No retries: go-redis retries a READONLY reply, which would hide it.
	wc := redis.NewClient(&redis.Options{Addr: m.addr, DisableIdentity: true, ReadTimeout: 30 * time.Second, MaxRetries: -1})
	defer wc.Close()
	done := make(chan error, 1)
	go func() { done <- wc.Set(ctx, "held", "v", 0).Err() }()
	testutil.WaitFor(t, clusterTimeout, "the SET to be held by the pause", func() bool {
		return infoInt(t, m.rc, "blocked_clients") == 1
	})
	r.do(t, "cluster", "failover", "takeover")
	testutil.WaitFor(t, clusterTimeout, "the old master to follow its replica", func() bool {
		return m.roleOf(t) == "slave" && r.roleOf(t) == "master"
	})
	select {
	case err := <-done:
		t.Fatalf("SET answered while paused: %v", err)
	default:
	}
	m.do(t, "client", "unpause")
	var err error
	select {
	case err = <-done:
	case <-time.After(clusterTimeout):
		t.Fatal("SET still held after CLIENT UNPAUSE")
	}
	want := fmt.Sprintf("MOVED %d %s", keySlot("held"), r.addr)
	if err == nil || err.Error() != want {
		t.Fatalf("held SET after the demotion: %v, want %s", err, want)
	}
}
