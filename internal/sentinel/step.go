package sentinel

import (
	"time"
)

// The observations: Step and what each message teaches the machine
// (links, PING and INFO replies, hellos, is-master-down-by-addr replies).

// Step feeds one observation to the machine.
func (m *Machine) Step(now time.Time, msg Message) {
	switch msg := msg.(type) {
	case LinkUp:
		m.forAddr(msg.Addr, func(ri *instance) {
			if !ri.link.connected {
				ri.link.connected = true
				ri.link.connTime = now
				ri.link.pending = 0
				m.sendPing(now, ri) // as Redis: PING as soon as connected
				// INFO at once too when the instance is new or was
				// unreachable: it may have restarted with another role.
				if ri.kind != RoleSentinel && (ri.infoRefresh.IsZero() || ri.has(flagSDown)) {
					ri.infoSent = now
					ri.link.pending++
					m.act(m.actionFor(ActInfo, ri))
				}
			}
		})
	case LinkDown:
		m.forAddr(msg.Addr, func(ri *instance) {
			m.linkDown(ri)
			// As Redis, whose reconnection sends a PING at once: the
			// down-after clock starts now, not at the last reply, so a
			// dropped link alone never makes an instance SDOWN early.
			if ri.link.actPing.IsZero() {
				ri.link.actPing = now
			}
		})
	case PingReply:
		m.forAddr(msg.Addr, func(ri *instance) { m.pingReply(now, ri, msg.Reply) })
	case InfoReply:
		info := ParseInfo(msg.Text)
		m.forAddr(msg.Addr, func(ri *instance) {
			if ri.kind != RoleSentinel {
				ri.info = msg.Text
				m.refreshInstanceInfo(now, ri, info)
			}
		})
	case FreezeReply:
		m.forAddr(msg.Addr, func(ri *instance) {
			if ri.kind == RoleReplica {
				m.freezeReply(now, ri, msg)
			}
		})
	case HelloReceived:
		m.processHello(now, msg.Payload)
	case MasterDownReply:
		m.masterDownReply(now, msg)
	}
}

// forAddr applies f to every instance at address a.
func (m *Machine) forAddr(a Addr, f func(*instance)) {
	for _, master := range m.sortedMasters() {
		if addrEqual(master.addr, a) {
			f(master)
		}
		for _, r := range master.sortedReplicas() {
			if addrEqual(r.addr, a) {
				f(r)
			}
		}
		for _, s := range master.sortedSentinels() {
			if addrEqual(s.addr, a) {
				f(s)
			}
		}
	}
}

func (m *Machine) linkDown(ri *instance) {
	ri.link.connected = false
	ri.link.pending = 0
}

func (m *Machine) pingReply(now time.Time, ri *instance, reply string) {
	if ri.link.pending > 0 {
		ri.link.pending--
	}
	if hasAnyPrefix(reply, "PONG", "LOADING", "MASTERDOWN") {
		ri.link.lastAvail = now
		ri.link.actPing = time.Time{}
		if hasAnyPrefix(reply, "PONG") {
			ri.flags &^= flagMasterReboot
		}
	}
	ri.link.lastPong = now
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if len(s) >= len(p) && s[:len(p)] == p {
			return true
		}
	}
	return false
}

