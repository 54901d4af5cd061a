package repl

// Acknowledged writes (min-replicas-ack), the master's half around the
// AckGate.
//
// With min-replicas-ack n > 0 a write's reply leaves only once n eligible
// replicas acknowledged (REPLCONF ACK) a replication offset at or past the
// write's end in the stream. Every write counts: a write command, EXEC,
// EVAL/FCALL. The mechanism:
//
//   - The server records, per client, the stream offset just past each
//     write and where its reply lies in the output (AckSeg).
//   - Before the client writes a batch of replies, it waits (AwaitAcks)
//     until the gate reports the batch's last write acknowledged, or
//     min-replicas-ack-timeout passed. A pipeline therefore pays one round
//     trip, and concurrent writers share the GETACK rounds (group
//     commit): a round is sent when a writer waits and no round is open.
//   - On timeout every reply of a write not yet acknowledged is replaced
//     by the UNACKED error: the write ran on the master, and may or may not
//     survive a failover. go-redis does not retry it (its shouldRetry
//     knows NOREPLICAS, TRYAGAIN, CLUSTERDOWN, LOADING, READONLY and
//     MASTERDOWN only), so an applied write is never run twice by a
//     client library's retry.
//   - A write arriving while fewer than n eligible replicas are online is
//     refused before it runs with NOREPLICAS (RefuseWrites: nothing
//     applied, safe to retry).
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
// stream it applied (stream.go), so most writers are released by those
// without a round of their own; a redis-server replica answers each GETACK
// round.

