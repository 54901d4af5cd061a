package cluster

// The cluster fence: a master with min-replicas-ack n > 0 stops
// acknowledging writes on its own once the masters it has not heard from
// recently could have flagged it FAIL (docs/ARCHITECTURE.md,
// "Acknowledged writes"). It is the cluster's counterpart of the
// Sentinel fence (internal/node/repl/fence.go), and adds nothing to the
// bus.
//
// The gap it closes. The election rule (failover.go, ackRuleMet) reads
// the offsets of my master's replicas after the master was flagged FAIL,
// and assumes the master no longer gets acknowledgements through them. A
// partition that cuts the master from the other masters but not from one
// of its replicas breaks that: the master keeps acknowledging writes
// through that replica after its offset was read, until it sees the
// majority as failed itself (about a node timeout later, CLUSTERDOWN), and
// a write already waiting for its acknowledgement then still gets success.
//
// Heard. A master V is *heard* at s when a PONG from V arrives on my
// outbound link to V answering a PING (or MEET) I sent at s: s, the
// PING's send time, not the PONG's arrival, is what counts, so that a
// PONG proves V received something from me at or after s, whatever the
// delays and whichever direction a partition cuts. (A PING from V proves
// only that I hear V, not that V hears me, which is what V's failure
// detector measures.) A node sends on an inbound link only its PONG
// replies to the PINGs and MEETs that came in on it (Redis 7.0 and this
// machine alike: broadcasts, votes, FAIL and UPDATE go on the sender's
// outbound link), and the link is a TCP stream, so the k-th PONG on a link
// answers its k-th PING; the link keeps the send times of its unanswered
// PINGs in order (pingQueue) and credits each PONG with the oldest. A PONG
// that was dropped, or a PING a peer did not answer, only makes later
// PONGs credit earlier PINGs: never a later time than the true one.
//
// Fenced. Let A be the masters I know other than myself (with or without
// slots: any master's failure report counts toward FAIL, as in Redis's
// clusterProcessGossipSection) and q = size/2 + 1 the FAIL quorum (size:
// the masters serving slots, myself included, Redis's cluster->size). I am
// *fenced* at t while the masters of A not heard within Lease of t are at
// least q: those alone could make the quorum that flags me FAIL. With
// only slot-owning masters and size odd this is "a majority of the masters
// heard, myself included"; with size even one fewer suffices (the quorum
// cannot include me). A fenced master refuses writes before they run
// (NOQUORUM) and a write whose acknowledgement is decided while it is
// fenced gets the UNACKED reply (repl/fence.go; the machine publishes the
// time its fence comes up, Fence).
//
// The bound. A node Y flags me PFAIL at p only when it has received
// nothing from me for more than the node timeout NT: its last reception
// from me was before p − NT. FAIL is decided by some node X at f when the
// failure reports of q masters other than me (each made at some p ≤ f)
// are valid, and a replica asks for votes only after it learnt that FAIL,
// at failTime ≥ f (voters check FAIL too). Suppose I am unfenced at t: at
// most q − 1 masters of A were not heard within Lease, so one master Y of
// the q reporters was heard at s ≥ t − Lease, that is Y received my PING
// at s' ≥ s. If the partition that made Y report me lasts (Y receives
// nothing from me between its PFAIL and the end of the failover), s' is
// before p − NT, so t ≤ s + Lease < p − NT + Lease ≤ f − (NT − Lease) < f.
// The election rule counts a sibling's offset only when it came in the
// PONG answering a PING sent at a ≥ failTime (ackRuleMet): the sibling
// sent that PONG after a ≥ f > t, so the offset it carries includes every
// write I acknowledged with a success reply (acknowledged by that replica
// before t). Lease = NT − NT/20 leaves NT/20 for the clocks' rates.
//
// Assumed: every node has the same cluster-node-timeout; clock rates
// differ by less than 2 %; the nodes agree on the masters and on which
// serve slots while the failure lasts (no resharding onto new masters
// meanwhile); peers follow the bus protocol (one PONG per PING on a link);
// the partition lasts until the failover is over. A master whose
// reporters hear it again before the failover is over (a healed
// partition, a process resumed after SIGSTOP) is unfenced by their fresh
// PONGs; the replicas whose offsets a candidate read no longer
// acknowledge its writes then: they are frozen (freeze.go). Availability:
// a master pings every node whose PONG is older than NT/2 (cron.go), and
// a fenced-capable master also every master it has not heard for
// Lease/2 (pingForFence), so a healthy master's lease is renewed every
// Lease/2 + a tick + a round trip: a round trip under Lease/2 − 100 ms
// (375 ms with NT = 1 s) keeps it unfenced.

import (
	"slices"
	"time"
)

// pingQueueCap bounds the send times a link keeps: PINGs beyond it are
// counted, and their PONGs credit nothing.
const pingQueueCap = 8

