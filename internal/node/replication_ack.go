package node

import (
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/resp"
)

// Acknowledged writes (min-replicas-ack).
//
// With min-replicas-ack n > 0 a write's reply leaves only once n eligible
// replicas acknowledged (REPLCONF ACK) a replication offset at or past the
// write's end in the stream. Every write counts: a write command, EXEC,
// EVAL/FCALL. The mechanism:
//
//   - Propagation (Client.propagateWrite) records the stream offset just
//     past the client's write; call() then records where the command's
//     reply lies in the client's output (ackSeg).
//   - Before the client writes a batch of replies (Client.flush), it waits
//     (awaitAcks) until the gate (repl.AckGate) reports the batch's last
//     write acknowledged, or min-replicas-ack-timeout passed. A pipeline
//     therefore pays one round trip, and concurrent writers share the
//     GETACK rounds (group commit): a round is sent when a writer waits
//     and no round is open.
//   - On timeout every reply of a write not yet acknowledged is replaced
//     by the UNACKED error: the write ran on the master, and may or may not
//     survive a failover. go-redis does not retry it (its shouldRetry
//     knows NOREPLICAS, TRYAGAIN, CLUSTERDOWN, LOADING, READONLY and
//     MASTERDOWN only), so an applied write is never run twice by a
//     client library's retry.
//   - A write arriving while fewer than n eligible replicas are online is
//     refused before it runs with NOREPLICAS (nothing applied, safe to
//     retry).
//
// Eligible are the replicas that could be promoted: a shardnode replica
// announces its priority in its handshake with REPLCONF replica-priority
// (0 when replica-priority is 0, or in cluster mode when
// cluster-replica-no-failover is set; the migration tool announces 0), and
// counts when it is above 0. A redis-server replica announces nothing (the
// master's error reply to the unknown option is ignored by a shardnode
// replica's handshake, and redis-server never sends it) and counts: a
// redis-server master does not know its replicas' priorities either.
//
// Replicas acknowledge quickly: a shardnode replica that was asked with
// GETACK in the last second sends REPLCONF ACK after every batch of the
// stream it applied (replication_replica.go), so most writers are released
// by those without a round of their own; a redis-server replica answers
// each GETACK round.

// clientAck is a client's min-replicas-ack bookkeeping.
type clientAck struct {
	// off is the stream offset just past the client's last propagated
	// write.
	off int64
	// segs are the replies of the writes in the output not yet sent, in
	// output order.
	segs []ackSeg
	// ch receives the gate's release; timer is the reused timeout.
	ch    chan struct{}
	timer *time.Timer
}

// ackSeg is one write's reply in Client.out and its end in the stream.
type ackSeg struct {
	start, end int
	off        int64
}

// unackedReply renders the UNACKED error.
func unackedReply(got, need int) string {
	return "UNACKED write applied on the master but acknowledged by " + strconv.Itoa(got) + " of " + strconv.Itoa(need) + " required replicas; its outcome is unknown"
}

func init() {
	for _, name := range []string{"replica-priority", "cluster-replica-no-failover"} {
		d := configDefs[name]
		if prev := d.apply; prev != nil {
			d.apply = func(s *Server, v string) { prev(s, v); announcePriority(s, v) }
		} else {
			d.apply = announcePriority
		}
	}
	configDefs["min-replicas-ack"].apply = func(s *Server, v string) {
		applyClusterConfig(s, v) // the election rule (cluster/failover.go)
		if s.repl != nil {
			s.repl.mu.Lock()
			s.repl.syncAckNeedLocked()
			s.repl.mu.Unlock()
		}
	}
}

// propagateWrite hands a client's write to the propagators and, with
// min-replicas-ack on, remembers its end offset in the stream.
func (c *Client) propagateWrite(db int, cmds [][][]byte) {
	s := c.srv
	s.propagate(db, cmds)
	if s.hot().minReplicasAck > 0 && s.repl != nil && c.conn != nil && !c.hasFlag(clientMaster) {
		r := s.repl
		r.mu.Lock()
		if r.link == nil {
			c.ack.off = r.offset
		}
		r.mu.Unlock()
	}
}

// noteAckSeg records, after a command that propagated a write (its
// ack.off moved from before), where its reply lies in the output: from
// start (the output's length before the command) to the end.
func (c *Client) noteAckSeg(start int, before int64) {
	if c.ack.off == before {
		return
	}
	start = min(start, len(c.out))
	c.ack.segs = append(c.ack.segs, ackSeg{start: start, end: len(c.out), off: c.ack.off})
}

