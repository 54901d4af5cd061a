// Package tocluster moves a pre-sharded Sentinel deployment (shards of
// master + replicas, placed by a client-side hash ring) into a Redis
// Cluster online: `shardnode migrate-to-cluster`.
//
// # Copy and stream
//
// For every source shard the tool is a replica of the shard's master:
// REPLCONF listening-port, REPLCONF capa eof capa psync2, PSYNC ? -1 (or
// PSYNC replid offset to continue after a lost link or a failover). The
// snapshot is decoded by internal/rdb and every key is sent to the cluster
// master owning its slot as RESTORE key abs-ttl payload REPLACE ABSTTL,
// pipelined (one pipelined connection per shard and master). The live
// command stream is then applied by slot with the rules of [Kind]: single
// slot commands as they are; DEL/UNLINK/TOUCH/MSET/MSETNX split per slot;
// any other command spanning slots (RENAME, SMOVE, LMOVE, the *STORE
// commands, BITOP, PFMERGE, COPY ...) by its effects, through temporary
// keys in one slot; MULTI/EXEC (and script effects) as one MULTI/EXEC per
// slot (atomicity across slots cannot survive in a cluster); FLUSHALL and
// FLUSHDB as the deletion of the keys this shard copied or saw written;
// PUBLISH dropped (pub/sub is not data); SELECT of a database other than 0,
// SWAPDB and MOVE refused. A source with keys outside db 0 is refused
// before anything is copied.
//
// Per slot, commands reach the cluster in the source's order: a slot has
// one master, and each shard writes a slot's commands on one FIFO
// connection. Two shards never write the same key (the ring places a key
// on one shard).
//
// The target's slot map is read once, at the start: the cluster must keep
// it for the whole migration (no reshard, no failover of a target master).
// A change shows as a MOVED or ASK reply or a lost target connection, and
// stops the migration before its commit point, as any failure before (6)
// below does: the sources serve as before and the run can be repeated on
// the settled cluster. Following a changing slot map would mean replaying
// the refused commands of a slot, in order, before any later one of that
// slot; that is not built.
//
// # Not a promotable replica
//
// Sentinels (redis-sentinel and shardnode's) learn a replica from its
// master's INFO (ip, listening-port) and then connect to it there, and
// read its priority from the replica's own INFO. The tool answers on the
// port it announces: PING, INFO with role:slave, slave_priority:0 and
// replica_announced:0, SUBSCRIBE/PUBLISH of the hello channel, and accepts
// the REPLICAOF a Sentinel sends after a failover (taken as a hint of the
// new master). Priority 0 means no Sentinel ever selects it for
// promotion; replica_announced:0 keeps it out of SENTINEL REPLICAS.
//
// min-replicas-to-write: Redis counts every online replica whose last
// REPLCONF ACK is younger than min-replicas-max-lag, and has no opt-out.
// The tool must ACK (the master drops a replica silent for repl-timeout,
// and Redis 7 starts the stream only after the first ACK), so it does
// count towards min-replicas-to-write. It ACKs offset 0, so WAIT never
// counts it as holding a write.
//
// # The cut-over
//
// When every shard streams with a lag under CutoverLag: (1) the notice
// key (NoticeKey: the migration id and the cluster's addresses) is written
// on every source master, before anything is paused; (2) CLIENT PAUSE
// <CutoverTimeout> WRITE on every source master, so a killed tool leaves
// the sources serving after at most CutoverTimeout; its reply means that
// every write already past the pause has run and is in the master's
// stream (Redis runs one command at a time; shardnode, whose writes run
// in parallel, waits for its writes in flight before it replies), so the
// master_repl_offset read next ends every write the source acknowledged
// or will run before the fence; (3) each shard is brought level: its
// applied offset reaches the master_repl_offset read after the pause and
// the cluster has answered every command sent; (4)
// the fence: min-replicas-to-write 2147483647 (and CONFIG REWRITE) on
// every node of every shard, replicas included, so every write is refused
// with NOREPLICAS, also those queued by the pause (Redis and shardnode
// check a released command again) and those of slow clients, and a later
// failover promotes a fenced replica; (5) level again with offsets read
// after the fence (a write that slipped in before it is applied); (6) the
// commit point: SET CommitKey <id> NX on the cluster, acknowledged; (7)
// CLIENT UNPAUSE. A failure before (6) lifts the fence (restoring the
// saved settings) and unpauses: the sources serve as before and the
// migration can be retried (a rerun deletes its earlier attempt's keys
// from the cluster).
//
// # A killed tool: the guardian, and one decision
//
// Before (1) the command starts a guardian, a process of its own
// (`migrate-to-cluster --guardian`, through Options.Guard) that reads a
// pipe from the tool: "done" when the cut-over ended cleanly, and the
// pipe's end when the tool died, SIGKILL included. Then it waits until no
// connection of the tool is left on any source or cluster node (every
// connection is named ClientName(id); a node frees a client only after
// running what it sent, so nothing of the dead tool lands later) and
// settles the cut-over with Recover: if CommitKey holds the id, it
// finishes the fences and unpauses (the cluster serves); otherwise it
// sets CommitKey to AbortPrefix+<id> with NX, lifts the fences, unpauses
// and deletes the notices (the sources serve). Commit and abort are the
// same NX SET of one key on the one node that owns it, so exactly one of
// them wins, whatever is still in flight; a commit whose reply was lost
// is settled the same way by the tool itself. A rerun runs Recover first
// (after a commit it only finishes the fences and reports the migration
// as already committed); so does --cutover-only for a tool whose
// connections are gone. If the guardian dies too (the host), the sources
// stay as the tool left them: paused for at most CutoverTimeout, fenced
// without a commit until a rerun or --cutover-only settles them — no
// side takes writes rather than two.
//
// Options.PauseAt (--pause-at copy|paused|fenced|committed) stops the
// migration at one of these points and logs "tocluster: paused at
// <point>" until Options.Resume (SIGUSR1 for the command): the hook of
// scripts/tocluster-faults.sh, which kills the tool there.
//
// # The notice path
//
// PUBLISH is held by CLIENT PAUSE WRITE and redis-sentinel only accepts
// PUBLISH on its hello channel, so the notice does not travel by pub/sub.
// A pool learns of the switch by reading NoticeKey on a source (reads are
// never paused or fenced), then CommitKey on the cluster: it polls, and it
// looks at once when a write fails with NOREPLICAS (the fence's error is
// the signal). A write refused by the fence did not run, so the pool runs
// it again on the cluster.
package tocluster