// refreshInstanceInfo is sentinelRefreshInstanceInfo: learn from INFO, then
// act on role changes unless in TILT.
func (m *Machine) refreshInstanceInfo(now time.Time, ri *instance, info Info) {
	if ri.link.pending > 0 {
		ri.link.pending--
	}
	ri.infoRefresh = now
	ri.infoSent = time.Time{}
	ri.hasInfo = true
	ri.masterLinkDownTime = info.MasterLinkDownSince
	if info.RunID != "" {
		if ri.runID != "" && ri.runID != info.RunID {
			m.instEvent(LevelNotice, EventReboot, ri, "")
			if ri.kind == RoleMaster && ri.rebootDownAfter != 0 {
				ri.flags |= flagMasterReboot
				ri.rebootSince = now
			}
		}
		ri.runID = info.RunID
	}
	if ri.kind == RoleMaster && info.Role == RoleMaster {
		ri.ackNeed, ri.ackEligible = info.AckNeed, info.AckEligible
	}
	if ri.kind == RoleMaster {
		for _, a := range info.Replicas {
			if ri.lookupReplica(a) == nil && !addrEqual(a, ri.addr) {
				r := m.addReplica(now, ri, a)
				m.instEvent(LevelNotice, EventReplica, r, "")
				m.persist()
			}
		}
	}
	role := info.Role
	if role == RoleReplica {
		if ri.replMasterHost == "" || !equalFold(info.MasterHost, ri.replMasterHost) {
			ri.replMasterHost = info.MasterHost
			ri.replConfChangeTime = now
		}
		if ri.replMasterPort != info.MasterPort {
			ri.replMasterPort = info.MasterPort
			ri.replConfChangeTime = now
		}
		ri.replMasterLinkUp = info.MasterLinkUp
		if info.HasPriority {
			ri.replPriority = info.Priority
		}
		ri.replOffset = info.ReplOffset
		if info.HasAnnounced {
			ri.replAnnounced = info.Announced
		}
	}
	if role != 0 && role != ri.roleReported {
		ri.roleReportedTime = now
		ri.roleReported = role
		if role == RoleReplica {
			ri.replConfChangeTime = now
		}
		typ := EventRoleChange
		if role != ri.kind {
			typ = EventRoleMismatch
		}
		m.instEvent(LevelVerbose, typ, ri, " new reported role is %s", role)
	}
	if m.tilt || role == 0 {
		return
	}
	master := ri.master
	// A replica turned master: our promotion finishing, or a rogue master.
	if ri.kind == RoleReplica && role == RoleMaster {
		if ri.has(flagPromoted) && master.has(flagFailoverInProgress) && master.failoverState == stateWaitPromotion {
			master.configEpoch = master.failoverEpoch
			m.persist()
			m.instEvent(LevelWarning, EventPromotedReplica, ri, "")
			m.setFailoverState(now, master, stateReconfReplicas)
			m.instEvent(LevelWarning, EventStateReconfReplicas, master, "")
			m.clientReconfScript(master, "leader", "start", master.addr, ri.addr)
			m.forceHelloUpdate(master)
		} else {
			wait := 4 * m.timing.PublishPeriod
			if !ri.has(flagPromoted) && m.masterLooksSane(now, master) && ri.noDownFor(now, wait) &&
				now.Sub(ri.roleReportedTime) > wait {
				if m.sendReplicaOf(ri, master.addr) {
					m.instEvent(LevelNotice, EventConvertToReplica, ri, "")
				}
			}
		}
	}
	// A replica replicating from the wrong master.
	if ri.kind == RoleReplica && role == RoleReplica &&
		(ri.replMasterPort != master.addr.Port || !equalFold(ri.replMasterHost, master.addr.IP)) {
		wait := master.failoverTimeout
		if m.masterLooksSane(now, master) && ri.noDownFor(now, wait) && now.Sub(ri.replConfChangeTime) > wait {
			if m.sendReplicaOf(ri, master.addr) {
				m.instEvent(LevelNotice, EventFixReplicaConfig, ri, "")
			}
		}
	}
	// Progress of a replica being reconfigured by our failover.
	if ri.kind == RoleReplica && role == RoleReplica && ri.has(flagReconfSent|flagReconfInprog) && master.promoted != nil {
		if ri.has(flagReconfSent) && equalFold(ri.replMasterHost, master.promoted.addr.IP) &&
			ri.replMasterPort == master.promoted.addr.Port {
			ri.flags = ri.flags&^flagReconfSent | flagReconfInprog
			m.instEvent(LevelNotice, EventReplicaReconfInprog, ri, "")
		}
		if ri.has(flagReconfInprog) && ri.replMasterLinkUp {
			ri.flags = ri.flags&^flagReconfInprog | flagReconfDone
			m.instEvent(LevelNotice, EventReplicaReconfDone, ri, "")
		}
	}
}

func equalFold(a, b string) bool { return len(a) == len(b) && (a == b || lower(a) == lower(b)) }

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// masterLooksSane: a master we can safely point replicas at.
func (m *Machine) masterLooksSane(now time.Time, master *instance) bool {
	return master.roleReported == RoleMaster && !master.has(flagSDown|flagODown) &&
		!master.infoRefresh.IsZero() && now.Sub(master.infoRefresh) < 2*m.timing.InfoPeriod
}

// fastInfoPeriod is the INFO period for replicas a failover waits on.
const fastInfoPeriod = 100 * time.Millisecond

// sendReplicaOf emits ActReplicaOf if the link is up; target zero means NO
// ONE. An INFO follows at once (the link runs commands in order) so the
// new role is seen without waiting for the INFO period.
func (m *Machine) sendReplicaOf(ri *instance, target Addr) bool {
	if !ri.link.connected {
		return false
	}
	a := m.actionFor(ActReplicaOf, ri)
	a.Target = target
	// A replica our failover froze is unpaused in the same MULTI, after
	// REPLICAOF: its held stream ends before it could apply anything.
	a.Unpause, ri.paused = ri.paused, false
	ri.link.pending += 2
	m.act(a)
	ri.infoSent = time.Time{}
	m.act(m.actionFor(ActInfo, ri))
	return true
}

