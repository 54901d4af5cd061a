package cluster

import (
	"math/rand/v2"
)

// buildHeader fills the header every message carries
// (clusterBuildMessageHdr): a replica sends its master's slots and config
// epoch.
func (m *Machine) buildHeader(typ MsgType) *Msg {
	me := m.myself
	master := me
	if me.isSlave() && me.slaveOf != nil {
		master = me.slaveOf
	}
	msg := newMsg()
	h := &msg.Header
	h.Ver = ProtoVer
	h.Type = typ
	h.Sender = me.name
	if m.cfg.IP != "" {
		h.SetIP(m.cfg.IP)
	}
	h.MySlots = master.slots
	if me.slaveOf != nil {
		h.SlaveOf = me.slaveOf.name
	}
	h.Port = uint16(me.port)
	h.PPort = uint16(me.pport)
	h.CPort = uint16(me.cport)
	h.Flags = me.flags
	h.State = byte(m.state)
	h.CurrentEpoch = m.currentEpoch
	h.ConfigEpoch = master.configEpoch
	h.Offset = uint64(m.local.ReplOffset())
	if me.isMaster() && !m.mf.end.IsZero() && m.mf.paused {
		// The offset above is final: writes are paused for a manual
		// failover.
		h.MFlags[0] |= MFlagPaused
	}
	return msg
}

// gossipCounts is clusterSendPing's arithmetic: with total known nodes,
// wanted = max(3, total/10) random entries, capped at fresh = total-2
// (myself and the receiver).
func gossipCounts(total int) (wanted, fresh int) {
	fresh = total - 2
	wanted = total / 10
	if wanted < 3 {
		wanted = 3
	}
	if wanted > fresh {
		wanted = fresh
	}
	return wanted, fresh
}

// gossipCandidate is what selectGossip needs to know about a node.
type gossipCandidate struct {
	myself, pfail, handshake, noaddr, linked bool
	numSlots                                 int
}

// selectGossip returns the indexes of the nodes a PING gossips about, as
// clusterSendPing picks them among total nodes: up to wanted random
// non-PFAIL nodes in 3×wanted draws (skipping myself, handshake and noaddr
// nodes, and unlinked nodes without slots, and drawing no node twice),
// then up to pfailWanted PFAIL nodes that are neither in handshake nor
// noaddr, in table order. pfailWanted is the PFAIL count of the last cron,
// as in Redis; cand describes node i and is called only for the nodes
// looked at.
func selectGossip(rng *rand.Rand, total, pfailWanted int, cand func(i int) gossipCandidate) []int {
	if total == 0 {
		return nil
	}
	wanted, fresh := gossipCounts(total)
	var out []int
	var taken map[int]bool
	for iter := wanted * 3; fresh > 0 && len(out) < wanted && iter > 0; iter-- {
		i := rng.IntN(total)
		c := cand(i)
		if c.myself || c.pfail {
			continue
		}
		if c.handshake || c.noaddr || (!c.linked && c.numSlots == 0) {
			fresh--
			continue
		}
		if taken[i] {
			continue
		}
		if taken == nil {
			taken = make(map[int]bool, wanted)
		}
		taken[i] = true
		out = append(out, i)
		fresh--
	}
	for i := 0; i < total && pfailWanted > 0; i++ {
		c := cand(i)
		if c.pfail && !c.handshake && !c.noaddr {
			out = append(out, i)
			pfailWanted--
		}
	}
	return out
}

func gossipEntry(n *node) Gossip {
	g := Gossip{
		Name:         n.name,
		PingSent:     uint32(unixMs(n.pingSent) / 1000),
		PongReceived: uint32(unixMs(n.pongReceived) / 1000),
		IP:           ipField(n.ip),
		Port:         uint16(n.port),
		CPort:        uint16(n.cport),
		Flags:        n.flags,
		PPort:        uint16(n.pport),
	}
	return g
}

