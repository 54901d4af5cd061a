package cluster

// Replica elections, manual failover and replica migration are issue 22.
// Tick calls these hooks in clusterCron's order (and the packet handlers
// handleAuthRequest, handleAuthAck and handleMFStart are their inputs);
// they do nothing yet. The fields they need are in place: node.votedTime,
// node.orphanedTime, node.replOffset(Time), Machine.lastVoteEpoch (saved
// in nodes.conf), Config.ReplicaValidityFactor, MigrationBarrier,
// AllowReplicaMigration, ReplicaNoFailover.

// manualFailoverCheckTimeout aborts a manual failover past its deadline
// (manualFailoverCheckTimeout).
func (m *Machine) manualFailoverCheckTimeout() {}

// handleManualFailover advances a replica's manual failover once the
// master's paused offset is reached (clusterHandleManualFailover).
func (m *Machine) handleManualFailover() {}

// handleReplicaFailover runs a replica's election for its failed master:
// failoverWaitDelay, failoverRequestVotes, failoverCountVotes,
// failoverPromote (clusterHandleSlaveFailover).
func (m *Machine) handleReplicaFailover() {}

// handleReplicaMigration moves myself to an orphaned master
// (clusterHandleSlaveMigration).
func (m *Machine) handleReplicaMigration() {}
