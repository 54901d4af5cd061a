package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The in-memory network: Machines joined by simulated TCP connections,
// driven by a virtual clock in 100 ms ticks. A connection delivers in
// order after the network's delay; cut(a,b) silently drops traffic and
// refuses new connections between a and b, isolate(a) cuts a from all,
// drop(rate) loses packets at random, down(a) crashes a node (its
// connections close, connects to it are refused).

type simNode struct {
	idx         int
	ip          string
	port, cport int
	m           *Machine
	down        bool
	events      []Event
	roles       []RoleChange
	slotChanges []SlotsChanged
	deliveries  []Delivery
	saves       int
	fsyncs      int
	conf        string // last saved nodes.conf
	states      []State
	sent        map[MsgType]int
	pauses      []time.Duration // PauseWrites asked for
	unpauses    int             // Unpause asked for
	holdPause   bool            // never report the pause in force (WritesPaused)
}

type simConn struct {
	a, b   int    // a opened the connection to b
	la, lb LinkID // a's outbound link id, b's inbound link id
}

type linkKey struct {
	node int
	link LinkID
}

type inFlight struct {
	at   time.Time
	to   int
	link LinkID
	msg  *Msg
}

type simNet struct {
	t        *testing.T
	now      time.Time
	nodes    []*simNode
	conns    map[linkKey]*simConn
	cut      map[[2]int]bool
	dropRate float64
	delay    time.Duration
	rng      *rand.Rand
	queue    []inFlight
	// filter, when set, may drop a message from a to b.
	filter func(from, to int, msg *Msg) bool
	// seed varies the machines' random sources (0: the default).
	seed uint64
	// readyHook, when set, sees every Ready before it is applied.
	readyHook func(sn *simNode, rd Ready)
	// onTick, when set, runs after every tick.
	onTick func()
	// tickGroup, when set, ticks the nodes that many at a time and pumps
	// after each group, so that a large cluster's burst of PINGs is not
	// all in flight at once (memory).
	tickGroup int
	// noConf skips rendering nodes.conf at every save and the invariant
	// checks after every step (large simulations).
	noConf bool
}

func newSimNet(t *testing.T, n int, tweak func(i int, c *Config)) *simNet {
	t.Helper()
	w := &simNet{t: t, now: time.Unix(1_700_000_000, 0), conns: map[linkKey]*simConn{},
		cut: map[[2]int]bool{}, rng: rand.New(rand.NewPCG(42, 1))}
	for i := 0; i < n; i++ {
		w.addNode(tweak)
	}
	return w
}

func (w *simNet) addNode(tweak func(i int, c *Config)) *simNode {
	i := len(w.nodes)
	cfg := DefaultConfig()
	cfg.Port = 7000 + i
	cfg.NodeTimeout = 2 * time.Second
	if tweak != nil {
		tweak(i, &cfg)
	}
	m, err := New(cfg, rand.New(rand.NewPCG(uint64(i)+1, 99+w.seed)))
	if err != nil {
		w.t.Fatal(err)
	}
	sn := &simNode{idx: i, ip: fmt.Sprintf("10.0.%d.%d", (i+1)/256, (i+1)%256), port: cfg.Port, cport: cfg.Port + PortIncr, m: m,
		sent: map[MsgType]int{}}
	w.nodes = append(w.nodes, sn)
	w.pump()
	return sn
}

