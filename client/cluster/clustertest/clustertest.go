// Package clustertest is a test helper, like net/http/httptest: it starts
// real redis-server processes in cluster mode, in-process shardnodes
// (StartShardNode) or shardnode processes (StartShardNodeProcess; see
// StartKind), for the end-to-end tests of
// client/cluster, its admin operations and "shardnode cluster", and runs
// "redis-cli --cluster" against them.
//
// Every node listens on 127.0.0.1 at a port P whose bus port P+10000 is
// free too, keeps its nodes.conf in a t.TempDir(), and is killed by
// t.Cleanup. The binaries are found with testutil.Binary, so tests skip
// when redis-server or redis-cli is not installed.
package clustertest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node"
	"github.com/shardis/shardis/internal/testutil"
)

// NodeTimeout is the cluster-node-timeout the nodes run with, in ms.
const NodeTimeout = 1000

// Node is one cluster node: a redis-server process, or an in-process
// shardnode (StartShardNode), or a shardnode process
// (StartShardNodeProcess).
type Node struct {
	// Kind is "redis" or "shardnode".
	Kind string
	// Addr is "127.0.0.1:port".
	Addr string
	// Port is the client port; the bus listens on Port+10000.
	Port int
	// Dir holds nodes.conf and the log.
	Dir string

	t    testing.TB
	bin  string
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	// stop ends an in-process shardnode (nil once stopped).
	stop func()
}

// portPair returns a port P such that P and P+10000 were both free.
func portPair(t testing.TB) int {
	t.Helper()
	for range 100 {
		p := testutil.FreePort(t)
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatal("clustertest: no free port pair")
	return 0
}

// StartNode starts one empty cluster-enabled redis-server (no slots, no
// peers) and waits until it answers PING.
func StartNode(t testing.TB, extra ...string) *Node {
	t.Helper()
	return startNodeBin(t, testutil.Binary(t, "redis-server"), "redis", extra...)
}

// startNodeBin starts bin (a redis-server or shardnode binary) as
// StartNode describes, as a node of kind.
func startNodeBin(t testing.TB, bin, kind string, extra ...string) *Node {
	t.Helper()
	port := portPair(t)
	dir := t.TempDir()
	n := &Node{
		Kind: kind,
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir, t: t, bin: bin,
		args: append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--protected-mode", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", strconv.Itoa(NodeTimeout),
			"--logfile", filepath.Join(dir, "redis.log"), "--repl-diskless-sync-delay", "0",
		}, extra...),
	}
	n.start()
	return n
}

func (n *Node) start() {
	n.t.Helper()
	cmd := exec.Command(n.bin, n.args...)
	cmd.Dir = n.Dir
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("clustertest: start: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	n.t.Cleanup(n.Kill)
	deadline := time.Now().Add(testutil.StartTimeout)
	for testutil.Ping(n.Addr) != nil {
		select {
		case <-done:
			n.t.Fatalf("clustertest: %s on %s exited at start: %s", n.Kind, n.Addr, n.LogTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("clustertest: %s did not answer PING", n.Addr)
		}
	}
}

// Kill sends SIGKILL and waits for the exit; a no-op when not running.
func (n *Node) Kill() {
	n.mu.Lock()
	cmd, done, stop := n.cmd, n.done, n.stop
	n.cmd, n.stop = nil, nil
	n.mu.Unlock()
	if stop != nil {
		stop()
		return
	}
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// LogTail returns the last lines of the node's log.
func (n *Node) LogTail() string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "redis.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	return strings.Join(lines, "\n")
}

// Client returns a plain go-redis client to the node, closed by Cleanup.
func (n *Node) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.Addr, DialerRetries: 1})
	n.t.Cleanup(func() { c.Close() })
	return c
}

