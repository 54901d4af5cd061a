package cluster

import (
	"fmt"
)

// checkInvariants verifies the machine's internal consistency: the node
// map and the order slice hold the same nodes, myself is among them, the
// slot table agrees with every node's bitmap and count, replica lists
// agree with slaveOf, and links point back to their nodes.
func (m *Machine) checkInvariants() error {
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
