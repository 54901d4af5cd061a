package cluster

// Routing is the part of a machine's state that the command dispatcher
// needs for every keyed command (Redis's getNodeByQuery): who serves each
// slot, the slots being migrated or imported, the cluster state and this
// node's role. The node layer keeps the latest one behind an atomic
// pointer, so the hot path never touches the machine.
//
// The slot tables are held in chunks of chunkSlots slots that routings
// share copy-on-write: Share returns a copy that shares every chunk, and
// a later write to a shared chunk (FillRouting, SetSlot) copies that
// chunk first. So publishing a routing after a CLUSTER SETSLOT costs one
// chunk (1.5 kB) and the chunk pointers, not the three 16384-slot tables
// (196 kB), and a published routing, which nobody writes, can be read
// without locks.
type Routing struct {
	// State is the cluster state (cluster_state).
	State State
	// Me is myself's index in Nodes.
	Me int32
	// MyMaster is the index of my master when I am a replica, -1 otherwise.
	MyMaster int32
	// Nodes are the nodes the tables point at.
	Nodes []RouteNode

	// Seq counts the FillRouting calls that changed the routing: a copy
	// of it taken after each such fill (a published routing) has the
	// next Seq, so whoever sees them all in turn knows it missed none.
	Seq uint64

	// chunks hold, per slot, an index in Nodes or -1: the slot's owner,
	// the node it is MIGRATING to and the node it is IMPORTING from. A
	// nil chunk is -1 for each of its slots. own marks the chunks this
	// routing may write in place: the ones it copied or made since its
	// last Share (the others may be shared with other routings).
	chunks [numChunks]*slotChunk
	own    [numChunks]bool

	// filledBy and slotGen are the machine that last filled the tables
	// and its slotGen then (FillRouting).
	filledBy *Machine
	slotGen  uint64
	// changed lists the slots whose entries the last fill changed, when
	// it looked at the written slots only (partial); see ChangedSlots.
	changed []int
	partial bool
}

// The slot tables' chunks: 128 of 128 slots.
const (
	chunkShift = 7
	chunkSlots = 1 << chunkShift
	chunkMask  = chunkSlots - 1
	numChunks  = NumSlots / chunkSlots
)

// slotChunk is chunkSlots slots' entries of the three tables.
type slotChunk struct {
	owner, migrating, importing [chunkSlots]int32
}

// emptyChunk is a chunk of unserved slots, for a nil chunk's reads.
var emptyChunk = func() *slotChunk {
	c := &slotChunk{}
	for i := range chunkSlots {
		c.owner[i], c.migrating[i], c.importing[i] = -1, -1, -1
	}
	return c
}()

// chunk returns the chunk of slot for reading.
func (r *Routing) chunk(slot int) *slotChunk {
	if c := r.chunks[slot>>chunkShift]; c != nil {
		return c
	}
	return emptyChunk
}

// Owner returns the index in Nodes of slot's owner, -1 when unserved.
func (r *Routing) Owner(slot int) int32 { return r.chunk(slot).owner[slot&chunkMask] }

// Migrating returns the index in Nodes of the node slot is MIGRATING to,
// -1 when none.
func (r *Routing) Migrating(slot int) int32 { return r.chunk(slot).migrating[slot&chunkMask] }

// Importing returns the index in Nodes of the node slot is IMPORTING
// from, -1 when none.
func (r *Routing) Importing(slot int) int32 { return r.chunk(slot).importing[slot&chunkMask] }

// Slot returns slot's three entries: Owner, Migrating and Importing.
func (r *Routing) Slot(slot int) (owner, migrating, importing int32) {
	c, i := r.chunk(slot), slot&chunkMask
	return c.owner[i], c.migrating[i], c.importing[i]
}

// SetSlot sets slot's three entries (indices in Nodes, or -1), copying
// its chunk first when r shares it. It is for building routings by hand
// (tests); FillRouting is how a machine's routing is kept.
func (r *Routing) SetSlot(slot int, owner, migrating, importing int32) {
	c, i := r.writable(slot), slot&chunkMask
	c.owner[i], c.migrating[i], c.importing[i] = owner, migrating, importing
}

// writable returns slot's chunk for writing: r's own, copied first from
// the shared one (or the empty chunk) when r does not own it.
func (r *Routing) writable(slot int) *slotChunk {
	ci := slot >> chunkShift
	if !r.own[ci] {
		c := new(slotChunk)
		*c = *r.chunk(slot)
		r.chunks[ci], r.own[ci] = c, true
	}
	return r.chunks[ci]
}

// Share returns a copy of r that shares r's slot chunks (and from then
// on neither writes them: a write to either copies the chunk), with its
// own copy of Nodes. It is how a routing is published: O(chunks), not
// O(slots).
func (r *Routing) Share() *Routing {
	r.own = [numChunks]bool{}
	c := *r
	c.Nodes = append([]RouteNode(nil), r.Nodes...)
	return &c
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
		if po, pg, pi := dst.Slot(s); po != o || pg != g || pi != i {
			dst.SetSlot(s, o, g, i)
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
	for ci := range r.chunks {
		a, b := r.chunks[ci], o.chunks[ci]
		if a == b {
			continue
		}
		if a == nil {
			a = emptyChunk
		}
		if b == nil {
			b = emptyChunk
		}
		if *a != *b {
			return false
		}
	}
	return true
}

// SameChunk reports whether r and o share slot's chunk (then every slot
// of it has the same entries in both): a scan of two routings may skip
// the chunk's slots. It is false for chunks that may still differ.
func (r *Routing) SameChunk(o *Routing, slot int) bool {
	ci := slot >> chunkShift
	return r.chunks[ci] == o.chunks[ci]
}
