package slotmig

import (
	"net"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// Host is what the node gives the engine: the small interfaces below.
type Host interface {
	Cluster
	Dataset
	Propagation
	Applying
	// Settings returns the directives the engine reads, as configured now.
	Settings() Settings
}

// Cluster is the cluster machine's side of a migration.
type Cluster interface {
	// Routing returns the routing the node serves with now.
	Routing() *cluster.Routing
	// ClaimSlots binds slots to this node with a config epoch greater
	// than any it knows, saved and fsynced before any packet carries it,
	// and returns that epoch.
	ClaimSlots(slots []int) (uint64, error)
	// YieldSlots binds slots to the node dest, as an UPDATE for dest with
	// epoch would.
	YieldSlots(dest string, epoch uint64, slots []int) error
	// ConfigEpoch returns this node's config epoch.
	ConfigEpoch() uint64
}

// Dataset is database 0's keys, as a migration reads and drops them.
type Dataset interface {
	// SnapshotSlot appends to b the commands that recreate each key of
	// slot on the target, replacing whatever the target holds under that
	// name (SET for a string, RESTORE ... REPLACE ABSTTL otherwise), and
	// calls locked with the result and the number of keys while it still
	// holds the lock every write to slot takes to apply and propagate
	// itself. It returns b.
	SnapshotSlot(slot int, b []byte, locked func(b []byte, keys int)) []byte
	// TrimSlots deletes every key of slots, with DELs in the replication
	// stream and the AOF, and returns the number deleted.
	TrimSlots(slots []int) int
}

// Propagation is the node's replication stream and AOF.
type Propagation interface {
	// AddTap has every write the node propagates also given to t, in the
	// order the keyspace applied them and with the written keys' locks
	// held.
	AddTap(t Tap)
	// WaitReplicasAck waits until every online replica acknowledged the
	// replication offset as of the call, for at most d; true when they
	// all did (or there is none).
	WaitReplicasAck(d time.Duration) bool
	// SyncAOF fsyncs the append-only file when one is on.
	SyncAOF() error
}

// Tap receives the node's propagated writes (Propagation.AddTap).
type Tap interface {
	Propagate(db int, cmds [][][]byte)
}

// Applying runs the source's stream on the target.
type Applying interface {
	// NewApplier returns an applier that runs commands as a replica runs
	// its master's (no redirect check: the slots are not the node's yet),
	// so that they reach the node's replicas and AOF as any write does.
	// nc is the connection to the source.
	NewApplier(nc net.Conn) Applier
	// CommandSlot returns the hash slot of a command's first key, -1 for
	// a command without keys or an unknown one.
	CommandSlot(args [][]byte) int
	// Propagates reports whether the node's writes go to an AOF or to
	// replicas: then the stream is applied in MULTI/EXEC batches, one
	// AOF write and one replication unit per batch.
	Propagates() bool
}

// Applier runs commands of one stream, in order. The target runs
// several appliers at once, each on the commands of its own slots.
type Applier interface {
	// Apply runs args; it returns the error reply's text, "" if none.
	Apply(args [][]byte) string
	// InTransaction reports whether a MULTI is open.
	InTransaction() bool
}

// Settings are the directives a migration reads.
type Settings struct {
	// WritePauseTimeout is cluster-slot-migration-write-pause-timeout.
	WritePauseTimeout time.Duration
	// HandoffMaxLag is cluster-slot-migration-handoff-max-lag-bytes.
	HandoffMaxLag int64
	// ReplTimeout is repl-timeout: the bound on a silent stream.
	ReplTimeout time.Duration
	// MasterUser and MasterAuth authenticate this node to the other side
	// (masteruser, masterauth).
	MasterUser, MasterAuth string
}

// SourceConn is the connection the target opened to the source, as the
// source task writes on it and watches it.
type SourceConn interface {
	Write(b []byte) (int, error)
	SetWriteDeadline(t time.Time) error
	// Done is closed once the connection is closed.
	Done() <-chan struct{}
	Close()
}
