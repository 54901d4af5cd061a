package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/testutil"
)

// go-redis's ClusterClient against a shardnode cluster, and the shapes of
// the CLUSTER replies it parses (SLOTS, SHARDS, LINKS, INFO) in RESP2 and
// RESP3.

func startShardCluster(t *testing.T, masters, replicas int) ([]*clNode, []*clNode) {
	t.Helper()
	var m, r []*clNode
	for i := 0; i < masters; i++ {
		m = append(m, startShardNode(t, 0, 0, ""))
	}
	for i := 0; i < replicas; i++ {
		r = append(r, startShardNode(t, 0, 0, ""))
	}
	buildCluster(t, m, r, false)
	return m, r
}

// emptySlotKey returns a key whose slot belongs to masters[i] of a
// cluster built by buildCluster, holds no key yet, and its slot.
func emptySlotKey(t *testing.T, masters []*clNode, i int, prefix string) (string, int) {
	t.Helper()
	per := keyspace.NumSlots / len(masters)
	for j := 0; j < 100000; j++ {
		k := prefix + strconv.Itoa(j)
		s := keySlot(k)
		if (s/per == i || (i == len(masters)-1 && s >= i*per)) && masters[i].do(t, "cluster", "countkeysinslot", s) == int64(0) {
			return k, s
		}
	}
	t.Fatal("no empty slot found")
	return "", 0
}

func TestClusterGoRedisClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	m, _ := startShardCluster(t, 3, 0)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m[0].addr}, Protocol: proto, MaxRedirects: 3})
			defer cc.Close()
			c := ctx(t)

			// A pipeline across every master.
			const n = 200
			pipe := cc.Pipeline()
			for i := 0; i < n; i++ {
				pipe.Set(c, fmt.Sprintf("p%d:%d", proto, i), i, 0)
			}
			if _, err := pipe.Exec(c); err != nil {
				t.Fatalf("pipelined SETs: %v", err)
			}
			pipe = cc.Pipeline()
			gets := make([]*redis.StringCmd, n)
			for i := range gets {
				gets[i] = pipe.Get(c, fmt.Sprintf("p%d:%d", proto, i))
			}
			if _, err := pipe.Exec(c); err != nil {
				t.Fatalf("pipelined GETs: %v", err)
			}
			for i, g := range gets {
				if g.Val() != strconv.Itoa(i) {
					t.Fatalf("GET p%d:%d = %q", proto, i, g.Val())
				}
			}
			// Every master holds some of them, and only its own.
			for i, node := range m {
				cnt := 0
				for j := 0; j < n; j++ {
					k := fmt.Sprintf("p%d:%d", proto, j)
					owner := keySlot(k) / (keyspace.NumSlots / 3)
					if owner > 2 {
						owner = 2
					}
					v, err := node.rc.Get(c, k).Result()
					if owner == i {
						if err != nil || v != strconv.Itoa(j) {
							t.Fatalf("master %d GET %s: %q %v", i, k, v, err)
						}
						cnt++
					} else if err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
						t.Fatalf("master %d GET %s (not its slot): %q %v, want MOVED", i, k, v, err)
					}
				}
				if cnt == 0 {
					t.Fatalf("master %d got none of %d keys", i, n)
				}
			}

			// CROSSSLOT, as the server words it.
			err := cc.MSet(c, "{a}x", 1, "{b}x", 2).Err()
			if err == nil || err.Error() != "CROSSSLOT Keys in request don't hash to the same slot" {
				t.Fatalf("MSET across slots: %v", err)
			}
			if err := cc.MSet(c, "{a}x", 1, "{a}y", 2).Err(); err != nil {
				t.Fatalf("MSET in one slot: %v", err)
			}

			// MOVED after the slot changes owner: the client learnt that
			// m1 owns the slot; SETSLOT NODE on every master gives it to
			// m0, and the client's next write follows the redirect.
			key, slot := emptySlotKey(t, m, 1, fmt.Sprintf("moved%d:", proto))
			if err := cc.Get(c, key).Err(); err != redis.Nil {
				t.Fatalf("GET %s: %v", key, err)
			}
			id0 := m[0].id(t)
			for _, node := range []*clNode{m[1], m[0], m[2]} {
				node.do(t, "cluster", "setslot", slot, "node", id0)
			}
			err = m[1].rc.Get(c, key).Err()
			want := fmt.Sprintf("MOVED %d %s", slot, m[0].addr)
			if err == nil || err.Error() != want {
				t.Fatalf("old owner: %v, want %q", err, want)
			}
			if err := cc.Set(c, key, "v", 0).Err(); err != nil {
				t.Fatalf("SET after the move: %v", err)
			}
			if v, err := m[0].rc.Get(c, key).Result(); err != nil || v != "v" {
				t.Fatalf("new owner GET %s: %q %v", key, v, err)
			}
			// Give the slot back for the other protocol's run.
			m[0].do(t, "del", key)
			id1 := m[1].id(t)
			for _, node := range []*clNode{m[0], m[1], m[2]} {
				node.do(t, "cluster", "setslot", slot, "node", id1)
			}
			waitClusterOK(t, m)
		})
	}
}

func TestClusterReplyShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	m, r := startShardCluster(t, 3, 1)
	m[0].do(t, "set", "sync-probe", "1") // the replica's offset becomes non-zero
	waitReplicaInSlots(t, m[0])
	all := append(append([]*clNode(nil), m...), r...)
	ids := map[string]bool{}
	for _, n := range all {
		ids[n.id(t)] = true
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc := redis.NewClient(&redis.Options{Addr: m[0].addr, Protocol: proto, DisableIdentity: true})
			defer rc.Close()
			c := ctx(t)

			info, err := rc.ClusterInfo(c).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"cluster_state:ok\r\n", "cluster_slots_assigned:16384\r\n", "cluster_known_nodes:4\r\n", "cluster_size:3\r\n", "total_cluster_links_buffer_limit_exceeded:0\r\n"} {
				if !strings.Contains(info, want) {
					t.Fatalf("CLUSTER INFO lacks %q:\n%s", want, info)
				}
			}

			shards, err := rc.ClusterShards(c).Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(shards) != 3 {
				t.Fatalf("CLUSTER SHARDS: %d shards, want 3", len(shards))
			}
			seen := 0
			for _, sh := range shards {
				if len(sh.Slots) != 1 || len(sh.Nodes) == 0 {
					t.Fatalf("shard %+v", sh)
				}
				for j, nd := range sh.Nodes {
					role := "master"
					if j > 0 {
						role = "replica"
					}
					if !ids[nd.ID] || nd.IP != "127.0.0.1" || nd.Endpoint != "127.0.0.1" || nd.Port == 0 || nd.Role != role || nd.Health != "online" {
						t.Fatalf("shard node %+v", nd)
					}
					seen++
				}
			}
			if seen != 4 {
				t.Fatalf("CLUSTER SHARDS lists %d nodes, want 4", seen)
			}

			// Every peer has an outbound and an inbound link once the
			// cluster is connected both ways.
			var links []redis.ClusterLink
			testutil.WaitFor(t, clusterTimeout, "two links per peer", func() bool {
				links, err = rc.ClusterLinks(c).Result()
				return err == nil && len(links) == 6
			})
			dirs := map[string]int{}
			for _, l := range links {
				if !ids[l.Node] || l.CreateTime <= 0 || !strings.Contains(l.Events, "r") || l.SendBufferAllocated < l.SendBufferUsed {
					t.Fatalf("link %+v", l)
				}
				dirs[l.Direction]++
			}
			if dirs["to"] != 3 || dirs["from"] != 3 {
				t.Fatalf("link directions %v", dirs)
			}

			slots, err := rc.ClusterSlots(c).Result()
			if err != nil || len(slots) != 3 {
				t.Fatalf("CLUSTER SLOTS: %v %v", slots, err)
			}
			if slots[0].Start != 0 || slots[2].End != 16383 || slots[0].Nodes[0].Addr != m[0].addr {
				t.Fatalf("CLUSTER SLOTS: %+v", slots)
			}
		})
	}

	t.Run("INFO", func(t *testing.T) {
		c := ctx(t)
		s, err := m[0].rc.Info(c, "cluster", "clients").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"cluster_enabled:1\r\n", "cluster_connections:6\r\n"} {
			if !strings.Contains(s, want) {
				t.Fatalf("INFO lacks %q:\n%s", want, s)
			}
		}
	})

	t.Run("READONLY flag", func(t *testing.T) {
		rc := redis.NewClient(&redis.Options{Addr: r[0].addr, DisableIdentity: true})
		defer rc.Close()
		c := ctx(t)
		if err := rc.ReadOnly(c).Err(); err != nil {
			t.Fatal(err)
		}
		s, err := rc.ClientInfo(c).Result()
		if err != nil || s.Flags != redis.ClientReadOnly {
			t.Fatalf("CLIENT INFO after READONLY: %+v %v", s, err)
		}
		if err := rc.ReadWrite(c).Err(); err != nil {
			t.Fatal(err)
		}
		line, err := rc.ClientList(c).Result()
		if err != nil || !strings.Contains(line, " flags=N ") {
			t.Fatalf("CLIENT LIST after READWRITE: %q %v", line, err)
		}
	})

	t.Run("CLUSTERLINK KILL", func(t *testing.T) {
		c := ctx(t)
		id1 := m[1].id(t)
		before := linkTimes(t, m[0], id1)
		time.Sleep(2 * time.Millisecond) // create-time has millisecond resolution
		if err := m[0].rc.Do(c, "debug", "clusterlink", "kill", "to", id1).Err(); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, clusterTimeout, "the outbound link to be re-created", func() bool {
			now := linkTimes(t, m[0], id1)
			return now["to"] > before["to"] && now["from"] == before["from"]
		})
	})
}

