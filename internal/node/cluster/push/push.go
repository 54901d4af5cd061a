// Package push is the topology push: a cluster node tells its own
// clients when its view of the slot map changes, so that they re-route at
// once instead of waiting for a MOVED or a periodic CLUSTER SLOTS. It is node-local (never sent
// on the bus): every node announces what it learns, to the clients
// connected to it. Two forms, both built from the same diff of two
// published routings (over the slots the fills between them changed,
// which each published routing lists, not over all 16384):
//
//   - a message on the reserved channel Channel (SUBSCRIBE to
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
//
//   - for RESP3 clients that sent CLIENT MAINT_NOTIFICATIONS ON (go-redis
//     v9 does by default), the SMIGRATED push that go-redis's cluster
//     client reloads its slot map on:
//     >3 SMIGRATED <seq> [[<from ip:port> <to ip:port> <slots>] ...].
//
// Announcements are paced by a token bucket (pacer): up to
// Burst of them leave at once, each as soon as the change is
// published, and beyond that one per Coalesce, carrying every
// change that arrived meanwhile; a burst (a reshard's SETSLOTs, a
// failover's UPDATEs) costs a few messages, not one per slot, while a
// lone change after a short pause is never held back.
//
// The node implements Host (its published routing, its PUBLISH, its log)
// and hands its clients over as Client; it calls Pusher.Hook after every
// batch of the bus, once the batch's routing is published.
package push

import (
	"context"
	"log/slog"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/resp"
)

// Channel is the reserved node-local channel of the topology push.
const Channel = "__shardis__:cluster"

// Coalesce is the least time between two announcements once a burst has
// used up Burst.
const Coalesce = 10 * time.Millisecond

// Burst is how many announcements may leave back to back.
const Burst = 4

// Host is what the pusher needs of the node.
type Host interface {
	// Routing returns the routing the node serves with now (published
	// by the bus after each batch, never modified once published).
	Routing() *cluster.Routing
	// Publish delivers msg to the channel's local subscribers and
	// returns how many received it.
	Publish(channel string, msg []byte) int
	// Logger receives the announcements' debug log.
	Logger() *slog.Logger
}

// Client is a connection that may ask for SMIGRATED pushes. It must be
// comparable (a pointer, or a struct of one), as it keys a set.
type Client interface {
	// Closed reports whether the connection is gone.
	Closed() bool
	// RESP3 reports whether the connection speaks RESP3 (pushes).
	RESP3() bool
	// Push appends output produced by another goroutine and makes sure
	// it gets written.
	Push(fn func(b []byte) []byte)
}

// pacer is a token bucket in the form of a theoretical arrival time
// (GCRA): an announcement may leave at now when at most burst-1
// intervals of credit are owed, so in any period t at most
// burst + t/interval announcements leave. No clock inside: the caller
// passes now.
type pacer struct {
	interval time.Duration
	burst    int
	// tat is when the bucket would be full again if nothing more were
	// sent; zero or past: full.
	tat time.Time
}

// delay returns how long an announcement must wait at now (0: send).
func (p *pacer) delay(now time.Time) time.Duration {
	if !p.tat.After(now) {
		return 0 // full (and no overflow from a zero tat)
	}
	return max(p.tat.Sub(now)-time.Duration(p.burst-1)*p.interval, 0)
}

// sent records an announcement at now.
func (p *pacer) sent(now time.Time) {
	if p.tat.Before(now) {
		p.tat = now
	}
	p.tat = p.tat.Add(p.interval)
}

// slotSet is a set of slots, walked in ascending order.
type slotSet [cluster.NumSlots / 64]uint64

func (s *slotSet) add(slot int) { s[slot>>6] |= 1 << (slot & 63) }

