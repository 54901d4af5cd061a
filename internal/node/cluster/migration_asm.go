package cluster

import (
	"strconv"
	"time"
)

// Whole-slot (atomic) migration, the ownership flip (docs/ARCHITECTURE.md,
// "Whole-slot migration"). The node layer moves the data; the machine
// only does the two ownership steps, each one input:
//
//   - the target, holding every write of the slots, claims them with a
//     new config epoch of its own (ClaimSlots): nodes.conf is saved and
//     fsynced before any packet announces the claim, and every node gets
//     a PONG carrying it;
//   - the source, told of the claim over the migration connection,
//     applies it at once (YieldSlots) by the rule every PING, PONG and
//     UPDATE follows (clusterUpdateSlotsConfigWith): a claim with a
//     greater config epoch than the owner's wins. Learning it from the
//     target's PONG first has the same effect.
//
// So the flip is one epoch bump, and no node can ever see two owners
// with the same epoch for a slot.

// ClaimSlots binds slots to myself with a new config epoch, without
// consensus (as CLUSTER FAILOVER TAKEOVER does): currentEpoch+1 becomes my
// config epoch, greater than every epoch I know, so the claim beats the
// source's on every node. It returns the new config epoch. Only a master
// claims; slots must be valid and not already mine.
func (m *Machine) ClaimSlots(now time.Time, slots []int) (uint64, error) {
	m.begin(now)
	defer m.end()
	me := m.myself
	if !me.isMaster() {
		return 0, errf("ERR Only a master can claim slots")
	}
	if len(slots) == 0 {
		return 0, errf("ERR No slots to claim")
	}
	for _, s := range slots {
		if s < 0 || s >= NumSlots {
			return 0, errInvalidSlot
		}
		if m.slots[s] == me {
			return 0, errf("ERR Slot %d is already mine", s)
		}
	}
	if e := m.maxEpoch(); m.currentEpoch < e {
		m.currentEpoch = e
	}
	m.currentEpoch++
	me.configEpoch = m.currentEpoch
	for _, s := range slots {
		m.delSlot(s)
		m.addSlot(me, s)
		m.setImporting(s, nil)
		m.setMigrating(s, nil)
		m.ownerNotClaiming.Clear(s)
	}
	m.event(EventConfigEpoch, me.name, strconv.FormatUint(me.configEpoch, 10))
	m.updateState()
	m.todo |= todoSaveConfig | todoFsyncConfig | todoUpdateState
	m.broadcastPong(false)
	return me.configEpoch, nil
}

// YieldSlots applies, on the source, the claim of slots by target under
// config epoch epoch that the target reported on the migration
// connection: the same rebinding a PONG from the target would cause
// (updateSlotsConfigWith), so the source stops serving the slots now
// rather than at the next packet. A claim no newer than the owner's is
// ignored, as on the bus. Keys of the lost slots are reported in
// SlotsChanged.DeleteKeys, as for any slot lost by an update.
func (m *Machine) YieldSlots(now time.Time, target string, epoch uint64, slots []int) error {
	m.begin(now)
	defer m.end()
	n := m.lookup(target)
	if n == nil {
		return errf("ERR Unknown node %s", target)
	}
	if n == m.myself || !n.isMaster() {
		return errf("ERR Node %s is not a master", target)
	}
	var bm SlotBitmap
	for _, s := range slots {
		if s < 0 || s >= NumSlots {
			return errInvalidSlot
		}
		bm.Set(s)
	}
	if n.configEpoch < epoch {
		n.configEpoch = epoch
		m.todo |= todoSaveConfig
	}
	if m.currentEpoch < epoch {
		m.currentEpoch = epoch
		m.todo |= todoSaveConfig
	}
	m.updateSlotsConfigWith(n, n.configEpoch, &bm)
	return nil
}

// SlotConfigEpoch returns the config epoch of slot's owner, 0 when the
// slot is unassigned.
func (m *Machine) SlotConfigEpoch(slot int) uint64 {
	if slot < 0 || slot >= NumSlots || m.slots[slot] == nil {
		return 0
	}
	o := m.slots[slot]
	if o.isSlave() && o.slaveOf != nil {
		return o.slaveOf.configEpoch
	}
	return o.configEpoch
}