// awaitAcks waits, before the output is written, until the batch's writes
// are acknowledged by min-replicas-ack eligible replicas, or the timeout
// passes; then it replaces the replies of the writes still unacknowledged
// with the UNACKED error.
func (c *Client) awaitAcks() {
	segs := c.ack.segs
	c.ack.segs = segs[:0]
	s := c.srv
	h := s.hot()
	need := int(h.minReplicasAck)
	if need <= 0 || len(segs) == 0 {
		return
	}
	target := segs[len(segs)-1].off
	r := s.repl
	r.mu.Lock()
	r.syncAckNeedLocked()
	if r.link != nil || !r.ack.Wait(c.id, target) {
		r.mu.Unlock()
		return
	}
	if c.ack.ch == nil {
		c.ack.ch = make(chan struct{}, 1)
	}
	r.ackWaiters[c.id] = c.ack.ch
	asked := r.maybeGetAckLocked()
	r.mu.Unlock()
	if asked {
		r.pushStreamsNow() // the round trip starts now
	} else {
		r.writeStreamsNow() // at most once per streamEagerGap
	}

	timeout := time.Duration(h.minReplicasAckTimeout) * time.Millisecond
	deadline := time.Now().Add(timeout)
	round := time.Duration(repl.RoundTimeout)
	if c.ack.timer == nil {
		c.ack.timer = time.NewTimer(min(timeout, round))
	} else {
		c.ack.timer.Reset(min(timeout, round))
	}
	parked := s.seq.On()
	if parked {
		c.parkStart() // sequence.go: other clients need not wait for us
	}
	s.blockedClients.Add(1)
	released := false
wait:
	for {
		select {
		case <-c.ack.ch:
			released = true
			break wait
		case <-c.ack.timer.C:
			left := time.Until(deadline)
			if left <= 0 {
				break wait
			}
			// A round left unanswered (a replica died, or answered
			// only part of it) expires: ask again.
			r.mu.Lock()
			again := r.maybeGetAckLocked()
			r.mu.Unlock()
			if again {
				r.pushStreamsNow()
			}
			c.ack.timer.Reset(min(left, round))
		case <-c.done:
			break wait
		}
	}
	s.blockedClients.Add(-1)
	if parked {
		c.parkEnd()
	}
	if released {
		c.ack.timer.Stop()
		return
	}
	r.mu.Lock()
	if !r.ack.Cancel(c.id) {
		// Released at the deadline: the acknowledgement won.
		r.mu.Unlock()
		select {
		case <-c.ack.ch:
		default:
		}
		return
	}
	delete(r.ackWaiters, c.id)
	acked := r.ack.Acked()
	counts := make([]int, len(segs))
	for i, sg := range segs {
		if sg.off > acked {
			counts[i] = r.ack.CountAt(sg.off)
		}
	}
	r.mu.Unlock()
	r.ackTimeouts.Add(1)
	out := make([]byte, 0, len(c.out))
	prev := 0
	for i, sg := range segs {
		if sg.off <= acked || sg.end <= sg.start || sg.start < prev || sg.end > len(c.out) {
			continue
		}
		out = append(out, c.out[prev:sg.start]...)
		out = resp.AppendError(out, unackedReply(counts[i], need))
		c.errReplies++
		prev = sg.end
	}
	out = append(out, c.out[prev:]...)
	c.out = out
}

// syncAckNeedLocked applies min-replicas-ack to the gate and releases the
// writers a lower count frees.
func (r *replication) syncAckNeedLocked() {
	if n := int(r.srv.hot().minReplicasAck); n != r.ack.Need() {
		r.ack.SetNeed(n)
		if n == 0 {
			for id := range r.ackWaiters {
				r.ack.Cancel(id)
				r.wakeAckLocked(id)
			}
			return
		}
		r.releaseAcksLocked()
	}
}

// announcedPriority is the replica-priority this node announces to its
// master (REPLCONF replica-priority): 0 when it cannot be promoted. In
// cluster mode the election ignores replica-priority and honours
// cluster-replica-no-failover only, as Redis's does.
func announcedPriority(s *Server) int64 {
	if s.cfg.Bool(DirClusterEnabled) {
		if s.cfg.Bool(DirClusterReplicaNoFailover) {
			return 0
		}
		return max(1, s.cfg.Int(DirReplicaPriority))
	}
	return s.cfg.Int(DirReplicaPriority)
}

// announcePriority repeats REPLCONF replica-priority on a live link after
// CONFIG SET replica-priority or cluster-replica-no-failover.
func announcePriority(s *Server, _ string) {
	if s.repl == nil {
		return
	}
	s.repl.mu.Lock()
	l := s.repl.link
	s.repl.mu.Unlock()
	if l != nil {
		l.SendPriority(strconv.FormatInt(announcedPriority(s), 10))
	}
}

// ackEligible reports whether replica c counts toward min-replicas-ack.
func ackEligible(c *Client) bool { return !c.replPrioKnown || c.replPrio > 0 }

