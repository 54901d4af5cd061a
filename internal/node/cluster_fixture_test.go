package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// Cluster-mode fixtures: nodes of either kind on 127.0.0.1 with explicit
// client and bus ports, clusters built from them with CLUSTER commands or
// redis-cli --cluster, and waits on the conditions Redis's own cluster
// tests wait on (cluster_state:ok everywhere, CLUSTER NODES agreement).

// clusterTimeout bounds every wait of the cluster tests. It only bounds
// a hang: on a loaded 2-core machine (CI runs the packages in parallel)
// five nodes can take more than 20 s to agree.
const clusterTimeout = 60 * time.Second

// needBinary returns the path of an installed tool; a missing one skips
// the test, or fails it under CI=true, where every tool must be present.
func needBinary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed (required when CI=true)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// clNode is one cluster node: an in-process shardnode or a redis-server.
type clNode struct {
	kind        string // "shardnode" or "redis"
	addr        string
	port, cport int
	dir         string
	extra       []string
	rc          *redis.Client

	// shardnode only
	srv  *Server
	stop func()
	// redis-server only
	proc *testutil.Process
}

// clusterDirectives are the settings every test node gets, both kinds.
var clusterDirectives = []string{
	"cluster-enabled", "yes",
	"cluster-node-timeout", "5000",
	"enable-debug-command", "yes",
}

// startShardNode starts an in-process shardnode in cluster mode on the
// given ports (0: free ones) and directory ("": a new one).
func startShardNode(t testing.TB, port, cport int, dir string, extra ...string) *clNode {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if port != 0 {
		n, err := tryShardNode(t, port, cport, dir, extra)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Free ports are only free until someone takes them: pick a new pair
	// when one was taken in between.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		p := freePorts(t, 2)
		var n *clNode
		if n, err = tryShardNode(t, p[0], p[1], dir, extra); err == nil {
			return n
		}
	}
	t.Fatal(err)
	return nil
}