func pair(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

func (w *simNet) cutLink(a, b int)  { w.cut[pair(a, b)] = true }
func (w *simNet) healLink(a, b int) { delete(w.cut, pair(a, b)) }
func (w *simNet) reachable(a, b int) bool {
	return !w.cut[pair(a, b)] && !w.nodes[a].down && !w.nodes[b].down
}

func (w *simNet) isolate(a int) {
	for b := range w.nodes {
		if b != a {
			w.cutLink(a, b)
		}
	}
}

func (w *simNet) heal() { w.cut = map[[2]int]bool{} }

// crash stops node a: its connections close on the peers' side.
func (w *simNet) crash(a int) {
	w.nodes[a].down = true
	for k, c := range w.conns {
		if c.a == a || c.b == a {
			delete(w.conns, k)
			if k.node != a {
				w.nodes[k.node].m.LinkDown(w.now, k.link)
			}
		}
	}
	w.pump()
}

// pump executes every node's Ready until none has anything left.
func (w *simNet) pump() {
	for round := 0; round < 1000; round++ {
		busy := false
		for _, sn := range w.nodes {
			if sn.down {
				continue
			}
			rd := sn.m.Ready()
			if err := sn.m.checkSlotGen(); err != nil {
				w.t.Fatalf("node %d: %v", sn.idx, err)
			}
			if w.apply(sn, rd) {
				busy = true
			}
		}
		w.deliverDue()
		if !busy && !w.hasDue() {
			if !w.noConf {
				for _, sn := range w.nodes {
					if err := sn.m.checkInvariants(); err != nil {
						w.t.Fatalf("node %d: %v", sn.idx, err)
					}
					if err := sn.m.checkRouting(); err != nil {
						w.t.Fatalf("node %d: %v", sn.idx, err)
					}
				}
			}
			return
		}
	}
	w.t.Fatal("network did not settle")
}

func (w *simNet) apply(sn *simNode, rd Ready) bool {
	busy := len(rd.Sends)+len(rd.Closes)+len(rd.Connects) > 0
	if w.readyHook != nil {
		w.readyHook(sn, rd)
	}
	if rd.SaveConfig {
		sn.saves++
		if !w.noConf {
			sn.conf = sn.m.RenderNodesConf()
		}
	}
	if rd.Fsync {
		sn.fsyncs++
	}
	if rd.StateChanged {
		sn.states = append(sn.states, rd.State)
	}
	if rd.RoleChange != nil {
		sn.roles = append(sn.roles, *rd.RoleChange)
	}
	if rd.Unpause {
		sn.unpauses++
	}
	if rd.PauseWrites > 0 {
		// The pause is in force at once: nothing executes between
		// Ready and WritesPaused here.
		sn.pauses = append(sn.pauses, rd.PauseWrites)
		if !sn.holdPause {
			sn.m.WritesPaused(w.now)
			busy = true
		}
	}
	if rd.SlotsChanged != nil {
		sn.slotChanges = append(sn.slotChanges, *rd.SlotsChanged)
	}
	sn.deliveries = append(sn.deliveries, rd.Deliveries...)
	sn.events = append(sn.events, rd.Events...)
	for _, id := range rd.Closes {
		c := w.conns[linkKey{sn.idx, id}]
		if c == nil {
			continue
		}
		delete(w.conns, linkKey{c.a, c.la})
		delete(w.conns, linkKey{c.b, c.lb})
		other, olink := c.b, c.lb
		if sn.idx == c.b {
			other, olink = c.a, c.la
		}
		if !w.nodes[other].down {
			w.nodes[other].m.LinkDown(w.now, olink)
		}
	}
	for _, cn := range rd.Connects {
		target := -1
		for _, o := range w.nodes {
			if o.ip == cn.IP && o.cport == cn.CPort {
				target = o.idx
			}
		}
		if target < 0 || target == sn.idx || !w.reachable(sn.idx, target) {
			sn.m.LinkDown(w.now, cn.Link)
			continue
		}
		tn := w.nodes[target]
		in := tn.m.Accepted(w.now, sn.ip, tn.ip)
		c := &simConn{a: sn.idx, b: target, la: cn.Link, lb: in}
		w.conns[linkKey{sn.idx, cn.Link}] = c
		w.conns[linkKey{target, in}] = c
		sn.m.LinkUp(w.now, cn.Link)
	}
	for _, s := range rd.Sends {
		c := w.conns[linkKey{sn.idx, s.Link}]
		if c == nil {
			continue
		}
		to, tl := c.b, c.lb
		if sn.idx == c.b {
			to, tl = c.a, c.la
		}
		sn.sent[s.Msg.Type]++
		if !w.reachable(sn.idx, to) {
			continue
		}
		if w.dropRate > 0 && w.rng.Float64() < w.dropRate {
			continue
		}
		if w.filter != nil && w.filter(sn.idx, to, s.Msg) {
			continue
		}
		w.queue = append(w.queue, inFlight{at: w.now.Add(w.delay), to: to, link: tl, msg: s.Msg})
	}
	return busy
}

func (w *simNet) hasDue() bool {
	for _, f := range w.queue {
		if !f.at.After(w.now) {
			return true
		}
	}
	return false
}

func (w *simNet) deliverDue() {
	var later []inFlight
	due := w.queue
	w.queue = nil
	for _, f := range due {
		if f.at.After(w.now) {
			later = append(later, f)
			continue
		}
		if w.nodes[f.to].down {
			continue
		}
		w.nodes[f.to].m.HandlePacket(w.now, f.link, f.msg)
	}
	w.queue = append(later, w.queue...)
}

// tick advances the clock by one 100 ms step.
func (w *simNet) tick() {
	w.now = w.now.Add(cronPeriod)
	w.deliverDue()
	for i, sn := range w.nodes {
		if !sn.down {
			sn.m.Tick(w.now)
		}
		if w.tickGroup > 0 && (i+1)%w.tickGroup == 0 {
			w.pump()
		}
	}
	w.pump()
	if w.onTick != nil {
		w.onTick()
	}
}

func (w *simNet) run(d time.Duration) {
	for end := w.now.Add(d); w.now.Before(end); {
		w.tick()
	}
}

// until ticks until cond holds, failing after max; it returns the time
// it took.
func (w *simNet) until(max time.Duration, what string, cond func() bool) time.Duration {
	w.t.Helper()
	start := w.now
	for !cond() {
		if w.now.Sub(start) > max {
			w.t.Fatalf("%s: not reached within %v", what, max)
		}
		w.tick()
	}
	return w.now.Sub(start)
}

// meet makes a send CLUSTER MEET to b.
func (w *simNet) meet(a, b int) {
	w.t.Helper()
	nb := w.nodes[b]
	if err := w.nodes[a].m.Meet(w.now, nb.ip, fmt.Sprint(nb.port), ""); err != nil {
		w.t.Fatal(err)
	}
	w.pump()
}

// nodeLine is a parsed CLUSTER NODES line.
type nodeLine struct {
	id, addr, flags, master, link string
	epoch                         string
	slots                         []string
}

func parseNodes(text string) map[string]nodeLine {
	out := map[string]nodeLine{}
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 {
			continue
		}
		out[f[0]] = nodeLine{id: f[0], addr: f[1], flags: f[2], master: f[3], epoch: f[6], link: f[7], slots: f[8:]}
	}
	return out
}

// allKnow reports whether every live node lists every other live node by
// its real id, none in handshake.
func (w *simNet) allKnow() bool {
	for _, a := range w.nodes {
		if a.down {
			continue
		}
		view := parseNodes(a.m.Nodes(false))
		for _, b := range w.nodes {
			if b.down {
				continue
			}
			l, ok := view[b.m.MyID()]
			if !ok || strings.Contains(l.flags, "handshake") || strings.Contains(l.flags, "noaddr") || l.link != "connected" {
				return false
			}
		}
		for _, l := range view {
			if strings.Contains(l.flags, "handshake") {
				return false
			}
		}
	}
	return true
}

func (sn *simNode) hasEvent(t EventType, node string) bool {
	for _, e := range sn.events {
		if e.Type == t && (node == "" || e.Node == node) {
			return true
		}
	}
	return false
}
