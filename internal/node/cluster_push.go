package node

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/resp"
)

// Topology push: a cluster node tells its own clients when its view of
// the slot map changes, so that they re-route at once instead of waiting
// for a MOVED or a periodic CLUSTER SLOTS. It is node-local (never sent
// on the bus): every node announces what it learns, to the clients
// connected to it. Two forms, both built from the same diff of two
// published routings:
//
//   - a message on the reserved channel TopologyChannel (SUBSCRIBE to
//     it), one line per change, "\n"-separated:
//
//     epoch <current-epoch> <event> <node-id> <ip:port> [<slots>] [<key>=<value>...]
//
//     event is "slots" (the node now serves <slots>: a reshard, a
//     failover's promoted replica, a whole-slot migration's claim;
//     followed by config-epoch=<n>, the new owner's config epoch as this
//     node knows it, by which a client orders notices per slot: the
//     higher config epoch wins, Redis's rule),
//     "unassigned" (<slots> are served by no node; id and address "-"),
//     "fail" and "recover" (the node was flagged FAIL / the flag was
//     cleared), "join" and "leave" (the node entered / left this node's
//     table), "address" (the node's address changed) and "failover"
//     (this node won a failover election). <slots> is comma-separated
//     slots and start-end ranges, "0-5460,5462".
//   - for RESP3 clients that sent CLIENT MAINT_NOTIFICATIONS ON (go-redis
//     v9 does by default), the SMIGRATED push that go-redis's cluster
//     client reloads its slot map on:
//     >3 SMIGRATED <seq> [[<from ip:port> <to ip:port> <slots>] ...].
//
// Announcements are paced by a token bucket (topologyPacer): up to
// topologyBurst of them leave at once, each as soon as the change is
// published, and beyond that one per topologyCoalesce, carrying every
// change that arrived meanwhile; a burst (a reshard's SETSLOTs, a
// failover's UPDATEs) costs a few messages, not one per slot, while a
// lone change after a short pause is never held back.

// TopologyChannel is the reserved node-local channel of the topology push.
const TopologyChannel = "__shardis__:cluster"

// topologyCoalesce is the least time between two announcements once a
// burst has used up topologyBurst.
const topologyCoalesce = 10 * time.Millisecond

// topologyBurst is how many announcements may leave back to back.
const topologyBurst = 4

// topologyPacer is a token bucket in the form of a theoretical arrival
// time (GCRA): an announcement may leave at now when at most burst-1
// intervals of credit are owed, so in any period t at most
// burst + t/interval announcements leave. No clock inside: the caller
// passes now.
type topologyPacer struct {
	interval time.Duration
	burst    int
	// tat is when the bucket would be full again if nothing more were
	// sent; zero or past: full.
	tat time.Time
}

// delay returns how long an announcement must wait at now (0: send).
func (p *topologyPacer) delay(now time.Time) time.Duration {
	if !p.tat.After(now) {
		return 0 // full (and no overflow from a zero tat)
	}
	return max(p.tat.Sub(now)-time.Duration(p.burst-1)*p.interval, 0)
}

// sent records an announcement at now.
func (p *topologyPacer) sent(now time.Time) {
	if p.tat.Before(now) {
		p.tat = now
	}
	p.tat = p.tat.Add(p.interval)
}

// topologyPusher diffs the routings the bus loop publishes and announces
// the changes from its own goroutine, so the loop never formats or writes.
type topologyPusher struct {
	cm *clusterMode
	// wake is the loop's doorbell to the pusher goroutine.
	wake chan struct{}
	// seen is the routing the loop last rang for (loop-owned).
	seen *cluster.Routing
	// epoch is the machine's current epoch at the last hook call.
	epoch atomic.Uint64
	// rang is when the loop last rang with a new routing or events (Unix
	// ns), for the announcement's debug log.
	rang atomic.Int64

	mu sync.Mutex
	// events are fail/recover/failover lines not announced yet (kind, id).
	events [][2]string
	// maint are the RESP3 clients that asked for SMIGRATED; closed ones
	// are dropped on the next announcement or opt-in.
	maint map[*Client]struct{}

	// sent is the routing last announced (pusher goroutine only).
	sent *cluster.Routing
	// seq numbers the SMIGRATED pushes (pusher goroutine only).
	seq int64
	// pace spaces the announcements (pusher goroutine only).
	pace topologyPacer
}

// pusher returns the node's topology pusher, starting it on first use.
func (cm *clusterMode) pusher() *topologyPusher {
	cm.pushOnce.Do(func() {
		p := &topologyPusher{cm: cm, wake: make(chan struct{}, 1), maint: map[*Client]struct{}{},
			pace: topologyPacer{interval: topologyCoalesce, burst: topologyBurst}}
		p.sent = cm.Routing()
		p.seen = p.sent
		cm.push = p
		go p.run()
	})
	return cm.push
}

