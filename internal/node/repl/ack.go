package repl

import "sort"

// AckGate is the master's side of min-replicas-ack: the table of the
// replication offsets its eligible replicas acknowledged, the writers
// waiting for their write's offset to be acknowledged by enough of them,
// and the decision when to ask the replicas with REPLCONF GETACK.
//
// A write's reply may leave once Need eligible replicas acknowledged an
// offset at or past the end of the write in the stream. Replies are
// group-committed: one GETACK round serves every writer waiting when it is
// sent, and a writer that arrives while a round is open waits for that
// round's acknowledgements (shardnode replicas acknowledge every applied
// batch while the master asks, so most writers are released by an ACK
// without a round of their own).
//
// AckGate is a pure state machine: no I/O, no clock (times come in as
// arguments, in nanoseconds), no locking; its owner serialises the calls.
type AckGate struct {
	// need is min-replicas-ack; 0 turns the gate off.
	need int
	// reps are the online replicas, in the order they came online.
	reps []ackReplica
	// waiters are the writers waiting, sorted by offset.
	waiters []ackWaiter
	// acked caches Acked(); recomputed when an offset, a replica or need
	// changes.
	acked int64
	// asked is the stream offset just past the last GETACK sent, askedAt
	// when it was sent; a round is open while acked < asked and it is
	// younger than RoundTimeout.
	asked   int64
	askedAt int64
	// roundOpen is set from a GETACK until the round is answered or
	// expires.
	roundOpen bool
}

// RoundTimeout is how long a GETACK round stays open without being
// answered by enough replicas before a waiting writer may send another
// (a replica that died mid-round must not stall later writers' rounds).
const RoundTimeout = int64(50e6)

type ackReplica struct {
	id       int64
	eligible bool
	off      int64
}

type ackWaiter struct {
	off int64
	id  int64
}

// NewAckGate returns a gate that waits for need acknowledgements.
func NewAckGate(need int) *AckGate {
	g := &AckGate{need: need}
	g.recompute()
	return g
}

// SetNeed changes min-replicas-ack (CONFIG SET). Writers already waiting
// keep waiting for the new count; Release reports those it frees.
func (g *AckGate) SetNeed(need int) {
	g.need = need
	g.recompute()
}

// Need returns min-replicas-ack.
func (g *AckGate) Need() int { return g.need }

// Join adds an online replica that acknowledged off so far. eligible says
// whether it counts toward Need (it could be promoted).
func (g *AckGate) Join(id int64, eligible bool, off int64) {
	for i := range g.reps {
		if g.reps[i].id == id {
			g.reps[i].eligible, g.reps[i].off = eligible, max(g.reps[i].off, off)
			g.recompute()
			return
		}
	}
	g.reps = append(g.reps, ackReplica{id: id, eligible: eligible, off: off})
	g.recompute()
}

// SetEligible changes whether replica id counts toward Need.
func (g *AckGate) SetEligible(id int64, eligible bool) {
	for i := range g.reps {
		if g.reps[i].id == id {
			g.reps[i].eligible = eligible
			g.recompute()
			return
		}
	}
}

// Leave removes replica id (its link closed).
func (g *AckGate) Leave(id int64) {
	for i := range g.reps {
		if g.reps[i].id == id {
			g.reps = append(g.reps[:i], g.reps[i+1:]...)
			g.recompute()
			return
		}
	}
}

// Ack records that replica id applied the stream up to off. It reports
// whether the replica is known (online).
func (g *AckGate) Ack(id int64, off int64) bool {
	for i := range g.reps {
		if g.reps[i].id == id {
			if off > g.reps[i].off {
				g.reps[i].off = off
				if g.reps[i].eligible && off > g.acked {
					g.recompute()
				}
			}
			return true
		}
	}
	return false
}

// Eligible returns how many online replicas count toward Need.
func (g *AckGate) Eligible() int {
	n := 0
	for _, r := range g.reps {
		if r.eligible {
			n++
		}
	}
	return n
}

// Acked returns the highest offset at least Need eligible replicas have
// acknowledged, or -1 when fewer than Need eligible replicas are online
// (or Need is 0).
func (g *AckGate) Acked() int64 { return g.acked }

// CountAt returns how many eligible replicas acknowledged off or more.
func (g *AckGate) CountAt(off int64) int {
	n := 0
	for _, r := range g.reps {
		if r.eligible && r.off >= off {
			n++
		}
	}
	return n
}

func (g *AckGate) recompute() {
	g.acked = -1
	if g.need <= 0 {
		return
	}
	var buf [8]int64
	offs := buf[:0]
	for _, r := range g.reps {
		if r.eligible {
			offs = append(offs, r.off)
		}
	}
	if len(offs) < g.need {
		return
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] > offs[j] })
	g.acked = offs[g.need-1]
	if g.acked >= g.asked {
		g.roundOpen = false
	}
}

// Wait registers writer id as waiting for off to be acknowledged. It
// returns false, registering nothing, when off is acknowledged already.
func (g *AckGate) Wait(id int64, off int64) bool {
	if g.acked >= off {
		return false
	}
	i := len(g.waiters)
	g.waiters = append(g.waiters, ackWaiter{off: off, id: id})
	for i > 0 && g.waiters[i-1].off > off {
		g.waiters[i] = g.waiters[i-1]
		i--
	}
	g.waiters[i] = ackWaiter{off: off, id: id}
	return true
}

// Cancel removes writer id from the waiters (its timeout passed or its
// connection closed). It reports whether it was waiting.
func (g *AckGate) Cancel(id int64) bool {
	for i, w := range g.waiters {
		if w.id == id {
			g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// Waiting returns how many writers wait.
func (g *AckGate) Waiting() int { return len(g.waiters) }

// Release removes and returns, appended to dst, the writers whose offset
// is acknowledged now, in offset order.
func (g *AckGate) Release(dst []int64) []int64 {
	k := 0
	for k < len(g.waiters) && g.waiters[k].off <= g.acked {
		dst = append(dst, g.waiters[k].id)
		k++
	}
	if k > 0 {
		g.waiters = append(g.waiters[:0], g.waiters[k:]...)
	}
	return dst
}

// NeedGetAck reports whether a GETACK round should be sent now: a writer
// waits for an offset no open round covers. A round is open from SentGetAck
// until Need replicas acknowledged past it or RoundTimeout passed.
func (g *AckGate) NeedGetAck(now int64) bool {
	if len(g.waiters) == 0 || g.need <= 0 {
		return false
	}
	// A writer past an open round is asked by the next round, sent when
	// this one is answered (group commit) or expires.
	return !g.RoundOpen(now)
}

// SentGetAck records that a GETACK was fed to the stream at now, ending at
// stream offset off.
func (g *AckGate) SentGetAck(now int64, off int64) {
	g.asked, g.askedAt, g.roundOpen = off, now, true
}

// RoundOpen reports whether a GETACK round waits for its answers.
func (g *AckGate) RoundOpen(now int64) bool {
	return g.roundOpen && now-g.askedAt < RoundTimeout
}
