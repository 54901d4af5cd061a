package cluster

import (
	"fmt"
	"strconv"
	"time"
)

// Replica elections (Redis 7.0's clusterHandleSlaveFailover and
// clusterSendFailoverAuthIfNeeded). A replica whose master is FAIL waits
// the election delay, asks every node for a vote with a new current
// epoch, counts the votes of masters serving slots, and with a majority
// of them takes its master's slots under that epoch.
//
// The election delay is Redis's:
//
//	delay = 500 ms + uniform[0, 500) ms + rank × 1000 ms
//
// where rank is the number of the master's other replicas (those without
// nofailover) announcing a greater replication offset than mine. The
// fixed 500 ms lets the FAIL broadcast reach every master first (a master
// not knowing the FAIL refuses its vote); the random part separates
// replicas of equal rank; the rank part lets the most up-to-date replica
// ask first, a whole second before the next one, so that it normally
// gets every vote of the epoch before another replica asks.

// Timing constants of cluster.h.
const (
	mfTimeout         = 5 * time.Second   // CLUSTER_MF_TIMEOUT
	mfPauseMult       = 2                 // CLUSTER_MF_PAUSE_MULT
	migrationDelay    = 5 * time.Second   // CLUSTER_SLAVE_MIGRATION_DELAY
	cantFailoverRelog = 300 * time.Second // CLUSTER_CANT_FAILOVER_RELOG_PERIOD
	electionFixed     = 500 * time.Millisecond
	electionRandomMs  = 500
	electionRankDelay = time.Second
)

// Event types of elections, votes, manual failovers and migrations.
const (
	EventCantFailover     EventType = "cant-failover"     // Detail: Redis's "Currently unable to failover" reason
	EventElectionDelayed  EventType = "election-delayed"  // Detail: "<ms> rank <r> offset <o>"
	EventRankUpdated      EventType = "rank-updated"      // Detail: "<rank> +<ms>"
	EventElectionStarted  EventType = "election-started"  // Detail: the election's epoch
	EventVoteGranted      EventType = "vote-granted"      // Node: the replica; Detail: epoch
	EventVoteDenied       EventType = "vote-denied"       // Node: the replica; Detail: why
	EventFailoverWon      EventType = "failover-won"      // Detail: my new config epoch
	EventManualFailover   EventType = "manual-failover"   // Detail: the step
	EventReplicaMigration EventType = "replica-migration" // Node: the orphaned master
)

// Reasons a replica cannot fail over yet (CLUSTER_CANT_FAILOVER_*).
const (
	cantFailoverNone = iota
	cantFailoverDataAge
	cantFailoverWaitingDelay
	cantFailoverExpired
	cantFailoverWaitingVotes
	cantFailoverAckOffsets
)

var cantFailoverText = [...]string{
	cantFailoverDataAge: "Disconnected from master for longer than allowed. " +
		"Please check the 'cluster-replica-validity-factor' configuration option.",
	cantFailoverWaitingDelay: "Waiting the delay before I can start a new failover.",
	cantFailoverExpired:      "Failover attempt expired.",
	cantFailoverWaitingVotes: "Waiting for votes, but majority still not reached.",
	cantFailoverAckOffsets: "Waiting for the offsets of enough replicas to know I hold every acknowledged write " +
		"(min-replicas-ack).",
}

// election is a replica's failover state (server.cluster->failover_auth_*
// and cant_failover_reason). It is never reset: a new election overwrites
// it once the previous one is older than the retry time.
type election struct {
	time  time.Time // when the election may start (zero: never scheduled)
	count int       // votes received for epoch
	sent  bool      // the vote request for this election left
	rank  int       // my rank when the delay was computed
	epoch uint64    // the epoch this election asked votes for
	// round is when my last offset round (failoverAckRound) was sent:
	// the election rule counts only the PONGs answering its PINGs.
	round time.Time

	cantReason  int       // last reason logged (cantFailover*)
	cantLogTime time.Time // when it was logged
}

// MasterLink is implemented by a Local that knows its replication link.
// The election uses it for the replica's data age; without it the last
// packet received on the bus from the master stands in.
type MasterLink interface {
	// MasterLastIO returns the last interaction with the master while
	// the replication link is up, or when it went down otherwise (zero:
	// never connected).
	MasterLastIO() time.Time
}

// authTimeout is how long an election may wait for votes:
// max(2 × node timeout, 2 s); a new one may start after twice that.
func authTimeout(nodeTimeout time.Duration) time.Duration {
	t := 2 * nodeTimeout
	if t < 2*time.Second {
		t = 2 * time.Second
	}
	return t
}