// each calls fn for every slot in s, ascending.
func (s *slotSet) each(fn func(slot int)) {
	for w, word := range s {
		for word != 0 {
			fn(w<<6 | bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
}

// Pusher diffs the routings the bus publishes and announces the changes
// from its own goroutine, so the bus never formats or writes.
type Pusher struct {
	h    Host
	stop <-chan struct{}
	// wake is the bus's doorbell to the pusher goroutine.
	wake chan struct{}
	// epoch is the machine's current epoch at the last Hook.
	epoch atomic.Uint64
	// rang is when the bus last rang with a new routing or events (Unix
	// ns), for the announcement's debug log.
	rang atomic.Int64

	mu sync.Mutex
	// latest is the routing the bus last rang for; dirty holds the slots
	// changed from the routing last announced to latest, or dirtyAll
	// says any may have (a publication was not seen, or a fill looked
	// at every slot).
	latest   *cluster.Routing
	dirty    slotSet
	dirtyAll bool
	// events are fail/recover/failover lines not announced yet (kind, id).
	events [][2]string
	// maint are the RESP3 clients that asked for SMIGRATED; closed ones
	// are dropped on the next announcement or opt-in.
	maint map[Client]struct{}

	// sent is the routing last announced (pusher goroutine only).
	sent *cluster.Routing
	// seq numbers the SMIGRATED pushes (pusher goroutine only).
	seq int64
	// pace spaces the announcements (pusher goroutine only).
	pace pacer
}

// Start returns a pusher announcing from the host's current routing on,
// with its goroutine running until stop is closed.
func Start(h Host, stop <-chan struct{}) *Pusher {
	p := newPusher(h, stop)
	go p.run()
	return p
}

// newPusher is Start without the goroutine.
func newPusher(h Host, stop <-chan struct{}) *Pusher {
	p := &Pusher{h: h, stop: stop, wake: make(chan struct{}, 1), maint: map[Client]struct{}{},
		pace: pacer{interval: Coalesce, burst: Burst}}
	p.sent = h.Routing()
	p.latest = p.sent
	return p
}

// Hook runs on the bus after every batch (under the machine's lock, so
// calls never overlap), once the batch's routing has been published: it
// notes what the clients must be told and wakes the pusher goroutine.
func (p *Pusher) Hook(m *cluster.Machine, rd *cluster.Ready) {
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
	route := p.h.Routing()
	p.mu.Lock()
	if route == p.latest && len(evs) == 0 {
		p.mu.Unlock()
		return
	}
	if route != p.latest {
		p.noteChanged(route)
	}
	p.events = append(p.events, evs...)
	p.mu.Unlock()
	p.rang.Store(time.Now().UnixNano())
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// noteChanged records the slots route changed from latest (mu held).
func (p *Pusher) noteChanged(route *cluster.Routing) {
	prev := p.latest
	p.latest = route
	if p.dirtyAll {
		return
	}
	changed, ok := route.ChangedSlots()
	if prev == nil || route == nil || !ok || route.Seq != prev.Seq+1 {
		// A fill of every slot, or a publication this hook never saw:
		// the next announcement compares every slot.
		p.dirtyAll = true
		return
	}
	for _, s := range changed {
		p.dirty.add(s)
	}
}

// run announces changes as the pacer allows: at once while the bucket
// has credit, else when it has; changes that arrive while it waits are
// merged into that announcement.
func (p *Pusher) run() {
	for {
		select {
		case <-p.wake:
		case <-p.stop:
			return
		}
		if d := p.pace.delay(time.Now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.stop:
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
func (p *Pusher) announce() bool {
	p.mu.Lock()
	cur, evs := p.latest, p.events
	p.events = nil
	var ch *slotSet
	if !p.dirtyAll {
		ch = new(slotSet)
		*ch = p.dirty
	}
	p.dirty, p.dirtyAll = slotSet{}, false
	p.mu.Unlock()
	prev := p.sent
	p.sent = cur
	epoch := p.epoch.Load()
	lines := topologyLines(prev, cur, epoch, evs, ch)
	if len(lines) == 0 {
		return false
	}
	n := p.h.Publish(Channel, []byte(strings.Join(lines, "\n")))
	var maint int
	if moves := slotMoves(prev, cur, ch); len(moves) > 0 {
		p.seq++
		maint = p.pushSMigrated(p.seq, moves)
	}
	if log := p.h.Logger(); log.Enabled(context.Background(), slog.LevelDebug) {
		log.Debug("cluster: topology announced", "lines", len(lines), "first", lines[0],
			"subscribers", n, "smigrated", maint, "since_change", time.Since(time.Unix(0, p.rang.Load())))
	}
	return true
}

// eachSlot calls fn for the slots of ch, ascending, or for every slot
// when ch is nil.
func eachSlot(ch *slotSet, fn func(slot int)) {
	if ch != nil {
		ch.each(fn)
		return
	}
	for s := range cluster.NumSlots {
		fn(s)
	}
}

// routeAddr is a node's "ip:port" as CLUSTER SLOTS gives it.
func routeAddr(n cluster.RouteNode) string {
	return n.IP + ":" + strconv.Itoa(n.Port)
}

// ownerID returns the ID of slot's owner in r, "" when unserved.
func ownerID(r *cluster.Routing, slot int) string {
	if o := r.Owner(slot); o >= 0 && int(o) < len(r.Nodes) {
		return r.Nodes[o].ID
	}
	return ""
}

// topologyLines renders the changes from prev to cur, and the events,
// as the reserved channel's lines. Only the slots of ch are compared
// (nil: every slot); ch must hold every slot whose owner differs.
func topologyLines(prev, cur *cluster.Routing, epoch uint64, evs [][2]string, ch *slotSet) []string {
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
		eachSlot(ch, func(s int) {
			id := ownerID(cur, s)
			if id == ownerID(prev, s) {
				return
			}
			if _, ok := gained[id]; !ok {
				order = append(order, id)
			}
			gained[id] = append(gained[id], s)
		})
		for _, id := range order {
			if id == "" {
				lines = append(lines, head+"unassigned - - "+consistent.SlotRanges(gained[id]))
				continue
			}
			n := cur.Nodes[cur.Owner(gained[id][0])]
			lines = append(lines, head+"slots "+id+" "+routeAddr(n)+" "+consistent.SlotRanges(gained[id])+
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

// slotMove is one SMIGRATED triplet: slots that went from one served
// owner to another.
type slotMove struct{ from, to, slots string }

// slotMoves lists, per (old owner, new owner) pair, the slots of ch (nil:
// every slot) that moved between two served owners (SMIGRATED says
// nothing of unassigned slots).
func slotMoves(prev, cur *cluster.Routing, ch *slotSet) []slotMove {
	if prev == nil || cur == nil {
		return nil
	}
	type pair struct{ from, to string }
	var order []pair
	moved := map[pair][]int{}
	eachSlot(ch, func(s int) {
		po, co := prev.Owner(s), cur.Owner(s)
		if po < 0 || co < 0 || int(po) >= len(prev.Nodes) || int(co) >= len(cur.Nodes) ||
			prev.Nodes[po].ID == cur.Nodes[co].ID {
			return
		}
		k := pair{routeAddr(prev.Nodes[po]), routeAddr(cur.Nodes[co])}
		if _, ok := moved[k]; !ok {
			order = append(order, k)
		}
		moved[k] = append(moved[k], s)
	})
	out := make([]slotMove, 0, len(order))
	for _, k := range order {
		out = append(out, slotMove{k.from, k.to, consistent.SlotRanges(moved[k])})
	}
	return out
}

// pushSMigrated sends the SMIGRATED push to the clients that asked for
// maintenance notifications and returns how many it was sent to.
func (p *Pusher) pushSMigrated(seq int64, moves []slotMove) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.maint {
		if c.Closed() {
			delete(p.maint, c)
			continue
		}
		if !c.RESP3() {
			continue
		}
		c.Push(func(b []byte) []byte {
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

// SetMaint records whether c wants SMIGRATED pushes.
func (p *Pusher) SetMaint(c Client, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for o := range p.maint {
		if o.Closed() {
			delete(p.maint, o)
		}
	}
	if on {
		p.maint[c] = struct{}{}
	} else {
		delete(p.maint, c)
	}
}
