package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// loneMachine is a machine with peers whose outbound links are up but
// which never answer: the tests step its timers by hand.
func loneMachine(t *testing.T, peers int, now time.Time) (*Machine, []*node) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Port = 7000
	cfg.NodeTimeout = 2 * time.Second
	m, err := New(cfg, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	m.Ready()
	m.begin(now)
	var ps []*node
	for i := 0; i < peers; i++ {
		n := m.createNode(now, Name{}, FlagMaster)
		n.ip, n.port, n.cport = fmt.Sprintf("10.0.2.%d", i), 7000, 17000
		n.pongReceived = now
		m.addNode(n)
		m.newLink(n, false).up = true
		ps = append(ps, n)
	}
	return m, ps
}

func pingsTo(rd Ready, m *Machine) map[string]int {
	out := map[string]int{}
	for _, s := range rd.Sends {
		if s.Msg.Type == TypePing {
			out[m.links[s.Link].node.name.String()]++
		}
	}
	return out
}

func TestPingSchedule(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	m, peers := loneMachine(t, 4, t0)
	// Ticks at 100 ms: no PING until the 10th tick (clusterCron's
	// iteration%10), then exactly one, to a node with no ping in flight.
	now := t0
	for i := 1; i <= 10; i++ {
		now = now.Add(cronPeriod)
		m.Tick(now)
		got := pingsTo(m.Ready(), m)
		want := 0
		if i == 10 {
			want = 1
		}
		total := 0
		for _, c := range got {
			total += c
		}
		if total != want {
			t.Fatalf("tick %d: %d PINGs, want %d", i, total, want)
		}
	}
	// After node timeout / 2 without a PONG every other node is pinged
	// once (the one pinged at 900 ms has a ping in flight already).
	inFlight := 0
	for _, p := range peers {
		if !p.pingSent.IsZero() {
			inFlight++
		}
	}
	if inFlight != 1 {
		t.Fatalf("%d pings in flight", inFlight)
	}
	pinged := map[string]int{}
	for now.Sub(t0) <= time.Second+cronPeriod {
		now = now.Add(cronPeriod)
		m.Tick(now)
		for k, v := range pingsTo(m.Ready(), m) {
			pinged[k] += v
		}
	}
	if len(pinged) != 3 {
		t.Fatalf("pinged %v, want the 3 idle peers once each", pinged)
	}
	for _, c := range pinged {
		if c != 1 {
			t.Fatalf("pinged %v", pinged)
		}
	}
	// No PONG: PFAIL once the ping is older than the node timeout, not
	// before.
	first := peers[0]
	for _, p := range peers {
		if p.pingSent.Before(first.pingSent) {
			first = p
		}
	}
	for now.Sub(first.pingSent) <= 2*time.Second {
		if first.timedOut() {
			t.Fatalf("PFAIL %v after the ping", now.Sub(first.pingSent))
		}
		now = now.Add(cronPeriod)
		m.Tick(now)
		m.Ready()
	}
	if !first.timedOut() {
		t.Fatalf("no PFAIL %v after the ping", now.Sub(first.pingSent))
	}
}

func TestStuckLinkIsReconnected(t *testing.T) {
	// A link older than the node timeout, with a ping in flight for more
	// than timeout/2 and no data: the cron drops it and asks for a new one.
	t0 := time.Unix(1_700_000_000, 0)
	m, peers := loneMachine(t, 1, t0)
	p := peers[0]
	old := p.link.id
	now := t0
	var closed, connected bool
	for now.Sub(t0) < 5*time.Second && !(closed && connected) {
		now = now.Add(cronPeriod)
		m.Tick(now)
		rd := m.Ready()
		for _, c := range rd.Closes {
			if c == old {
				closed = true
				if now.Sub(t0) <= 2*time.Second {
					t.Fatalf("link dropped %v after creation, before the node timeout", now.Sub(t0))
				}
			}
		}
		for _, c := range rd.Connects {
			if c.Node == p.name.String() && c.Link != old {
				connected = true
			}
		}
	}
	if !closed || !connected {
		t.Fatalf("closed %v reconnect %v", closed, connected)
	}
}