// electionDelay is the delay before a replica of the given rank asks for
// votes; random is in [0, 500).
func electionDelay(rank, random int) time.Duration {
	return electionFixed + time.Duration(random)*time.Millisecond + time.Duration(rank)*electionRankDelay
}

// replicaRank is the number of my master's other replicas that may fail
// over and announce a greater offset than mine (clusterGetSlaveRank).
func (m *Machine) replicaRank() int {
	master := m.myself.slaveOf
	if master == nil {
		return 0
	}
	my := uint64(m.local.ReplOffset())
	rank := 0
	for _, s := range master.slaves {
		if s != m.myself && s.flags&FlagNoFailover == 0 && s.replOffset > my {
			rank++
		}
	}
	return rank
}

// ackReadsNeeded is R−n+1: with n of R eligible replicas acknowledging
// every write, any R−n+1 of them include one holding every acknowledged
// write. n ≤ 0 (the rule off) needs none.
func ackReadsNeeded(eligible, need int) int {
	if need <= 0 {
		return 0
	}
	return max(eligible-need+1, 1)
}

// ackRuleMet is the election rule for acknowledged writes
// (docs/ARCHITECTURE.md, "Acknowledged writes"): with min-replicas-ack n
// and R replicas of my master that may fail over (myself included), I may
// ask for votes only when I know the offsets of at least R−n+1 of them
// read in my current offset round (mine, and those of the siblings that
// answered with a PONG a PING of the round) and none of those is greater
// than mine. Offsets travel in every bus header, but only a PONG
// answering a PING of the round is known to have been sent after the
// round's FAIL reached the sibling, which froze it (freeze.go), and after
// my master was flagged FAIL, which the cluster fence's bound needs
// (fence.go): the round starts after I learnt the FAIL.
func (m *Machine) ackRuleMet() bool {
	n := m.cfg.MinReplicasAck
	master := m.myself.slaveOf
	if n <= 0 || master == nil {
		return true
	}
	my := uint64(m.local.ReplOffset())
	eligible, read := 1, 1 // myself
	round := m.fo.round
	for _, s := range master.slaves {
		if s == m.myself || s.flags&FlagNoFailover != 0 {
			continue
		}
		eligible++
		if !round.IsZero() && !round.Before(master.failTime) && !s.answeredPing.Before(round) {
			if s.replOffset > my {
				return false // a sibling holds more: it is the one to elect
			}
			read++
		}
	}
	return read >= ackReadsNeeded(eligible, n)
}

// failoverAckRound starts an offset round: on my outbound link to each of
// my master's other replicas, a FAIL about my master (which freezes a
// shardnode sibling before it handles what follows, freeze.go) and then a
// PING, whose PONG brings the frozen offset the election rule counts.
func (m *Machine) failoverAckRound() {
	master := m.myself.slaveOf
	if master == nil {
		return
	}
	m.fo.round = m.now
	fail := m.buildHeader(TypeFail)
	fail.FailAbout = master.name
	for _, s := range master.slaves {
		if s == m.myself || s.link == nil || !s.link.up || s.inHandshake() {
			continue
		}
		m.send(s.link, fail)
		old := s.pingSent
		m.sendPing(s.link, TypePing)
		if !old.IsZero() {
			s.pingSent = old // failure detection: the PING in flight stays the oldest
		}
	}
}

// ackRoundAnswered runs the election again when a sibling answered a
// PING of my current offset round (its offset may complete the rule).
func (m *Machine) ackRoundAnswered(n *node, asked time.Time) {
	me := m.myself
	if !m.fo.round.IsZero() && !asked.Before(m.fo.round) && me.isSlave() && n.slaveOf == me.slaveOf && !m.fo.sent {
		m.todo |= todoHandleFailover
	}
}

// ackRoundRetry is how long a round may wait for its PONGs before the
// next one is sent (siblings reconnected, PONGs lost).
func ackRoundRetry(nodeTimeout time.Duration) time.Duration { return nodeTimeout / 2 }

// dataAge is how long the replica has been without news from its master.
func (m *Machine) dataAge() time.Duration {
	var last time.Time
	if ml, ok := m.local.(MasterLink); ok {
		last = ml.MasterLastIO()
	} else if m.myself.slaveOf != nil {
		last = m.myself.slaveOf.dataReceived
	}
	return m.now.Sub(last)
}

// logCantFailover reports why the election cannot proceed, once per
// reason change or every 5 minutes, and not in the first node timeout +
// 5 s after the master's FAIL (clusterLogCantFailover).
func (m *Machine) logCantFailover(reason int) {
	if reason == m.fo.cantReason && m.now.Sub(m.fo.cantLogTime) < cantFailoverRelog {
		return
	}
	m.fo.cantReason = reason
	master := m.myself.slaveOf
	if master != nil && master.failed() && m.now.Sub(master.failTime) < m.cfg.NodeTimeout+5*time.Second {
		return
	}
	m.fo.cantLogTime = m.now
	m.event(EventCantFailover, m.myself.name, cantFailoverText[reason])
}

