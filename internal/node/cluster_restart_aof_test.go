package node

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// TestClusterReplicaRestartFromAOF: a replica restarted with its AOF and a
// nodes.conf naming its master starts its master link only once the AOF
// is loaded, so the full sync's dataset replaces the loaded one instead of
// the AOF's writes landing on top of it (04-resharding's "Verify slaves
// consistency" found lists with their last elements twice after "Terminate
// and restart all the instances").
func TestClusterReplicaRestartFromAOF(t *testing.T) {
	aof := []string{"appendonly", "yes", "appendfsync", "no"}
	m := startShardNode(t, 0, 0, "", aof...)
	r := startShardNode(t, 0, 0, "", aof...)
	buildCluster(t, []*clNode{m}, []*clNode{r}, false)
	c := ctx(t)
	// Keys of the master's slots, enough AOF for a load that outlasts a
	// loopback full sync.
	var keys []string
	for i := 0; len(keys) < 50; i++ {
		keys = append(keys, "list:"+strconv.Itoa(i))
	}
	for round := 0; round < 40; round++ {
		p := m.rc.Pipeline()
		for _, k := range keys {
			for j := 0; j < 50; j++ {
				p.RPush(c, k, strconv.Itoa(round*50+j))
			}
		}
		if _, err := p.Exec(c); err != nil {
			t.Fatal(err)
		}
	}
	digest := func(n *clNode) string { return n.str(t, "debug", "digest") }
	want := digest(m)
	testutil.WaitFor(t, clusterTimeout, "the replica to sync", func() bool { return digest(r) == want })
	r = r.restart(t)
	testutil.WaitFor(t, clusterTimeout, "the replica's link to be up", func() bool {
		info, err := r.rc.Info(c, "replication").Result()
		return err == nil && containsLine(info, "master_link_status:up")
	})
	// The link is up: the full sync's dataset is loaded; no wait beyond
	// the digest the master has.
	deadline := time.Now().Add(5 * time.Second)
	for digest(r) != want {
		if time.Now().After(deadline) {
			t.Fatalf("replica digest %s, master %s; LLEN %s: replica %d master %d", digest(r), want, keys[0],
				r.rc.LLen(c, keys[0]).Val(), m.rc.LLen(c, keys[0]).Val())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\r\n") {
		if l == line {
			return true
		}
	}
	return false
}
