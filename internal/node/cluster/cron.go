package cluster

import (
	"time"
)

// Tick runs the periodic work of clusterCron. The runner calls it every
// 100 ms as Redis does; at other rates the per-node checks still use real
// elapsed time and the random ping still happens once a second.
func (m *Machine) Tick(now time.Time) {
	m.begin(now)
	defer m.end()
	updateState := false
	timeout := m.cfg.NodeTimeout
	handshakeTimeout := timeout
	if handshakeTimeout < time.Second {
		handshakeTimeout = time.Second
	}

	m.statsPFail = 0
	// A copy: cronReconnect may delete nodes. The copy's array is kept
	// for the next tick (an idle tick allocates nothing here).
	m.tickNodes = append(m.tickNodes[:0], m.order...)
	for _, n := range m.tickNodes {
		m.cronReconnect(n, handshakeTimeout)
	}
	clear(m.tickNodes) // hold no deleted node until the next tick

	// Once a second (every 10th tick at 100 ms), ping the node with the
	// oldest PONG among 5 random ones that are linked and have no ping in
	// flight.
	if m.nextRandomPing.IsZero() {
		m.nextRandomPing = now.Add(9 * cronPeriod)
	}
	if !now.Before(m.nextRandomPing) {
		m.pingRandom()
		m.nextRandomPing = m.nextRandomPing.Add(10 * cronPeriod)
		if !m.nextRandomPing.After(now) {
			m.nextRandomPing = now.Add(10 * cronPeriod)
		}
	}

	var orphans orphanStats
	for _, n := range m.order {
		if n.flags&(FlagMyself|FlagNoAddr|FlagHandshake) != 0 {
			continue
		}
		if m.myself.isSlave() && n.isMaster() && !n.failed() {
			m.countOrphan(&orphans, n)
		}
		pingDelay := now.Sub(n.pingSent)
		dataDelay := now.Sub(n.dataReceived)
		// No PONG and no data for half the timeout on an old link: maybe
		// the connection is stuck; reconnect.
		if n.link != nil && now.Sub(n.link.ctime) > timeout && !n.pingSent.IsZero() &&
			pingDelay > timeout/2 && dataDelay > timeout/2 {
			m.freeLink(n.link)
		}
		// Ping every node whose PONG is older than half the timeout.
		if n.link != nil && n.pingSent.IsZero() && now.Sub(n.pongReceived) > timeout/2 {
			m.sendPing(n.link, TypePing)
			continue
		}
		// A master pings the replica of a manual failover at every tick.
		if !m.mf.end.IsZero() && m.myself.isMaster() && m.mf.slave == n && n.link != nil {
			m.sendPing(n.link, TypePing)
			continue
		}
		if n.pingSent.IsZero() {
			continue
		}
		delay := pingDelay
		if dataDelay < delay {
			delay = dataDelay
		}
		if delay > timeout && n.flags&(FlagPFail|FlagFail) == 0 {
			n.flags |= FlagPFail
			m.event(EventPFail, n.name, "")
			updateState = true
		}
	}

	m.pingForFence()
	m.manualFailoverCheckTimeout()
	if m.myself.isSlave() {
		m.handleManualFailover()
		m.handleReplicaFailover()
		// Migrating makes sense only from a master with two working
		// replicas or more.
		if orphans.orphaned > 0 && orphans.maxSlaves >= 2 && orphans.mySlaves == orphans.maxSlaves &&
			m.cfg.AllowReplicaMigration {
			m.handleReplicaMigration(orphans.maxSlaves)
		}
	}

	if updateState || m.state == ClusterFail {
		m.updateState()
	}
}

// pingRandom is clusterCron's once-a-second ping.
func (m *Machine) pingRandom() {
	if len(m.order) == 0 {
		return
	}
	var min *node
	for j := 0; j < 5; j++ {
		n := m.order[m.rng.IntN(len(m.order))]
		if n.link == nil || !n.pingSent.IsZero() || n.flags&(FlagMyself|FlagHandshake) != 0 {
			continue
		}
		if min == nil || min.pongReceived.After(n.pongReceived) {
			min = n
		}
	}
	if min != nil {
		m.sendPing(min.link, TypePing)
	}
}

// cronReconnect drops an expired handshake node and asks for a link to a
// node that has none (clusterNodeCronHandleReconnect).
func (m *Machine) cronReconnect(n *node, handshakeTimeout time.Duration) {
	if n.flags&(FlagMyself|FlagNoAddr) != 0 {
		return
	}
	if n.flags&FlagPFail != 0 {
		m.statsPFail++
	}
	if n.inHandshake() && m.now.Sub(n.ctime) > handshakeTimeout {
		m.event(EventHandshakeTimeout, n.name, n.ip)
		m.delNode(n)
		return
	}
	if n.link == nil {
		l := m.newLink(n, false)
		m.ready.Connects = append(m.ready.Connects, Connect{Link: l.id, Node: n.name.String(), IP: n.ip, CPort: n.cport})
	}
}
