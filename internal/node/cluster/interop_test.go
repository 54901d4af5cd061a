// Live interop of the machine with real redis-server 7.0 cluster nodes
// over loopback, through the bus codec (Encode, Decode, PacketLen) and a
// minimal runner written here. Run with: go test -tags interop -run Interop
// (needs the codec and redis-server).

package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shardis/shardis/internal/testutil"
)

// liveNode runs one Machine on a real bus port.
type liveNode struct {
	t      *testing.T
	m      *Machine
	ln     net.Listener
	cport  int
	events chan func()
	conns  map[LinkID]net.Conn
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	got    []Delivery
	once   sync.Once // close runs once (a test may kill the node early)
	// pauses and unpauses count PauseWrites and Unpause (the write pause
	// is in force at once: there are no clients).
	pauses, unpauses int
}

func startLive(t *testing.T, port, cport int, tweak ...func(*Config)) *liveNode {
	cfg := DefaultConfig()
	cfg.Port, cfg.CPort = port, cport
	for _, f := range tweak {
		f(&cfg)
	}
	cfg.NodeTimeout = 2 * time.Second
	m, err := New(cfg, rand.New(rand.NewPCG(uint64(port), 1)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", cport))
	if err != nil {
		t.Fatal(err)
	}
	n := &liveNode{t: t, m: m, ln: ln, cport: cport, events: make(chan func(), 1024),
		conns: map[LinkID]net.Conn{}, stop: make(chan struct{})}
	n.wg.Add(2)
	go n.acceptLoop()
	go n.loop()
	t.Cleanup(n.close)
	return n
}

func (n *liveNode) close() { n.once.Do(n.doClose) }

func (n *liveNode) doClose() {
	n.ln.Close()
	n.do(func() {
		for _, c := range n.conns {
			c.Close()
		}
	})
	close(n.stop)
	n.wg.Wait()
}

// do runs f on the machine's goroutine and waits.
func (n *liveNode) do(f func()) {
	done := make(chan struct{})
	select {
	case n.events <- func() { f(); close(done) }:
	case <-n.stop:
		return
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		n.t.Error("live node loop stuck")
	}
}

func (n *liveNode) acceptLoop() {
	defer n.wg.Done()
	for {
		c, err := n.ln.Accept()
		if err != nil {
			return
		}
		peer, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		local, _, _ := net.SplitHostPort(c.LocalAddr().String())
		select {
		case n.events <- func() {
			id := n.m.Accepted(time.Now(), peer, local)
			n.conns[id] = c
			go n.readLoop(id, c)
		}:
		case <-n.stop:
			c.Close()
			return
		}
	}
}

func (n *liveNode) readLoop(id LinkID, c net.Conn) {
	r := bufio.NewReader(c)
	for {
		hdr, err := r.Peek(8)
		if err != nil {
			break
		}
		size, err := PacketLen(hdr)
		if err != nil || size > 1<<20 {
			break
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			break
		}
		msg, err := Decode(buf)
		if err != nil {
			continue
		}
		select {
		case n.events <- func() { n.m.HandlePacket(time.Now(), id, msg) }:
		case <-n.stop:
			return
		}
	}
	select {
	case n.events <- func() {
		if n.conns[id] == c {
			delete(n.conns, id)
			n.m.LinkDown(time.Now(), id)
		}
	}:
	case <-n.stop:
	}
}

func (n *liveNode) loop() {
	defer n.wg.Done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
			n.m.Tick(time.Now())
		case f := <-n.events:
			f()
		}
		n.apply(n.m.Ready())
	}
}

func (n *liveNode) apply(rd Ready) {
	for _, id := range rd.Closes {
		if c := n.conns[id]; c != nil {
			c.Close()
			delete(n.conns, id)
		}
	}
	for _, cn := range rd.Connects {
		cn := cn
		go func() {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(cn.IP, strconv.Itoa(cn.CPort)), time.Second)
			select {
			case n.events <- func() {
				if err != nil {
					n.m.LinkDown(time.Now(), cn.Link)
					return
				}
				n.conns[cn.Link] = c
				go n.readLoop(cn.Link, c)
				n.m.LinkUp(time.Now(), cn.Link)
			}:
			case <-n.stop:
				if c != nil {
					c.Close()
				}
			}
		}()
	}
	for _, s := range rd.Sends {
		if c := n.conns[s.Link]; c != nil {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write(Encode(s.Msg))
		}
	}
	n.mu.Lock()
	n.got = append(n.got, rd.Deliveries...)
	n.mu.Unlock()
	if rd.Unpause {
		n.unpauses++
	}
	if rd.PauseWrites > 0 {
		n.pauses++
		n.m.WritesPaused(time.Now())
		n.apply(n.m.Ready())
	}
}

func startClusterRedis(t *testing.T, extra ...string) (*testutil.Process, *redis.Client) {
	cport := testutil.FreePort(t)
	p := testutil.StartRedis(t, append([]string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(cport),
		"--cluster-node-timeout", "2000", "--cluster-config-file", "nodes.conf"}, extra...)...)
	c := redis.NewClient(&redis.Options{Addr: p.Addr})
	t.Cleanup(func() { c.Close() })
	return p, c
}

