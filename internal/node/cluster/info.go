package cluster

import (
	"fmt"
	"strings"
	"time"
)

// NodeInfo describes one known node for the node layer's replies.
type NodeInfo struct {
	ID           string
	IP           string
	Port         int // client port (TLS port when TLS is on)
	PPort        int // plaintext port when Port is TLS, else 0
	CPort        int
	Hostname     string
	Flags        uint16
	Master       string // master's id for a replica, else ""
	ConfigEpoch  uint64 // a replica shows its master's
	PingSent     int64  // unix ms, 0: no ping in flight
	PongReceived int64  // unix ms
	Connected    bool   // we hold an outbound link (always true for myself)
	ReplOffset   int64  // from its last header (for myself: Local.ReplOffset)
}

// IsMaster reports the master flag.
func (n NodeInfo) IsMaster() bool { return n.Flags&FlagMaster != 0 }

// Failed reports the fail flag.
func (n NodeInfo) Failed() bool { return n.Flags&FlagFail != 0 }

func (m *Machine) info(n *node) NodeInfo {
	ni := NodeInfo{
		ID: n.name.String(), IP: n.ip, Port: n.port, PPort: n.pport, CPort: n.cport,
		Hostname: n.hostname, Flags: n.flags &^ (FlagMeet | FlagMigrateTo), ConfigEpoch: n.configEpoch,
		PingSent: unixMs(n.pingSent), PongReceived: unixMs(n.pongReceived),
		Connected: n.link != nil || n == m.myself, ReplOffset: int64(n.replOffset),
	}
	if n.slaveOf != nil {
		ni.Master = n.slaveOf.name.String()
		if n.isSlave() {
			ni.ConfigEpoch = n.slaveOf.configEpoch
		}
	}
	if n == m.myself {
		ni.ReplOffset = m.local.ReplOffset()
	}
	return ni
}

// MyID returns my node id (CLUSTER MYID).
func (m *Machine) MyID() string { return m.myself.name.String() }

// Myself describes this node.
func (m *Machine) Myself() NodeInfo { return m.info(m.myself) }

// Node describes the node id; ok is false if unknown.
func (m *Machine) Node(id string) (NodeInfo, bool) {
	n := m.lookup(id)
	if n == nil {
		return NodeInfo{}, false
	}
	return m.info(n), true
}

// KnownNodes lists every node in table order.
func (m *Machine) KnownNodes() []NodeInfo {
	out := make([]NodeInfo, len(m.order))
	for i, n := range m.order {
		out[i] = m.info(n)
	}
	return out
}

// State returns the cluster state.
func (m *Machine) State() State { return m.state }

// CurrentEpoch returns the current epoch.
func (m *Machine) CurrentEpoch() uint64 { return m.currentEpoch }

// LastVoteEpoch returns the epoch of the last vote given.
func (m *Machine) LastVoteEpoch() uint64 { return m.lastVoteEpoch }

// Size returns the number of masters serving slots (cluster_size).
func (m *Machine) Size() int { return m.size }

// IsMaster reports whether this node is a master (else a replica; the
// master is Myself().Master, possibly unknown).
func (m *Machine) IsMaster() bool { return m.myself.isMaster() }

// Config returns the configuration in use.
func (m *Machine) Config() Config { return m.cfg }

// SlotOwner returns the master serving slot; ok is false if unassigned.
func (m *Machine) SlotOwner(slot int) (NodeInfo, bool) {
	if slot < 0 || slot >= NumSlots || m.slots[slot] == nil {
		return NodeInfo{}, false
	}
	return m.info(m.slots[slot]), true
}

// SlotOwnerIsMe reports whether this node serves slot, directly as its
// master or as a replica of its master (for READONLY reads).
func (m *Machine) SlotOwnerIsMe(slot int) (master, replica bool) {
	o := m.slots[slot]
	return o == m.myself, o != nil && m.myself.isSlave() && m.myself.slaveOf == o
}

// IsMigrating returns the node slot is migrating to.
func (m *Machine) IsMigrating(slot int) (NodeInfo, bool) {
	if n := m.migrating[slot]; n != nil {
		return m.info(n), true
	}
	return NodeInfo{}, false
}

// IsImporting returns the node slot is being imported from.
func (m *Machine) IsImporting(slot int) (NodeInfo, bool) {
	if n := m.importing[slot]; n != nil {
		return m.info(n), true
	}
	return NodeInfo{}, false
}

// Replicas returns the CLUSTER NODES lines of the replicas of master id
// (CLUSTER REPLICAS / SLAVES).
func (m *Machine) Replicas(id string, usePPort bool) ([]string, error) {
	n := m.lookup(id)
	if n == nil {
		return nil, errf("ERR Unknown node %s", id)
	}
	if n.isSlave() {
		return nil, errNotAMaster
	}
	ranges := m.slotRanges()
	out := make([]string, len(n.slaves))
	for i, s := range n.slaves {
		out[i] = m.nodeLine(s, ranges[s], usePPort)
	}
	return out, nil
}

// SlotRange is one entry of CLUSTER SLOTS.
type SlotRange struct {
	Start, End int
	Master     NodeInfo
	Replicas   []NodeInfo // available ones: not failed, offset non-zero
}

func (m *Machine) replicaAvailable(n *node) bool {
	if n.failed() {
		return false
	}
	if n == m.myself {
		return m.local.ReplOffset() != 0
	}
	return n.replOffset != 0
}

