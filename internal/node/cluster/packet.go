package cluster

import (
	"bytes"
	"errors"
	"time"
)

var errInvalidAddr = errors.New("cluster: invalid node address")

// senderOf finds the sender of msg on l, binding an inbound link to its
// node the first time (getNodeFromLinkAndMsg).
func (m *Machine) senderOf(l *link, msg *Msg) *node {
	if l.node != nil && !l.node.inHandshake() {
		return l.node
	}
	s := m.lookupName(msg.Sender)
	if s != nil && l.node == nil && l.inbound {
		if s.inbound != nil && s.inbound != l {
			// A reconnecting peer: keep the newer inbound link.
			m.freeLink(s.inbound)
		}
		s.inbound = l
		l.node = s
	}
	return s
}

// HandlePacket processes a decoded bus message received on link id
// (clusterProcessPacket). The codec has checked lengths; messages of
// another protocol version, or on an unknown link, are ignored.
func (m *Machine) HandlePacket(now time.Time, id LinkID, msg *Msg) {
	m.begin(now)
	defer m.end()
	l := m.links[id]
	if l == nil || msg == nil {
		return
	}
	if int(msg.Type) < TypeCount {
		m.statsReceived[msg.Type]++
	}
	if msg.Ver != ProtoVer || int(msg.Type) == m.dropFilter {
		return
	}
	sender := m.senderOf(l, msg)
	if sender != nil {
		sender.dataReceived = now
	}
	if sender != nil && !sender.inHandshake() {
		if msg.CurrentEpoch > m.currentEpoch {
			m.currentEpoch = msg.CurrentEpoch
		}
		if msg.ConfigEpoch > sender.configEpoch {
			sender.configEpoch = msg.ConfigEpoch
			m.todo |= todoSaveConfig | todoFsyncLearned
		}
		sender.replOffset = msg.Offset
		m.captureMasterOffset(msg, sender)
	}
	switch msg.Type {
	case TypePing, TypePong, TypeMeet:
		m.handlePing(l, msg, sender)
	case TypeFail:
		m.handleFail(msg, sender)
	case TypePublish, TypePublishShard:
		m.handlePublish(msg, sender)
	case TypeFailoverAuthRequest:
		m.handleAuthRequest(msg, sender)
	case TypeFailoverAuthAck:
		m.handleAuthAck(msg, sender)
	case TypeMFStart:
		m.handleMFStart(l, msg, sender)
	case TypeUpdate:
		m.handleUpdate(msg, sender)
	case TypeModule:
		// Accepted and ignored: shardnode has no modules.
	}
}

