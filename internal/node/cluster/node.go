package cluster

import (
	"time"
)

// failReport is one master's report that a node is failing
// (clusterNodeFailReport).
type failReport struct {
	from *node     // the reporting master
	time time.Time // when the report was last refreshed
}

// node is one entry of the node table (clusterNode). Times are zero when
// unset (Redis's 0).
type node struct {
	name        Name
	ctime       time.Time // creation; bounds the handshake's lifetime
	configEpoch uint64
	flags       uint16
	slots       SlotBitmap // slots this node serves in our view
	numSlots    int
	slaves      []*node // replicas, when a master
	slaveOf     *node   // master, when a replica (nil: unknown or master)

	lastInPingGossip uint64    // id of the last PING that gossiped this node
	pingSent         time.Time // PING in flight since; zero after its PONG
	pongReceived     time.Time // last PONG received (or learnt by gossip)
	dataReceived     time.Time // last packet of any type received
	failTime         time.Time // when FAIL was set
	votedTime        time.Time // last vote granted to a replica of this master (issue 22)
	answeredPing     time.Time // send time of the latest PING of mine it answered (fence.go)
	orphanedTime     time.Time // since when a master has no working replica (issue 22)
	replOffset       uint64    // replication offset from the header

	ip       string
	port     int // client port (TLS port when TLS is on)
	pport    int // plaintext port when port is TLS
	cport    int // bus port
	hostname string

	link    *link // outbound link we opened (PINGs go there)
	inbound *link // inbound link the peer opened

	failReports []failReport

	routeIdx int32 // index in the last FillRouting's Nodes (routing.go)
}

func (n *node) isMaster() bool    { return n.flags&FlagMaster != 0 }
func (n *node) isSlave() bool     { return n.flags&FlagSlave != 0 }
func (n *node) inHandshake() bool { return n.flags&FlagHandshake != 0 }
func (n *node) hasAddr() bool     { return n.flags&FlagNoAddr == 0 }
func (n *node) timedOut() bool    { return n.flags&FlagPFail != 0 }
func (n *node) failed() bool      { return n.flags&FlagFail != 0 }

// master returns the node itself if it is a master, else its master
// (possibly nil).
func (n *node) master() *node {
	if n.isMaster() {
		return n
	}
	return n.slaveOf
}

func (n *node) addSlave(s *node) {
	for _, x := range n.slaves {
		if x == s {
			return
		}
	}
	n.slaves = append(n.slaves, s)
	// A master that has (had) replicas is a replica-migration target.
	n.flags |= FlagMigrateTo
}

func (n *node) removeSlave(s *node) {
	for i, x := range n.slaves {
		if x == s {
			n.slaves = append(n.slaves[:i], n.slaves[i+1:]...)
			if len(n.slaves) == 0 {
				n.flags &^= FlagMigrateTo
			}
			return
		}
	}
}

func (n *node) countNonFailingSlaves() int {
	ok := 0
	for _, s := range n.slaves {
		if !s.failed() {
			ok++
		}
	}
	return ok
}

// addFailureReport records or refreshes a report from sender; it returns
// true for a new report.
func (n *node) addFailureReport(sender *node, now time.Time) bool {
	for i := range n.failReports {
		if n.failReports[i].from == sender {
			n.failReports[i].time = now
			return false
		}
	}
	n.failReports = append(n.failReports, failReport{from: sender, time: now})
	return true
}

// cleanupFailureReports drops reports older than 2 × node timeout
// (CLUSTER_FAIL_REPORT_VALIDITY_MULT).
func (n *node) cleanupFailureReports(now time.Time, nodeTimeout time.Duration) {
	max := nodeTimeout * failReportValidityMult
	kept := n.failReports[:0]
	for _, r := range n.failReports {
		if now.Sub(r.time) <= max {
			kept = append(kept, r)
		}
	}
	n.failReports = kept
}

// delFailureReport removes sender's report; true if there was one.
func (n *node) delFailureReport(sender *node, now time.Time, nodeTimeout time.Duration) bool {
	for i, r := range n.failReports {
		if r.from == sender {
			n.failReports = append(n.failReports[:i], n.failReports[i+1:]...)
			n.cleanupFailureReports(now, nodeTimeout)
			return true
		}
	}
	return false
}

