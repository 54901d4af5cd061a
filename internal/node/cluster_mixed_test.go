package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// A mixed cluster: three redis-server and three shardnodes made into one
// cluster by redis-cli --cluster create, with a shardnode replicating a
// redis-server master and a redis-server replicating a shardnode master.

// clusterRoles reads the masters and replicas (with their master's id)
// from a node's CLUSTER NODES.
func clusterRoles(t *testing.T, via *clNode, nodes []*clNode) (masters []*clNode, masterOf map[*clNode]string) {
	t.Helper()
	byPort := map[string]*clNode{}
	for _, n := range nodes {
		byPort[strconv.Itoa(n.port)] = n
	}
	masterOf = map[*clNode]string{}
	for _, l := range strings.Split(strings.TrimSpace(via.str(t, "cluster", "nodes")), "\n") {
		f := strings.Fields(l)
		addr := f[1][:strings.IndexByte(f[1], '@')]
		n := byPort[addr[strings.LastIndexByte(addr, ':')+1:]]
		if n == nil {
			t.Fatalf("unknown node in %q", l)
		}
		if strings.Contains(f[2], "master") {
			masters = append(masters, n)
		} else {
			masterOf[n] = f[3]
		}
	}
	return masters, masterOf
}

// ownerOf returns the master among masters serving slot.
func ownerOf(t *testing.T, masters []*clNode, slot int) *clNode {
	t.Helper()
	slots, err := masters[0].rc.ClusterSlots(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if slot >= s.Start && slot <= s.End {
			for _, m := range masters {
				if m.addr == s.Nodes[0].Addr {
					return m
				}
			}
		}
	}
	t.Fatalf("no owner for slot %d", slot)
	return nil
}

func TestClusterMixedWithRedisServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a mixed cluster")
	}
	needBinary(t, "redis-server")
	needBinary(t, "redis-cli")
	var nodes []*clNode
	for i := 0; i < 3; i++ {
		nodes = append(nodes, startRedisNode(t), startShardNode(t, 0, 0, ""))
	}
	args := append([]string{"--cluster", "create"}, cliAddrs(nodes)...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := redisCli(t, args...); err != nil || !strings.Contains(out, "[OK] All 16384 slots covered.") {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	waitClusterOK(t, nodes)

	// Pair replicas across kinds: each replica follows a master of the
	// other kind where there is one.
	masters, masterOf := clusterRoles(t, nodes[0], nodes)
	var replicas []*clNode
	for _, n := range nodes {
		if _, ok := masterOf[n]; ok {
			replicas = append(replicas, n)
		}
	}
	if len(masters) != 3 || len(replicas) != 3 {
		t.Fatalf("%d masters, %d replicas", len(masters), len(replicas))
	}
	taken := map[*clNode]bool{}
	pairs := map[*clNode]*clNode{} // replica -> master
	for pass := 0; pass < 2; pass++ {
		for _, r := range replicas {
			if pairs[r] != nil {
				continue
			}
			for _, m := range masters {
				if !taken[m] && (pass == 1 || m.kind != r.kind) {
					pairs[r], taken[m] = m, true
					break
				}
			}
		}
	}
	cross := map[string]bool{}
	for r, m := range pairs {
		if id := m.id(t); masterOf[r] != id {
			r.do(t, "cluster", "replicate", id)
		}
		cross[m.kind+"<-"+r.kind] = true
	}
	if !cross["redis<-shardnode"] || !cross["shardnode<-redis"] {
		t.Fatalf("redis-cli made masters of one kind only: %v", cross)
	}
	waitClusterOK(t, nodes)
	for _, n := range nodes {
		clusterCheck(t, n.addr)
	}

	// Keys written through a ClusterClient are on their slot's master,
	// and reach its replica of the other kind.
	c := ctx(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[1].addr}, MaxRedirects: 3})
	defer cc.Close()
	const n = 300
	pipe := cc.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Set(c, "mixed:"+strconv.Itoa(i), i, 0)
	}
	if _, err := pipe.Exec(c); err != nil {
		t.Fatalf("pipelined SETs: %v", err)
	}
	perMaster := map[*clNode]int{}
	for i := 0; i < n; i++ {
		k := "mixed:" + strconv.Itoa(i)
		m := ownerOf(t, masters, keySlot(k))
		if v, err := m.rc.Get(c, k).Result(); err != nil || v != strconv.Itoa(i) {
			t.Fatalf("%s master %s GET %s = %q %v", m.kind, m.addr, k, v, err)
		}
		perMaster[m]++
	}
	if len(perMaster) != 3 {
		t.Fatalf("keys reached %d masters", len(perMaster))
	}
	for r, m := range pairs {
		if got := m.do(t, "wait", 1, 8000); got != int64(1) {
			t.Fatalf("%s master %s: WAIT 1 = %v", m.kind, m.addr, got)
		}
		ro := redis.NewClient(&redis.Options{Addr: r.addr, DisableIdentity: true})
		defer ro.Close()
		if err := ro.ReadOnly(c).Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			k := "mixed:" + strconv.Itoa(i)
			if ownerOf(t, masters, keySlot(k)) != m {
				continue
			}
			if v, err := ro.Get(c, k).Result(); err != nil || v != strconv.Itoa(i) {
				t.Fatalf("%s replica of %s master: READONLY GET %s = %q %v", r.kind, m.kind, k, v, err)
			}
		}
	}

	// PUBLISH crosses kinds both ways.
	var redisNode, shardNode *clNode
	for _, x := range nodes {
		if x.kind == "redis" && redisNode == nil {
			redisNode = x
		}
		if x.kind == "shardnode" && shardNode == nil {
			shardNode = x
		}
	}
	for _, pair := range [][2]*clNode{{redisNode, shardNode}, {shardNode, redisNode}} {
		pub, sub := pair[0], pair[1]
		ch := "news-from-" + pub.kind
		ps := sub.rc.Subscribe(c, ch)
		if _, err := ps.Receive(c); err != nil {
			t.Fatal(err)
		}
		if err := pub.rc.Publish(c, ch, "hi").Err(); err != nil {
			t.Fatal(err)
		}
		msg, err := ps.ReceiveMessage(c)
		if err != nil || msg.Channel != ch || msg.Payload != "hi" {
			t.Fatalf("PUBLISH on %s to a subscriber on %s: %+v %v", pub.kind, sub.kind, msg, err)
		}
		ps.Close()
	}

	// SPUBLISH reaches the shard's nodes only: the master's replica (of
	// the other kind) gets it; a node of another shard refuses the shard
	// channel with MOVED, and its plain subscriber of the same name sees
	// the PUBLISH that follows as its first message.
	for r, m := range pairs {
		ch := ""
		for j := 0; ; j++ {
			ch = fmt.Sprintf("shard-%s-%d", m.kind, j)
			if ownerOf(t, masters, keySlot(ch)) == m {
				break
			}
		}
		var other *clNode
		for _, x := range masters {
			if x != m {
				other = x
				break
			}
		}
		sps := r.rc.SSubscribe(c, ch)
		if _, err := sps.Receive(c); err != nil {
			t.Fatalf("SSUBSCRIBE on %s replica: %v", r.kind, err)
		}
		if err := other.rc.Do(c, "ssubscribe", ch).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
			t.Fatalf("SSUBSCRIBE on a node of another shard: %v, want MOVED", err)
		}
		ps := other.rc.Subscribe(c, ch)
		if _, err := ps.Receive(c); err != nil {
			t.Fatal(err)
		}
		if err := m.rc.SPublish(c, ch, "sharded").Err(); err != nil {
			t.Fatalf("SPUBLISH on %s master: %v", m.kind, err)
		}
		msg, err := sps.ReceiveMessage(c)
		if err != nil || msg.Channel != ch || msg.Payload != "sharded" {
			t.Fatalf("SPUBLISH on %s master to its %s replica: %+v %v", m.kind, r.kind, msg, err)
		}
		if err := m.rc.Publish(c, ch, "plain").Err(); err != nil {
			t.Fatal(err)
		}
		msg, err = ps.ReceiveMessage(c)
		if err != nil || msg.Payload != "plain" {
			t.Fatalf("subscriber on another shard: first message %+v %v, want the PUBLISH", msg, err)
		}
		sps.Close()
		ps.Close()
	}
}

// waitTakenOver waits until every live node is in cluster_state ok and
// flags the dead node victimID as failed.
func waitTakenOver(t *testing.T, live []*clNode, victimID string) {
	t.Helper()
	testutil.WaitFor(t, clusterTimeout, "every live node to flag "+victimID+" failed and be ok", func() bool {
		for _, n := range live {
			text, err := n.rc.Do(context.Background(), "cluster", "nodes").Text()
			if err != nil || n.clusterState() != "ok" {
				return false
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, victimID+" ") && !strings.Contains(strings.Fields(line)[2], "fail") {
					return false
				}
			}
		}
		return true
	})
}

