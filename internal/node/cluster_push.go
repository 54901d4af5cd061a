package node

import (
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
//     epoch <current-epoch> <event> <node-id> <ip:port> [<slots>]
//
//     event is "slots" (the node now serves <slots>: a reshard, a
//     failover's promoted replica, a whole-slot migration's claim),
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
// Announcements coalesce: the first change after a quiet period is sent
// at once, and the changes of the following topologyCoalesce are sent
// together in one message, so a burst (a reshard's SETSLOTs, a
// failover's UPDATEs) costs a few messages, not one per slot.

// TopologyChannel is the reserved node-local channel of the topology push.
const TopologyChannel = "__shardis__:cluster"

// topologyCoalesce is the least time between two announcements.
const topologyCoalesce = 10 * time.Millisecond

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
}

// pusher returns the node's topology pusher, starting it on first use.
func (cm *clusterMode) pusher() *topologyPusher {
	cm.pushOnce.Do(func() {
		p := &topologyPusher{cm: cm, wake: make(chan struct{}, 1), maint: map[*Client]struct{}{}}
		p.sent = cm.route.Load()
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
	route := cm.route.Load()
	if route == p.seen && len(evs) == 0 {
		return
	}
	p.seen = route
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

// run announces changes, at most one message per topologyCoalesce.
func (p *topologyPusher) run() {
	for {
		select {
		case <-p.wake:
		case <-p.cm.stop:
			return
		}
		if !p.announce() {
			continue // nothing clients see changed (an open slot): no pause
		}
		t := time.NewTimer(topologyCoalesce)
		select {
		case <-t.C:
		case <-p.cm.stop:
			t.Stop()
			return
		}
	}
}

// announce sends what changed since the last announcement and reports
// whether there was anything to send.
func (p *topologyPusher) announce() bool {
	cur := p.cm.route.Load()
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
	p.cm.srv.pubsub.publish(TopologyChannel, []byte(strings.Join(lines, "\n")))
	if moves := slotMoves(prev, cur); len(moves) > 0 {
		p.seq++
		p.pushSMigrated(p.seq, moves)
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
			lines = append(lines, head+"slots "+id+" "+routeAddr(n)+" "+slotRanges(gained[id]))
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
// maintenance notifications.
func (p *topologyPusher) pushSMigrated(seq int64, moves []slotMove) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	}
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
