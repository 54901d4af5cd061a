package cluster

import (
	"strconv"
	"time"
)

// Manual failover (CLUSTER FAILOVER). The replica sends MFSTART to its
// master; the master pauses writes for 2 × CLUSTER_MF_TIMEOUT and, once
// the node reports the pause in force (WritesPaused), announces its
// offset in PINGs flagged PAUSED; the replica waits until it has
// processed that offset, then runs an election with no delay whose
// requests carry FORCEACK, so masters vote although its master is up.
// FORCE skips the master; TAKEOVER skips the election too. The attempt is
// abandoned after CLUSTER_MF_TIMEOUT (5 s).

// manualFailover is the manual failover state of both sides
// (server.cluster->mf_*); the zero value is "none in progress".
type manualFailover struct {
	end       time.Time // deadline; zero: no manual failover in progress
	canStart  bool      // replica: the offset is reached (or FORCE): elect now
	slave     *node     // master: the replica that asked
	paused    bool      // master: the node reported the write pause in force
	offsetSet bool      // replica: masterOffset was received
	// masterOffset is the master's offset announced while paused.
	masterOffset uint64
}

var errFailoverOnMaster = &Error{"ERR You should send CLUSTER FAILOVER to a replica"}
var errFailoverNoMaster = &Error{"ERR I'm a replica but my master is unknown to me"}
var errFailoverMasterDown = &Error{"ERR Master is down or failed, please use CLUSTER FAILOVER FORCE"}
var errSyntax = &Error{"ERR syntax error"}

// Failover is CLUSTER FAILOVER [FORCE|TAKEOVER]: mode is "", "force" or
// "takeover" (any case). Errors carry Redis's texts.
func (m *Machine) Failover(now time.Time, mode string) error {
	m.begin(now)
	defer m.end()
	force, takeover := false, false
	switch {
	case mode == "":
	case equalFoldASCII(mode, "force"):
		force = true
	case equalFoldASCII(mode, "takeover"):
		force, takeover = true, true
	default:
		return errSyntax
	}
	me := m.myself
	switch {
	case me.isMaster():
		return errFailoverOnMaster
	case me.slaveOf == nil:
		return errFailoverNoMaster
	case !force && (me.slaveOf.failed() || me.slaveOf.link == nil):
		return errFailoverMasterDown
	}
	m.resetManualFailover()
	m.mf.end = now.Add(mfTimeout)
	switch {
	case takeover:
		// No vote: a new epoch of my own, then the slots.
		m.event(EventManualFailover, me.name, "takeover")
		m.bumpEpochWithoutConsensus()
		m.failoverReplaceMaster()
	case force:
		m.event(EventManualFailover, me.name, "force")
		m.mf.canStart = true
	default:
		m.event(EventManualFailover, me.name, "requested")
		m.sendMFStart(me.slaveOf)
	}
	return nil
}

// sendMFStart asks master to pause for my manual failover (clusterSendMFStart).
func (m *Machine) sendMFStart(master *node) {
	if master.link == nil {
		return
	}
	m.send(master.link, m.buildHeader(TypeMFStart))
}

// handleMFStart is a replica of mine starting a manual failover: I pause
// writes and, once paused, tell it my offset.
func (m *Machine) handleMFStart(l *link, msg *Msg, sender *node) {
	if sender == nil || sender.slaveOf != m.myself {
		return
	}
	m.resetManualFailover()
	m.mf.end = m.now.Add(mfTimeout)
	m.mf.slave = sender
	m.ready.PauseWrites = mfTimeout * mfPauseMult
	m.ready.Unpause = false
	m.event(EventManualFailover, sender.name, "pause requested by replica")
}

// WritesPaused reports that the write pause of the latest PauseWrites is
// in force. If a manual failover still waits for it, the machine PINGs
// the replica with its offset, flagged PAUSED, and keeps doing so every
// Tick until the failover ends.
func (m *Machine) WritesPaused(now time.Time) {
	m.begin(now)
	defer m.end()
	s := m.mf.slave
	if m.mf.end.IsZero() || s == nil || m.mf.paused || !m.myself.isMaster() {
		return
	}
	m.mf.paused = true
	m.event(EventManualFailover, s.name, "paused at offset "+strconv.FormatInt(m.local.ReplOffset(), 10))
	if s.link != nil && s.link.up {
		m.sendPing(s.link, TypePing)
	} else if s.inbound != nil {
		m.sendPing(s.inbound, TypePing)
	}
}

// resetManualFailover ends any manual failover, lifting a master's pause
// (resetManualFailover).
func (m *Machine) resetManualFailover() {
	if m.mf.slave != nil {
		m.ready.Unpause = true
		m.ready.PauseWrites = 0
	}
	m.mf = manualFailover{}
}

// manualFailoverCheckTimeout aborts a manual failover past its deadline
// (manualFailoverCheckTimeout).
func (m *Machine) manualFailoverCheckTimeout() {
	if !m.mf.end.IsZero() && m.mf.end.Before(m.now) {
		m.event(EventManualFailover, m.myself.name, "timed out")
		m.resetManualFailover()
	}
}

// captureMasterOffset takes my master's offset from its first PAUSED
// packet of a manual failover.
func (m *Machine) captureMasterOffset(msg *Msg, sender *node) {
	if m.mf.end.IsZero() || !m.myself.isSlave() || m.myself.slaveOf != sender ||
		msg.MFlags[0]&MFlagPaused == 0 || m.mf.offsetSet {
		return
	}
	m.mf.masterOffset = msg.Offset
	m.mf.offsetSet = true
	m.todo |= todoHandleManualFailover
	m.event(EventManualFailover, sender.name, "master paused at offset "+strconv.FormatUint(msg.Offset, 10))
}

// handleManualFailover lets the election start once my offset reaches
// the master's paused one (clusterHandleManualFailover).
func (m *Machine) handleManualFailover() {
	if m.mf.end.IsZero() || m.mf.canStart || !m.mf.offsetSet {
		return
	}
	if m.mf.masterOffset == uint64(m.local.ReplOffset()) {
		m.mf.canStart = true
		m.event(EventManualFailover, m.myself.name, "offset reached")
		m.todo |= todoHandleFailover
		return
	}
	m.todo |= todoHandleManualFailover
}
