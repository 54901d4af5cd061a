package node

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// redis-cli --cluster against shardnodes: create with replicas, check,
// add-node as master and as replica, del-node, and a restart that keeps
// the node's identity, epochs and slots.

func cliAddrs(nodes []*clNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.addr
	}
	return out
}

// clusterCheck runs redis-cli --cluster check and requires exit 0 with
// full coverage and agreement.
func clusterCheck(t *testing.T, addr string) string {
	t.Helper()
	out, err := redisCli(t, "--cluster", "check", addr)
	if err != nil {
		t.Fatalf("redis-cli --cluster check %s: %v\n%s", addr, err, out)
	}
	for _, want := range []string{"[OK] All nodes agree about slots configuration.", "[OK] All 16384 slots covered."} {
		if !strings.Contains(out, want) {
			t.Fatalf("check %s: no %q in:\n%s", addr, want, out)
		}
	}
	return out
}

// myselfLine returns the myself line of a node's CLUSTER NODES without
// its ping/pong times and link state.
func myselfLine(t *testing.T, n *clNode) string {
	t.Helper()
	for _, l := range strings.Split(n.str(t, "cluster", "nodes"), "\n") {
		if strings.Contains(l, "myself") {
			f := strings.Fields(l)
			return strings.Join(append(append([]string(nil), f[:4]...), f[6], strings.Join(f[8:], " ")), " ")
		}
	}
	t.Fatalf("%s: no myself line", n.addr)
	return ""
}

var epochLines = regexp.MustCompile(`cluster_(current|my)_epoch:\d+`)

func TestClusterRedisCliCreateAddDelRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	needBinary(t, "redis-cli")
	var nodes []*clNode
	for i := 0; i < 6; i++ {
		nodes = append(nodes, startShardNode(t, 0, 0, ""))
	}
	args := append([]string{"--cluster", "create"}, cliAddrs(nodes)...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	out, err := redisCli(t, args...)
	if err != nil || !strings.Contains(out, "[OK] All 16384 slots covered.") {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	waitClusterOK(t, nodes)
	check := clusterCheck(t, nodes[0].addr)
	if n := strings.Count(check, "slots | 1 slaves."); n != 3 {
		t.Fatalf("want 3 masters with one replica each:\n%s", check)
	}

	// redis-cli -c follows MOVED from any node.
	for i, n := range nodes {
		key := "cli-key-" + strconv.Itoa(i)
		host, port, _ := net.SplitHostPort(n.addr)
		for _, step := range [][]string{{"SET", key, "v" + strconv.Itoa(i)}, {"GET", key}} {
			out, err := redisCli(t, append([]string{"-c", "-h", host, "-p", port}, step...)...)
			want := "OK"
			if step[0] == "GET" {
				want = "v" + strconv.Itoa(i)
			}
			if err != nil || strings.TrimSpace(out) != want {
				t.Fatalf("redis-cli -c -p %s %v: %q %v, want %q", port, step, out, err, want)
			}
		}
	}
	for i := range nodes {
		if _, err := redisCli(t, "-c", "-p", strconv.Itoa(nodes[0].port), "DEL", "cli-key-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}

	// add-node as a master, then a replica of it.
	m := startShardNode(t, 0, 0, "")
	if out, err := redisCli(t, "--cluster", "add-node", m.addr, nodes[0].addr); err != nil || !strings.Contains(out, "[OK] New node added correctly.") {
		t.Fatalf("add-node (master): %v\n%s", err, out)
	}
	nodes = append(nodes, m)
	waitClusterOK(t, nodes)
	mid := m.id(t)
	r := startShardNode(t, 0, 0, "")
	if out, err := redisCli(t, "--cluster", "add-node", r.addr, nodes[0].addr, "--cluster-slave", "--cluster-master-id", mid); err != nil || !strings.Contains(out, "[OK] New node added correctly.") {
		t.Fatalf("add-node (replica): %v\n%s", err, out)
	}
	nodes = append(nodes, r)
	waitClusterOK(t, nodes)
	if line := myselfLine(t, r); !strings.Contains(line, "slave "+mid) {
		t.Fatalf("added replica: %s, want a slave of %s", line, mid)
	}
	clusterCheck(t, nodes[0].addr)

	// del-node: the replica, then the slotless master.
	for _, gone := range []*clNode{r, m} {
		id := gone.id(t)
		if out, err := redisCli(t, "--cluster", "del-node", nodes[0].addr, id); err != nil || !strings.Contains(out, "Sending CLUSTER RESET SOFT to the deleted node.") {
			t.Fatalf("del-node %s: %v\n%s", id, err, out)
		}
		nodes = nodes[:len(nodes)-1]
	}
	waitClusterOK(t, nodes)
	clusterCheck(t, nodes[0].addr)

	// A restarted master keeps its id, epochs and slots.
	var master *clNode
	for _, n := range nodes {
		if strings.Contains(myselfLine(t, n), "master") {
			master = n
			break
		}
	}
	before, epochs := myselfLine(t, master), epochLines.FindAllString(master.str(t, "cluster", "info"), -1)
	idx := -1
	for i, n := range nodes {
		if n == master {
			idx = i
		}
	}
	nodes[idx] = master.restart(t)
	after, epochs2 := myselfLine(t, nodes[idx]), epochLines.FindAllString(nodes[idx].str(t, "cluster", "info"), -1)
	if before != after || fmt.Sprint(epochs) != fmt.Sprint(epochs2) {
		t.Fatalf("restart changed the node:\n before %s %v\n after  %s %v", before, epochs, after, epochs2)
	}
	waitClusterOK(t, nodes)
	clusterCheck(t, nodes[idx].addr)
}
