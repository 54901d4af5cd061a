// Package faults is a Jepsen-style fault harness for shardis and
// redis-server deployments (docs/FAULTS.md).
//
// A run builds a deployment (Sentinel: one master, two replicas, three
// Sentinels; or a 3-master cluster) in network namespaces it creates and
// always removes (names start with Prefix), starts client workers inside
// client namespaces that run a set workload and a register workload
// through the project's clients and write their histories as JSON lines,
// injects one fault (kill -9, SIGSTOP, a partition of the master with some
// clients, a partition of a replica, a crash during a failover), then reads
// the final state and checks the merged history: acknowledged writes lost,
// unknown outcomes and the unavailability window (CheckSet), and
// linearizability of the registers with porcupine (Linearizable).
//
// The checkers, the model and the table are pure and tested in CI; the
// namespace runs need root and run only from scripts/faults or with the
// test flag -faults.
package faults