// sendPing sends a PING, PONG or MEET with gossip on l (clusterSendPing).
func (m *Machine) sendPing(l *link, typ MsgType) {
	m.pingsSent++
	if !l.inbound && typ == TypePing {
		l.node.pingSent = m.now
	}
	if !l.inbound && (typ == TypePing || typ == TypeMeet) {
		l.pings.push(m.now)
	}
	msg := m.buildHeader(typ)
	cand := func(i int) gossipCandidate {
		n := m.order[i]
		return gossipCandidate{
			myself: n == m.myself, pfail: n.flags&FlagPFail != 0,
			handshake: n.inHandshake(), noaddr: !n.hasAddr(),
			linked: n.link != nil, numSlots: n.numSlots,
		}
	}
	sel := selectGossip(m.rng, len(m.order), m.statsPFail, cand)
	msg.Gossip = make([]Gossip, 0, len(sel))
	for _, i := range sel {
		n := m.order[i]
		n.lastInPingGossip = m.pingsSent
		msg.Gossip = append(msg.Gossip, gossipEntry(n))
	}
	if m.myself.hostname != "" {
		msg.MFlags[0] |= MFlagExtData
		msg.Exts = []Ext{{Type: ExtHostname, Data: []byte(m.myself.hostname)}}
	}
	m.send(l, msg)
}

// broadcastPong sends a PONG on every outbound link (clusterBroadcastPong);
// localSlaves limits it to the replicas of my shard.
func (m *Machine) broadcastPong(localSlaves bool) {
	for _, n := range m.order {
		if n.link == nil || n == m.myself || n.inHandshake() {
			continue
		}
		if localSlaves {
			local := n.isSlave() && n.slaveOf != nil &&
				(n.slaveOf == m.myself || n.slaveOf == m.myself.slaveOf)
			if !local {
				continue
			}
		}
		m.sendPing(n.link, TypePong)
	}
}

// processGossip applies the gossip section of a PING, PONG or MEET
// (clusterProcessGossipSection). sender may be nil (MEET from a node we
// do not know yet).
func (m *Machine) processGossip(msg *Msg, sender *node) {
	now := m.now
	for _, g := range msg.Gossip {
		flags := g.Flags
		if !validName(g.Name.String()) {
			continue // not a node id: never let it into the table
		}
		n := m.lookupName(g.Name)
		if n == nil {
			// Only a known sender may introduce nodes, never a NOADDR one,
			// never one FORGET put on the blacklist.
			if sender != nil && flags&FlagNoAddr == 0 && !m.blacklisted(g.Name) {
				nn := m.createNode(now, g.Name, gossipNodeFlags(flags))
				nn.ip = cstring(g.IP[:])
				nn.port, nn.pport, nn.cport = int(g.Port), int(g.PPort), int(g.CPort)
				m.addNode(nn)
				m.event(EventNodeAdded, nn.name, "")
			}
			continue
		}
		if sender != nil && sender.isMaster() && n != m.myself {
			if flags&(FlagFail|FlagPFail) != 0 {
				n.addFailureReport(sender, now)
				m.markFailing(n)
			} else {
				n.delFailureReport(sender, now, m.cfg.NodeTimeout)
			}
		}
		// Trust another node's fresher PONG only for a node we see up,
		// have no ping in flight to, and have no failure reports about.
		if flags&(FlagFail|FlagPFail) == 0 && n.pingSent.IsZero() &&
			n.failureReportsCount(now, m.cfg.NodeTimeout) == 0 {
			pong := int64(g.PongReceived) * 1000
			if pong <= unixMs(now)+500 && pong > unixMs(n.pongReceived) {
				n.pongReceived = fromUnixMs(pong)
			}
		}
		// A node we cannot reach, seen at another address by a node that
		// can: take the new address and reconnect.
		gip := cstring(g.IP[:])
		if n.flags&(FlagFail|FlagPFail) != 0 && flags&FlagNoAddr == 0 &&
			flags&(FlagFail|FlagPFail) == 0 &&
			(!equalFoldASCII(n.ip, gip) || n.port != int(g.Port) || n.cport != int(g.CPort)) {
			if n.link != nil {
				m.freeLink(n.link)
			}
			n.ip = gip
			n.port, n.pport, n.cport = int(g.Port), int(g.PPort), int(g.CPort)
			n.flags &^= FlagNoAddr
			m.event(EventAddressChanged, n.name, n.ip)
		}
	}
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// gossipNodeFlags are the flags a node learnt from a gossip entry starts
// with. Redis takes the entry's flags as they are; a hostile entry could
// then carry our own myself bit, a handshake bit, or both roles, which no
// real node sends:
// those bits are dropped (the sender's own packets set the role later).
func gossipNodeFlags(f uint16) uint16 {
	f &^= FlagMyself | FlagMeet | FlagMigrateTo | FlagHandshake
	if f&(FlagMaster|FlagSlave) == FlagMaster|FlagSlave {
		f &^= FlagSlave
	}
	return f
}
