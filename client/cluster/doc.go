// Package cluster is a Redis Cluster client that follows the cluster as
// client/shardedpool follows Sentinel: one constructor, go-redis's whole
// command API, and a slot map kept up to date by mechanisms rather than
// by timeouts.
//
// [New] resolves the slot map (CLUSTER SLOTS from a seed) before it
// returns, as every client of this project does; go-redis's
// NewClusterClient is lazy and reports an unreachable cluster only on the
// first command. The returned [Client] embeds a go-redis ClusterClient,
// so switching from shardedpool.Pool or redis.ClusterClient is a
// one-line change.
//
// # Slot map
//
// The client owns the slot map and hands it to go-redis through
// ClusterOptions.ClusterSlots; go-redis's own "reload" then only copies
// it (no network request). The map changes in three ways:
//
//   - a MOVED reply is seen by a hook on the node's connection before
//     go-redis acts on it, and moves that one slot in the map at once,
//     without a reload. Until go-redis's routing state has been rebuilt
//     (it does so asynchronously, at most every 200 ms), commands for a
//     moved slot are sent straight to its new master, so a client pays
//     at most one MOVED per moved slot;
//   - a refresh reads CLUSTER SLOTS from one node (masters first, then
//     replicas, then the seeds). One refresh runs at a time. MOVED
//     replies, pushed events and the periodic timer (RefreshInterval,
//     default 10s) ask for one at most every MinRefreshInterval (1s), so
//     a MOVED storm costs one refresh per second. A refused or reset
//     connection to a master asks for one at once and then every
//     ErrorRefreshInterval (100ms) while it lasts: the client learns of a
//     failover as soon as the cluster does, instead of redialling the
//     dead address until a timeout;
//   - [Client.RefreshNow] reads the map on demand.
//
// # Multi-key commands
//
// MGET, MSET, DEL, EXISTS, UNLINK and TOUCH whose keys span slots are
// split into one command per slot, sent as one pipeline (go-redis groups
// it per node, concurrently), and their replies reassembled (MGET in key
// order, the counts summed). A split MSET is not atomic across slots. Any
// other multi-key command whose keys span slots, and any transaction
// (TxPipeline, MULTI/EXEC) whose commands' keys span slots, fails with an
// error wrapping [ErrCrossSlot] before anything is sent. Key positions
// come from a small local table of multi-key commands (keys.go);
// commands it does not list are routed by go-redis and checked by the
// server.
//
// # Reads
//
// [Options].ReadFrom picks go-redis's routing for read-only commands:
// the master (default), replicas, the nearest node or a random one.
//
// # Pushed topology (draft)
//
// shardnode will tell its own clients about cluster configuration changes
// on a node-local channel, [ReservedChannel] ("__shardis__:cluster"), not
// with a cluster-wide PUBLISH (which the bus would deliver once per
// node). Options.Watcher listens on a few masters ([ChannelWatcher]
// subscribes to that channel) and refreshes the slot map as soon as an
// event arrives. The payload is not fixed yet; the draft is one line per
// change:
//
//	<config-epoch> <kind> <node-id> <host:port> [<slot-range> ...]
//
// with kind one of "slots" (the node now serves these ranges), "failover"
// (the node replaced its master), "join" and "forget"; where a RESP3 push
// that go-redis already understands fits, that form will be used instead,
// so plain go-redis clients benefit too. Today any message only triggers
// a refresh. Against redis-server nothing is published there and the
// client relies on MOVED replies and the periodic refresh.
//
// Package admin (client/cluster/admin) creates and reshapes clusters.
package cluster