func (n *node) failureReportsCount(now time.Time, nodeTimeout time.Duration) int {
	n.cleanupFailureReports(now, nodeTimeout)
	return len(n.failReports)
}

func (n *node) setSlotBit(s int, mastersHaveSlaves bool) {
	if n.slots.Has(s) {
		return
	}
	n.slots.Set(s)
	n.numSlots++
	// A master getting its first slot is a replica-migration target if
	// some master has replicas (clusterNodeSetSlotBit).
	if n.numSlots == 1 && mastersHaveSlaves {
		n.flags |= FlagMigrateTo
	}
}

func (n *node) clearSlotBit(s int) bool {
	if !n.slots.Has(s) {
		return false
	}
	n.slots.Clear(s)
	n.numSlots--
	return true
}

// validName reports whether s is a node id: 40 characters of [a-z0-9]
// (verifyClusterNodeId).
func validName(s string) bool {
	if len(s) != NameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func nameOf(s string) Name {
	var n Name
	copy(n[:], s)
	return n
}

// lookup returns the node named s, or nil (clusterLookupNode).
func (m *Machine) lookup(s string) *node {
	if !validName(s) {
		return nil
	}
	return m.nodes[nameOf(s)]
}

func (m *Machine) lookupName(n Name) *node {
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return nil
		}
	}
	return m.nodes[n]
}

// createNode builds a node; a null name gets a random one.
func (m *Machine) createNode(now time.Time, name Name, flags uint16) *node {
	if name.IsNull() {
		name = m.randomName()
	}
	return &node{name: name, ctime: now, flags: flags}
}

func (m *Machine) randomName() Name {
	const hex = "0123456789abcdef"
	var n Name
	for i := range n {
		n[i] = hex[m.rng.IntN(16)]
	}
	return n
}

// addNode inserts n in the table (clusterAddNode).
func (m *Machine) addNode(n *node) {
	if _, dup := m.nodes[n.name]; dup {
		panic("cluster: duplicate node " + n.name.String())
	}
	m.nodes[n.name] = n
	m.order = append(m.order, n)
}

// delNode removes n: its slots become unassigned, its failure reports
// about others vanish, its links close (clusterDelNode).
func (m *Machine) delNode(n *node) {
	for s := 0; s < NumSlots; s++ {
		if m.importing[s] == n {
			m.setImporting(s, nil)
		}
		if m.migrating[s] == n {
			m.setMigrating(s, nil)
		}
		if m.slots[s] == n {
			m.delSlot(s)
		}
	}
	for _, o := range m.order {
		if o != n {
			o.delFailureReport(n, m.now, m.cfg.NodeTimeout)
		}
	}
	for _, s := range n.slaves {
		s.slaveOf = nil
	}
	if m.mf.slave == n {
		m.resetManualFailover()
	}
	if n.isSlave() && n.slaveOf != nil {
		n.slaveOf.removeSlave(n)
	}
	delete(m.nodes, n.name)
	for i, o := range m.order {
		if o == n {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	if n.link != nil {
		m.freeLink(n.link)
	}
	if n.inbound != nil {
		m.freeLink(n.inbound)
	}
}

// renameNode gives a handshake node its real name (clusterRenameNode).
func (m *Machine) renameNode(n *node, newName Name) {
	m.event(EventNodeRenamed, n.name, newName.String())
	delete(m.nodes, n.name)
	n.name = newName
	m.nodes[n.name] = n
}

func (m *Machine) mastersHaveSlaves() bool {
	for _, n := range m.order {
		if !n.isSlave() && len(n.slaves) > 0 {
			return true
		}
	}
	return false
}

// maxEpoch is the greatest config epoch known, or the current epoch if
// greater (clusterGetMaxEpoch).
func (m *Machine) maxEpoch() uint64 {
	max := m.currentEpoch
	for _, n := range m.order {
		if n.configEpoch > max {
			max = n.configEpoch
		}
	}
	return max
}
