package cluster

// Routing is the part of a machine's state that the command dispatcher
// needs for every keyed command (Redis's getNodeByQuery): who serves each
// slot, the slots being migrated or imported, the cluster state and this
// node's role. The node layer keeps the latest one behind an atomic
// pointer, so the hot path never touches the machine.
type Routing struct {
	// State is the cluster state (cluster_state).
	State State
	// Me is myself's index in Nodes.
	Me int32
	// MyMaster is the index of my master when I am a replica, -1 otherwise.
	MyMaster int32
	// Owner, Migrating and Importing hold, per slot, an index in Nodes or
	// -1: the slot's owner, the node it is MIGRATING to and the node it is
	// IMPORTING from.
	Owner, Migrating, Importing [NumSlots]int32
	// Nodes are the nodes the tables point at.
	Nodes []RouteNode
}

// RouteNode is a redirect target.
type RouteNode struct {
	ID       string
	IP       string
	Port     int // client port (TLS port when TLS is on)
	PPort    int // plaintext port when Port is TLS, else 0
	Hostname string
}

// FillRouting writes the machine's current routing into dst, reusing its
// Nodes slice. Compare the result with the previous one (Equal) to know
// whether it changed.
func (m *Machine) FillRouting(dst *Routing) {
	dst.State = m.state
	dst.Nodes = dst.Nodes[:0]
	// Every node gets its index for this fill (routeIdx), so the slot
	// loop below is three pointer reads per slot, not map look-ups: this
	// runs after every Ready of the bus loop.
	for _, n := range m.order {
		n.routeIdx = int32(len(dst.Nodes))
		dst.Nodes = append(dst.Nodes, RouteNode{ID: n.name.String(), IP: n.ip, Port: n.port, PPort: n.pport, Hostname: n.hostname})
	}
	idx := func(n *node) int32 {
		if n == nil {
			return -1
		}
		return n.routeIdx
	}
	dst.Me = idx(m.myself)
	dst.MyMaster = -1
	if m.myself.isSlave() && m.myself.slaveOf != nil {
		dst.MyMaster = idx(m.myself.slaveOf)
	}
	for s := 0; s < NumSlots; s++ {
		dst.Owner[s] = idx(m.slots[s])
		dst.Migrating[s] = idx(m.migrating[s])
		dst.Importing[s] = idx(m.importing[s])
	}
}

// Equal reports whether two routings are the same.
func (r *Routing) Equal(o *Routing) bool {
	if r == nil || o == nil {
		return r == o
	}
	if r.State != o.State || r.Me != o.Me || r.MyMaster != o.MyMaster || len(r.Nodes) != len(o.Nodes) {
		return false
	}
	for i := range r.Nodes {
		if r.Nodes[i] != o.Nodes[i] {
			return false
		}
	}
	return r.Owner == o.Owner && r.Migrating == o.Migrating && r.Importing == o.Importing
}
