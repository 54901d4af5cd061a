package sentinel

import "time"

// The replica freeze: how the leader of a failover of a master with
// min-replicas-ack n > 0 makes the replicas' offsets final before it
// compares them (ackrule.go, docs/ARCHITECTURE.md "Acknowledged writes").
//
// On entering select_slave, and for every replica that becomes reachable
// while it waits there, the leader sends CLIENT PAUSE <failover-timeout>
// WRITE and then INFO replication. A replica under a WRITE pause applies
// none of its master's writes (Redis 7.0 postpones the master client, and
// shardnode holds its stream the same way), so the offset that INFO shows
// is the replica's frozen offset: every REPLCONF ACK it sends to the old
// master until the pause ends carries at most that offset (plus
// non-writing commands such as the master's PINGs). The election counts
// only offsets read this way in this failover's epoch.
//
// The pause lasts failover-timeout. Until a frozen replica is
// reconfigured (REPLICAOF with CLIENT UNPAUSE in its MULTI) the leader
// renews its pause every half failover-timeout (refreezeReplicas); an
// aborted failover sends CLIENT UNPAUSE to the replicas it froze. If the
// leader stops (crash, SIGSTOP, partition) for longer than the rest of a
// pause, that replica resumes applying the old master's stream: the
// guarantee holds only while the leader renews or reconfigures every
// frozen replica within failover-timeout of its last pause.
//
// While paused by us, a replica gets no hello from this Sentinel: PUBLISH
// is a write for CLIENT PAUSE WRITE, and the link's PINGs and INFOs
// behind it would wait for the pause to end.

// freezeNeeded reports whether a failover of master freezes its replicas:
// the master asks its replicas to acknowledge writes (min-replicas-ack).
func freezeNeeded(master *instance) bool { return master.ackNeed > 0 }

// freezeReplicas sends the freeze to every reachable replica with a
// priority above 0 not paused in this failover yet (or whose freeze was
// sent on a link that dropped before the reply).
func (m *Machine) freezeReplicas(now time.Time, master *instance) {
	if !freezeNeeded(master) {
		return
	}
	for _, r := range master.sortedReplicas() {
		if r.replPriority == 0 || !r.link.connected || r.has(flagSDown) {
			continue
		}
		// Once per epoch, unless its reply was lost with a link that
		// dropped since (the new link has not carried it).
		if r.pausedEpoch == master.failoverEpoch && (r.pauseRefused || r.paused &&
			(r.frozenEpoch == master.failoverEpoch || !r.link.connTime.After(r.pauseSent))) {
			continue
		}
		m.sendFreeze(now, master, r, false)
	}
}

// sendFreeze emits ActFreeze (refreeze: the pause only) to r.
func (m *Machine) sendFreeze(now time.Time, master, r *instance, refreeze bool) {
	a := m.actionFor(ActFreeze, r)
	a.Pause, a.Refreeze, a.Epoch = master.failoverTimeout, refreeze, master.failoverEpoch
	r.pausedEpoch, r.pauseSent, r.paused = master.failoverEpoch, now, true
	if !refreeze {
		r.pauseRefused = false
		r.infoSent = now
		r.link.pending++
		m.instEvent(LevelNotice, EventFreeze, r, " %d", master.failoverEpoch)
	}
	m.act(a)
}

// refreezeReplicas renews the pause of the replicas frozen in this
// failover that are not reconfigured yet, every half failover-timeout.
func (m *Machine) refreezeReplicas(now time.Time, master *instance) {
	for _, r := range master.sortedReplicas() {
		if !r.paused || r.pausedEpoch != master.failoverEpoch || !r.link.connected {
			continue
		}
		if now.Sub(r.pauseSent) >= master.failoverTimeout/2 {
			m.sendFreeze(now, master, r, true)
		}
	}
}

// unpauseReplicas sends CLIENT UNPAUSE to the replicas this failover
// paused (an abort; best effort: the pause ends by itself anyway).
func (m *Machine) unpauseReplicas(master *instance) {
	for _, r := range master.sortedReplicas() {
		if !r.paused || r.pausedEpoch != master.failoverEpoch {
			continue
		}
		r.paused = false
		if r.link.connected {
			m.act(m.actionFor(ActUnpause, r))
			m.instEvent(LevelNotice, EventUnfreeze, r, " %d", master.failoverEpoch)
		}
	}
}

// freezeReply records the frozen offset of r (and its INFO).
func (m *Machine) freezeReply(now time.Time, r *instance, msg FreezeReply) {
	if !msg.Paused && r.pausedEpoch == msg.Epoch {
		// Refused (a server without CLIENT PAUSE WRITE): not paused, so
		// no CLIENT UNPAUSE, which would abort its REPLICAOF MULTI.
		r.paused, r.pauseRefused = false, true
	}
	if msg.Text == "" {
		// INFO failed: it is answered all the same.
		if r.link.pending > 0 {
			r.link.pending--
		}
		return
	}
	info := ParseInfo(msg.Text)
	r.info = msg.Text
	m.refreshInstanceInfo(now, r, info)
	if msg.Paused && info.Role == RoleReplica && r.pausedEpoch == msg.Epoch {
		r.frozenEpoch, r.frozenOffset = msg.Epoch, info.ReplOffset
	}
}

// frozenIn reports whether r's offset was frozen in master's failover.
func frozenIn(master, r *instance) bool {
	return master.failoverEpoch != 0 && r.frozenEpoch == master.failoverEpoch && r.paused
}
