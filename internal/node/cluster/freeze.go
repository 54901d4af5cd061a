package cluster

// The freeze: a replica with min-replicas-ack n > 0 whose master is FAIL
// stops applying, and therefore acknowledging, that master's stream
// (docs/ARCHITECTURE.md, "Acknowledged writes"). It closes the gap the
// cluster fence (fence.go) leaves: a master that comes back during its
// failover (resumed from SIGSTOP, a healed partition) is unfenced by the
// fresh PONGs of the masters and could acknowledge writes through a
// sibling replica whose offset a candidate had already read.
//
// The order that makes the read offset final. A candidate starts every
// vote request with an offset round (failoverAckRound): on its outbound
// link to each sibling it sends a FAIL about our master, then a PING, and
// the election rule (ackRuleMet) counts only offsets carried by the PONGs
// answering PINGs of the current round. A link is a TCP stream and the
// machine handles its packets in order, so the sibling handles the FAIL
// first; the freeze is published to the node (ReplHolder) at the end of
// that input, before the PING is handled and its PONG's header reads the
// offset. From then on the sibling's link to the old master sends no ACK
// with an offset read later and applies no more of the stream
// (repl.Hold), so every write it acknowledged is within the offset its
// PONG reported. A FAIL is what Redis broadcasts anyway: a redis-server
// node takes a redundant one as a no-op, and one it had not received yet
// as the FAIL it would soon receive from others.
//
// How long. The sibling stays frozen while it sees the master FAIL, and
// for holdLength (2 × node timeout) after the last FAIL about it from a
// sibling replica even if the FAIL is cleared meanwhile (a master with
// slots is cleared 2 × node timeout after its FAIL, if reachable). When
// it is reconfigured to a new master meanwhile, the old master stays
// held (its link is stopped by the node after the Ready) and the new
// master's link is not held; the hold on the old master is released only
// if it is my master again and not FAIL, or forgotten. A candidate
// promotes itself only within promoteWithin (1 × node timeout, on its own
// clock) of its round, so with clock rates within 2 % the sibling is
// frozen for at least 0.94 × node timeout after the new master took over,
// for its first PONG (broadcast to every node at promotion) to reach it.
//
// Assumed, besides the fence's assumptions: every replica of the shard is
// a shardnode with the same min-replicas-ack (a redis-server replica does
// not freeze; its offset is counted as read, so a shard with one gives
// the weaker, Redis-like, guarantee); the new master's announcement
// reaches a frozen sibling within 0.94 × node timeout of its promotion,
// or the old master stays unreachable from that sibling meanwhile.

import (
	"strconv"
	"strings"
	"time"
)

// Event of the freeze.
const EventReplHold EventType = "repl-hold" // Node: the master; Detail: "on" or "off"

// ReplHolder is implemented by a Local that can hold the replication
// stream from one master (repl.Hold).
type ReplHolder interface {
	// HoldReplication holds the link to the master at addr
	// ("ip:port"), or none with "". Called after every input with the
	// current decision; it must not wait.
	HoldReplication(addr string)
}

// replHold is the freeze's state on a replica.
type replHold struct {
	// node is the master whose stream is held (nil: none): set while it
	// is my master and the freeze's condition holds; released only when
	// it is my master again (or still) and the condition ended, or when
	// it is forgotten. Not reset by a reconfiguration: the old link is
	// stopped by the node after the Ready.
	node *node
	// sibling is the master named by the last FAIL a sibling replica
	// sent me about my master, and until the time to keep the freeze
	// after it (holdLength).
	sibling *node
	until   time.Time
}

// holdLength is how long a FAIL from a sibling keeps me frozen, whatever
// the master's FAIL flag does meanwhile.
func holdLength(nodeTimeout time.Duration) time.Duration { return 2 * nodeTimeout }

// promoteWithin is how long after its offset round a candidate may still
// take its votes and promote itself.
func promoteWithin(nodeTimeout time.Duration) time.Duration { return nodeTimeout }

// frozenFor reports whether the freeze's condition holds for master now.
func (m *Machine) frozenFor(master *node) bool {
	if m.cfg.MinReplicasAck <= 0 || master == nil {
		return false
	}
	return master.failed() || m.hold.sibling == master && m.now.Before(m.hold.until)
}

// siblingFail records a FAIL about my master sent by one of its other
// replicas (an offset round): I stay frozen for holdLength.
func (m *Machine) siblingFail(about, sender *node) {
	me := m.myself
	if m.cfg.MinReplicasAck <= 0 || !me.isSlave() || me.slaveOf != about || sender.slaveOf != about {
		return
	}
	m.hold.sibling = about
	m.hold.until = m.now.Add(holdLength(m.cfg.NodeTimeout))
}

// updateReplHold decides the freeze after every input and tells the node.
func (m *Machine) updateReplHold() {
	me := m.myself
	h := &m.hold
	if h.node != nil && m.nodes[h.node.name] != h.node {
		h.node = nil // forgotten
	}
	if me.isSlave() && me.slaveOf != nil {
		master := me.slaveOf
		switch {
		case m.frozenFor(master):
			if h.node != master {
				h.node = master
				m.event(EventReplHold, master.name, "on")
			}
		case h.node == master:
			h.node = nil
			m.event(EventReplHold, master.name, "off")
		}
	}
	hl, ok := m.local.(ReplHolder)
	if !ok {
		return
	}
	addr := ""
	if h.node != nil {
		addr = joinHostPort(h.node.ip, h.node.port)
	}
	hl.HoldReplication(addr)
}

// joinHostPort is net.JoinHostPort (this package imports no net).
func joinHostPort(ip string, port int) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + strconv.Itoa(port)
	}
	return ip + ":" + strconv.Itoa(port)
}
