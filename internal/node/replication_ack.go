package node

import (
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/node/repl"
)

// Acknowledged writes (min-replicas-ack), the client's half: the gate, the
// GETACK rounds and the UNACKED replies are repl's (ackwait.go, ack.go).
//
//   - Propagation (Client.propagateWrite) records the stream offset just
//     past the client's write; call() then records where the command's
//     reply lies in the client's output (noteAckSeg).
//   - Before the client writes a batch of replies (Client.flush), it waits
//     (awaitAcks) until the gate reports the batch's last write
//     acknowledged, or min-replicas-ack-timeout passed. A pipeline
//     therefore pays one round trip, and concurrent writers share the
//     GETACK rounds (group commit).
//   - On timeout every reply of a write not yet acknowledged is replaced
//     by the UNACKED error: the write ran on the master, and may or may not
//     survive a failover.
//   - A write arriving while fewer than n eligible replicas are online is
//     refused before it runs with NOREPLICAS (nothing applied, safe to
//     retry): Master.RefuseWrites.
//
// Eligible are the replicas that could be promoted: a shardnode replica
// announces its priority in its handshake with REPLCONF replica-priority
// (announcedPriority), a redis-server replica announces nothing and counts.

// clientAck is a client's min-replicas-ack bookkeeping.
type clientAck struct {
	// off is the stream offset just past the client's last propagated
	// write.
	off int64
	// segs are the replies of the writes in the output not yet sent, in
	// output order.
	segs []repl.AckSeg
	// ch receives the gate's release; timer is the reused timeout.
	ch    chan struct{}
	timer *time.Timer
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
			s.repl.SyncAckNeedLocked(int(s.hot().minReplicasAck))
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
		if off, ok := s.repl.AckedOffset(); ok {
			c.ack.off = off
		}
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
	c.ack.segs = append(c.ack.segs, repl.AckSeg{Start: start, End: len(c.out), Off: c.ack.off})
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
	r := s.repl
	if c.ack.ch == nil {
		c.ack.ch = make(chan struct{}, 1)
	}
	if !r.AckWait(c.id, segs[len(segs)-1].Off, need, c.ack.ch) {
		return
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
			r.AckRetry() // the round expired unanswered: ask again
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
	acked, counts, timedOut := r.AckGiveUp(c.id, segs)
	if !timedOut {
		// Released at the deadline: the acknowledgement won.
		select {
		case <-c.ack.ch:
		default:
		}
		return
	}
	var n int
	c.out, n = repl.ReplaceUnacked(c.out, segs, acked, counts, need)
	c.errReplies += int64(n)
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