// handlePing handles PING, PONG and MEET.
func (m *Machine) handlePing(l *link, msg *Msg, sender *node) {
	now := m.now
	typ := msg.Type
	flags := msg.Flags
	// A PONG on my outbound link answers my oldest unanswered PING there.
	asked, answered := time.Time{}, false
	if !l.inbound && typ == TypePong {
		asked, answered = l.pings.pop()
	}
	if typ == TypePing || typ == TypeMeet {
		// Learn our own address from the connection a MEET came in on
		// (or any PING while we have none), unless it is announced.
		if (typ == TypeMeet || m.myself.ip == "") && m.cfg.IP == "" && l.localIP != "" &&
			l.localIP != m.myself.ip {
			m.myself.ip = l.localIP
			m.todo |= todoSaveConfig
		}
		if sender == nil && typ == TypeMeet {
			n := m.createNode(now, Name{}, FlagHandshake)
			n.ip = m.peerIP(l, msg)
			n.port, n.pport, n.cport = int(msg.Port), int(msg.PPort), int(msg.CPort)
			m.addNode(n)
			m.event(EventHandshakeStarted, n.name, n.ip)
			m.todo |= todoSaveConfig
			// A MEET is trusted: its gossip introduces nodes too.
			m.processGossipTrusted(msg)
		}
		m.sendPing(l, TypePong)
	}

	if !l.inbound {
		ln := l.node
		if ln.inHandshake() {
			if sender != nil {
				// We already know this node: update its address and drop
				// the handshake node (and with it this link).
				if m.updateAddress(sender, l, msg) {
					m.todo |= todoSaveConfig | todoUpdateState
				}
				m.delNode(ln)
				return
			}
			if !validName(msg.Sender.String()) {
				return // a sender id that is not one: ignore the packet
			}
			m.renameNode(ln, msg.Sender)
			ln.flags &^= FlagHandshake
			// Redis copies the sender's role bits as they come; a
			// hostile header may carry both, which no real node sends:
			// keep one, by the slaveof field, so a node is never both.
			role := flags & (FlagMaster | FlagSlave)
			if role == FlagMaster|FlagSlave {
				role = FlagMaster
				if !msg.SlaveOf.IsNull() {
					role = FlagSlave
				}
			}
			ln.flags = ln.flags&^(FlagMaster|FlagSlave) | role
			m.todo |= todoSaveConfig
			// As in Redis, the rest of this first packet is processed
			// with the sender still unknown; the next one carries on.
		} else if ln.name != msg.Sender {
			// The peer at this address has another id: forget the
			// address, close the link.
			ln.flags |= FlagNoAddr
			ln.ip = ""
			ln.port, ln.pport, ln.cport = 0, 0, 0
			m.freeLink(l)
			m.todo |= todoSaveConfig
			return
		}
	}

	if sender != nil {
		sender.flags = sender.flags&^FlagNoFailover | flags&FlagNoFailover
	}
	if sender != nil && typ == TypePing && !sender.inHandshake() && m.updateAddress(sender, l, msg) {
		m.todo |= todoSaveConfig | todoUpdateState
	}

	if !l.inbound && typ == TypePong {
		ln := l.node
		ln.pongReceived = now
		ln.pingSent = time.Time{}
		if answered {
			creditPong(ln, asked)
			m.ackRoundAnswered(ln, asked)
		}
		if ln.timedOut() {
			ln.flags &^= FlagPFail
			m.todo |= todoSaveConfig | todoUpdateState
		} else if ln.failed() {
			m.clearFailure(ln)
		}
	}

	if sender != nil {
		m.updateRole(sender, msg)
	}

	var senderMaster *node
	dirty := false
	if sender != nil {
		senderMaster = sender.master()
		if senderMaster != nil {
			dirty = senderMaster.slots != msg.MySlots
		}
	}
	if sender != nil && sender.isMaster() && dirty {
		m.updateSlotsConfigWith(sender, msg.ConfigEpoch, &msg.MySlots)
	}
	// The sender claims slots we know a newer owner of: tell it.
	if sender != nil && dirty {
		for s := 0; s < NumSlots; s++ {
			if !msg.MySlots.Has(s) {
				continue
			}
			owner := m.slots[s]
			if owner == sender || m.slotUnclaimed(s) {
				continue
			}
			if owner.configEpoch > msg.ConfigEpoch {
				m.sendUpdate(sender.link, owner)
				break
			}
		}
	}
	if sender != nil && m.myself.isMaster() && sender.isMaster() && msg.ConfigEpoch == m.myself.configEpoch {
		m.handleConfigEpochCollision(sender)
	}
	if sender != nil {
		m.processGossip(msg, sender)
		m.processExtensions(msg, sender)
	}
}

// processGossipTrusted processes the gossip of a MEET from an unknown
// node: Redis passes the link's (unset) node, so only known nodes'
// entries are used, without failure reports, and none are added.
func (m *Machine) processGossipTrusted(msg *Msg) { m.processGossip(msg, nil) }

func (m *Machine) processExtensions(msg *Msg, sender *node) {
	host := ""
	for _, e := range msg.Exts {
		if e.Type == ExtHostname {
			host = cstring(e.Data)
		}
	}
	sender.hostname = host
}

// peerIP is the address a node is known by: the one it announces, else
// the link's peer address (nodeIp2String).
func (m *Machine) peerIP(l *link, msg *Msg) string {
	if ip := msg.IP(); ip != "" {
		return ip
	}
	if l.inbound {
		return l.peerIP
	}
	if l.node != nil {
		return l.node.ip
	}
	return ""
}