// StartShardNode starts one empty in-process shardnode in cluster mode
// (its logs discarded), with the same settings as StartNode's
// redis-server, and waits until it answers PING. Kill stops it: its
// sockets close at once, as a killed process's would.
func StartShardNode(t testing.TB, extra ...string) *Node {
	t.Helper()
	for attempt := 0; ; attempt++ {
		port := portPair(t)
		dir := t.TempDir()
		cfg := node.NewConfig()
		conf := append([]string{
			"port", strconv.Itoa(port), "bind", "127.0.0.1", "dir", dir, "save", "", "appendonly", "no",
			"protected-mode", "no", "cluster-enabled", "yes", "cluster-config-file", "nodes.conf",
			"cluster-node-timeout", strconv.Itoa(NodeTimeout), "repl-diskless-sync-delay", "0",
			"enable-debug-command", "yes",
		}, extra...)
		for i := 0; i+1 < len(conf); i += 2 {
			if err := cfg.Set(strings.TrimPrefix(conf[i], "--"), conf[i+1]); err != nil {
				t.Fatalf("clustertest: shardnode config %s %s: %v", conf[i], conf[i+1], err)
			}
		}
		srv, err := node.New(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("clustertest: shardnode: %v", err)
		}
		if err := srv.Listen(); err != nil {
			if attempt < 5 {
				continue // the port pair was taken meanwhile
			}
			t.Fatalf("clustertest: shardnode listen: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.Run(ctx)
		}()
		n := &Node{Kind: "shardnode", Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir, t: t}
		n.stop = func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Errorf("clustertest: shardnode %s did not stop", n.Addr)
			}
		}
		t.Cleanup(n.Kill)
		deadline := time.Now().Add(testutil.StartTimeout)
		for testutil.Ping(n.Addr) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("clustertest: shardnode %s did not answer PING", n.Addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return n
	}
}

// StartKind starts count empty nodes of kind "redis", "shardnode" (in
// the test's process) or "shardnode-process" (each its own process, as
// deployed; see StartShardNodeProcess).
func StartKind(t testing.TB, kind string, count int, extra ...string) []*Node {
	t.Helper()
	switch kind {
	case "redis":
		return StartNodes(t, count, extra...)
	case "shardnode-process":
		nodes := make([]*Node, count)
		for i := range nodes {
			nodes[i] = StartShardNodeProcess(t, extra...)
		}
		return nodes
	}
	nodes := make([]*Node, count)
	for i := range nodes {
		nodes[i] = StartShardNode(t, extra...)
	}
	return nodes
}

// ShardnodeBinaryEnv names the environment variable that gives
// StartShardNodeProcess a prebuilt shardnode binary.
const ShardnodeBinaryEnv = "CLUSTERTEST_SHARDNODE"

var built struct {
	once sync.Once
	path string
	err  error
}

// ShardnodeBinary returns the path of a shardnode binary: $CLUSTERTEST_SHARDNODE
// if set, else one built from cmd/shardnode with "go build" once per test
// process (into a temporary directory that RemoveBuilt deletes).
func ShardnodeBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(ShardnodeBinaryEnv); p != "" {
		return p
	}
	gobin := testutil.LookPath(t, "go")
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "clustertest-shardnode-")
		if err != nil {
			built.err = err
			return
		}
		path := filepath.Join(dir, "shardnode")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, gobin, "build", "-o", path, "github.com/shardis/shardis/cmd/shardnode").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build cmd/shardnode: %w\n%s", err, out)
			os.RemoveAll(dir)
			return
		}
		built.path = path
	})
	if built.err != nil {
		t.Fatalf("clustertest: %v", built.err)
	}
	return built.path
}

// RemoveBuilt deletes the binary ShardnodeBinary built, if any; a test
// package's TestMain calls it after the tests.
func RemoveBuilt() {
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
}

// StartShardNodeProcess starts one empty shardnode in cluster mode as its
// own process (ShardnodeBinary), with StartNode's arguments, and waits
// until it answers PING. Unlike StartShardNode, the node shares neither
// the test's Go runtime (scheduler, heap, garbage collector) nor its
// CPU time slices, as in a deployment where the client is alone in its
// process. Kind is "shardnode".
func StartShardNodeProcess(t testing.TB, extra ...string) *Node {
	t.Helper()
	return startNodeBin(t, ShardnodeBinary(t), "shardnode", append([]string{"--enable-debug-command", "yes"}, extra...)...)
}

