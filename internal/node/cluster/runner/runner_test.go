package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/testutil"
)

// busNode is a machine with its runner on loopback.
type busNode struct {
	r     *Runner
	port  int
	cport int
	conf  string
}

func startBusNode(t *testing.T, dir string, seed uint64) *busNode {
	t.Helper()
	return startBusNodeWith(t, dir, seed, nil)
}

// startBusNodeWith is startBusNode with the runner's options adjusted by
// opts (nil: none).
func startBusNodeWith(t *testing.T, dir string, seed uint64, opts func(*Options)) *busNode {
	t.Helper()
	port, cport := testutil.FreePort(t), testutil.FreePort(t)
	cfg := cluster.DefaultConfig()
	cfg.Port, cfg.CPort, cfg.IP = port, cport, "127.0.0.1"
	cfg.NodeTimeout = 2 * time.Second
	m, err := cluster.New(cfg, rand.New(rand.NewPCG(seed, seed+1)))
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port))
	opt := Options{ListenAddrs: []string{"127.0.0.1:" + strconv.Itoa(cport)}, ConfigFile: conf}
	if opts != nil {
		opts(&opt)
	}
	r, err := Start(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return &busNode{r: r, port: port, cport: cport, conf: conf}
}

// nodes returns CLUSTER NODES as the machine renders it.
func (b *busNode) nodes(t *testing.T) string {
	t.Helper()
	var s string
	if err := b.r.Do(func(m *cluster.Machine, _ time.Time) { s = m.Nodes(false) }); err != nil {
		t.Fatal(err)
	}
	return s
}