// pushTopology runs in the bus loop after every Ready, once the routing
// has been published: it notes what the clients must be told and wakes
// the pusher goroutine.
func (cm *clusterMode) pushTopology(m *cluster.Machine, rd *cluster.Ready) {
	p := cm.pusher()
	p.epoch.Store(m.CurrentEpoch())
	var evs [][2]string
	for _, ev := range rd.Events {
		switch ev.Type {
		case cluster.EventFail:
			evs = append(evs, [2]string{"fail", ev.Node})
		case cluster.EventFailCleared:
			evs = append(evs, [2]string{"recover", ev.Node})
		case cluster.EventFailoverWon:
			evs = append(evs, [2]string{"failover", ev.Node})
		}
	}
	route := cm.Routing()
	if route == p.seen && len(evs) == 0 {
		return
	}
	p.seen = route
	p.rang.Store(time.Now().UnixNano())
	if len(evs) > 0 {
		p.mu.Lock()
		p.events = append(p.events, evs...)
		p.mu.Unlock()
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run announces changes as the pacer allows: at once while the bucket
// has credit, else when it has; changes that arrive while it waits are
// merged into that announcement.
func (p *topologyPusher) run() {
	for {
		select {
		case <-p.wake:
		case <-p.cm.Stopping():
			return
		}
		if d := p.pace.delay(time.Now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.cm.Stopping():
				t.Stop()
				return
			}
		}
		if p.announce() {
			p.pace.sent(time.Now())
		}
		// else nothing clients see changed (an open slot): no credit used
	}
}

// announce sends what changed since the last announcement and reports
// whether there was anything to send.
func (p *topologyPusher) announce() bool {
	cur := p.cm.Routing()
	prev := p.sent
	p.sent = cur
	p.mu.Lock()
	evs := p.events
	p.events = nil
	p.mu.Unlock()
	epoch := p.epoch.Load()
	lines := topologyLines(prev, cur, epoch, evs)
	if len(lines) == 0 {
		return false
	}
	n := p.cm.srv.pubsub.publish(TopologyChannel, []byte(strings.Join(lines, "\n")))
	var maint int
	if moves := slotMoves(prev, cur); len(moves) > 0 {
		p.seq++
		maint = p.pushSMigrated(p.seq, moves)
	}
	if log := p.cm.srv.log; log.Enabled(context.Background(), slog.LevelDebug) {
		log.Debug("cluster: topology announced", "lines", len(lines), "first", lines[0],
			"subscribers", n, "smigrated", maint, "since_change", time.Since(time.Unix(0, p.rang.Load())))
	}
	return true
}

// routeAddr is a node's "ip:port" as CLUSTER SLOTS gives it.
func routeAddr(n cluster.RouteNode) string {
	return n.IP + ":" + strconv.Itoa(n.Port)
}

// ownerID returns the ID of slot's owner in r, "" when unserved.
func ownerID(r *cluster.Routing, slot int) string {
	if o := r.Owner[slot]; o >= 0 && int(o) < len(r.Nodes) {
		return r.Nodes[o].ID
	}
	return ""
}

// topologyLines renders the changes from prev to cur, and the events,
// as the reserved channel's lines.
func topologyLines(prev, cur *cluster.Routing, epoch uint64, evs [][2]string) []string {
	head := "epoch " + strconv.FormatUint(epoch, 10) + " "
	var lines []string
	if prev != nil && cur != nil {
		before := map[string]cluster.RouteNode{}
		for _, n := range prev.Nodes {
			before[n.ID] = n
		}
		now := map[string]bool{}
		for _, n := range cur.Nodes {
			now[n.ID] = true
			if b, ok := before[n.ID]; !ok {
				lines = append(lines, head+"join "+n.ID+" "+routeAddr(n))
			} else if routeAddr(b) != routeAddr(n) {
				lines = append(lines, head+"address "+n.ID+" "+routeAddr(n))
			}
		}
		// Slots per new owner, in slot order of the first gained slot.
		var order []string
		gained := map[string][]int{}
		for s := range cluster.NumSlots {
			id := ownerID(cur, s)
			if id == ownerID(prev, s) {
				continue
			}
			if _, ok := gained[id]; !ok {
				order = append(order, id)
			}
			gained[id] = append(gained[id], s)
		}
		for _, id := range order {
			if id == "" {
				lines = append(lines, head+"unassigned - - "+slotRanges(gained[id]))
				continue
			}
			n := cur.Nodes[cur.Owner[gained[id][0]]]
			lines = append(lines, head+"slots "+id+" "+routeAddr(n)+" "+slotRanges(gained[id])+
				" config-epoch="+strconv.FormatUint(n.ConfigEpoch, 10))
		}
		for _, n := range prev.Nodes {
			if !now[n.ID] {
				lines = append(lines, head+"leave "+n.ID+" "+routeAddr(n))
			}
		}
	}
	for _, ev := range evs {
		addr := "-"
		if cur != nil {
			for _, n := range cur.Nodes {
				if n.ID == ev[1] {
					addr = routeAddr(n)
				}
			}
		}
		lines = append(lines, head+ev[0]+" "+ev[1]+" "+addr)
	}
	return lines
}

// slotRanges renders ascending slots as "a-b,c,...".
func slotRanges(slots []int) string {
	var b strings.Builder
	for i := 0; i < len(slots); {
		j := i
		for j+1 < len(slots) && slots[j+1] == slots[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(slots[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(slots[j]))
		}
		i = j + 1
	}
	return b.String()
}

// slotMove is one SMIGRATED triplet: slots that went from one served
// owner to another.
type slotMove struct{ from, to, slots string }

// slotMoves lists, per (old owner, new owner) pair, the slots that moved
// between two served owners (SMIGRATED says nothing of unassigned slots).
func slotMoves(prev, cur *cluster.Routing) []slotMove {
	if prev == nil || cur == nil {
		return nil
	}
	type pair struct{ from, to string }
	var order []pair
	moved := map[pair][]int{}
	for s := range cluster.NumSlots {
		po, co := prev.Owner[s], cur.Owner[s]
		if po < 0 || co < 0 || int(po) >= len(prev.Nodes) || int(co) >= len(cur.Nodes) ||
			prev.Nodes[po].ID == cur.Nodes[co].ID {
			continue
		}
		k := pair{routeAddr(prev.Nodes[po]), routeAddr(cur.Nodes[co])}
		if _, ok := moved[k]; !ok {
			order = append(order, k)
		}
		moved[k] = append(moved[k], s)
	}
	out := make([]slotMove, 0, len(order))
	for _, k := range order {
		out = append(out, slotMove{k.from, k.to, slotRanges(moved[k])})
	}
	return out
}

// pushSMigrated sends the SMIGRATED push to the clients that asked for
// maintenance notifications and returns how many it was sent to.
func (p *topologyPusher) pushSMigrated(seq int64, moves []slotMove) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.maint {
		if c.closed.Load() {
			delete(p.maint, c)
			continue
		}
		if c.proto < 3 {
			continue
		}
		c.push(func(b []byte) []byte {
			b = resp.AppendPushLen(b, 3, 3)
			b = resp.AppendSimple(b, "SMIGRATED")
			b = resp.AppendInt(b, seq)
			b = resp.AppendArrayLen(b, len(moves))
			for _, mv := range moves {
				b = resp.AppendArrayLen(b, 3)
				b = resp.AppendSimple(b, mv.from)
				b = resp.AppendSimple(b, mv.to)
				b = resp.AppendSimple(b, mv.slots)
			}
			return b
		})
		n++
	}
	return n
}

// setMaint records whether c wants SMIGRATED pushes.
func (p *topologyPusher) setMaint(c *Client, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for o := range p.maint {
		if o.closed.Load() {
			delete(p.maint, o)
		}
	}
	if on {
		p.maint[c] = struct{}{}
	} else {
		delete(p.maint, c)
	}
}

// CLIENT MAINT_NOTIFICATIONS ON [moving-endpoint-type <type>] | OFF
//
// The handshake of Redis 8's maintenance notifications, which go-redis v9
// sends on every RESP3 connection. In cluster mode a client that turns
// them on receives the SMIGRATED push when slots change owner; outside
// cluster mode the subcommand does not exist, as in Redis 7.0.
func cmdClientMaintNotifications(c *Client, args [][]byte) {
	cm := c.srv.cluster
	if cm == nil {
		cmdHelpDispatch(c, args)
		return
	}
	switch {
	case eqFold(args[2], "off") && len(args) == 3:
		cm.pusher().setMaint(c, false)
		c.addOK()
	case eqFold(args[2], "on"):
		for i := 3; i < len(args); i += 2 {
			if !eqFold(args[i], "moving-endpoint-type") || i+1 >= len(args) {
				c.addError(errSyntax)
				return
			}
			switch strings.ToLower(string(args[i+1])) {
			case "internal-ip", "internal-fqdn", "external-ip", "external-fqdn", "none":
			default:
				c.addError(errSyntax)
				return
			}
		}
		if c.proto < 3 {
			c.addError("ERR CLIENT MAINT_NOTIFICATIONS ON requires RESP3")
			return
		}
		cm.pusher().setMaint(c, true)
		c.addOK()
	default:
		c.addError(errSyntax)
	}
}