// Slots returns CLUSTER SLOTS's data: contiguous ranges by owner.
func (m *Machine) Slots() []SlotRange {
	var out []SlotRange
	var cur *node
	start := 0
	for s := 0; s <= NumSlots; s++ {
		var n *node
		if s < NumSlots {
			n = m.slots[s]
		}
		if n != cur || s == NumSlots {
			if cur != nil {
				r := SlotRange{Start: start, End: s - 1, Master: m.info(cur)}
				for _, sl := range cur.slaves {
					if m.replicaAvailable(sl) {
						r.Replicas = append(r.Replicas, m.info(sl))
					}
				}
				out = append(out, r)
			}
			cur, start = n, s
		}
	}
	return out
}

// ShardNode is one node of a CLUSTER SHARDS entry. The node layer picks
// port/tls-port and the endpoint from its TLS and preferred-endpoint
// settings.
type ShardNode struct {
	NodeInfo
	Role   string // "master" or "replica"
	Health string // "online", "fail" or "loading"
}

// Shard is one CLUSTER SHARDS entry: a master's slot ranges and the
// master followed by its replicas.
type Shard struct {
	Slots [][2]int
	Nodes []ShardNode
}

// Shards returns CLUSTER SHARDS's data, one shard per master.
func (m *Machine) Shards() []Shard {
	ranges := m.slotRanges()
	var out []Shard
	for _, n := range m.order {
		if !n.isMaster() {
			continue
		}
		sh := Shard{Slots: ranges[n]}
		for _, x := range append([]*node{n}, n.slaves...) {
			ni := m.info(x)
			sn := ShardNode{NodeInfo: ni, Role: "master", Health: "online"}
			if x.isSlave() {
				sn.Role = "replica"
			}
			switch {
			case x.failed():
				sn.Health = "fail"
			case x.isSlave() && ni.ReplOffset == 0:
				sn.Health = "loading"
			}
			sh.Nodes = append(sh.Nodes, sn)
		}
		out = append(out, sh)
	}
	return out
}

// LinkInfo is one CLUSTER LINKS entry; the runner adds the events and
// buffer sizes it owns.
type LinkInfo struct {
	ID         LinkID
	Direction  string // "to" (outbound) or "from" (inbound)
	Node       string
	CreateTime int64 // unix ms
}

// Links returns the links bound to nodes: for each node its outbound then
// its inbound link.
func (m *Machine) Links() []LinkInfo {
	var out []LinkInfo
	for _, n := range m.order {
		if n.link != nil {
			out = append(out, LinkInfo{n.link.id, "to", n.name.String(), unixMs(n.link.ctime)})
		}
		if n.inbound != nil {
			out = append(out, LinkInfo{n.inbound.id, "from", n.name.String(), unixMs(n.inbound.ctime)})
		}
	}
	return out
}

// KillLink is DEBUG CLUSTERLINK KILL to|from|all <id>: it closes the
// outbound link, the inbound link, or both, of node id. The direction is
// matched case-insensitively; errors carry Redis's texts.
func (m *Machine) KillLink(now time.Time, direction, id string) error {
	m.begin(now)
	defer m.end()
	n := m.lookup(id)
	if n == nil {
		return errf("ERR Unknown node %s", id)
	}
	to, from := equalFoldASCII(direction, "to"), equalFoldASCII(direction, "from")
	if equalFoldASCII(direction, "all") {
		to, from = true, true
	}
	if !to && !from {
		return errf("ERR Unknown direction %s", direction)
	}
	if to && n.link != nil {
		m.freeLink(n.link)
	}
	if from && n.inbound != nil {
		m.freeLink(n.inbound)
	}
	return nil
}

// msgTypeNames is clusterGetMessageTypeString.
var msgTypeNames = [TypeCount]string{"ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack", "update", "mfstart", "module", "publishshard"}

// Info returns the CLUSTER INFO text; limitExceeded is the runner's
// count of links closed for cluster-link-sendbuf-limit.
func (m *Machine) Info(limitExceeded uint64) string {
	assigned, ok, pfail, fail := 0, 0, 0, 0
	for _, n := range m.slots {
		if n == nil {
			continue
		}
		assigned++
		switch {
		case n.failed():
			fail++
		case n.timedOut():
			pfail++
		default:
			ok++
		}
	}
	me := m.myself
	myEpoch := me.configEpoch
	if me.isSlave() && me.slaveOf != nil {
		myEpoch = me.slaveOf.configEpoch
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\n"+
		"cluster_slots_pfail:%d\r\ncluster_slots_fail:%d\r\ncluster_known_nodes:%d\r\n"+
		"cluster_size:%d\r\ncluster_current_epoch:%d\r\ncluster_my_epoch:%d\r\n",
		m.state, assigned, ok, pfail, fail, len(m.nodes), m.size, m.currentEpoch, myEpoch)
	var tot uint64
	for i, c := range m.statsSent {
		if c != 0 {
			tot += c
			fmt.Fprintf(&b, "cluster_stats_messages_%s_sent:%d\r\n", msgTypeNames[i], c)
		}
	}
	fmt.Fprintf(&b, "cluster_stats_messages_sent:%d\r\n", tot)
	tot = 0
	for i, c := range m.statsReceived {
		if c != 0 {
			tot += c
			fmt.Fprintf(&b, "cluster_stats_messages_%s_received:%d\r\n", msgTypeNames[i], c)
		}
	}
	fmt.Fprintf(&b, "cluster_stats_messages_received:%d\r\n", tot)
	fmt.Fprintf(&b, "total_cluster_links_buffer_limit_exceeded:%d\r\n", limitExceeded)
	return b.String()
}
