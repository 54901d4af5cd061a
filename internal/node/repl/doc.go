// Package repl is both sides of Redis's replication (PSYNC2).
//
// The master side is Master: the replication history this node serves
// (id, offset, secondary id, the Backlog ring), the replicas it streams it
// to, its answers to them (REPLCONF, PSYNC and SYNC with a partial resync
// or a full one, WAIT, ROLE and INFO's fields), min-replicas-ack's reply
// gate around the pure AckGate, and the restart guard. It sees the server
// through MasterHost (directives, the dataset snapshot) and each replica's
// connection through ReplicaConn (the stream feed). FAILOVER is the pure
// machine Failover, run by a Coordinator.
//
// The replica side is Link: it connects to the master, performs the
// handshake (PING, AUTH, REPLCONF, PSYNC), receives the RDB of a full
// resync and hands it to the server to load, then applies the command
// stream through an Applier (the server's master client), retrying with
// backoff when the link breaks. It sees the server through ReplicaHost.
//
// No type here imports the node's root package; the root implements the
// interfaces (docs/ARCHITECTURE.md, "The node's packages").
package repl
