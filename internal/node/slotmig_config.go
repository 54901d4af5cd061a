package node

// Whole-slot migration's directives, with Redis 8.4's names and defaults
// (CLUSTER MIGRATION's "Related configuration").
func init() {
	// cluster-slot-migration-write-pause-timeout bounds, in milliseconds,
	// how long the source holds writes to the migrating slots waiting for
	// the target to take them over (docs/ARCHITECTURE.md, "Whole-slot
	// migration": past it the source asks the target to abort).
	defConfig("cluster-slot-migration-write-pause-timeout", "10000", checkIntRange(1, 1<<31-1), false)
	// cluster-slot-migration-handoff-max-lag-bytes: the source pauses
	// writes only once the stream it has not yet sent to the target is at
	// most this long, so the pause lasts about the time to send that much.
	defConfig("cluster-slot-migration-handoff-max-lag-bytes", "1048576", checkMemory, false)
}
