// Package admin creates and reshapes Redis clusters: the operations of
// "redis-cli --cluster" (create, check, fix, reshard, rebalance, add-node,
// del-node, info) plus a manual failover, as a Go library with progress
// callbacks and context cancellation. "shardnode cluster <verb>" is its
// command line.
//
// Each operation takes the same observable steps as redis-cli 7.0's
// clusterManager functions, so that "redis-cli --cluster check" agrees
// after it: the configuration is read from every node (each node's own
// line of its CLUSTER NODES for its slots and open slots), slots are
// assigned with CLUSTER ADDSLOTS, moved key by key (CLUSTER SETSLOT
// IMPORTING on the target, MIGRATING on the source, GETKEYSINSLOT and
// MIGRATE ... KEYS in batches, then SETSLOT NODE on the target, the
// source and every other master), and half-finished moves are repaired
// by the same case analysis as redis-cli's fix.
//
// The operations work on redis-server clusters and on any server that
// implements those cluster commands. Whole-slot migration (moving a slot
// in one step where every node involved supports it) is not implemented
// yet; [SlotMover] is where it will plug in, chosen by feature detection.
//
// Every request is bounded by Options.Timeout; every wait for the cluster
// to converge polls with a deadline (Options.WaitTimeout) and honours ctx.
package admin
