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
// implements those cluster commands. Where both masters of a move have
// whole-slot migration (CLUSTER MIGRATION, Redis 8.4's atomic slot
// migration, which shardnode implements; detected with COMMAND INFO
// cluster|migration), reshard and rebalance use it instead
// ([MigrationMover], the default [SlotMover]): one task per run of
// consecutive slots from one source, no ASK redirects for clients, and
// the target claims the slots with a new config epoch that the others
// learn by gossip. Fix always finishes an open slot key by key.
//
// Every request is bounded by Options.Timeout; every wait for the cluster
// to converge polls with a deadline (Options.WaitTimeout) and honours ctx.
package admin