import (
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// getAckCmd is REPLCONF GETACK *, as fed to the stream.
var getAckCmd = resp.AppendCommandStrings(nil, "REPLCONF", "GETACK", "*")

// FeedGetAckLocked feeds REPLCONF GETACK * to the stream: every replica
// answers with REPLCONF ACK.
func (m *Master) FeedGetAckLocked() { m.FeedLocked(getAckCmd) }

// UnackedReply renders the UNACKED error of a write acknowledged by got of
// need replicas.
func UnackedReply(got, need int) string {
	return "UNACKED write applied on the master but acknowledged by " + strconv.Itoa(got) + " of " + strconv.Itoa(need) + " required replicas; its outcome is unknown"
}

// AckSeg is one write's reply in a client's output (from Start to End)
// and the write's end offset in the stream.
type AckSeg struct {
	Start, End int
	Off        int64
}

// AckedOffset returns the offset just past the last write propagated, for
// a write's AckSeg; ok is false on a replica (nothing of its own is
// streamed).
func (m *Master) AckedOffset() (off int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset, !m.linked
}

// SyncAckNeedLocked applies min-replicas-ack n to the gate and releases
// the writers a lower count frees.
func (m *Master) SyncAckNeedLocked(n int) {
	if n == m.ack.Need() {
		return
	}
	m.ack.SetNeed(n)
	if n == 0 {
		for id := range m.ackWaiters {
			m.ack.Cancel(id)
			m.wakeAckLocked(id)
		}
		return
	}
	m.releaseAcksLocked()
}

// AckWriter is a writer's reusable wake-up channel and timer.
type AckWriter struct {
	ch    chan struct{}
	timer *time.Timer
}

// AckWaiter is a writer blocked until its writes are acknowledged.
type AckWaiter interface {
	// Done is closed when the writer's connection closes.
	Done() <-chan struct{}
	// Park tells the server the writer blocks, Unpark that it runs again.
	Park()
	Unpark()
}

// AwaitAcks waits until the writes of segs (the replies in out, in output
// order) are acknowledged by need eligible replicas, or timeout passed, or
// the writer left; then it returns out with the replies of the writes
// still unacknowledged replaced by the UNACKED error, and how many it
// replaced. A GETACK round is sent when none is open, and again when one
// expires unanswered (a replica died, or answered only part of it).
func (m *Master) AwaitAcks(aw *AckWriter, id int64, out []byte, segs []AckSeg, need int, timeout time.Duration, w AckWaiter) ([]byte, int) {
	if aw.ch == nil {
		aw.ch = make(chan struct{}, 1)
	}
	if !m.ackWait(id, segs[len(segs)-1].Off, need, aw.ch) {
		return m.unackedIfFenced(out, segs)
	}
	deadline := time.Now().Add(timeout)
	round := time.Duration(RoundTimeout)
	if aw.timer == nil {
		aw.timer = time.NewTimer(min(timeout, round))
	} else {
		aw.timer.Reset(min(timeout, round))
	}
	w.Park()
	released := false
wait:
	for {
		select {
		case <-aw.ch:
			released = true
			break wait
		case <-aw.timer.C:
			left := time.Until(deadline)
			if left <= 0 {
				break wait
			}
			m.ackRetry()
			aw.timer.Reset(min(left, round))
		case <-w.Done():
			break wait
		}
	}
	w.Unpark()
	if released {
		aw.timer.Stop()
		return m.unackedIfFenced(out, segs)
	}
	acked, counts, timedOut := m.ackGiveUp(id, segs)
	if !timedOut {
		// Released at the deadline: the acknowledgement won.
		select {
		case <-aw.ch:
		default:
		}
		return m.unackedIfFenced(out, segs)
	}
	return ReplaceUnacked(out, segs, acked, counts, need)
}

// unackedIfFenced returns out unchanged, unless a fence is up (fence.go):
// then every write of segs gets the UNACKED reply, however many replicas
// acknowledged it, since a failover may already be reading the replicas'
// offsets.
func (m *Master) unackedIfFenced(out []byte, segs []AckSeg) ([]byte, int) {
	reply := UnackedFencedReply
	switch m.FenceKind(time.Now()) {
	case FenceNone:
		return out, 0
	case FenceCluster:
		reply = UnackedClusterFencedReply
	}
	return replaceReplies(out, segs, -1, func(int) string { return reply })
}

// UnackedFencedReply is the UNACKED error of a write whose
// acknowledgement was decided while the Sentinel fence was up.
const UnackedFencedReply = "UNACKED write applied on the master, which lost contact with the majority of the Sentinels before it was acknowledged; its outcome is unknown"

// UnackedClusterFencedReply is the UNACKED error of a write whose
// acknowledgement was decided while the cluster fence was up.
const UnackedClusterFencedReply = "UNACKED write applied on the master, which lost contact with the majority of the cluster's masters before it was acknowledged; its outcome is unknown"

// ackWait registers writer id, whose last write ends at stream offset
// target, to be woken on ch once need replicas acknowledged it. It reports
// false when there is nothing to wait for (acknowledged already, or this
// node is a replica). A GETACK round is started when none is open.
func (m *Master) ackWait(id int64, target int64, need int, ch chan struct{}) bool {
	m.mu.Lock()
	m.SyncAckNeedLocked(need)
	if m.linked || !m.ack.Wait(id, target) {
		m.mu.Unlock()
		return false
	}
	m.ackWaiters[id] = ch
	asked := m.maybeGetAckLocked()
	m.mu.Unlock()
	if asked {
		m.PushStreamsNow() // the round trip starts now
	} else {
		m.WriteStreamsNow() // at most once per streamEagerGap
	}
	return true
}

// ackRetry sends another GETACK round when the last one expired.
func (m *Master) ackRetry() {
	m.mu.Lock()
	again := m.maybeGetAckLocked()
	m.mu.Unlock()
	if again {
		m.PushStreamsNow()
	}
}

// ackGiveUp ends writer id's wait at its deadline. It returns false when
// the acknowledgement won the race (the writer was released); otherwise
// how many replicas acknowledged each of segs (0 for those acknowledged by
// enough), and the offset acknowledged by enough.
func (m *Master) ackGiveUp(id int64, segs []AckSeg) (acked int64, counts []int, timedOut bool) {
	m.mu.Lock()
	if !m.ack.Cancel(id) {
		m.mu.Unlock()
		return 0, nil, false
	}
	delete(m.ackWaiters, id)
	acked = m.ack.Acked()
	counts = make([]int, len(segs))
	for i, sg := range segs {
		if sg.Off > acked {
			counts[i] = m.ack.CountAt(sg.Off)
		}
	}
	m.mu.Unlock()
	m.ackTimeouts.Add(1)
	return acked, counts, true
}

// ReplaceUnacked returns out with the reply of every write in segs not
// acknowledged (its offset past acked) replaced by the UNACKED error, and
// how many it replaced. counts are ackGiveUp's.
func ReplaceUnacked(out []byte, segs []AckSeg, acked int64, counts []int, need int) ([]byte, int) {
	return replaceReplies(out, segs, acked, func(i int) string { return UnackedReply(counts[i], need) })
}

// replaceReplies returns out with the reply of every write in segs whose
// offset is past acked replaced by the error msg(i), and how many it
// replaced.
func replaceReplies(out []byte, segs []AckSeg, acked int64, msg func(i int) string) ([]byte, int) {
	res := make([]byte, 0, len(out))
	prev, n := 0, 0
	for i, sg := range segs {
		if sg.Off <= acked || sg.End <= sg.Start || sg.Start < prev || sg.End > len(out) {
			continue
		}
		res = append(res, out[prev:sg.Start]...)
		res = resp.AppendError(res, msg(i))
		n++
		prev = sg.End
	}
	return append(res, out[prev:]...), n
}

// joinAckLocked adds an online replica to the gate.
func (m *Master) joinAckLocked(ri *Replica) {
	m.ack.Join(ri.conn.ID(), ri.hello.Eligible(), ri.AckOffset)
	m.releaseAcksLocked()
}

// releaseAcksLocked wakes the writers whose writes are acknowledged now and
// sends the next GETACK round if writers still wait.
func (m *Master) releaseAcksLocked() {
	m.ackRel = m.ack.Release(m.ackRel[:0])
	for _, id := range m.ackRel {
		m.wakeAckLocked(id)
	}
	if m.maybeGetAckLocked() {
		go m.PushStreamsNow()
	}
}

func (m *Master) wakeAckLocked(id int64) {
	if ch := m.ackWaiters[id]; ch != nil {
		delete(m.ackWaiters, id)
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// maybeGetAckLocked feeds a REPLCONF GETACK when the gate asks for a
// round; it reports whether it did.
func (m *Master) maybeGetAckLocked() bool {
	now := time.Now().UnixNano()
	if m.linked || m.backlog == nil || !m.ack.NeedGetAck(now) {
		return false
	}
	// The round is answered by an ACK of everything before the GETACK:
	// redis-server's ACK to a GETACK does not count the GETACK itself.
	asked := m.offset
	m.FeedLocked(getAckCmd)
	m.ack.SentGetAck(now, asked)
	return true
}

// ackRefuseLocked reports whether min-replicas-ack refuses writes now:
// fewer eligible replicas are online than it needs.
func (m *Master) ackRefuseLocked(need int64) bool {
	m.SyncAckNeedLocked(int(need))
	return !m.linked && int64(m.ack.Eligible()) < need
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
// with REPLICAOF NO ONE on it. A replica with no history (PSYNC ? -1, or
// PSYNC <any id> 1: its history has no byte, which redis-server sends
// when a master with nothing replicated becomes a replica by REPLICAOF or
// CLUSTER REPLICATE), and one the backlog continues, are served as
// always, so a first start, and a restart that lost nothing, are
// unaffected. A replica at offset 0 holds no acknowledged write: a write
// is acknowledged at its end offset in the stream, 1 or more, and offsets
// carry over a promotion.

// guardRefuseLocked reports whether the restart guard refuses a replica's
// PSYNC replid offset that we cannot continue partially, and records it.
func (m *Master) guardRefuseLocked(replid string, off int64, ackNeed int) bool {
	if !m.restartGuard || m.linked || ackNeed <= 0 || off <= 1 {
		return false
	}
	ahead := true
	switch replid {
	case m.replid:
		ahead = off > m.offset+1
	case m.replid2:
		ahead = off > m.secondOffset
	}
	if !ahead {
		return false
	}
	if !m.guardRefused {
		m.log.Warn("Restarted master refuses to resynchronize a replica whose history is ahead of its own: writes are refused until a failover or REPLICAOF NO ONE (min-replicas-ack)",
			"replid", replid, "offset", off, "my_offset", m.offset)
	}
	m.guardRefused = true
	return true
}

// LiftRestartGuardLocked ends the restart guard (this node becomes a
// replica, or is promoted: an operator or a failover declares its data
// the reference).
func (m *Master) LiftRestartGuardLocked() {
	m.restartGuard, m.guardRefused = false, false
}

// LiftRestartGuard is LiftRestartGuardLocked, taking the lock.
func (m *Master) LiftRestartGuard() {
	m.mu.Lock()
	m.LiftRestartGuardLocked()
	m.mu.Unlock()
}