func TestHostileNames(t *testing.T) {
	// Gossip about invalid or null ids, and a handshake PONG from an
	// invalid id, never enter the node table (and never panic).
	t0 := time.Unix(1_700_000_000, 0)
	m, peers := loneMachine(t, 1, t0)
	p := peers[0]
	in := m.Accepted(t0, "10.0.2.0", "10.0.0.1")
	ping := &Msg{Header: Header{Ver: ProtoVer, Type: TypePing, Sender: p.name, Port: 7000, CPort: 17000}}
	bad := nameOf(strings.Repeat("Z", 40))
	for i := 0; i < 2; i++ {
		ping.Gossip = []Gossip{{Name: Name{}, IP: ipField("10.9.9.9"), Port: 1, CPort: 2},
			{Name: bad, IP: ipField("10.9.9.8"), Port: 1, CPort: 2}}
		m.HandlePacket(t0, in, ping)
	}
	if len(m.KnownNodes()) != 2 {
		t.Fatalf("%d nodes after hostile gossip", len(m.KnownNodes()))
	}
	if err := m.Meet(t0, "10.9.9.7", "7000", ""); err != nil {
		t.Fatal(err)
	}
	m.Tick(t0.Add(cronPeriod))
	var hs LinkID
	for _, c := range m.Ready().Connects {
		if c.IP == "10.9.9.7" {
			hs = c.Link
		}
	}
	m.LinkUp(t0, hs)
	m.HandlePacket(t0, hs, &Msg{Header: Header{Ver: ProtoVer, Type: TypePong, Sender: bad, Port: 7000, CPort: 17000}})
	if _, ok := m.Node(bad.String()); ok || m.checkInvariants() != nil {
		t.Fatalf("invalid sender renamed a handshake node: %v", m.checkInvariants())
	}
}

func TestRandomPacketsKeepInvariants(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomPacketsKeepInvariants(t, seed) })
	}
}

func randomPacketsKeepInvariants(t *testing.T, seed uint64) {
	// Thousands of random packets from a small pool of ids (some invalid,
	// one of them our own), on random links, with random flags, epochs and
	// slot bitmaps, interleaved with ticks and link events: the machine
	// never panics and its tables stay consistent.
	t0 := time.Unix(1_700_000_000, 0)
	m, peers := loneMachine(t, 3, t0)
	r := rand.New(rand.NewPCG(11+seed, 12))
	names := []Name{m.myself.name, {}, nameOf(strings.Repeat("Z", 40))}
	for _, p := range peers {
		names = append(names, p.name)
	}
	for i := 0; i < 4; i++ {
		var n Name
		copy(n[:], fmt.Sprintf("%040d", i))
		names = append(names, n)
	}
	pick := func() Name { return names[r.IntN(len(names))] }
	var links []LinkID
	now := t0
	for i := 0; i < 5000; i++ {
		now = now.Add(time.Duration(r.IntN(50)) * time.Millisecond)
		switch r.IntN(10) {
		case 0:
			links = append(links, m.Accepted(now, "10.0.3.1", "10.0.0.1"))
		case 1:
			m.Tick(now)
		case 2:
			if len(links) > 0 {
				m.LinkDown(now, links[r.IntN(len(links))])
			}
		default:
			var ids []LinkID
			for id := range m.links {
				ids = append(ids, id)
			}
			slices.Sort(ids) // map order would make the run differ each time
			if len(ids) == 0 {
				continue
			}
			msg := &Msg{Header: Header{Ver: ProtoVer, Type: MsgType(r.IntN(TypeCount + 1)), Sender: pick(),
				CurrentEpoch: uint64(r.IntN(5)), ConfigEpoch: uint64(r.IntN(5)),
				Flags: uint16(r.IntN(1024)), Port: 7000, CPort: 17000}}
			if r.IntN(2) == 0 {
				msg.SlaveOf = pick()
			}
			for s := r.IntN(NumSlots); s < NumSlots && r.IntN(20) != 0; s += 1 + r.IntN(3000) {
				msg.MySlots.Set(s)
			}
			for g := r.IntN(4); g > 0; g-- {
				msg.Gossip = append(msg.Gossip, Gossip{Name: pick(), Flags: uint16(r.IntN(1024)),
					IP: ipField("10.0.3.2"), Port: 7001, CPort: 17001, PongReceived: uint32(now.Unix())})
			}
			msg.FailAbout, msg.UpdateNode = pick(), pick()
			msg.UpdateConfigEpoch = uint64(r.IntN(6))
			slots := msg.MySlots
			msg.UpdateSlots = &slots
			m.HandlePacket(now, ids[r.IntN(len(ids))], msg)
		}
		m.Ready()
		if err := m.checkInvariants(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}
