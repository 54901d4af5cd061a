package cluster

import (
	"encoding/binary"
	"strconv"
)

// addSlot assigns slot s to n if it is unassigned (clusterAddSlot).
func (m *Machine) addSlot(n *node, s int) bool {
	if m.slots[s] != nil {
		return false
	}
	// Only a first slot needs the (table-wide) replica check.
	n.setSlotBit(s, n.numSlots == 0 && m.mastersHaveSlaves())
	m.slots[s] = n
	m.slotWritten(s)
	return true
}

// delSlot unassigns slot s (clusterDelSlot).
func (m *Machine) delSlot(s int) bool {
	n := m.slots[s]
	if n == nil {
		return false
	}
	n.clearSlotBit(s)
	m.slots[s] = nil
	m.slotWritten(s)
	return true
}

// delNodeSlots unassigns every slot of n (clusterDelNodeSlots).
func (m *Machine) delNodeSlots(n *node) int {
	deleted := 0
	for s := 0; s < NumSlots; s++ {
		if n.slots.Has(s) {
			m.delSlot(s)
			deleted++
		}
	}
	return deleted
}

func (m *Machine) closeAllSlots() {
	m.migrating = [NumSlots]*node{}
	m.importing = [NumSlots]*node{}
	m.slotTablesReset()
}

// setMigrating and setImporting are the only writers of one entry of the
// open-slot tables (with addSlot and delSlot for the owner table): each
// records the write (slotWritten), which FillRouting relies on to update
// only the slots written since its last fill.
func (m *Machine) setMigrating(s int, n *node) {
	if m.migrating[s] != n {
		m.migrating[s] = n
		m.openSlotWritten(s)
	}
}

func (m *Machine) setImporting(s int, n *node) {
	if m.importing[s] != n {
		m.importing[s] = n
		m.openSlotWritten(s)
	}
}

func (m *Machine) openSlotWritten(s int) {
	if m.migrating[s] != nil || m.importing[s] != nil {
		m.openSlots.Set(s)
	} else {
		m.openSlots.Clear(s)
	}
	m.slotWritten(s)
}

// slotLogLen is how many recent slot writes the machine remembers: a
// Routing more writes behind is refilled in full.
const slotLogLen = 512

// slotWritten records a write to slot s of a slot table.
func (m *Machine) slotWritten(s int) {
	m.slotGen++
	m.slotLog[m.slotGen%slotLogLen] = int16(s)
}

// slotTablesReset records a write of whole slot tables: every Routing
// is refilled in full, and openSlots is recomputed.
func (m *Machine) slotTablesReset() {
	m.slotGen += slotLogLen + 1
	m.openSlots = SlotBitmap{}
	for s := 0; s < NumSlots; s++ {
		if m.migrating[s] != nil || m.importing[s] != nil {
			m.openSlots.Set(s)
		}
	}
}

// slotUnclaimed: no owner, or the owner stopped claiming it.
func (m *Machine) slotUnclaimed(s int) bool {
	return m.slots[s] == nil || m.ownerNotClaiming.Has(s)
}

// updateSlotsConfigWith rebinds the slots sender claims under
// senderConfigEpoch where that configuration is newer than ours, and
// demotes myself (or follows the new master) when my shard lost its
// last slot to sender (clusterUpdateSlotsConfigWith).
func (m *Machine) updateSlotsConfigWith(sender *node, senderConfigEpoch uint64, slots *SlotBitmap) {
	me := m.myself
	if sender == me {
		return
	}
	curmaster := me
	if !me.isMaster() {
		curmaster = me.slaveOf
	}
	var newmaster *node
	var dirty []int
	senderSlots, migratedOurs := slots.Count(), 0
	// Only the slots where the claim and sender's current slots differ,
	// or that sender claims while marked not claimed, have anything to
	// do: the others are sender's and claimed (nothing to clear) or
	// neither. sender.slots is the set of slots whose m.slots entry is
	// sender (addSlot and delSlot keep both).
	var todo SlotBitmap
	for i := 0; i < len(todo); i += 8 {
		c := binary.LittleEndian.Uint64(slots[i:])
		binary.LittleEndian.PutUint64(todo[i:], c^binary.LittleEndian.Uint64(sender.slots[i:])|
			c&binary.LittleEndian.Uint64(m.ownerNotClaiming[i:]))
	}
	for s := range todo.All() {
		if slots.Has(s) {
			if m.slots[s] == sender {
				m.ownerNotClaiming.Clear(s)
				continue
			}
			if m.importing[s] != nil {
				continue
			}
			if m.slotUnclaimed(s) || m.slots[s].configEpoch < senderConfigEpoch {
				if m.slots[s] == me && m.local.KeysInSlot(s) > 0 {
					dirty = append(dirty, s)
				}
				if m.slots[s] != nil && m.slots[s] == curmaster {
					newmaster = sender
					migratedOurs++
				}
				m.delSlot(s)
				m.addSlot(sender, s)
				m.ownerNotClaiming.Clear(s)
				m.todo |= todoSaveConfig | todoUpdateState | todoFsyncLearned
			}
		} else if m.slots[s] == sender {
			// Still bound to sender, which no longer claims it: keep the
			// binding (a few redirects beat CLUSTERDOWN) but do not
			// spread it in UPDATE messages.
			m.ownerNotClaiming.Set(s)
		}
	}
	switch {
	case newmaster != nil && curmaster.numSlots == 0 &&
		(m.cfg.AllowReplicaMigration || senderSlots == migratedOurs):
		m.setMaster(sender)
		m.todo |= todoSaveConfig | todoUpdateState | todoFsyncLearned
	case me.slaveOf != nil && me.slaveOf.slaveOf != nil && me.slaveOf.slaveOf != me:
		// A replica of a replica follows the grand-master.
		m.event(EventSubReplica, me.slaveOf.slaveOf.name, "")
		m.setMaster(me.slaveOf.slaveOf)
		m.todo |= todoSaveConfig | todoUpdateState | todoFsyncLearned
	case len(dirty) > 0:
		m.deleteKeys = append(m.deleteKeys, dirty...)
	}
}