// freePorts returns k distinct ports that were free a moment ago.
func freePorts(t testing.TB, k int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for len(out) < k {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

func tryShardNode(t testing.TB, port, cport int, dir string, extra []string) (*clNode, error) {
	t.Helper()
	cfg := NewConfig()
	set := func(k, v string) {
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("config %s %s: %v", k, v, err)
		}
	}
	set("bind", "127.0.0.1")
	set("save", "")
	set("repl-diskless-sync-delay", "0")
	set("port", strconv.Itoa(port))
	set("cluster-port", strconv.Itoa(cport))
	set("dir", dir)
	all := append(append([]string(nil), clusterDirectives...), extra...)
	for i := 0; i+1 < len(all); i += 2 {
		set(all[i], all[i+1])
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx)
	}()
	n := &clNode{kind: "shardnode", addr: fmt.Sprintf("127.0.0.1:%d", port), port: port, cport: cport, dir: dir, extra: extra, srv: srv}
	stopped := false
	n.stop = func() {
		if stopped {
			return
		}
		stopped = true
		n.rc.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("shardnode %s did not stop", n.addr)
		}
	}
	t.Cleanup(n.stop)
	n.rc = redis.NewClient(&redis.Options{Addr: n.addr, DisableIdentity: true, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	testutil.WaitFor(t, 5*time.Second, "shardnode "+n.addr+" to answer PING", func() bool { return testutil.Ping(n.addr) == nil })
	return n, nil
}

// restart stops a shardnode and starts it again on its ports and
// directory (so from its nodes.conf).
func (n *clNode) restart(t testing.TB) *clNode {
	t.Helper()
	n.stop()
	return startShardNode(t, n.port, n.cport, n.dir, n.extra...)
}

// startRedisNode starts redis-server in cluster mode.
func startRedisNode(t testing.TB, extra ...string) *clNode {
	t.Helper()
	needBinary(t, "redis-server")
	cport := freePorts(t, 1)[0]
	// No 5 s wait before a full sync, as for the in-process nodes.
	args := []string{"--cluster-port", strconv.Itoa(cport), "--repl-diskless-sync-delay", "0"}
	all := append(append([]string(nil), clusterDirectives...), extra...)
	for i := 0; i+1 < len(all); i += 2 {
		args = append(args, "--"+all[i], all[i+1])
	}
	p := testutil.StartRedis(t, args...)
	n := &clNode{kind: "redis", addr: p.Addr, port: p.Port, cport: cport, dir: p.Dir, proc: p}
	n.rc = redis.NewClient(&redis.Options{Addr: n.addr, DisableIdentity: true, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { n.rc.Close() })
	return n
}

// do runs one command and fails the test on an error reply.
func (n *clNode) do(t testing.TB, args ...any) any {
	t.Helper()
	v, err := n.rc.Do(ctx(t), args...).Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("%s %s: %v", n.addr, fmt.Sprint(args...), err)
	}
	return v
}

// str runs a command whose reply is a string.
func (n *clNode) str(t testing.TB, args ...any) string {
	t.Helper()
	v := n.do(t, args...)
	s, _ := v.(string)
	return s
}

func (n *clNode) id(t testing.TB) string { return n.str(t, "cluster", "myid") }

// nodesView is a node's CLUSTER NODES reduced to what must agree across
// the cluster: per node id, its role, master and slots.
func (n *clNode) nodesView() (string, int, bool) {
	text, err := n.rc.Do(context.Background(), "cluster", "nodes").Text()
	if err != nil {
		return "", 0, false
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 {
			return "", 0, false
		}
		flags := f[2]
		if strings.Contains(flags, "handshake") || strings.Contains(flags, "fail") || strings.Contains(flags, "noaddr") {
			return "", 0, false
		}
		role := "master"
		if strings.Contains(flags, "slave") {
			role = "slave"
		}
		lines = append(lines, strings.Join(append([]string{f[0], role, f[3]}, f[8:]...), " "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), len(lines), true
}

// clusterState returns a node's cluster_state.
func (n *clNode) clusterState() string {
	text, err := n.rc.Do(context.Background(), "cluster", "info").Text()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(l, "cluster_state:"); ok {
			return v
		}
	}
	return ""
}

// waitClusterOK waits until every node is in state ok, knows all nodes
// and they all agree on roles, masters and slots.
func waitClusterOK(t testing.TB, nodes []*clNode) {
	t.Helper()
	var last string
	deadline := time.Now().Add(clusterTimeout)
	for {
		ok := true
		var first string
		for i, n := range nodes {
			v, count, good := n.nodesView()
			st := n.clusterState()
			if !good || count != len(nodes) || st != "ok" {
				ok = false
				last = fmt.Sprintf("%s (%s): state %q, %d nodes known:\n%s", n.addr, n.kind, st, count, v)
				break
			}
			if i == 0 {
				first = v
			} else if v != first {
				ok = false
				last = fmt.Sprintf("%s disagrees:\n%s\nwith %s:\n%s", n.addr, v, nodes[0].addr, first)
				break
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster did not settle within %v: %s", clusterTimeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buildCluster makes a cluster of the masters (the slot ranges split as
// redis-cli splits them, with slot 16383 left unassigned when leaveLast)
// and the replicas (replicas[i] follows masters[i]) with CLUSTER commands:
// distinct config epochs, MEETs to the first master, REPLICATE.
func buildCluster(t testing.TB, masters, replicas []*clNode, leaveLast bool) {
	t.Helper()
	all := append(append([]*clNode(nil), masters...), replicas...)
	for i, n := range all {
		n.do(t, "cluster", "set-config-epoch", i+1)
	}
	per := 16384 / len(masters)
	for i, m := range masters {
		start, end := i*per, (i+1)*per-1
		if i == len(masters)-1 {
			end = 16383
			if leaveLast {
				end = 16382
			}
		}
		m.do(t, "cluster", "addslotsrange", start, end)
	}
	for _, n := range all[1:] {
		n.do(t, "cluster", "meet", "127.0.0.1", all[0].port, all[0].cport)
	}
	for i, r := range replicas {
		if i >= len(masters) {
			break
		}
		mid := masters[i].id(t)
		testutil.WaitFor(t, clusterTimeout, r.addr+" to learn about its master", func() bool {
			text, err := r.rc.Do(context.Background(), "cluster", "nodes").Text()
			return err == nil && strings.Contains(text, mid)
		})
		r.do(t, "cluster", "replicate", mid)
	}
	waitClusterOK(t, all)
}

// redisCliTimeout bounds one redis-cli run: a hang bound, not a timing
// goal (a --cluster fix of 200 open slots took more than a minute on a
// loaded machine).
const redisCliTimeout = 3 * time.Minute

// redisCli runs redis-cli with args, bounded in time, and returns its
// combined output and exit error.
func redisCli(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin := needBinary(t, "redis-cli")
	c, cancel := context.WithTimeout(context.Background(), redisCliTimeout)
	defer cancel()
	out, err := exec.CommandContext(c, bin, args...).CombinedOutput()
	return string(out), err
}

// manualFailoverTimeout is Redis's CLUSTER_MF_TIMEOUT: how long a replica
// pursues a manual failover before it abandons it and stays a replica.
const manualFailoverTimeout = 5 * time.Second

// manualFailover sends CLUSTER FAILOVER to the replica r and waits, at
// most clusterTimeout, until r is master and m its replica. A manual
// failover the replica could not finish within manualFailoverTimeout (on
// a loaded machine the master's paused offset or the votes may come too
// late) is abandoned by the node, Redis and shardnode alike, and nothing
// retries it: the request is sent again then, as the cluster admin's
// Failover does.
func manualFailover(t *testing.T, r, m *clNode) {
	t.Helper()
	ctx := context.Background()
	ask := func() {
		t.Helper()
		if err := r.rc.Do(ctx, "cluster", "failover").Err(); err != nil {
			t.Fatalf("CLUSTER FAILOVER on %s replica %s: %v", r.kind, r.addr, err)
		}
	}
	ask()
	asked := time.Now()
	testutil.WaitFor(t, clusterTimeout, "CLUSTER FAILOVER on the "+r.kind+" replica to swap it with its "+m.kind+" master", func() bool {
		if r.roleOf(t) == "master" && m.roleOf(t) == "slave" {
			return true
		}
		if time.Since(asked) > manualFailoverTimeout+time.Second && r.roleOf(t) == "slave" {
			t.Logf("%s replica %s still a replica after the manual failover's timeout: asking again", r.kind, r.addr)
			ask()
			asked = time.Now()
		}
		return false
	})
}