// handleReplicaFailover runs a replica's election for its failed master,
// or the last part of a manual failover (clusterHandleSlaveFailover): the
// preconditions and data age, failoverWaitDelay, failoverRequestVotes,
// failoverCountVotes and failoverPromote.
func (m *Machine) handleReplicaFailover() {
	m.todo &^= todoHandleFailover
	me := m.myself
	master := me.slaveOf
	manual := !m.mf.end.IsZero() && m.mf.canStart
	if me.isMaster() || master == nil || (!master.failed() && !manual) ||
		(m.cfg.ReplicaNoFailover && !manual) || master.numSlots == 0 {
		m.fo.cantReason = cantFailoverNone
		return
	}
	timeout := m.cfg.NodeTimeout
	// Being cut from the master for the node timeout is the baseline of
	// any failure; only what is beyond counts.
	age := m.dataAge()
	if age > timeout {
		age -= timeout
	}
	if f := m.cfg.ReplicaValidityFactor; f != 0 && !manual &&
		age > m.cfg.ReplPingReplicaPeriod+timeout*time.Duration(f) {
		m.logCantFailover(cantFailoverDataAge)
		return
	}
	authAge := m.now.Sub(m.fo.time)
	if authAge > 2*authTimeout(timeout) {
		m.failoverScheduleElection()
		return
	}
	if m.failoverWaitDelay() {
		return
	}
	if authAge > authTimeout(timeout) {
		m.logCantFailover(cantFailoverExpired)
		return
	}
	ackRule := !manual && m.cfg.MinReplicasAck > 0
	if !m.fo.sent && ackRule {
		if m.fo.round.Before(m.fo.time) || m.fo.round.Before(master.failTime) ||
			m.now.Sub(m.fo.round) > ackRoundRetry(timeout) {
			m.failoverAckRound()
		}
		if !m.ackRuleMet() {
			m.logCantFailover(cantFailoverAckOffsets)
			return
		}
	}
	if !m.fo.sent {
		m.failoverRequestVotes()
		return
	}
	if m.fo.count >= m.size/2+1 {
		if ackRule && m.now.Sub(m.fo.round) > promoteWithin(timeout) {
			// The siblings' freeze may end before my announcement
			// reaches them (freeze.go): this election is over.
			m.logCantFailover(cantFailoverExpired)
			return
		}
		m.failoverPromote()
		return
	}
	m.logCantFailover(cantFailoverWaitingVotes)
}

// failoverScheduleElection sets the election time from the rank (now, for
// a manual failover) and tells my master's other replicas my offset.
func (m *Machine) failoverScheduleElection() {
	m.fo.rank = m.replicaRank()
	m.fo.time = m.now.Add(electionDelay(m.fo.rank, m.rng.IntN(electionRandomMs)))
	m.fo.count = 0
	m.fo.sent = false
	if !m.mf.end.IsZero() {
		m.fo.time = m.now
		m.fo.rank = 0
		m.todo |= todoHandleFailover
	}
	m.event(EventElectionDelayed, m.myself.name, fmt.Sprintf("%d rank %d offset %d",
		m.fo.time.Sub(m.now).Milliseconds(), m.fo.rank, m.local.ReplOffset()))
	m.broadcastPong(true)
}

// failoverWaitDelay re-ranks myself with the offsets learnt since the
// delay was set (adding a second per rank lost) and reports whether the
// election time is still to come.
func (m *Machine) failoverWaitDelay() bool {
	if !m.fo.sent && m.mf.end.IsZero() {
		if r := m.replicaRank(); r > m.fo.rank {
			added := time.Duration(r-m.fo.rank) * electionRankDelay
			m.fo.time = m.fo.time.Add(added)
			m.fo.rank = r
			m.event(EventRankUpdated, m.myself.name, fmt.Sprintf("%d +%d", r, added.Milliseconds()))
		}
	}
	if m.now.Before(m.fo.time) {
		m.logCantFailover(cantFailoverWaitingDelay)
		return true
	}
	return false
}

