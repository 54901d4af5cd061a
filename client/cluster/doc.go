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
// it (no network request). The map changes in four ways:
//
//   - a pushed notice from a shardnode node (see Pushed topology below)
//     moves the slot ranges it names in the map at once, before any
//     command meets a MOVED;
//   - a MOVED reply is seen by a hook on the node's connection before
//     go-redis acts on it, and moves that one slot in the map at once,
//     without a reload. Until go-redis's routing state has been rebuilt
//     (it does so asynchronously, at most every 200 ms), commands for a
//     moved slot are sent straight to its new master, so a client pays
//     at most one MOVED per moved slot;
//   - a refresh reads CLUSTER SLOTS and CLUSTER NODES (the masters'
//     config epochs) in one pipeline from one node (masters first, then
//     replicas, then the seeds), and changes a slot's owner only to a
//     claim with a higher config epoch than the one the map holds (see
//     Pushed topology). One refresh runs at a time. MOVED
//     replies and the periodic timer (RefreshInterval, default 10s) ask
//     for one at most every MinRefreshInterval (1s), so a MOVED storm
//     costs one refresh per second. A refused or reset connection to a
//     master, and a pushed notice, ask for one at once and then at most
//     every ErrorRefreshInterval (100ms): the client learns of a failover
//     as soon as the cluster does, instead of redialling the dead address
//     until a timeout;
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
// # Pushed topology
//
// A shardnode cluster node tells its own clients when its view of the
// slot map changes, on a node-local channel, [ReservedChannel]
// ("__shardis__:cluster"), never with a cluster-wide PUBLISH (which the
// bus would deliver once per node). A notice is one line per change,
// "\n"-separated:
//
//	epoch <current-epoch> <event> <node-id> <ip:port> [<slots>] [<key>=<value>...]
//
// with event one of "slots" (the node now serves <slots>, comma-separated
// slots and start-end ranges: a reshard, a failover's promoted replica, a
// whole-slot migration's claim), "unassigned" (id and address "-"),
// "fail", "recover", "join", "leave", "address" and "failover" (the
// announcing node won an election); see [ParseTopology] and the
// Change* constants. A "slots" line ends with config-epoch=<n>, the new
// owner's config epoch (<current-epoch> is the announcing node's); keys
// a client does not know are skipped. A node sends a change as soon as it knows it, up to
// 4 notices back to back; beyond that it merges the changes of every
// 10 ms into one notice.
//
// Options.Watcher ([ChannelWatcher] by default) subscribes on
// Options.WatchNodes masters (3). Every master announces a move, not only
// the two that took part (the target broadcasts its new config epoch on
// the bus when it takes the slot), so watching a few masters suffices.
// Each "slots" line moves those slots in
// the local map at once, so commands route to the new owner without a
// MOVED, and a refresh follows (rate-limited by ErrorRefreshInterval).
// Notices from different nodes arrive in no particular order, so the
// client orders them per slot as Redis does: it keeps the config epoch
// notices gave for each slot's owner, and a line that names another node
// with a config epoch no higher than that one changes nothing (an older
// notice arriving after a newer one cannot undo it). Refreshes keep the
// same rule: a refresh pipelines CLUSTER SLOTS with CLUSTER NODES, which
// gives each master's config epoch (redis-server has both), so a refresh
// read from a node that has not heard of a move yet cannot undo a newer
// notice or refresh, and a newer one wins; a node that has no owner for
// a slot does not unassign it (gossip never does). A MOVED carries no
// epoch; it comes from the node the map named as owner and applies
// always, and the slot keeps its new owner's config epoch as last seen
// (a lower bound of the one it claims with now). The kept epoch counts
// while the map's owner is the node it was given for. Lines without
// config-epoch (older nodes), and refreshes from nodes that refuse
// CLUSTER NODES, apply in arrival order. Stats.Stale counts the slots
// refreshes named stale owners for.
// Against redis-server nothing is published there and the client relies
// on MOVED replies and the periodic refresh.
//
// The same nodes also send go-redis's own RESP3 form, the SMIGRATED push
// of its maintenance notifications, to every RESP3 connection that sent
// CLIENT MAINT_NOTIFICATIONS ON (go-redis v9 does by default). A plain
// go-redis ClusterClient reloads its slot map on it only when
// ClusterOptions.MaintNotificationsConfig is set (for example
// &maintnotifications.Config{Mode: maintnotifications.ModeAuto}), and
// only from a connection to the node the slots left, so it helps after a
// reshard but not after a failover (the source is dead); go-redis has no
// push that says "a new master for these slots".
//
// Package admin (client/cluster/admin) creates and reshapes clusters.
package cluster