// waitFollows waits until replica's CLUSTER NODES says it replicates
// master and its replication link is up.
func waitFollows(t *testing.T, replica, master *clNode) {
	t.Helper()
	mid := master.id(t)
	testutil.WaitFor(t, clusterTimeout, replica.kind+" "+replica.addr+" to follow "+master.kind+" "+master.addr, func() bool {
		text, err := replica.rc.Do(context.Background(), "cluster", "nodes").Text()
		if err != nil {
			return false
		}
		for _, line := range strings.Split(text, "\n") {
			if f := strings.Fields(line); len(f) > 3 && strings.Contains(f[2], "myself") {
				if !strings.Contains(f[2], "slave") || f[3] != mid {
					return false
				}
			}
		}
		info, err := replica.rc.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
}

// TestClusterMixedFailover: redis-server and shardnode masters failed
// over by replicas of the other kind. Masters A (redis-server, replica a a
// shardnode), B (shardnode, replica b a redis-server) and C
// (redis-server), node timeout 1 s. With one of the three masters dead an
// election needs both other masters' votes, and they are one of each kind
// (first B and C, then a and C). Each dead master comes back as a replica
// of its successor; then CLUSTER FAILOVER on each swaps the pair back, a
// redis-server replica taking over from a shardnode master and the
// reverse. Keys written before each death are served by the successor.
func TestClusterMixedFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a mixed cluster")
	}
	needBinary(t, "redis-server")
	extra := []string{"cluster-node-timeout", "1000"}
	A, B, C := startRedisNode(t, extra...), startShardNode(t, 0, 0, "", extra...), startRedisNode(t, extra...)
	a, b := startShardNode(t, 0, 0, "", extra...), startRedisNode(t, extra...)
	buildCluster(t, []*clNode{A, B, C}, []*clNode{a, b}, false)
	c := ctx(t)
	// keysOf writes 20 keys in master's slots (the i-th third of them, as
	// buildCluster assigns) and waits until its replica has them.
	keysOf := func(master *clNode, i int) []string {
		var keys []string
		for j := 0; len(keys) < 20 && j < 100000; j++ {
			k := fmt.Sprintf("mixed-fo:%d", j)
			if s := keySlot(k); s >= i*(16384/3) && s < (i+1)*(16384/3) {
				keys = append(keys, k)
				master.do(t, "set", k, "v-"+k)
			}
		}
		if got := master.do(t, "wait", 1, 5000); got != int64(1) {
			t.Fatalf("%s master %s: WAIT 1 = %v", master.kind, master.addr, got)
		}
		return keys
	}
	serves := func(n *clNode, keys []string) {
		t.Helper()
		for _, k := range keys {
			if v, err := n.rc.Get(c, k).Result(); err != nil || v != "v-"+k {
				t.Fatalf("%s %s: GET %s = %q, %v", n.kind, n.addr, k, v, err)
			}
		}
		if err := n.rc.Set(c, keys[0], "v-"+keys[0], 0).Err(); err != nil {
			t.Fatalf("%s %s: SET %s: %v", n.kind, n.addr, keys[0], err)
		}
	}

	// A redis-server master dies; its shardnode replica is elected.
	keysA := keysOf(A, 0)
	idA := A.id(t)
	A.proc.Kill()
	testutil.WaitFor(t, clusterTimeout, "the shardnode replica of the dead redis-server master to be promoted", func() bool { return a.roleOf(t) == "master" })
	waitTakenOver(t, []*clNode{B, C, a, b}, idA)
	serves(a, keysA)
	A.proc.Restart()
	waitFollows(t, A, a)

	// A shardnode master dies; its redis-server replica is elected.
	keysB := keysOf(B, 1)
	idB := B.id(t)
	B.stop()
	testutil.WaitFor(t, clusterTimeout, "the redis-server replica of the dead shardnode master to be promoted", func() bool { return b.roleOf(t) == "master" })
	waitTakenOver(t, []*clNode{A, C, a, b}, idB)
	serves(b, keysB)
	B = B.restart(t)
	waitFollows(t, B, b)
	waitClusterOK(t, []*clNode{A, B, C, a, b})

	// CLUSTER FAILOVER: the redis-server replica A takes over from the
	// shardnode master a, the shardnode replica B from the redis-server
	// master b.
	for _, p := range [][2]*clNode{{A, a}, {B, b}} {
		r, m := p[0], p[1]
		manualFailover(t, r, m)
		waitFollows(t, m, r)
	}
	waitClusterOK(t, []*clNode{A, B, C, a, b})
	serves(A, keysA)
	serves(B, keysB)
}
