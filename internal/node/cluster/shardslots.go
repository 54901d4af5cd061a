package cluster

// LostShardSlots lists the slots that old's owner served within this
// node's shard (the node itself, or its master) and that next gives to
// another node or to none: the slots Redis's clusterDelSlot removes the
// shard channels of (removeChannelsInSlot), on the master and on its
// replicas, whether by SETSLOT NODE, DELSLOTS, an UPDATE, a failover or
// CLUSTER RESET. When partial, changed lists every slot whose entries
// differ between old and next (Routing.ChangedSlots), and only those are
// looked at while the nodes and my role are the same.
func LostShardSlots(old, next *Routing, changed []int, partial bool) []int {
	if old == nil || len(old.Nodes) == 0 {
		return nil
	}
	// While the node list is the same (every change but a join, a leave or
	// a rename), a slot's owner is the same node exactly when its index
	// is: compare indices, not ids.
	same := len(old.Nodes) == len(next.Nodes)
	for i := 0; same && i < len(old.Nodes); i++ {
		same = old.Nodes[i].ID == next.Nodes[i].ID
	}
	var lost []int
	mine := func(slot int) {
		if o := old.Owner(slot); o >= 0 && (o == old.Me || o == old.MyMaster) && next.Owner(slot) != o {
			lost = append(lost, slot)
		}
	}
	switch {
	case same && partial && old.Me == next.Me && old.MyMaster == next.MyMaster:
		for _, slot := range changed {
			mine(slot)
		}
	case same:
		for first := 0; first < NumSlots; first += chunkSlots {
			if old.SameChunk(next, first) {
				continue // a shared chunk: no slot of it changed
			}
			for slot := first; slot < first+chunkSlots; slot++ {
				mine(slot)
			}
		}
	default:
		for slot := 0; slot < NumSlots; slot++ {
			o := old.Owner(slot)
			if o < 0 || (o != old.Me && o != old.MyMaster) {
				continue
			}
			n := next.Owner(slot)
			if n < 0 || next.Nodes[n].ID != old.Nodes[o].ID {
				lost = append(lost, slot)
			}
		}
	}
	return lost
}