// failoverRequestVotes starts the election in a new epoch and broadcasts
// FAILOVER_AUTH_REQUEST, flagged FORCEACK during a manual failover
// (clusterRequestFailoverAuth).
func (m *Machine) failoverRequestVotes() {
	m.currentEpoch++
	m.fo.epoch = m.currentEpoch
	m.event(EventElectionStarted, m.myself.name, strconv.FormatUint(m.fo.epoch, 10))
	msg := m.buildHeader(TypeFailoverAuthRequest)
	if !m.mf.end.IsZero() {
		msg.MFlags[0] |= MFlagForceAck
	}
	m.broadcast(msg)
	m.fo.sent = true
	m.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
}

// failoverPromote takes the election's epoch as my config epoch and
// replaces my master.
func (m *Machine) failoverPromote() {
	me := m.myself
	if me.configEpoch < m.fo.epoch {
		me.configEpoch = m.fo.epoch
	}
	m.event(EventFailoverWon, me.name, strconv.FormatUint(me.configEpoch, 10))
	m.failoverReplaceMaster()
}

// failoverReplaceMaster makes myself a master serving my old master's
// slots, saves the config and PONGs every node (the caller has given me
// a new config epoch) (clusterFailoverReplaceYourMaster).
func (m *Machine) failoverReplaceMaster() {
	me := m.myself
	old := me.slaveOf
	if me.isMaster() || old == nil {
		return
	}
	m.setNodeAsMaster(me)
	m.setRole(nil)
	for s := 0; s < NumSlots; s++ {
		if old.slots.Has(s) {
			m.delSlot(s)
			m.addSlot(me, s)
			m.ownerNotClaiming.Clear(s)
		}
	}
	m.updateState()
	m.todo |= todoSaveConfig | todoFsyncConfig
	m.broadcastPong(false)
	m.resetManualFailover()
}

// handleAuthRequest is a replica asking for a failover vote.
func (m *Machine) handleAuthRequest(msg *Msg, sender *node) {
	if sender == nil {
		return
	}
	m.sendFailoverAuthIfNeeded(sender, msg)
}

// voteDenied names why a master refuses a vote, or "" to grant it. The
// checks are clusterSendFailoverAuthIfNeeded's, in its order; the
// request's epochs have already raised our current epoch. The caller
// checked that I am a master serving slots.
func (m *Machine) voteDenied(n *node, msg *Msg) string {
	if msg.CurrentEpoch < m.currentEpoch {
		return fmt.Sprintf("reqEpoch (%d) < curEpoch(%d)", msg.CurrentEpoch, m.currentEpoch)
	}
	if m.lastVoteEpoch == m.currentEpoch {
		return fmt.Sprintf("already voted for epoch %d", m.currentEpoch)
	}
	master := n.slaveOf
	force := msg.MFlags[0]&MFlagForceAck != 0
	switch {
	case n.isMaster():
		return "it is a master node"
	case master == nil:
		return "I don't know its master"
	case !master.failed() && !force:
		return "its master is up"
	}
	if since := m.now.Sub(master.votedTime); since < 2*m.cfg.NodeTimeout {
		return fmt.Sprintf("can't vote about this master before %d milliseconds",
			(2*m.cfg.NodeTimeout - since).Milliseconds())
	}
	for s := 0; s < NumSlots; s++ {
		if !msg.MySlots.Has(s) || m.slotUnclaimed(s) || m.slots[s].configEpoch <= msg.ConfigEpoch {
			continue
		}
		return fmt.Sprintf("slot %d epoch (%d) > reqEpoch (%d)", s, m.slots[s].configEpoch, msg.ConfigEpoch)
	}
	return ""
}

// sendFailoverAuthIfNeeded votes for n when the rules allow: the vote's
// epoch and time are recorded and saved with fsync before the ACK, which
// goes on n's outbound link (clusterSendFailoverAuthIfNeeded).
func (m *Machine) sendFailoverAuthIfNeeded(n *node, msg *Msg) {
	if m.myself.isSlave() || m.myself.numSlots == 0 {
		return // only masters serving slots vote
	}
	if why := m.voteDenied(n, msg); why != "" {
		m.event(EventVoteDenied, n.name, why)
		return
	}
	m.lastVoteEpoch = m.currentEpoch
	n.slaveOf.votedTime = m.now
	m.todo |= todoSaveConfig | todoFsyncConfig
	if n.link != nil {
		m.send(n.link, m.buildHeader(TypeFailoverAuthAck))
	}
	m.event(EventVoteGranted, n.name, strconv.FormatUint(m.currentEpoch, 10))
}

// handleAuthAck counts a vote from a master serving slots sent in the
// epoch of my election or later.
func (m *Machine) handleAuthAck(msg *Msg, sender *node) {
	if sender == nil {
		return
	}
	if sender.isMaster() && sender.numSlots > 0 && msg.CurrentEpoch >= m.fo.epoch {
		m.fo.count++
		m.todo |= todoHandleFailover
	}
}
