package sentinel

import (
	"fmt"
	"time"
)

// startFailoverIfNeeded starts a failover of an ODOWN master unless one is
// running or the previous attempt is less than 2*failover-timeout old.
func (m *Machine) startFailoverIfNeeded(now time.Time, master *instance) bool {
	if !master.has(flagODown) || master.has(flagFailoverInProgress) {
		return false
	}
	if !master.failoverStartTime.IsZero() && now.Sub(master.failoverStartTime) < 2*master.failoverTimeout {
		return false
	}
	m.startFailover(now, master)
	return true
}

// startFailover is a transition: a new epoch and the WAIT_START state.
func (m *Machine) startFailover(now time.Time, master *instance) {
	master.flags |= flagFailoverInProgress
	m.currentEpoch++
	master.failoverEpoch = m.currentEpoch
	m.event(LevelWarning, EventNewEpoch, master, "%d", m.currentEpoch)
	m.instEvent(LevelWarning, EventTryFailover, master, "")
	master.failoverStartTime = now.Add(m.desync())
	m.setFailoverState(now, master, stateWaitStart)
	m.persist()
}

// desync is the random delay Redis adds to failover start times so that
// Sentinels do not all try at once.
func (m *Machine) desync() time.Duration {
	return time.Duration(m.rng.Int64N(int64(m.timing.MaxDesync/time.Millisecond))) * time.Millisecond
}

// setFailoverState is the single place the failover state changes.
func (m *Machine) setFailoverState(now time.Time, master *instance, s failoverState) {
	master.failoverState = s
	master.failoverStateChange = now
}

// abortFailover is a transition back to no failover.
func (m *Machine) abortFailover(now time.Time, master *instance) {
	if !master.has(flagFailoverInProgress) || master.failoverState > stateWaitPromotion {
		panic(fmt.Sprintf("sentinel: abort of failover of %s in state %s", master.name, master.failoverState))
	}
	m.unpauseReplicas(master)
	master.flags &^= flagFailoverInProgress | flagForceFailover
	m.setFailoverState(now, master, stateNone)
	if master.promoted != nil {
		master.promoted.flags &^= flagPromoted
		master.promoted = nil
	}
}

// failoverStateMachine runs the method of the current failover state.
func (m *Machine) failoverStateMachine(now time.Time, master *instance) {
	if !master.has(flagFailoverInProgress) {
		return
	}
	if master.failoverState >= stateSelectReplica {
		m.refreezeReplicas(now, master)
	}
	switch master.failoverState {
	case stateWaitStart:
		m.failoverWaitStart(now, master)
	case stateSelectReplica:
		m.failoverSelectReplica(now, master)
	case stateSendReplicaOfNoOne:
		m.failoverSendReplicaOfNoOne(now, master)
	case stateWaitPromotion:
		m.failoverWaitPromotion(now, master)
	case stateReconfReplicas:
		m.failoverReconfReplicas(now, master)
	}
}

// failoverWaitStart waits to be elected leader for the failover epoch.
func (m *Machine) failoverWaitStart(now time.Time, master *instance) {
	leader := m.getLeader(now, master, master.failoverEpoch)
	if leader != m.myID && !master.has(flagForceFailover) {
		timeout := min(m.timing.ElectionTimeout, master.failoverTimeout)
		if now.Sub(master.failoverStartTime) > timeout {
			m.instEvent(LevelWarning, EventAbortNotElected, master, "")
			m.abortFailover(now, master)
		}
		return
	}
	m.instEvent(LevelWarning, EventElectedLeader, master, "")
	m.setFailoverState(now, master, stateSelectReplica)
	m.instEvent(LevelWarning, EventStateSelectReplica, master, "")
}

// failoverSelectReplica picks the replica to promote.
func (m *Machine) failoverSelectReplica(now time.Time, master *instance) {
	m.freezeReplicas(now, master)
	r, wait := m.selectReplicaAck(now, master)
	if r == nil && wait && now.Sub(master.failoverStateChange) <= master.failoverTimeout {
		// min-replicas-ack: not enough replicas read since the master
		// stopped to know which one holds every acknowledged write.
		return
	}
	if r == nil {
		m.instEvent(LevelWarning, EventAbortNoGoodReplica, master, "")
		m.abortFailover(now, master)
		return
	}
	m.instEvent(LevelWarning, EventSelectedReplica, r, "")
	r.flags |= flagPromoted
	master.promoted = r
	m.setFailoverState(now, master, stateSendReplicaOfNoOne)
	m.instEvent(LevelNotice, EventStateSendReplicaOfNoOne, r, "")
}

