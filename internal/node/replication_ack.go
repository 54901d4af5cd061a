package node

import (
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/persist"
	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/node/script"
)

// Acknowledged writes (min-replicas-ack), the client's half: a write's
// propagation records its end offset in the stream (propagateWrite), call()
// where its reply lies in the output (noteAckSeg), and the client waits
// before it writes its replies (awaitAcks). The mechanism is repl's
// (ackwait.go, ack.go).

// clientAck is a client's min-replicas-ack bookkeeping.
type clientAck struct {
	// off is the stream offset just past the client's last propagated
	// write.
	off int64
	// segs are the replies of the writes in the output not yet sent, in
	// output order.
	segs []repl.AckSeg
	// w is the wait's reused channel and timer; parked is set while the
	// wait parked the client in the sequencer.
	w      repl.AckWriter
	parked bool
	// pingAt is when the connection last sent PING, and sentinel the run
	// id of the Sentinel whose hello it published, for the Sentinel fence
	// (repl/fence.go); kept only with min-replicas-ack on.
	pingAt   time.Time
	sentinel string
}

func init() {
	onConfigSet(config.DirReplicaPriority, announcePriority)
	onConfigSet(config.DirClusterReplicaNoFailover, announcePriority)
	onConfigSet(config.DirMinReplicasAck, func(s *Server, v string) {
		applyClusterConfig(s, v) // the election rule (cluster/failover.go)
		if s.repl != nil {
			s.repl.mu.Lock()
			s.repl.SyncAckNeedLocked(int(s.hot().minReplicasAck))
			s.repl.mu.Unlock()
		}
	})
}

// propagateWrite hands a client's write to the propagators and, with
// min-replicas-ack on, remembers its end offset in the stream.
func (c *Client) propagateWrite(db int, cmds [][][]byte) {
	s := c.srv
	s.propagate(db, cmds)
	c.noteAckOffset()
}

// propagateWriteTo is propagateWrite for a script whose effects go to
// some targets only (redis.set_repl): each propagator gets the effects
// masks[i] sends to its kind (the AOF, the replicas; a slot-migration
// tap gets them all), wrapped in MULTI/EXEC when more than one, and
// nothing when none.
func (c *Client) propagateWriteTo(db int, cmds [][][]byte, masks []uint8) {
	s := c.srv
	s.propMu.RLock()
	for _, p := range s.propagators {
		target := uint8(script.ReplAll)
		switch p.(type) {
		case *persist.AOF:
			target = script.ReplAOF
		case *replication:
			target = script.ReplReplica
		}
		var sub [][][]byte
		real := false
		for i, cmd := range cmds {
			if masks[i]&target != 0 {
				sub = append(sub, cmd)
				real = real || string(cmd[0]) != "SELECT"
			}
		}
		if real {
			p.Propagate(db, script.WrapEffects(sub))
		}
	}
	s.propMu.RUnlock()
	c.noteAckOffset()
}

// noteAckOffset remembers, with min-replicas-ack on, the end offset in
// the stream of what the client just propagated.
func (c *Client) noteAckOffset() {
	s := c.srv
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
	var n int
	c.out, n = s.repl.AwaitAcks(&c.ack.w, c.id, c.out, segs, need, time.Duration(h.minReplicasAckTimeout)*time.Millisecond, (*ackWaiter)(c))
	c.errReplies += int64(n)
}

// ackWaiter is a client waiting for its writes' acknowledgements
// (repl.AckWaiter).
type ackWaiter Client

func (w *ackWaiter) Done() <-chan struct{} { return w.done }

// Park: other clients need not wait for us (sequence.go).
func (w *ackWaiter) Park() {
	if w.ack.parked = w.srv.seq.On(); w.ack.parked {
		(*Client)(w).parkStart()
	}
	w.srv.blockedClients.Add(1)
}

func (w *ackWaiter) Unpark() {
	w.srv.blockedClients.Add(-1)
	if w.ack.parked {
		(*Client)(w).parkEnd()
	}
}

// announcedPriority is the replica-priority this node announces to its
// master (REPLCONF replica-priority): 0 when it cannot be promoted. In
// cluster mode the election ignores replica-priority and honours
// cluster-replica-no-failover only, as Redis's does.
func announcedPriority(s *Server) int64 {
	if s.cfg.Bool(config.DirClusterEnabled) {
		if s.cfg.Bool(config.DirClusterReplicaNoFailover) {
			return 0
		}
		return max(1, s.cfg.Int(config.DirReplicaPriority))
	}
	return s.cfg.Int(config.DirReplicaPriority)
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

// notePing feeds the Sentinel fence (repl/fence.go) a PING: the time is
// kept on the connection, and given to the fence once the connection is
// known as a Sentinel's.
func (c *Client) notePing() {
	s := c.srv
	if s.hot().minReplicasAck <= 0 || s.repl == nil {
		return
	}
	c.ack.pingAt = time.Now()
	if c.ack.sentinel != "" {
		s.repl.SentinelPing(c.ack.sentinel, c.ack.pingAt)
	}
}

// noteHello makes the connection that published a Sentinel hello on
// __sentinel__:hello that Sentinel's, for the Sentinel fence.
func (c *Client) noteHello(channel, payload []byte) {
	s := c.srv
	if s.hot().minReplicasAck <= 0 || s.repl == nil || string(channel) != repl.SentinelHelloChannel {
		return
	}
	if id := repl.HelloRunID(payload); id != "" {
		c.ack.sentinel = id
		s.repl.SentinelHello(id, c.ack.pingAt)
	}
}

// fenceRefusal returns the error refusing writes while the Sentinel fence
// or the cluster fence is up (repl/fence.go), or "".
func (s *Server) fenceRefusal() string {
	if s.repl == nil {
		return ""
	}
	return s.repl.FenceError(time.Now())
}