// updateAddress takes the address a PING (or handshake PONG) reports for
// a known node when it arrives on a link other than the node's outbound
// one (nodeUpdateAddressIfNeeded). It returns true if it changed.
func (m *Machine) updateAddress(n *node, l *link, msg *Msg) bool {
	if l == n.link {
		return false
	}
	ip := m.peerIP(l, msg)
	if ip == "" {
		return false
	}
	port, pport, cport := int(msg.Port), int(msg.PPort), int(msg.CPort)
	if n.port == port && n.cport == cport && n.pport == pport && n.ip == ip {
		return false
	}
	n.ip, n.port, n.pport, n.cport = ip, port, pport, cport
	if n.link != nil {
		m.freeLink(n.link)
	}
	n.flags &^= FlagNoAddr
	m.event(EventAddressChanged, n.name, ip)
	if m.myself.isSlave() && m.myself.slaveOf == n {
		m.setRole(n)
	}
	return true
}

// updateRole applies the sender's role from the header: master, or
// replica of slaveof.
func (m *Machine) updateRole(sender *node, msg *Msg) {
	if msg.SlaveOf.IsNull() {
		m.setNodeAsMaster(sender)
		return
	}
	master := m.lookupName(msg.SlaveOf)
	if sender.isMaster() {
		// A master turned into a replica.
		m.delNodeSlots(sender)
		sender.flags &^= FlagMaster | FlagMigrateTo
		sender.flags |= FlagSlave
		m.todo |= todoSaveConfig | todoUpdateState
	}
	if master != nil && sender.slaveOf != master {
		if sender.slaveOf != nil {
			sender.slaveOf.removeSlave(sender)
		}
		master.addSlave(sender)
		sender.slaveOf = master
		m.todo |= todoSaveConfig
	}
}

// setNodeAsMaster records that n now acts as a master
// (clusterSetNodeAsMaster).
func (m *Machine) setNodeAsMaster(n *node) {
	if n.isMaster() {
		return
	}
	if n.slaveOf != nil {
		n.slaveOf.removeSlave(n)
		if n != m.myself {
			n.flags |= FlagMigrateTo
		}
	}
	n.flags &^= FlagSlave
	n.flags |= FlagMaster
	n.slaveOf = nil
	m.todo |= todoSaveConfig | todoUpdateState
}

// handleFail handles a FAIL broadcast.
func (m *Machine) handleFail(msg *Msg, sender *node) {
	if sender == nil {
		return
	}
	f := m.lookupName(msg.FailAbout)
	if f != nil {
		m.siblingFail(f, sender) // an offset round (freeze.go)
	}
	if f == nil || f.flags&(FlagFail|FlagMyself) != 0 {
		return
	}
	f.flags |= FlagFail
	f.failTime = m.now
	f.flags &^= FlagPFail
	m.event(EventFail, f.name, "message from "+sender.name.String())
	m.todo |= todoSaveConfig | todoUpdateState
}

// handlePublish delivers a PUBLISH or PUBLISHSHARD to local subscribers.
func (m *Machine) handlePublish(msg *Msg, sender *node) {
	if sender == nil {
		return
	}
	m.ready.Deliveries = append(m.ready.Deliveries, Delivery{
		Shard:   msg.Type == TypePublishShard,
		Channel: bytes.Clone(msg.Channel), Message: bytes.Clone(msg.Message),
	})
}

// handleUpdate applies an UPDATE: a newer configuration of some node.
func (m *Machine) handleUpdate(msg *Msg, sender *node) {
	if sender == nil {
		return
	}
	n := m.lookupName(msg.UpdateNode)
	if n == nil || n.configEpoch >= msg.UpdateConfigEpoch {
		return
	}
	if n.isSlave() {
		m.setNodeAsMaster(n)
	}
	n.configEpoch = msg.UpdateConfigEpoch
	m.todo |= todoSaveConfig | todoFsyncLearned
	slots := msg.UpdateSlots
	if slots == nil {
		slots = new(SlotBitmap) // as encoded: no slots
	}
	m.updateSlotsConfigWith(n, msg.UpdateConfigEpoch, slots)
}

// sendUpdate tells the node on l the configuration of n (clusterSendUpdate).
func (m *Machine) sendUpdate(l *link, n *node) {
	if l == nil {
		return
	}
	msg := m.buildHeader(TypeUpdate)
	msg.UpdateNode = n.name
	msg.UpdateConfigEpoch = n.configEpoch
	slots := n.slots
	msg.UpdateSlots = &slots
	for i := range msg.UpdateSlots {
		msg.UpdateSlots[i] &^= m.ownerNotClaiming[i]
	}
	m.send(l, msg)
}