// Kinds are the node kinds the end-to-end tests run against.
var Kinds = []string{"redis", "shardnode"}

// StartNodes starts count empty nodes, each with the extra redis.conf
// arguments given (for example "--cluster-require-full-coverage", "no").
func StartNodes(t testing.TB, count int, extra ...string) []*Node {
	t.Helper()
	nodes := make([]*Node, count)
	for i := range nodes {
		nodes[i] = StartNode(t, extra...)
	}
	return nodes
}

// Addrs returns the nodes' addresses.
func Addrs(nodes []*Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Addr
	}
	return out
}

// RedisCli runs redis-cli with args and returns its combined output and
// exit error. It is bounded to 60 s.
func RedisCli(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin := testutil.Binary(t, "redis-cli")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

// CreateWithRedisCli builds a cluster of masters (and replicas per master)
// from the nodes with "redis-cli --cluster create" and waits until every
// node reports cluster_state:ok and agrees on the configuration.
func CreateWithRedisCli(t testing.TB, nodes []*Node, replicas int) {
	t.Helper()
	args := append([]string{"--cluster", "create"}, Addrs(nodes)...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := RedisCli(t, args...); err != nil {
		t.Fatalf("clustertest: redis-cli --cluster create: %v\n%s", err, out)
	}
	WaitHealthy(t, nodes, 30*time.Second)
	if replicas > 0 {
		waitReplicasListed(t, nodes, replicas, 30*time.Second)
	}
}

// waitReplicasListed writes (and deletes) a key on every master, so that
// the replication offsets move, and waits until every node's CLUSTER
// SLOTS lists the replicas: redis-server leaves out a replica whose
// offset it has seen as 0.
func waitReplicasListed(t testing.TB, nodes []*Node, replicas int, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: Addrs(nodes)})
	defer cc.Close()
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("clustertest: CLUSTER SLOTS: %v", err)
	}
	for _, r := range slots {
		for i := 0; ; i++ {
			k := fmt.Sprintf("clustertest:%d", i)
			if s := slotOf(k); s >= r.Start && s <= r.End {
				if err := cc.Set(ctx, k, "x", 0).Err(); err != nil {
					t.Fatalf("clustertest: SET: %v", err)
				}
				cc.Del(ctx, k)
				break
			}
		}
	}
	testutil.WaitFor(t, timeout, "replicas listed in CLUSTER SLOTS", func() bool {
		for _, n := range nodes {
			c := redis.NewClient(&redis.Options{Addr: n.Addr, DialerRetries: 1})
			got, err := c.ClusterSlots(ctx).Result()
			c.Close()
			if err != nil {
				return false
			}
			for _, r := range got {
				if len(r.Nodes) != 1+replicas {
					return false
				}
			}
		}
		return true
	})
}

func slotOf(key string) int { return consistent.KeySlot(key) }

// WaitHealthy waits until "redis-cli --cluster check" passes on the first
// node and every node reports cluster_state:ok and knows every other.
func WaitHealthy(t testing.TB, nodes []*Node, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	testutil.WaitFor(t, timeout, "cluster healthy", func() bool {
		for _, n := range nodes {
			c := redis.NewClient(&redis.Options{Addr: n.Addr, DialerRetries: 1})
			info, err := c.ClusterInfo(ctx).Result()
			c.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") ||
				!strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(nodes))) {
				return false
			}
		}
		return true
	})
	// A replica that has not synced yet cannot take over from its master.
	testutil.WaitFor(t, timeout, "replicas in sync", func() bool {
		for _, n := range nodes {
			c := redis.NewClient(&redis.Options{Addr: n.Addr, DialerRetries: 1})
			info, err := c.Info(ctx, "replication").Result()
			c.Close()
			if err != nil || (strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up")) {
				return false
			}
		}
		return true
	})
	testutil.WaitFor(t, timeout, "redis-cli --cluster check", func() bool {
		_, err := RedisCli(t, "--cluster", "check", nodes[0].Addr)
		return err == nil
	})
}