// processHello is sentinelProcessHelloMessage.
func (m *Machine) processHello(now time.Time, payload string) {
	h, err := ParseHello(payload)
	if err != nil || h.RunID == m.myID {
		return
	}
	master := m.masters[h.MasterName]
	if master == nil {
		return
	}
	addr := Addr{h.IP, h.Port}
	si := master.sentinels[h.RunID]
	if si != nil && !addrEqual(si.addr, addr) {
		// Same run id at a new address: replace it everywhere.
		for _, mm := range m.sortedMasters() {
			if old := mm.sentinels[h.RunID]; old != nil {
				delete(mm.sentinels, h.RunID)
				n := m.addSentinel(now, mm, h.RunID, addr)
				n.leader, n.leaderEpoch = old.leader, old.leaderEpoch
			}
		}
		m.instEvent(LevelNotice, EventSentinelAddressSwitch, master, " ip %s port %d for %s", h.IP, h.Port, h.RunID)
		si = master.sentinels[h.RunID]
		m.persist()
	}
	if si == nil {
		// Another Sentinel at the same address is stale: it restarted
		// with a new run id.
		for id, other := range master.sentinels {
			if addrEqual(other.addr, addr) {
				m.instEvent(LevelNotice, EventDupSentinel, other, " #duplicate of %s:%d or %s", h.IP, h.Port, h.RunID)
				delete(master.sentinels, id)
			}
		}
		si = m.addSentinel(now, master, h.RunID, addr)
		m.instEvent(LevelNotice, EventSentinel, si, "")
		m.persist()
	}
	if h.CurrentEpoch > m.currentEpoch {
		m.currentEpoch = h.CurrentEpoch
		m.persist()
		m.event(LevelWarning, EventNewEpoch, master, "%d", m.currentEpoch)
	}
	if master.configEpoch < h.ConfigEpoch {
		master.configEpoch = h.ConfigEpoch
		m.persist()
		if h.MasterAddr.Port != master.addr.Port || !equalFold(h.MasterAddr.IP, master.addr.IP) {
			m.instEvent(LevelWarning, EventConfigUpdateFrom, si, "")
			m.event(LevelWarning, EventSwitchMaster, master, "%s %s %d %s %d", master.name,
				master.addr.IP, master.addr.Port, h.MasterAddr.IP, h.MasterAddr.Port)
			old := master.addr
			m.resetMasterAndChangeAddress(now, master, h.MasterAddr)
			m.clientReconfScript(master, "observer", "start", old, master.addr)
		}
	}
	si.lastHello = now
}

// masterDownReply records a peer's IS-MASTER-DOWN-BY-ADDR answer.
func (m *Machine) masterDownReply(now time.Time, r MasterDownReply) {
	master := m.masters[r.MasterName]
	if master == nil {
		return
	}
	for _, s := range master.sentinels {
		if !addrEqual(s.addr, r.Addr) {
			continue
		}
		if s.link.pending > 0 {
			s.link.pending--
		}
		s.lastDownAns = now
		s.askPending = false
		if r.Down {
			s.flags |= flagMasterDown
		} else {
			s.flags &^= flagMasterDown
		}
		if r.Leader != "*" && r.Leader != "" {
			if s.leaderEpoch != r.LeaderEpoch || s.leader != r.Leader {
				m.event(LevelVerbose, EventVoteForLeader, s, "%s %d", r.Leader, r.LeaderEpoch)
			}
			s.leader = r.Leader
			s.leaderEpoch = r.LeaderEpoch
		}
	}
}

// resetMaster is sentinelResetMaster: forget replicas (and sentinels if
// withSentinels), failover state and flags.
func (m *Machine) resetMaster(now time.Time, ri *instance, withSentinels, genEvent bool) {
	ri.replicas = map[string]*instance{}
	if withSentinels {
		ri.sentinels = map[string]*instance{}
	}
	ri.flags &= 0
	ri.leader = ""
	ri.failoverState = stateNone
	ri.failoverStartTime = time.Time{}
	ri.failoverStateChange = time.Time{}
	ri.failoverEpoch = 0
	ri.promoted = nil
	ri.sDownSince, ri.oDownSince = time.Time{}, time.Time{}
	ri.runID = ""
	ri.infoRefresh, ri.infoSent = time.Time{}, time.Time{}
	ri.roleReported, ri.roleReportedTime = RoleMaster, now
	ri.link = link{actPing: now, lastAvail: now, lastPong: now}
	m.act(Action{Kind: ActDisconnect, Addr: ri.addr})
	if genEvent {
		m.instEvent(LevelWarning, EventResetMaster, ri, "")
	}
}

// resetMasterAndChangeAddress is sentinelResetMasterAndChangeAddress: the
// master moves to addr; the old master and the other replicas become its
// replicas.
func (m *Machine) resetMasterAndChangeAddress(now time.Time, master *instance, addr Addr) {
	var reps []Addr
	for _, r := range master.sortedReplicas() {
		if !addrEqual(r.addr, addr) {
			reps = append(reps, r.addr)
		}
	}
	if !addrEqual(master.addr, addr) {
		reps = append(reps, master.addr)
	}
	m.resetMaster(now, master, false, false)
	master.addr = addr
	for _, a := range reps {
		m.addReplica(now, master, a)
	}
	// Links to sentinels survive; clear their stale votes and down flags.
	for _, s := range master.sentinels {
		s.flags &^= flagMasterDown
	}
	m.persist()
}
