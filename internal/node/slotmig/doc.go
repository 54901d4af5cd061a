// Package slotmig is whole-slot (atomic) migration, Redis 8.4's CLUSTER
// MIGRATION: the node that runs IMPORT (the target) connects to the
// slots' owner (the source), which sends a point-in-time copy of the
// slots' keys followed by the stream of writes to those slots; the target
// applies both as a replica would, makes sure its own replicas have them,
// asks the source to pause writes to the slots, applies the last ones and
// claims the slots with one config epoch bump. docs/ARCHITECTURE.md,
// "Whole-slot migration", states the guarantee and what a kill of either
// side does at each step.
//
// The package does not import the node: it reaches the node's keyspace,
// replication stream, command execution and cluster machine through the
// small interfaces of host.go, which the node implements. engine.go holds
// the task table (STATUS) and the stream tap, gate.go the source's write
// gate, source.go and target.go the two tasks.
package slotmig