func (b *busNode) do(t *testing.T, fn func(m *cluster.Machine, now time.Time) error) {
	t.Helper()
	var err error
	if derr := b.r.Do(func(m *cluster.Machine, now time.Time) { err = fn(m, now) }); derr != nil {
		t.Fatal(derr)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled reports whether a CLUSTER NODES text lists n nodes, none in
// handshake and every link connected.
func settled(text string, n int) bool {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != n {
		return false
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 8 || strings.Contains(f[2], "handshake") || strings.Contains(f[2], "noaddr") || f[7] != "connected" {
			return false
		}
	}
	return true
}

func TestRunnersJoinOverLoopback(t *testing.T) {
	dir := t.TempDir()
	a, b, c := startBusNode(t, dir, 1), startBusNode(t, dir, 2), startBusNode(t, dir, 3)
	for _, o := range []*busNode{b, c} {
		o := o
		a.do(t, func(m *cluster.Machine, now time.Time) error {
			return m.Meet(now, "127.0.0.1", strconv.Itoa(o.port), strconv.Itoa(o.cport))
		})
	}
	a.do(t, func(m *cluster.Machine, now time.Time) error { return m.AddSlotsRange(now, "0", "5460") })
	b.do(t, func(m *cluster.Machine, now time.Time) error { return m.AddSlotsRange(now, "5461", "10922") })
	c.do(t, func(m *cluster.Machine, now time.Time) error { return m.AddSlotsRange(now, "10923", "16383") })
	for _, n := range []*busNode{a, b, c} {
		n := n
		waitFor(t, 20*time.Second, "3 nodes settled and cluster ok", func() bool {
			var ok bool
			n.r.Do(func(m *cluster.Machine, _ time.Time) {
				ok = settled(m.Nodes(false), 3) && m.State() == cluster.ClusterOK
			})
			return ok
		})
	}
	// nodes.conf on disk is what the machine renders, and holds the
	// other nodes.
	text, err := os.ReadFile(c.conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "vars currentEpoch") || strings.Count(string(text), "\n") < 4 {
		t.Fatalf("nodes.conf of c:\n%s", text)
	}
	st := a.r.Stats()
	if st.PacketsSent == 0 || st.PacketsReceived == 0 || st.BadPackets != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestConfigFileLockedAgainstSecondRunner(t *testing.T) {
	dir := t.TempDir()
	a := startBusNode(t, dir, 7)
	cfg := cluster.DefaultConfig()
	cfg.Port = testutil.FreePort(t)
	cfg.CPort = testutil.FreePort(t)
	m, err := cluster.New(cfg, rand.New(rand.NewPCG(8, 9)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(m, Options{ListenAddrs: []string{"127.0.0.1:" + strconv.Itoa(cfg.CPort)}, ConfigFile: a.conf})
	if err == nil || !strings.Contains(err.Error(), "already used by a different Redis Cluster node") {
		t.Fatalf("second runner on the same nodes.conf: %v", err)
	}
}

func TestRestartKeepsIdentityAndSlots(t *testing.T) {
	dir := t.TempDir()
	a := startBusNode(t, dir, 11)
	a.do(t, func(m *cluster.Machine, now time.Time) error { return m.AddSlotsRange(now, "100", "199") })
	var id string
	a.r.Do(func(m *cluster.Machine, _ time.Time) { id = m.MyID() })
	a.r.Close()

	cfg := cluster.DefaultConfig()
	cfg.Port, cfg.CPort, cfg.IP = a.port, a.cport, "127.0.0.1"
	m, err := cluster.New(cfg, rand.New(rand.NewPCG(99, 100)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(m, Options{ListenAddrs: []string{"127.0.0.1:" + strconv.Itoa(a.cport)}, ConfigFile: a.conf})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var gotID string
	var owned int
	r.Do(func(m *cluster.Machine, _ time.Time) {
		gotID = m.MyID()
		for s := 0; s < cluster.NumSlots; s++ {
			if me, _ := m.SlotOwnerIsMe(s); me {
				owned++
			}
		}
	})
	if gotID != id || owned != 100 {
		t.Fatalf("after restart: id %s (want %s), %d slots (want 100)", gotID, id, owned)
	}
}

// TestMixedWithRedisServer joins one of our nodes with two redis-server
// 7.0 nodes over the real bus: every node must see the three, connected,
// and slots assigned on either kind must be seen by the other.
func TestMixedWithRedisServer(t *testing.T) {
	bin := testutil.Binary(t, "redis-server")
	dir := t.TempDir()
	type rs struct {
		port, cport int
		c           *redis.Client
	}
	var servers []rs
	for i := 0; i < 2; i++ {
		port, cport := testutil.FreePort(t), testutil.FreePort(t)
		d := filepath.Join(dir, strconv.Itoa(port))
		os.MkdirAll(d, 0o755)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--cluster-port", strconv.Itoa(cport),
			"--bind", "127.0.0.1", "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(d, "nodes.conf"),
			"--dir", d, "--save", "", "--appendonly", "no", "--cluster-node-timeout", "2000", "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
		t.Cleanup(func() { c.Close() })
		waitFor(t, 10*time.Second, "redis-server up", func() bool { return c.Ping(context.Background()).Err() == nil })
		servers = append(servers, rs{port, cport, c})
	}
	ctx := context.Background()
	ours := startBusNode(t, dir, 21)
	// We meet the first; the second meets us, so both directions of the
	// handshake are exercised.
	ours.do(t, func(m *cluster.Machine, now time.Time) error {
		return m.Meet(now, "127.0.0.1", strconv.Itoa(servers[0].port), strconv.Itoa(servers[0].cport))
	})
	if err := servers[1].c.Do(ctx, "cluster", "meet", "127.0.0.1", ours.port, ours.cport).Err(); err != nil {
		t.Fatal(err)
	}
	ours.do(t, func(m *cluster.Machine, now time.Time) error { return m.AddSlotsRange(now, "0", "5460") })
	if err := servers[0].c.Do(ctx, "cluster", "addslotsrange", 5461, 10922).Err(); err != nil {
		t.Fatal(err)
	}
	if err := servers[1].c.Do(ctx, "cluster", "addslotsrange", 10923, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "our node sees 3 connected nodes and cluster ok", func() bool {
		var ok bool
		ours.r.Do(func(m *cluster.Machine, _ time.Time) {
			ok = settled(m.Nodes(false), 3) && m.State() == cluster.ClusterOK
		})
		return ok
	})
	var myID string
	ours.r.Do(func(m *cluster.Machine, _ time.Time) { myID = m.MyID() })
	for _, s := range servers {
		s := s
		waitFor(t, 30*time.Second, "redis-server sees 3 connected nodes and cluster ok", func() bool {
			nodes, err := s.c.ClusterNodes(ctx).Result()
			if err != nil || !settled(nodes, 3) {
				return false
			}
			info, _ := s.c.ClusterInfo(ctx).Result()
			return strings.Contains(info, "cluster_state:ok")
		})
		nodes, _ := s.c.ClusterNodes(ctx).Result()
		var line string
		for _, l := range strings.Split(nodes, "\n") {
			if strings.HasPrefix(l, myID) {
				line = l
			}
		}
		if !strings.HasSuffix(strings.TrimSpace(line), " 0-5460") || !strings.Contains(line, fmt.Sprintf("127.0.0.1:%d@%d", ours.port, ours.cport)) {
			t.Fatalf("redis-server's line for our node: %q", line)
		}
	}
}

// cluster-link-sendbuf-limit changes on a running runner (CONFIG SET, as
// 24-links.tcl does): a limit below one packet closes the link at the
// next send and counts it; back to 0 the link comes back.
func TestSetSendBufLimitAtRuntime(t *testing.T) {
	dir := t.TempDir()
	a, b := startBusNode(t, dir, 11), startBusNode(t, dir, 12)
	a.do(t, func(m *cluster.Machine, now time.Time) error {
		return m.Meet(now, "127.0.0.1", strconv.Itoa(b.port), strconv.Itoa(b.cport))
	})
	waitFor(t, 20*time.Second, "2 nodes settled", func() bool { return settled(a.nodes(t), 2) && settled(b.nodes(t), 2) })
	if n := a.r.Stats().BufferLimitExceeded; n != 0 {
		t.Fatalf("limit exceeded %d times before any limit", n)
	}
	a.r.SetSendBufLimit(1)
	waitFor(t, 10*time.Second, "a link closed over the limit", func() bool { return a.r.Stats().BufferLimitExceeded >= 1 })
	a.r.SetSendBufLimit(0)
	seen := a.r.Stats().BufferLimitExceeded
	waitFor(t, 20*time.Second, "links back", func() bool { return settled(a.nodes(t), 2) && settled(b.nodes(t), 2) })
	if n := a.r.Stats().BufferLimitExceeded; n != seen {
		t.Fatalf("limit exceeded again (%d -> %d) with no limit", seen, n)
	}
}

// TestTickTakesOverTheClock: the runner ticks by its own timer until the
// owner's first Tick, and from then on only at the owner's Ticks. The
// clock is read once per tick and once per Do, and nothing else reads it
// on a node without peers, so its reads count the ticks exactly.
func TestTickTakesOverTheClock(t *testing.T) {
	cfg := cluster.DefaultConfig()
	cfg.Port, cfg.CPort, cfg.IP = 7000, 17000, "127.0.0.1"
	m, err := cluster.New(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	r, err := Start(m, Options{ListenAddrs: []string{"127.0.0.1:0"}, TickInterval: time.Millisecond,
		Clock: func() time.Time { reads.Add(1); return time.Now() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	deadline := time.Now().Add(10 * time.Second)
	for reads.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatal("the runner's own timer never ticked")
		}
		time.Sleep(time.Millisecond)
	}
	r.Tick()
	noop := func(*cluster.Machine, time.Time) {}
	if err := r.Do(noop); err != nil { // the own timer is off once Tick returned
		t.Fatal(err)
	}
	// For 50 periods of the old timer: every read is one of ours.
	start, base, rounds := time.Now(), reads.Load(), int64(0)
	for time.Since(start) < 50*time.Millisecond {
		r.Tick()
		if err := r.Do(noop); err != nil {
			t.Fatal(err)
		}
		rounds++
	}
	if got := reads.Load() - base; got != 2*rounds {
		t.Fatalf("%d clock reads for %d Tick+Do rounds, want %d: the own timer still ticks", got, rounds, 2*rounds)
	}
}