// setMaster makes myself a replica of n (clusterSetMaster); the runner
// gets a RoleChange.
func (m *Machine) setMaster(n *node) {
	me := m.myself
	if me.isMaster() {
		me.flags &^= FlagMaster | FlagMigrateTo
		me.flags |= FlagSlave
		m.closeAllSlots()
	} else if me.slaveOf != nil {
		me.slaveOf.removeSlave(me)
	}
	me.slaveOf = n
	n.addSlave(me)
	m.event(EventSetMaster, n.name, "")
	m.setRole(n)
	m.resetManualFailover()
}

// setRole records the replication target for the next Ready (nil: none).
func (m *Machine) setRole(master *node) {
	if master == nil {
		m.lastRole = RoleChange{}
	} else {
		m.lastRole = RoleChange{Master: master.name.String(), IP: master.ip, Port: master.port}
	}
	m.roleDirty = true
}

// handleConfigEpochCollision moves myself to a new config epoch when
// another master has the same one and a greater name
// (clusterHandleConfigEpochCollision).
func (m *Machine) handleConfigEpochCollision(sender *node) {
	me := m.myself
	if sender.configEpoch != me.configEpoch || !sender.isMaster() || !me.isMaster() {
		return
	}
	if string(sender.name[:]) <= string(me.name[:]) {
		return
	}
	m.currentEpoch++
	me.configEpoch = m.currentEpoch
	m.todo |= todoSaveConfig | todoFsyncConfig
	m.event(EventEpochCollision, sender.name, strconv.FormatUint(me.configEpoch, 10))
}

// bumpEpochWithoutConsensus gives myself a new config epoch unless it is
// already the greatest and non-zero (clusterBumpConfigEpochWithoutConsensus).
func (m *Machine) bumpEpochWithoutConsensus() bool {
	max := m.maxEpoch()
	me := m.myself
	if me.configEpoch == 0 || me.configEpoch != max {
		m.currentEpoch++
		me.configEpoch = m.currentEpoch
		m.todo |= todoSaveConfig | todoFsyncConfig
		m.event(EventConfigEpoch, me.name, strconv.FormatUint(me.configEpoch, 10))
		return true
	}
	return false
}

// updateState recomputes the cluster state and size (clusterUpdateState).
func (m *Machine) updateState() {
	now := m.now
	me := m.myself
	if m.firstStateCall.IsZero() {
		m.firstStateCall = now
	}
	// A master rejoining after a restart waits before accepting writes.
	if me.isMaster() && m.state == ClusterFail && now.Sub(m.firstStateCall) < writableDelay {
		return
	}
	newState := ClusterOK
	// Every slot is served when the owners' slot counts add up to
	// NumSlots and no owner has FAIL: a node's numSlots counts the slots
	// whose m.slots entry is that node (addSlot and delSlot keep both),
	// so this is Redis's scan of the 16384 slots in one pass over the
	// nodes.
	assigned, ownerFailed := 0, false
	for _, n := range m.order {
		assigned += n.numSlots
		if n.numSlots > 0 && n.failed() {
			ownerFailed = true
		}
	}
	if m.cfg.RequireFullCoverage && (assigned != NumSlots || ownerFailed) {
		newState = ClusterFail
	}
	m.size = 0
	reachable := 0
	for _, n := range m.order {
		if n.isMaster() && n.numSlots > 0 {
			m.size++
			if n.flags&(FlagFail|FlagPFail) == 0 {
				reachable++
			}
		}
	}
	if reachable < m.size/2+1 {
		newState = ClusterFail
		m.minorityTime = now
	}
	if newState != m.state {
		rejoin := m.cfg.NodeTimeout
		if rejoin > maxRejoinDelay {
			rejoin = maxRejoinDelay
		}
		if rejoin < minRejoinDelay {
			rejoin = minRejoinDelay
		}
		if newState == ClusterOK && me.isMaster() && now.Sub(m.minorityTime) < rejoin {
			return
		}
		m.state = newState
		m.event(EventStateChanged, me.name, newState.String())
	}
}