// failoverSendReplicaOfNoOne turns the selected replica into a master.
func (m *Machine) failoverSendReplicaOfNoOne(now time.Time, master *instance) {
	r := master.promoted
	if !r.link.connected {
		if now.Sub(master.failoverStateChange) > master.failoverTimeout {
			m.instEvent(LevelWarning, EventAbortReplicaTimeout, master, "")
			m.abortFailover(now, master)
		}
		return
	}
	if !m.sendReplicaOf(r, Addr{}) {
		return
	}
	m.instEvent(LevelNotice, EventStateWaitPromotion, r, "")
	m.setFailoverState(now, master, stateWaitPromotion)
}

// failoverWaitPromotion waits for INFO to show the replica as a master
// (refreshInstanceInfo moves on); it aborts after failover-timeout.
func (m *Machine) failoverWaitPromotion(now time.Time, master *instance) {
	if now.Sub(master.failoverStateChange) > master.failoverTimeout {
		m.instEvent(LevelWarning, EventAbortReplicaTimeout, master, "")
		m.abortFailover(now, master)
	}
}

// failoverReconfReplicas points the other replicas at the promoted one,
// at most parallel-syncs at a time.
func (m *Machine) failoverReconfReplicas(now time.Time, master *instance) {
	inProgress := 0
	reps := master.sortedReplicas()
	for _, r := range reps {
		if r.has(flagReconfSent | flagReconfInprog) {
			inProgress++
		}
	}
	for _, r := range reps {
		if inProgress >= master.parallelSyncs {
			break
		}
		if r.has(flagPromoted | flagReconfDone) {
			continue
		}
		if r.has(flagReconfSent) && now.Sub(r.replReconfSentTime) > m.timing.ReplicaReconfTimeout {
			m.instEvent(LevelNotice, EventReplicaReconfTimeout, r, "")
			r.flags = r.flags&^flagReconfSent | flagReconfDone
		}
		if r.has(flagReconfSent|flagReconfInprog) || !r.link.connected {
			continue
		}
		if m.sendReplicaOf(r, master.promoted.addr) {
			r.flags |= flagReconfSent
			r.replReconfSentTime = now
			m.instEvent(LevelNotice, EventReplicaReconfSent, r, "")
			inProgress++
		}
	}
	m.failoverDetectEnd(now, master)
}

// failoverDetectEnd ends the failover when every reachable replica is
// reconfigured, or on failover-timeout.
func (m *Machine) failoverDetectEnd(now time.Time, master *instance) {
	if master.promoted == nil || master.promoted.has(flagSDown) {
		return
	}
	notReconfigured := 0
	for _, r := range master.replicas {
		if r.has(flagPromoted|flagReconfDone) || r.has(flagSDown) {
			continue
		}
		notReconfigured++
	}
	timeout := now.Sub(master.failoverStateChange) > master.failoverTimeout
	if timeout {
		notReconfigured = 0
		m.instEvent(LevelWarning, EventFailoverEndForTimeout, master, "")
	}
	if notReconfigured == 0 {
		m.instEvent(LevelWarning, EventFailoverEnd, master, "")
		m.setFailoverState(now, master, stateUpdateConfig)
	}
	if timeout {
		for _, r := range master.sortedReplicas() {
			if r.has(flagPromoted|flagReconfDone|flagReconfSent) || !r.link.connected {
				continue
			}
			if m.sendReplicaOf(r, master.promoted.addr) {
				m.instEvent(LevelNotice, EventReplicaReconfSentBE, r, "")
				r.flags |= flagReconfSent
			}
		}
	}
}

// failoverSwitchToPromotedReplica publishes +switch-master and makes the
// promoted replica the master.
func (m *Machine) failoverSwitchToPromotedReplica(now time.Time, master *instance) {
	ref := master
	if master.promoted != nil {
		ref = master.promoted
	}
	sm := SwitchMaster{Name: master.name, OldAddr: master.addr, NewAddr: ref.addr}
	m.emit(LevelWarning, EventSwitchMaster, master, sm.Payload())
	m.resetMasterAndChangeAddress(now, master, ref.addr)
}
