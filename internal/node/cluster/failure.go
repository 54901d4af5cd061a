package cluster

// markFailing turns a PFAIL node into FAIL when a majority of the masters
// serving slots report it failing (counting myself if I am a master),
// and broadcasts the FAIL (markNodeAsFailingIfNeeded).
func (m *Machine) markFailing(n *node) {
	needed := m.size/2 + 1
	if !n.timedOut() || n.failed() {
		return
	}
	failures := n.failureReportsCount(m.now, m.cfg.NodeTimeout)
	if m.myself.isMaster() {
		failures++
	}
	if failures < needed {
		return
	}
	n.flags &^= FlagPFail
	n.flags |= FlagFail
	n.failTime = m.now
	m.event(EventFail, n.name, "quorum reached")
	m.sendFail(n.name)
	m.todo |= todoUpdateState | todoSaveConfig
}

// sendFail broadcasts a FAIL about name (clusterSendFail).
func (m *Machine) sendFail(name Name) {
	msg := m.buildHeader(TypeFail)
	msg.FailAbout = name
	m.broadcast(msg)
}

// clearFailure undoes FAIL for a node we reach again: always for a
// replica or a master without slots; for a master with slots only after
// 2 × node timeout, when nobody took its slots over
// (clearNodeFailureIfNeeded).
func (m *Machine) clearFailure(n *node) {
	if !n.failed() {
		return
	}
	if n.isSlave() || n.numSlots == 0 {
		n.flags &^= FlagFail
		m.event(EventFailCleared, n.name, "reachable")
		m.todo |= todoUpdateState | todoSaveConfig
	}
	if n.isMaster() && n.numSlots > 0 && m.now.Sub(n.failTime) > m.cfg.NodeTimeout*failUndoTimeMult {
		n.flags &^= FlagFail
		m.event(EventFailCleared, n.name, "slots not taken over")
		m.todo |= todoUpdateState | todoSaveConfig
	}
}
