package node

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// busInfoField returns one field of CLUSTER INFO ("" when absent).
func busInfoField(rc *redis.Client, field string) string {
	text, err := rc.Do(context.Background(), "cluster", "info").Text()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// TestClusterFreezeResumedMaster: shardnode processes (three masters, two
// replicas of the first, cluster-node-timeout 1000, min-replicas-ack 1)
// over real connections. A writer adds unique members to a set of the
// first master's slots; the master is stopped (SIGSTOP) and continued as
// soon as a replica has asked for votes (an election under way, its
// offset round done), so that it serves again while it is replaced. No
// member whose SADD was answered with success is missing from the new
// master once the failover is over, and the replica that lost the
// election resynchronized partially from the new master (sync_partial_ok)
// from the offset it froze at.
func TestClusterFreezeResumedMaster(t *testing.T) {
	bin := buildShardnode(t)
	ports := freePorts(t, 10)
	var nodes []*clNode
	var procs []*nodeProc
	for i := 0; i < 5; i++ {
		dir := t.TempDir()
		p := startNodeProc(t, bin, dir, ports[2*i],
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(ports[2*i+1]),
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "1000", "--min-replicas-ack", "1",
			"--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes")
		procs = append(procs, p)
		n := &clNode{kind: "shardnode", addr: p.addr, port: ports[2*i], cport: ports[2*i+1], dir: dir,
			rc: redis.NewClient(&redis.Options{Addr: p.addr, DisableIdentity: true, MaxRetries: -1,
				DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})}
		t.Cleanup(func() { n.rc.Close() })
		nodes = append(nodes, n)
	}
	m0, r1, r2 := nodes[0], nodes[3], nodes[4]
	buildCluster(t, nodes[:3], nil, false)
	mid := m0.id(t)
	for i, r := range []*clNode{r1, r2} {
		r.do(t, "cluster", "set-config-epoch", 4+i)
		r.do(t, "cluster", "meet", "127.0.0.1", m0.port, m0.cport)
		testutil.WaitFor(t, clusterTimeout, r.addr+" to learn about its master", func() bool {
			text, err := r.rc.Do(context.Background(), "cluster", "nodes").Text()
			return err == nil && strings.Contains(text, mid)
		})
		r.do(t, "cluster", "replicate", mid)
	}
	waitClusterOK(t, nodes)
	key := ""
	for i := 0; i < 1000 && key == ""; i++ {
		k := "set" + strconv.Itoa(i)
		if s, _ := m0.rc.ClusterKeySlot(ctx(t), k).Result(); s < 16384/3 {
			key = k
		}
	}
	testutil.WaitFor(t, clusterTimeout, "a write acknowledged", func() bool {
		return m0.rc.SAdd(context.Background(), key, "0").Err() == nil
	})

	// The writer: one SADD at a time, each bounded by the client's
	// timeouts, at most 20000 of them and 60 s.
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(60 * time.Second)
		for i := 1; i <= 20000 && time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			member := strconv.Itoa(i)
			if err := m0.rc.SAdd(context.Background(), key, member).Err(); err == nil {
				mu.Lock()
				acked = append(acked, member)
				mu.Unlock()
			} else if errors.Is(err, syscall.ECONNREFUSED) {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	time.Sleep(500 * time.Millisecond) // writes acknowledged before the fault
	authBefore := map[*clNode]string{}
	for _, r := range []*clNode{r1, r2} {
		authBefore[r] = busInfoField(r.rc, "cluster_stats_messages_auth-req_sent")
	}
	if err := procs[0].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = procs[0].cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	testutil.WaitFor(t, clusterTimeout, "a replica asking for votes", func() bool {
		for _, r := range []*clNode{r1, r2} {
			if v := busInfoField(r.rc, "cluster_stats_messages_auth-req_sent"); v != "" && v != authBefore[r] {
				return true
			}
		}
		return false
	})
	if err := procs[0].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	var winner, loser *clNode
	testutil.WaitFor(t, clusterTimeout, "a replica promoted and the other replicating from it", func() bool {
		for _, pair := range [][2]*clNode{{r1, r2}, {r2, r1}} {
			w, l := pair[0], pair[1]
			if replInfoField(t, w.rc, "role") == "master" && replInfoField(t, l.rc, "role") == "slave" &&
				replInfoField(t, l.rc, "master_port") == strconv.Itoa(w.port) &&
				replInfoField(t, l.rc, "master_link_status") == "up" {
				winner, loser = w, l
				return true
			}
		}
		return false
	})
	testutil.WaitFor(t, clusterTimeout, "the old master a replica", func() bool {
		return replInfoField(t, m0.rc, "role") == "slave"
	})
	close(stop)
	<-done
	members, err := winner.rc.SMembers(ctx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, m := range members {
		have[m] = true
	}
	mu.Lock()
	defer mu.Unlock()
	var missing []string
	for _, m := range acked {
		if !have[m] {
			missing = append(missing, m)
		}
	}
	t.Logf("acknowledged %d members, %d on the new master %s", len(acked), len(members), winner.addr)
	if len(missing) > 0 {
		t.Fatalf("%d acknowledged members missing from the new master (first %v)", len(missing), missing[:min(5, len(missing))])
	}
	if v := replInfoField(t, winner.rc, "sync_partial_ok"); v == "" || v == "0" {
		t.Fatalf("new master's sync_partial_ok = %q: the other replica %s did not resync partially (sync_full %s)",
			v, loser.addr, replInfoField(t, winner.rc, "sync_full"))
	}
}

// TestClusterFreezeMixedShard: a shardnode master with min-replicas-ack 1
// (set once the cluster is up) and two replicas, a shardnode (also with
// min-replicas-ack 1) and a redis-server with cluster-replica-no-failover
// (masters of both kinds besides, node timeout 1 s). When the master
// dies, the shardnode replica is elected after its offset rounds, which
// send the redis-server replica a FAIL about its master and a PING (a
// replica without failover is not counted by the rule but gets the
// round): the redis-server node is not confused by them, follows the new
// master, and the cluster agrees again; the writes acknowledged before
// the death are served by the new master. (Without no-failover the
// redis-server replica, which announces no lower offset, won 3 of 3
// elections, so the rounds were not exercised.)
func TestClusterFreezeMixedShard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a mixed cluster")
	}
	needBinary(t, "redis-server")
	extra := []string{"cluster-node-timeout", "1000"}
	B, A, C := startShardNode(t, 0, 0, "", extra...), startRedisNode(t, extra...), startShardNode(t, 0, 0, "", extra...)
	s, r := startShardNode(t, 0, 0, "", extra...), startRedisNode(t, append([]string{"cluster-replica-no-failover", "yes"}, extra...)...)
	buildCluster(t, []*clNode{B, A, C}, []*clNode{s}, false)
	idB := B.id(t)
	r.do(t, "cluster", "set-config-epoch", 6)
	r.do(t, "cluster", "meet", "127.0.0.1", B.port, B.cport)
	testutil.WaitFor(t, clusterTimeout, "the redis-server replica to learn about its master", func() bool {
		text, err := r.rc.Do(context.Background(), "cluster", "nodes").Text()
		return err == nil && strings.Contains(text, idB)
	})
	r.do(t, "cluster", "replicate", idB)
	waitFollows(t, r, B) // (waitClusterOK takes the nofailover flag for a failure)
	testutil.WaitFor(t, clusterTimeout, "every node to know the five", func() bool {
		for _, n := range []*clNode{B, A, C, s, r} {
			text, err := n.rc.Do(context.Background(), "cluster", "nodes").Text()
			if err != nil || strings.Count(strings.TrimSpace(text), "\n") != 4 || strings.Contains(text, "handshake") ||
				strings.Contains(text, "fail") && !strings.Contains(text, "nofailover") {
				return false
			}
		}
		return true
	})
	for _, n := range []*clNode{B, s} {
		n.do(t, "config", "set", "min-replicas-ack", "1")
	}
	c := ctx(t)
	testutil.WaitFor(t, clusterTimeout, "a write acknowledged by a replica", func() bool {
		return B.rc.Set(context.Background(), "mixed-freeze:0", "v-mixed-freeze:0", 0).Err() == nil
	})
	var keys []string
	for j := 0; len(keys) < 20 && j < 100000; j++ {
		k := "mixed-freeze:" + strconv.Itoa(j)
		if keySlot(k) < 16384/3 {
			if err := B.rc.Set(c, k, "v-"+k, 0).Err(); err != nil {
				t.Fatalf("SET %s on the master (min-replicas-ack 1): %v", k, err)
			}
			keys = append(keys, k)
		}
	}
	B.stop()
	testutil.WaitFor(t, clusterTimeout, "the shardnode replica promoted", func() bool { return s.roleOf(t) == "master" })
	waitTakenOver(t, []*clNode{A, C, s, r}, idB)
	waitFollows(t, r, s)
	for _, k := range keys {
		if v, err := s.rc.Get(c, k).Result(); err != nil || v != "v-"+k {
			t.Fatalf("new master: GET %s = %q, %v", k, v, err)
		}
	}
}