func TestInteropWithRedis(t *testing.T) {
	ctx := context.Background()
	_, c1 := startClusterRedis(t)
	r2, c2 := startClusterRedis(t)
	_ = r2
	me := startLive(t, testutil.FreePort(t), testutil.FreePort(t))
	var myID string
	me.do(func() { myID = me.m.MyID() })

	// A redis-server meets us; we meet the other one.
	if err := c1.Do(ctx, "cluster", "meet", "127.0.0.1", me.m.cfg.Port, me.cport).Err(); err != nil {
		t.Fatal(err)
	}
	addr2 := strings.Split(r2.Addr, ":")
	var meetErr error
	cport2, _ := c2.ConfigGet(ctx, "cluster-port").Result()
	me.do(func() { meetErr = me.m.Meet(time.Now(), "127.0.0.1", addr2[1], cport2["cluster-port"]) })
	if meetErr != nil {
		t.Fatal(meetErr)
	}
	testutil.WaitFor(t, 20*time.Second, "all three know each other", func() bool {
		for _, c := range []*redis.Client{c1, c2} {
			nodes, _ := c.ClusterNodes(ctx).Result()
			if strings.Count(nodes, "\n") != 3 || strings.Contains(nodes, "handshake") || !strings.Contains(nodes, myID) {
				return false
			}
		}
		ok := false
		me.do(func() {
			ok = len(me.m.KnownNodes()) == 3 && !strings.Contains(me.m.Nodes(false), "handshake")
		})
		return ok
	})
	// Slots: redis-servers take 0-10000, we take the rest.
	if err := c1.ClusterAddSlotsRange(ctx, 0, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c2.ClusterAddSlotsRange(ctx, 5001, 10000).Err(); err != nil {
		t.Fatal(err)
	}
	me.do(func() { meetErr = me.m.AddSlotsRange(time.Now(), "10001", "16383") })
	if meetErr != nil {
		t.Fatal(meetErr)
	}
	testutil.WaitFor(t, 20*time.Second, "cluster ok everywhere with distinct epochs", func() bool {
		for _, c := range []*redis.Client{c1, c2} {
			info, _ := c.ClusterInfo(ctx).Result()
			if !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		ok := false
		me.do(func() {
			epochs := map[uint64]bool{}
			for _, n := range me.m.KnownNodes() {
				epochs[n.ConfigEpoch] = true
			}
			ok = me.m.State() == ClusterOK && len(epochs) == 3
		})
		return ok
	})
	// CLUSTER INFO has redis-server's fields in its order and, settled,
	// its values (message counters aside).
	fields := func(info string) (names []string, vals map[string]string) {
		vals = map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(info), "\r\n") {
			k, v, _ := strings.Cut(l, ":")
			if strings.HasPrefix(k, "cluster_stats_messages_") && strings.Count(k, "_") > 3 {
				continue // per-type counters depend on the traffic seen
			}
			names = append(names, k)
			vals[k] = v
		}
		return names, vals
	}
	redisInfo, _ := c1.ClusterInfo(ctx).Result()
	var ourInfo string
	me.do(func() { ourInfo = me.m.Info(0) })
	rn, rv := fields(redisInfo)
	on, ov := fields(ourInfo)
	if strings.Join(rn, ",") != strings.Join(on, ",") {
		t.Fatalf("CLUSTER INFO fields differ:\nredis %v\nours  %v", rn, on)
	}
	for _, k := range []string{"cluster_state", "cluster_slots_assigned", "cluster_slots_ok", "cluster_known_nodes", "cluster_size", "cluster_current_epoch"} {
		if rv[k] != ov[k] {
			t.Fatalf("%s: redis %s, ours %s", k, rv[k], ov[k])
		}
	}
	nodes, _ := c1.ClusterNodes(ctx).Result()
	if !strings.Contains(nodes, myID+" 127.0.0.1:"+strconv.Itoa(me.m.cfg.Port)+"@"+strconv.Itoa(me.cport)+" master - ") ||
		!strings.Contains(nodes, " connected 10001-16383") {
		t.Fatalf("redis-server's view of us:\n%s", nodes)
	}
	// PUBLISH on a redis-server reaches us through the bus.
	if err := c2.Publish(ctx, "news", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "PUBLISH delivered", func() bool {
		me.mu.Lock()
		defer me.mu.Unlock()
		return len(me.got) == 1 && string(me.got[0].Channel) == "news" && string(me.got[0].Message) == "hello"
	})
	// A slot moves from a redis-server to us: SETSLOT IMPORTING/MIGRATING,
	// then NODE on both sides; closing our import bumps our config epoch
	// and the redis-servers take the new owner.
	id1, _ := c1.ClusterMyID(ctx).Result()
	me.do(func() { meetErr = me.m.SetSlot(time.Now(), "7", "importing", id1) })
	if meetErr != nil {
		t.Fatal(meetErr)
	}
	if err := c1.Do(ctx, "cluster", "setslot", 7, "migrating", myID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c1.Do(ctx, "cluster", "setslot", 7, "node", myID).Err(); err != nil {
		t.Fatal(err)
	}
	// Redis's clusterBumpConfigEpochWithoutConsensus keeps an epoch that
	// is already non-zero and the greatest, which ours is when the epoch
	// collision rule gave it the last bump.
	var before, after, others uint64
	me.do(func() {
		before = me.m.Myself().ConfigEpoch
		for _, n := range me.m.KnownNodes() {
			if n.ID != myID && n.ConfigEpoch > others {
				others = n.ConfigEpoch
			}
		}
		meetErr = me.m.SetSlot(time.Now(), "7", "node", myID)
		after = me.m.Myself().ConfigEpoch
	})
	if meetErr != nil || after <= before && (before == 0 || before <= others) {
		t.Fatalf("SETSLOT NODE: %v, epoch %d -> %d", meetErr, before, after)
	}
	testutil.WaitFor(t, 10*time.Second, "redis-servers see us owning slot 7", func() bool {
		for _, c := range []*redis.Client{c1, c2} {
			nodes, _ := c.ClusterNodes(ctx).Result()
			for _, l := range strings.Split(nodes, "\n") {
				if strings.HasPrefix(l, myID) && !strings.Contains(l, " "+strconv.FormatUint(after, 10)+" connected 7 10001-16383") {
					return false
				}
			}
		}
		return true
	})
	// A second machine without slots replicates a redis-server master:
	// the redis-servers see it as its replica.
	rep := startLive(t, testutil.FreePort(t), testutil.FreePort(t))
	var repID string
	rep.do(func() {
		repID = rep.m.MyID()
		meetErr = rep.m.Meet(time.Now(), "127.0.0.1", strconv.Itoa(me.m.cfg.Port), strconv.Itoa(me.cport))
	})
	if meetErr != nil {
		t.Fatal(meetErr)
	}
	testutil.WaitFor(t, 20*time.Second, "the second machine joined", func() bool {
		ok := false
		rep.do(func() { ok = len(rep.m.KnownNodes()) == 4 && !strings.Contains(rep.m.Nodes(false), "handshake") })
		return ok
	})
	rep.do(func() { meetErr = rep.m.Replicate(time.Now(), id1) })
	if meetErr != nil {
		t.Fatal(meetErr)
	}
	testutil.WaitFor(t, 10*time.Second, "redis-server lists the replica", func() bool {
		reps, err := c2.ClusterSlaves(ctx, id1).Result()
		return err == nil && len(reps) == 1 && strings.HasPrefix(reps[0], repID+" ") && strings.Contains(reps[0], " slave "+id1+" ")
	})
	// Our PUBLISH reaches a subscriber of a redis-server.
	sub := c1.Subscribe(ctx, "back")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	me.do(func() { me.m.Publish(time.Now(), []byte("back"), []byte("from shardis")) })
	select {
	case msg := <-sub.Channel():
		if msg.Channel != "back" || msg.Payload != "from shardis" {
			t.Fatalf("got %+v", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("our PUBLISH did not reach the redis-server subscriber")
	}
	// Kill a redis-server: we and the other agree on FAIL.
	id2, _ := c2.ClusterMyID(ctx).Result()
	r2.Kill()
	testutil.WaitFor(t, 15*time.Second, "FAIL agreed", func() bool {
		nodes, _ := c1.ClusterNodes(ctx).Result()
		if !strings.Contains(nodes, id2+" ") || !strings.Contains(nodes, "master,fail ") {
			return false
		}
		ok := false
		me.do(func() {
			n, _ := me.m.Node(id2)
			ok = n.Flags&FlagFail != 0 && me.m.State() == ClusterFail
		})
		return ok
	})
	info, _ := c1.ClusterInfo(ctx).Result()
	if !strings.Contains(info, "cluster_state:fail") {
		t.Fatalf("redis-server still ok:\n%s", info)
	}
}

func TestInteropHostnames(t *testing.T) {
	ctx := context.Background()
	_, c1 := startClusterRedis(t, "--cluster-announce-hostname", "redis.example")
	me := startLive(t, testutil.FreePort(t), testutil.FreePort(t), func(c *Config) { c.Hostname = "shardis.example" })
	var myID string
	me.do(func() { myID = me.m.MyID() })
	if err := c1.Do(ctx, "cluster", "meet", "127.0.0.1", me.m.cfg.Port, me.cport).Err(); err != nil {
		t.Fatal(err)
	}
	id1, _ := c1.ClusterMyID(ctx).Result()
	testutil.WaitFor(t, 10*time.Second, "hostnames exchanged", func() bool {
		nodes, _ := c1.ClusterNodes(ctx).Result()
		if !strings.Contains(nodes, myID+" 127.0.0.1:"+strconv.Itoa(me.m.cfg.Port)+"@"+strconv.Itoa(me.cport)+",shardis.example master ") {
			return false
		}
		ok := false
		me.do(func() {
			n, _ := me.m.Node(id1)
			ok = n.Hostname == "redis.example"
		})
		return ok
	})
}