// pingQueue is the send times of an outbound link's unanswered PINGs and
// MEETs, oldest first; extra counts those sent while it was full (or
// behind them), whose times are not kept.
type pingQueue struct {
	sent  []time.Time
	extra int
}

// push records a PING sent at t.
func (q *pingQueue) push(t time.Time) {
	if q.extra == 0 && len(q.sent) < pingQueueCap {
		q.sent = append(q.sent, t)
		return
	}
	q.extra++
}

// stale reports whether the queue can no longer be trusted to match
// PONGs to PINGs soon: its oldest PING has waited longer than d at now,
// or PINGs beyond its capacity are outstanding.
func (q *pingQueue) stale(now time.Time, d time.Duration) bool {
	return q.extra > 0 || len(q.sent) > 0 && now.Sub(q.sent[0]) > d
}

// pop returns the send time of the PING a PONG answers, the oldest
// unanswered one; ok is false when its time was not kept.
func (q *pingQueue) pop() (t time.Time, ok bool) {
	if len(q.sent) > 0 {
		t = q.sent[0]
		q.sent = append(q.sent[:0], q.sent[1:]...)
		return t, true
	}
	if q.extra > 0 {
		q.extra--
	}
	return time.Time{}, false
}

// Lease is how long a master's PONG keeps me unfenced: the node timeout
// less 5 %, for the clocks' rates (see the bound above).
func Lease(nodeTimeout time.Duration) time.Duration {
	return nodeTimeout - nodeTimeout/20
}

// creditPong records that n answered, with a PONG on my outbound link,
// the PING I sent at asked.
func creditPong(n *node, asked time.Time) {
	if asked.After(n.answeredPing) {
		n.answeredPing = asked
	}
}

// updateFence recomputes, after every input, the time my fence comes up
// (fenceUntil) with fenceOn: off unless I am a master serving slots with
// min-replicas-ack on.
func (m *Machine) updateFence() {
	me := m.myself
	if m.cfg.MinReplicasAck <= 0 || !me.isMaster() || me.numSlots == 0 {
		m.fenceOn = false
		return
	}
	quorum := m.size/2 + 1
	m.fenceHeard = m.fenceHeard[:0]
	for _, n := range m.order {
		if n == me || !n.isMaster() || n.inHandshake() {
			continue
		}
		m.fenceHeard = append(m.fenceHeard, n.answeredPing)
	}
	// Unfenced while fewer than quorum are unheard: while at least
	// len − quorum + 1 were heard within the lease.
	need := len(m.fenceHeard) - quorum + 1
	if need <= 0 {
		m.fenceOn = false // the others alone cannot flag me FAIL
		return
	}
	slices.SortFunc(m.fenceHeard, func(a, b time.Time) int { return b.Compare(a) })
	m.fenceOn = true
	m.fenceUntil = m.fenceHeard[need-1].Add(Lease(m.cfg.NodeTimeout))
}

// pingForFence PINGs, from Tick, every master I have not heard from for
// half the lease and have no PING in flight to, while my fence is kept;
// and it closes (for the cron to reopen) an outbound link to a master
// whose oldest PING has been unanswered for a lease: a PONG lost on a
// live link (DEBUG DROP-CLUSTER-PACKET-FILTER, a packet of another
// protocol version) would otherwise shift every later credit to an
// older PING for good, and with PINGs coming in, Redis's stuck-link
// check (no data for NT/2) never fires. A new link starts a new queue.
// With Redis's cadence alone (a PING once the last PONG is older than
// NT/2) a lease would be renewed only after NT/2 + a tick + two round
// trips, leaving 350 ms less two round trips with NT = 1 s: a loaded
// machine fenced healthy masters now and then (the fault harness's
// majority side). These are ordinary PINGs; nothing new on the bus.
func (m *Machine) pingForFence() {
	if !m.fenceOn {
		return
	}
	lease := Lease(m.cfg.NodeTimeout)
	for _, n := range m.order {
		if n == m.myself || !n.isMaster() || n.link == nil || !n.link.up || n.inHandshake() {
			continue
		}
		if n.link.pings.stale(m.now, lease) {
			m.freeLink(n.link)
			continue
		}
		if n.pingSent.IsZero() && m.now.Sub(n.answeredPing) > lease/2 {
			m.sendPing(n.link, TypePing)
		}
	}
}

// Fence returns the time from which this node is fenced unless it hears
// from more masters (on), or on false when the fence is off (a replica, a
// master without slots, min-replicas-ack 0, or too few other masters to
// flag it FAIL). Safe to read between inputs: only an input can move it
// earlier.
func (m *Machine) Fence() (until time.Time, on bool) {
	return m.fenceUntil, m.fenceOn
}

// Fenced reports whether the fence is up at now (Fence).
func (m *Machine) Fenced(now time.Time) bool {
	return m.fenceOn && now.After(m.fenceUntil)
}