// linkTimes maps a peer's link directions to their create-time on n.
func linkTimes(t *testing.T, n *clNode, peer string) map[string]int64 {
	t.Helper()
	links, err := n.rc.ClusterLinks(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, l := range links {
		if l.Node == peer {
			out[l.Direction] = l.CreateTime
		}
	}
	return out
}

func TestClusterCommandsWithoutClusterMode(t *testing.T) {
	ts := startServer(t, "enable-debug-command", "yes")
	r := ts.raw(t)
	for _, req := range []string{"CLUSTER INFO", "CLUSTER HELP", "CLUSTER SHARDS", "READONLY", "READWRITE", "ASKING"} {
		r.expect(req+"\r\n", "-ERR This instance has cluster support disabled")
	}
	r.expect("CLUSTER INFO x\r\n", "-ERR wrong number of arguments for 'cluster|info' command")
	r.expect("CLUSTER FOO\r\n", "-ERR unknown subcommand 'FOO'. Try CLUSTER HELP.")
	r.expect("DEBUG CLUSTERLINK KILL to abc\r\n", "-ERR Debug option only available for cluster mode enabled setup!")
	r.expect("DEBUG DROP-CLUSTER-PACKET-FILTER 1\r\n", "+OK")
	r.expect("SELECT 1\r\n", "+OK")

	// FUNCTION DUMP / RESTORE for an empty library, as redis-server's.
	rc := ts.client(t)
	c := ctx(t)
	dump, err := rc.FunctionDump(c).Result()
	if err != nil || dump != "\x0a\x00\x5d\x9b\x5c\x40\x0f\x7f\xa2\xda" {
		t.Fatalf("FUNCTION DUMP = %q %v", dump, err)
	}
	if err := rc.FunctionRestore(c, dump).Err(); err != nil {
		t.Fatalf("FUNCTION RESTORE of an empty dump: %v", err)
	}
	for _, bad := range []string{"abc", "\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00"} {
		if err := rc.FunctionRestore(c, bad).Err(); err == nil || err.Error() != "ERR DUMP payload version or checksum are wrong" {
			t.Fatalf("FUNCTION RESTORE %q: %v", bad, err)
		}
	}
	if err := rc.Do(c, "function", "restore", dump, "bogus").Err(); err == nil || err.Error() != "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE." {
		t.Fatalf("FUNCTION RESTORE bogus policy: %v", err)
	}
}

// infoField returns a field of a node's CLUSTER INFO.
func clusterInfoField(t *testing.T, n *clNode, field string) string {
	t.Helper()
	for _, l := range strings.Split(n.str(t, "cluster", "info"), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	t.Fatalf("CLUSTER INFO of %s has no %s", n.addr, field)
	return ""
}

func TestClusterResetForgetSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	a, b := startShardNode(t, 0, 0, ""), startShardNode(t, 0, 0, "")
	buildCluster(t, []*clNode{a}, []*clNode{b}, false)
	a.do(t, "set", "k", "v")
	if got := a.do(t, "wait", 1, 5000); got != int64(1) {
		t.Fatalf("WAIT 1 = %v", got)
	}
	if got := b.do(t, "dbsize"); got != int64(1) {
		t.Fatalf("replica DBSIZE = %v", got)
	}

	// FORGET drops the node from the table at once.
	bid := b.id(t)
	a.do(t, "cluster", "forget", bid)
	if v := clusterInfoField(t, a, "cluster_known_nodes"); v != "1" {
		t.Fatalf("after FORGET: cluster_known_nodes:%s", v)
	}

	// RESET SOFT on a replica: an empty master that knows only itself,
	// same id.
	b.do(t, "cluster", "reset", "soft")
	if got := b.do(t, "dbsize"); got != int64(0) {
		t.Fatalf("reset replica DBSIZE = %v", got)
	}
	if id := b.id(t); id != bid {
		t.Fatalf("RESET SOFT changed the id: %s -> %s", bid, id)
	}
	if v := clusterInfoField(t, b, "cluster_known_nodes"); v != "1" {
		t.Fatalf("after RESET SOFT: cluster_known_nodes:%s", v)
	}
	if line := myselfLine(t, b); !strings.Contains(line, "myself,master") {
		t.Fatalf("after RESET SOFT: %s", line)
	}
	// RESET HARD: a new id and epochs back to 0.
	b.do(t, "cluster", "reset", "hard")
	if id := b.id(t); id == bid {
		t.Fatal("RESET HARD kept the id")
	}
	if v := clusterInfoField(t, b, "cluster_current_epoch"); v != "0" {
		t.Fatalf("after RESET HARD: cluster_current_epoch:%s", v)
	}

	// Slot assignment on the master.
	a.do(t, "flushall")
	a.do(t, "cluster", "flushslots")
	if v := clusterInfoField(t, a, "cluster_slots_assigned"); v != "0" {
		t.Fatalf("after FLUSHSLOTS: %s slots assigned", v)
	}
	a.do(t, "cluster", "addslots", 1, 2, 3)
	a.do(t, "cluster", "addslotsrange", 10, 19, 30, 39)
	a.do(t, "cluster", "delslotsrange", 1, 2, 15, 19)
	a.do(t, "cluster", "delslots", 30)
	if v := clusterInfoField(t, a, "cluster_slots_assigned"); v != "15" {
		t.Fatalf("slots assigned: %s, want 15", v)
	}
	if line := myselfLine(t, a); !strings.HasSuffix(line, " 3 10-14 31-39") {
		t.Fatalf("myself: %q, want slots 3 10-14 31-39", line)
	}
}

// TestClusterLinkKillInMulti is links.tcl's "Broadcast message across a
// cluster shard while a cluster link is down": a shard message sent
// right after the link to one replica was killed is lost for that replica
// only, and the link comes back.
func TestClusterLinkKillInMulti(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	m, r := startShardCluster(t, 1, 0)
	p := m[0]
	r1, r2 := startShardNode(t, 0, 0, ""), startShardNode(t, 0, 0, "")
	pid := p.id(t)
	for _, x := range []*clNode{r1, r2} {
		x.do(t, "cluster", "meet", "127.0.0.1", p.port, p.cport)
	}
	for _, x := range []*clNode{r1, r2} {
		testutil.WaitFor(t, clusterTimeout, "replica to learn the master", func() bool {
			s, err := x.rc.ClusterNodes(context.Background()).Result()
			return err == nil && strings.Contains(s, pid)
		})
		x.do(t, "cluster", "replicate", pid)
	}
	r = []*clNode{r1, r2}
	waitClusterOK(t, append(m, r...))
	// links counts the master's links that are connected (a link still
	// connecting shows no events, and a message sent meanwhile is lost).
	links := func() int {
		l, err := p.rc.ClusterLinks(context.Background()).Result()
		if err != nil {
			return -1
		}
		n := 0
		for _, x := range l {
			if strings.Contains(x.Events, "r") {
				n++
			}
		}
		return n
	}
	testutil.WaitFor(t, clusterTimeout, "two links per peer", func() bool { return links() == 4 })

	c := ctx(t)
	s1, s2 := r1.rc.SSubscribe(c, "ch3"), r2.rc.SSubscribe(c, "ch3")
	defer s1.Close()
	defer s2.Close()
	for _, s := range []*redis.PubSub{s1, s2} {
		if _, err := s.Receive(c); err != nil {
			t.Fatal(err)
		}
	}
	cmds, err := p.rc.TxPipelined(c, func(pipe redis.Pipeliner) error {
		pipe.Do(c, "debug", "clusterlink", "kill", "to", r1.id(t))
		pipe.SPublish(c, "ch3", "hello")
		return nil
	})
	if err != nil || len(cmds) != 2 || cmds[1].(*redis.IntCmd).Val() != 0 {
		t.Fatalf("MULTI DEBUG CLUSTERLINK KILL; SPUBLISH: %v %v", cmds, err)
	}
	testutil.WaitFor(t, clusterTimeout, "the killed link to come back", func() bool { return links() == 4 })
	if err := p.rc.SPublish(c, "ch3", "world").Err(); err != nil {
		t.Fatal(err)
	}
	next := func(s *redis.PubSub) string {
		msg, err := s.ReceiveMessage(c)
		if err != nil {
			t.Fatal(err)
		}
		return msg.Payload
	}
	if got := next(s1); got != "world" {
		t.Fatalf("replica behind the killed link got %q first, want world (hello lost)", got)
	}
	if a, b := next(s2), next(s2); a != "hello" || b != "world" {
		t.Fatalf("other replica got %q, %q; want hello, world", a, b)
	}
}