// Check runs "redis-cli --cluster check addr" and fails the test unless it
// exits 0 and prints "[OK] All 16384 slots covered.". It returns the output.
func Check(t testing.TB, addr string) string {
	t.Helper()
	out, err := RedisCli(t, "--cluster", "check", addr)
	if err != nil || !strings.Contains(out, "[OK] All 16384 slots covered.") {
		t.Fatalf("clustertest: redis-cli --cluster check %s: %v\n%s", addr, err, out)
	}
	return out
}

// WaitCheck polls "redis-cli --cluster check addr" until it exits 0 with
// every slot covered (the configuration spreads by gossip), then returns
// its output; it fails the test after timeout.
func WaitCheck(t testing.TB, addr string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := RedisCli(t, "--cluster", "check", addr)
		if err == nil && strings.Contains(out, "[OK] All 16384 slots covered.") {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("clustertest: redis-cli --cluster check %s still fails after %v: %v\n%s", addr, timeout, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NodeID returns the node's cluster ID (CLUSTER MYID).
func (n *Node) NodeID(t testing.TB) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr, DialerRetries: 1})
	defer c.Close()
	id, err := c.Do(context.Background(), "cluster", "myid").Text()
	if err != nil {
		t.Fatalf("clustertest: CLUSTER MYID on %s: %v", n.Addr, err)
	}
	return id
}

// MoveSlot moves slot from one master to another the way redis-cli does
// (SETSLOT IMPORTING on the target, MIGRATING on the source, MIGRATE of
// every key, SETSLOT NODE on the target, the source, then every other
// master), with raw commands, independently of the admin package.
func MoveSlot(t testing.TB, slot int, from, to *Node, all []*Node) {
	t.Helper()
	ctx := context.Background()
	src, dst := from.Client(), to.Client()
	fromID, toID := from.NodeID(t), to.NodeID(t)
	must := func(c *redis.Client, args ...interface{}) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("clustertest: %v: %v", args, err)
		}
	}
	must(dst, "cluster", "setslot", slot, "importing", fromID)
	must(src, "cluster", "setslot", slot, "migrating", toID)
	for range 10000 {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			t.Fatalf("clustertest: GETKEYSINSLOT: %v", err)
		}
		if len(keys) == 0 {
			break
		}
		args := []interface{}{"migrate", "127.0.0.1", to.Port, "", 0, 5000, "replace", "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src, args...)
	}
	must(dst, "cluster", "setslot", slot, "node", toID)
	must(src, "cluster", "setslot", slot, "node", toID)
	for _, n := range all {
		if n == from || n == to {
			continue
		}
		// Replicas refuse SETSLOT; gossip updates them.
		_ = n.Client().Do(ctx, "cluster", "setslot", slot, "node", toID).Err()
	}
}

// SetAny sets key on whichever node serves it, following one MOVED.
func SetAny(ctx context.Context, nodes []*Node, key, value string) error {
	_, err := onOwner(ctx, nodes, func(c *redis.Client) (string, error) { return "", c.Set(ctx, key, value, 0).Err() })
	return err
}

// GetAny gets key from whichever node serves it, following one MOVED.
func GetAny(ctx context.Context, nodes []*Node, key string) (string, error) {
	return onOwner(ctx, nodes, func(c *redis.Client) (string, error) { return c.Get(ctx, key).Result() })
}

func onOwner(ctx context.Context, nodes []*Node, f func(*redis.Client) (string, error)) (string, error) {
	var lastErr error
	for _, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr, DialerRetries: 1})
		v, err := f(c)
		c.Close()
		if err == nil {
			return v, nil
		}
		lastErr = err
	}
	return "", lastErr
}
