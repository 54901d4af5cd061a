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

	// Seq counts the FillRouting calls that changed the routing: a copy
	// of it taken after each such fill (a published routing) has the
	// next Seq, so whoever sees them all in turn knows it missed none.
	Seq uint64

	// filledBy and slotGen are the machine that last filled the tables
	// and its slotGen then (FillRouting).
	filledBy *Machine
	slotGen  uint64
	// changed lists the slots whose entries the last fill changed, when
	// it looked at the written slots only (partial); see ChangedSlots.
	changed []int
	partial bool
}

// ChangedSlots returns the slots whose Owner, Migrating or Importing
// entry the last FillRouting of r changed (from the routing of Seq-1 to
// this one), and true; or false when that fill looked at every slot
// (then any slot may have changed). Each fill that changes slots makes a
// new slice, so a copy of r keeps the list of the fill it was taken
// after; nobody may modify it.
func (r *Routing) ChangedSlots() ([]int, bool) { return r.changed, r.partial }

// RouteNode is a redirect target.
type RouteNode struct {
	ID       string
	IP       string
	Port     int // client port (TLS port when TLS is on)
	PPort    int // plaintext port when Port is TLS, else 0
	Hostname string
	// ConfigEpoch is the node's config epoch: for a slot's owner, the
	// slot's (the higher one wins a slot, Redis's rule).
	ConfigEpoch uint64
}

// FillRouting brings dst up to date with the machine's current routing
// and reports whether it changed. dst is meant to be reused from one call
// to the next (start from a zero Routing, and change it only through this
// method): its Nodes slice is kept while the nodes are the same, and of
// its slot tables only the slots the machine wrote since dst was filled
// are looked at (all of them after a reset, many writes, or when the
// nodes moved, which renumbers them), so a bus loop that calls this after
// every Ready costs a walk of the node list, not of 16384 slots, while
// nothing changes, and a few slots' worth after a CLUSTER SETSLOT.
func (m *Machine) FillRouting(dst *Routing) bool {
	changed := dst.filledBy != m
	if changed {
		dst.filledBy = m
		dst.slotGen = 0
	}
	if dst.State != m.state {
		dst.State = m.state
		changed = true
	}
	// Every node gets its index for this fill (routeIdx), so the slot
	// loop below is three pointer reads per slot, not map look-ups.
	nodesMoved := len(dst.Nodes) != len(m.order)
	for i, n := range m.order {
		n.routeIdx = int32(i)
		if !nodesMoved {
			o := &dst.Nodes[i]
			nodesMoved = o.ID != string(n.name[:]) || o.IP != n.ip || o.Port != n.port ||
				o.PPort != n.pport || o.Hostname != n.hostname
			// A new config epoch alone keeps the numbering: no slot walk.
			if !nodesMoved && o.ConfigEpoch != n.configEpoch {
				o.ConfigEpoch = n.configEpoch
				changed = true
			}
		}
	}
	if nodesMoved {
		changed = true
		dst.Nodes = dst.Nodes[:0]
		for _, n := range m.order {
			dst.Nodes = append(dst.Nodes, RouteNode{ID: n.name.String(), IP: n.ip, Port: n.port, PPort: n.pport, Hostname: n.hostname,
				ConfigEpoch: n.configEpoch})
		}
	}
	idx := func(n *node) int32 {
		if n == nil {
			return -1
		}
		return n.routeIdx
	}
	me, myMaster := idx(m.myself), int32(-1)
	if m.myself.isSlave() && m.myself.slaveOf != nil {
		myMaster = idx(m.myself.slaveOf)
	}
	if dst.Me != me || dst.MyMaster != myMaster {
		dst.Me, dst.MyMaster = me, myMaster
		changed = true
	}
	full := nodesMoved || dst.slotGen == 0 || m.slotGen-dst.slotGen > slotLogLen
	from := dst.slotGen
	dst.slotGen = m.slotGen
	// A new slice (nil until a slot changes): copies of the previous
	// fill keep theirs.
	dst.changed, dst.partial = nil, !full
	slot := func(s int) {
		o, g, i := idx(m.slots[s]), idx(m.migrating[s]), idx(m.importing[s])
		if dst.Owner[s] != o || dst.Migrating[s] != g || dst.Importing[s] != i {
			dst.Owner[s], dst.Migrating[s], dst.Importing[s] = o, g, i
			changed = true
			if !full {
				dst.changed = append(dst.changed, s)
			}
		}
	}
	if !full {
		for g := from + 1; g <= m.slotGen; g++ {
			slot(int(m.slotLog[g%slotLogLen]))
		}
	} else {
		for s := 0; s < NumSlots; s++ {
			slot(s)
		}
	}
	if changed {
		dst.Seq++
	}
	return changed
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