// ackJoinLocked adds an online replica to the gate.
func (r *replication) ackJoinLocked(ri *replicaInfo) {
	r.ack.Join(ri.c.id, ackEligible(ri.c), ri.ackOffset)
	r.releaseAcksLocked()
}

// ackLeaveLocked removes a replica from the gate.
func (r *replication) ackLeaveLocked(c *Client) {
	r.ack.Leave(c.id)
}

// ackRecvLocked records a replica's REPLCONF ACK.
func (r *replication) ackRecvLocked(c *Client, off int64) {
	if r.ack.Ack(c.id, off) && len(r.ackWaiters) > 0 {
		r.releaseAcksLocked()
	}
}

// releaseAcksLocked wakes the writers whose writes are acknowledged now and
// sends the next GETACK round if writers still wait.
func (r *replication) releaseAcksLocked() {
	r.ackRel = r.ack.Release(r.ackRel[:0])
	for _, id := range r.ackRel {
		r.wakeAckLocked(id)
	}
	if r.maybeGetAckLocked() {
		go r.pushStreamsNow()
	}
}

func (r *replication) wakeAckLocked(id int64) {
	if ch := r.ackWaiters[id]; ch != nil {
		delete(r.ackWaiters, id)
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// maybeGetAckLocked feeds a REPLCONF GETACK when the gate asks for a
// round; it reports whether it did.
func (r *replication) maybeGetAckLocked() bool {
	now := time.Now().UnixNano()
	if r.link != nil || r.backlog == nil || !r.ack.NeedGetAck(now) {
		return false
	}
	// The round is answered by an ACK of everything before the GETACK:
	// redis-server's ACK to a GETACK does not count the GETACK itself.
	asked := r.offset
	r.feedLocked(getAckCmd)
	r.ack.SentGetAck(now, asked)
	return true
}

var getAckCmd = resp.AppendCommandStrings(nil, "REPLCONF", "GETACK", "*")

// pushStreamsNow writes the replicas' pending stream from the calling
// goroutine as far as their sockets take it (a waiting writer's round
// trip starts now, not when the replica's writer goroutine runs).
func (r *replication) pushStreamsNow() {
	r.streamDirty.Store(false)
	if l := r.streamTo.Load(); l != nil {
		for _, c := range *l {
			c.writeStreamNow()
		}
	}
}

// ackRefuseLocked reports whether min-replicas-ack refuses writes now:
// fewer eligible replicas are online than it needs.
func (r *replication) ackRefuseLocked(need int64) bool {
	r.syncAckNeedLocked()
	return r.link == nil && int64(r.ack.Eligible()) < need
}

// A restarted master must not make its replicas drop acknowledged writes.
//
// A master that restarts may have lost the tail of its history (the
// acknowledged writes its AOF had not fsynced, or everything since its last
// RDB), while its replicas hold it. Their PSYNC then asks for an offset
// beyond ours (or for a history we no longer know), and a full resync
// would replace their data with ours: the acknowledged writes would be
// gone everywhere. So from start-up as a master until it is promoted
// (REPLICAOF NO ONE, FAILOVER, a cluster election) or becomes a replica,
// a master with min-replicas-ack > 0 refuses to resynchronize a replica
// whose history is ahead of its own or unknown to it, keeps that replica's
// data intact, and refuses writes (NOREPLICAS) from then on, until a
// failover promotes a replica that holds the acknowledged writes (Sentinel
// sees the reboot with master-reboot-down-after-period, or the restart
// took longer than down-after-milliseconds) or an operator lifts the guard
// with REPLICAOF NO ONE on it. A replica with no history (PSYNC ? -1), and
// one the backlog continues, are served as always, so a first start, and a
// restart that lost nothing, are unaffected.

// guardRefuseLocked reports whether the restart guard refuses a replica's
// PSYNC replid offset that we cannot continue partially, and records it.
func (r *replication) guardRefuseLocked(replid string, off int64) bool {
	if !r.restartGuard || r.link != nil || r.srv.hot().minReplicasAck <= 0 {
		return false
	}
	ahead := true
	switch replid {
	case r.replid:
		ahead = off > r.offset+1
	case r.replid2:
		ahead = off > r.secondOffset
	}
	if !ahead {
		return false
	}
	if !r.guardRefused {
		r.srv.log.Warn("Restarted master refuses to resynchronize a replica whose history is ahead of its own: writes are refused until a failover or REPLICAOF NO ONE (min-replicas-ack)",
			"replid", replid, "offset", off, "my_offset", r.offset)
	}
	r.guardRefused = true
	return true
}

// liftRestartGuard ends the restart guard (REPLICAOF NO ONE on a master:
// an operator or a failover declares this node's data the reference).
func (r *replication) liftRestartGuard() {
	r.mu.Lock()
	r.restartGuard, r.guardRefused = false, false
	r.mu.Unlock()
}
