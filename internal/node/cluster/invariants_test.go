package cluster

import (
	"fmt"
	"sync"
)

// slotShadows holds, per machine under test, a copy of its slot tables
// and the slotGen they were copied at (checkSlotGen).
var slotShadows sync.Map // *Machine -> *slotShadow

type slotShadow struct {
	gen                         uint64
	slots, migrating, importing [NumSlots]*node
}

// checkSlotGen verifies the promise FillRouting's shortcut relies on:
// while slotGen stays the same, the slot tables do too. A write to a slot
// table that does not bump slotGen fails here at the next check.
func (m *Machine) checkSlotGen() error {
	v, ok := slotShadows.Load(m)
	if !ok {
		v, _ = slotShadows.LoadOrStore(m, &slotShadow{})
	}
	sh := v.(*slotShadow)
	if sh.gen == m.slotGen {
		if sh.slots != m.slots || sh.migrating != m.migrating || sh.importing != m.importing {
			return fmt.Errorf("slot tables changed without a slotGen bump (still %d)", sh.gen)
		}
		return nil
	}
	sh.gen, sh.slots, sh.migrating, sh.importing = m.slotGen, m.slots, m.migrating, m.importing
	return nil
}

// checkRouting verifies that FillRouting's incremental update gives what
// a fill from zero gives.
func (m *Machine) checkRouting() error {
	v, ok := routingShadows.Load(m)
	if !ok {
		v, _ = routingShadows.LoadOrStore(m, &Routing{})
	}
	shadow := v.(*Routing)
	before := shadow.Share()
	m.FillRouting(shadow)
	if err := checkChangedSlots(before, shadow); err != nil {
		return err
	}
	fresh := &Routing{}
	if !m.FillRouting(fresh) {
		return fmt.Errorf("a fill from zero reported no change")
	}
	if !shadow.Equal(fresh) {
		return fmt.Errorf("incremental routing differs from a full fill")
	}
	if m.FillRouting(fresh) {
		return fmt.Errorf("a second fill with nothing changed reported a change")
	}
	return nil
}

// checkChangedSlots verifies that a partial fill's ChangedSlots lists
// exactly the slots whose entries differ between before and after.
func checkChangedSlots(before, after *Routing) error {
	changed, partial := after.ChangedSlots()
	if !partial {
		return nil
	}
	listed := map[int]bool{}
	for _, s := range changed {
		listed[s] = true
	}
	for s := 0; s < NumSlots; s++ {
		bo, bm, bi := before.Slot(s)
		ao, am, ai := after.Slot(s)
		differs := bo != ao || bm != am || bi != ai
		if differs != listed[s] {
			return fmt.Errorf("slot %d: entries differ %v, listed as changed %v", s, differs, listed[s])
		}
	}
	return nil
}

// routingShadows holds, per machine under test, the Routing checkRouting
// keeps up to date through FillRouting's incremental path.
var routingShadows sync.Map // *Machine -> *Routing

// checkInvariants verifies the machine's internal consistency: the node
// map and the order slice hold the same nodes, myself is among them, the
// slot table agrees with every node's bitmap and count, replica lists
// agree with slaveOf, links point back to their nodes, and the slot
// tables changed only with a slotGen bump.
func (m *Machine) checkInvariants() error {
	if err := m.checkSlotGen(); err != nil {
		return err
	}
	for s := 0; s < NumSlots; s++ {
		if open := m.migrating[s] != nil || m.importing[s] != nil; m.openSlots.Has(s) != open {
			return fmt.Errorf("slot %d: openSlots says %v, the tables %v", s, !open, open)
		}
	}
	if len(m.nodes) != len(m.order) {
		return fmt.Errorf("%d nodes in the map, %d in order", len(m.nodes), len(m.order))
	}
	for _, n := range m.order {
		if m.nodes[n.name] != n {
			return fmt.Errorf("node %s in order but not in the map under its name", n.name)
		}
	}
	if m.nodes[m.myself.name] != m.myself || m.myself.flags&FlagMyself == 0 {
		return fmt.Errorf("myself missing or unflagged")
	}
	count := map[*node]int{}
	for s, o := range m.slots {
		if o == nil {
			continue
		}
		if m.nodes[o.name] != o {
			return fmt.Errorf("slot %d owned by a node not in the table", s)
		}
		if !o.slots.Has(s) {
			return fmt.Errorf("slot %d owned by %s whose bitmap lacks it", s, o.name)
		}
		count[o]++
	}
	for _, n := range m.order {
		if n.numSlots != count[n] || n.slots.Count() != count[n] {
			return fmt.Errorf("node %s: numSlots %d, bitmap %d, table %d", n.name, n.numSlots, n.slots.Count(), count[n])
		}
		if n.isMaster() == n.isSlave() && n.flags&FlagHandshake == 0 && n.flags&(FlagMaster|FlagSlave) != 0 {
			return fmt.Errorf("node %s both master and slave", n.name)
		}
		for _, s := range n.slaves {
			if s.slaveOf != n {
				return fmt.Errorf("replica %s of %s points to %v", s.name, n.name, s.slaveOf)
			}
		}
		if n.slaveOf != nil && n.isSlave() {
			found := false
			for _, s := range n.slaveOf.slaves {
				found = found || s == n
			}
			if !found {
				return fmt.Errorf("replica %s missing from its master's list", n.name)
			}
		}
		for _, l := range []*link{n.link, n.inbound} {
			if l == nil {
				continue
			}
			if m.links[l.id] != l || l.node != n {
				return fmt.Errorf("node %s: link %d not registered or not pointing back", n.name, l.id)
			}
		}
		if n.link != nil && n.link.inbound || n.inbound != nil && !n.inbound.inbound {
			return fmt.Errorf("node %s: link directions swapped", n.name)
		}
	}
	for id, l := range m.links {
		if l.node != nil && l.node.link != l && l.node.inbound != l {
			return fmt.Errorf("link %d bound to %s which does not hold it", id, l.node.name)
		}
	}
	return nil
}
