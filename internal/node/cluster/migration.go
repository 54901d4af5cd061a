package cluster

import "time"

// orphanStats is what clusterCron's node loop counts for replica
// migration: masters left without a working replica that should have
// one, the greatest number of working replicas of one master, and my
// master's.
type orphanStats struct {
	orphaned, maxSlaves, mySlaves int
}

// countOrphan adds master n (not myself, not FAIL) to st.
func (m *Machine) countOrphan(st *orphanStats, n *node) {
	ok := n.countNonFailingSlaves()
	if ok == 0 && n.numSlots > 0 && n.flags&FlagMigrateTo != 0 {
		st.orphaned++
	}
	if ok > st.maxSlaves {
		st.maxSlaves = ok
	}
	if m.myself.slaveOf == n {
		st.mySlaves = ok
	}
}

// handleReplicaMigration moves myself to an orphaned master when my
// master keeps more than cluster-migration-barrier working replicas
// without me and, among the replicas of the masters with the most
// working replicas, I have the smallest id; the master must have been
// orphaned for CLUSTER_SLAVE_MIGRATION_DELAY (clusterHandleSlaveMigration).
// Tick calls it only for a replica whose master has maxSlaves ≥ 2
// working replicas, with some orphaned master, when
// cluster-allow-replica-migration is on.
func (m *Machine) handleReplicaMigration(maxSlaves int) {
	if m.state != ClusterOK {
		return
	}
	me := m.myself
	mymaster := me.slaveOf
	if mymaster == nil {
		return
	}
	ok := 0
	for _, s := range mymaster.slaves {
		if !s.failed() && !s.timedOut() {
			ok++
		}
	}
	if ok <= m.cfg.MigrationBarrier {
		return
	}
	var target *node
	candidate := me
	for _, n := range m.order {
		okSlaves := 0
		orphaned := !n.isSlave() && !n.failed() && n.flags&FlagMigrateTo != 0
		if n.isMaster() {
			okSlaves = n.countNonFailingSlaves()
		}
		if okSlaves > 0 {
			orphaned = false
		}
		if orphaned {
			if target == nil && n.numSlots > 0 {
				target = n
			}
			if n.orphanedTime.IsZero() {
				n.orphanedTime = m.now
			}
		} else {
			n.orphanedTime = time.Time{}
		}
		if okSlaves == maxSlaves {
			for _, s := range n.slaves {
				if string(s.name[:]) < string(candidate.name[:]) {
					candidate = s
				}
			}
		}
	}
	if target != nil && candidate == me && m.now.Sub(target.orphanedTime) > migrationDelay {
		m.event(EventReplicaMigration, target.name, "")
		m.setMaster(target)
		m.todo |= todoSaveConfig | todoUpdateState
	}
}
