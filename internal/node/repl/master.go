package repl

// The master side: the replication history this node serves (its id,
// offset and backlog) and the replicas it streams it to.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// Replica link states on the master (INFO replication slaveN:state=).
const (
	ReplicaWaitBgsave = "wait_bgsave"
	ReplicaSendBulk   = "send_bulk"
	ReplicaOnline     = "online"
)

// ReplicaConn is a replica's connection as the master side sees it: the
// feed of its stream. Close must not be called with the master's lock held
// (closing removes the replica, which takes it); the master calls it in a
// goroutine of its own where it holds the lock.
type ReplicaConn interface {
	// ID is the connection's client id (the ack gate's key).
	ID() int64
	// Push appends stream bytes (copied) to the connection's output.
	Push(b []byte)
	// WriteStreamNow writes the pending stream from the calling goroutine
	// as far as the socket takes it without waiting.
	WriteStreamNow()
	// Flush writes the replies built so far.
	Flush()
	// WriteRaw writes b on the connection outside the reply path.
	WriteRaw(b []byte) error
	// Attach marks the connection as a replica's (CLIENT LIST flags=S).
	Attach()
	// Close closes the connection.
	Close()
	// Done is closed when the connection closes.
	Done() <-chan struct{}
}

// Hello is what a replica announced with REPLCONF before its PSYNC, and
// its remote address.
type Hello struct {
	Addr       string // remote address, ip:port
	Port       int    // listening-port
	IP         string // ip-address (replica-announce-ip)
	CapaEOF    bool   // capa eof: takes the diskless payload form
	CapaPSync2 bool   // capa psync2: takes +CONTINUE <replid>
	// Prio is the replica-priority a shardnode replica announced, valid
	// when PrioKnown (a redis-server replica announces none).
	Prio      int
	PrioKnown bool
}

// Eligible reports whether the replica counts toward min-replicas-ack: it
// could be promoted, or it did not say.
func (h Hello) Eligible() bool { return !h.PrioKnown || h.Prio > 0 }

// Name is how Redis names a replica in its logs: ip:listening-port, or the
// remote address while the port is unknown.
func (h Hello) Name() string {
	if h.Port == 0 {
		return h.Addr
	}
	return net.JoinHostPort(h.ip(), strconv.Itoa(h.Port))
}

// ip is the announced address, else the remote host.
func (h Hello) ip() string {
	if h.IP != "" {
		return h.IP
	}
	host, _, err := net.SplitHostPort(h.Addr)
	if err != nil {
		return h.Addr
	}
	return host
}

// Replica is a replica connected to this node.
type Replica struct {
	conn  ReplicaConn
	hello Hello
	// State is ReplicaWaitBgsave, ReplicaSendBulk or ReplicaOnline.
	State string
	// AckOffset is the highest offset the replica acknowledged, AckTime
	// when its last REPLCONF ACK arrived.
	AckOffset int64
	AckTime   time.Time
	// waitAck holds the stream back after a diskless transfer until the
	// replica's first ACK, as Redis does, so the stream cannot be mistaken
	// for the end of the payload.
	waitAck bool
	// buf collects the stream while the replica waits for its RDB.
	buf []byte
}

// IP is the replica's address as INFO and ROLE show it.
func (ri *Replica) IP() string { return ri.hello.ip() }

// Port is the replica's listening port.
func (ri *Replica) Port() int { return ri.hello.Port }

// MasterSettings are the directives the master side reads.
type MasterSettings struct {
	BacklogSize         int64         // repl-backlog-size
	PingPeriod          int64         // repl-ping-replica-period, seconds
	Timeout             time.Duration // repl-timeout
	BacklogTTL          time.Duration // repl-backlog-ttl
	DisklessSync        bool          // repl-diskless-sync
	DisklessDelay       time.Duration // repl-diskless-sync-delay
	DisklessMaxReplicas int64         // repl-diskless-sync-max-replicas
	MinReplicasToWrite  int64         // min-replicas-to-write
	MinReplicasMaxLag   time.Duration // min-replicas-max-lag
	AckTimeout          int64         // min-replicas-ack-timeout, ms
	// CanSnapshot is set when an RDB writer is attached (persistence):
	// without one a full sync is refused.
	CanSnapshot bool
}

// MasterHost is the server as the master side sees it.
type MasterHost interface {
	// MasterSettings returns the current directives.
	MasterSettings() MasterSettings
	// LinkDown reports, with the master's lock held, whether this node is
	// a replica whose link to its own master is not up (it then refuses
	// to serve a sync).
	LinkDown() bool
	// Snapshot opens a snapshot of the dataset with every write held
	// back, calls at while they are, and returns the snapshot's RDB
	// writer (MasterSettings.CanSnapshot says whether there is one).
	Snapshot(at func()) func(io.Writer) error
	// ReplicaListed is told that a replica waits for a full sync (its
	// input is no longer waited for by the sequencer).
	ReplicaListed()
	// Frozen reports whether DEBUG SLEEP holds the server.
	Frozen() bool
}

// Master is the replication history this node serves and the replicas it
// serves it to. A replica keeps one too: its offset is the applied part of
// its master's stream, forwarded verbatim to its own replicas (chained
// replication keeps one offset space), and its backlog lets them continue.
//
// Master is guarded by the lock given to NewMaster, which its owner also
// uses for the state it keeps beside it (the link to a master); methods
// named ...Locked expect it held, the others take it.
type Master struct {
	mu   *sync.Mutex
	host MasterHost
	log  *slog.Logger

	replid       string
	replid2      string
	offset       int64    // master_repl_offset
	secondOffset int64    // second_repl_offset, -1 if none
	backlog      *Backlog // nil until the first replica (or a restored history)
	lastDB       int      // database of the last SELECT sent, -1 forces one
	// linked is set while this node is a replica: its stream is its
	// master's (FeedFromMaster), and writes of its own are not streamed.
	linked bool
	// streamTo lists the connections the stream goes to (online, not
	// waiting for an ACK), for WriteStreamsNow; streamDirty is set when
	// the stream grew since its last run, streamLast is when it last
	// wrote (unix ns).
	streamTo    atomic.Pointer[[]ReplicaConn]
	streamDirty atomic.Bool
	streamLast  atomic.Int64
	// scratch is Propagate's encoding buffer, reused (FeedLocked copies
	// what it keeps): no allocation per propagated write.
	scratch  []byte
	replicas []*Replica
	// ackCond is broadcast when an ACK arrives or a replica leaves (WAIT).
	ackCond      *sync.Cond
	noReplicasAt time.Time // when the last replica left (repl-backlog-ttl)
	// disklessWindowEnd ends the current repl-diskless-sync-delay wait.
	disklessWindowEnd time.Time

	syncFull       int64
	syncPartialOK  int64
	syncPartialErr int64

	// ack is min-replicas-ack's gate (ackwait.go); ackWaiters are the
	// waiting writers' wake-up channels by client id, ackRel Release's
	// scratch. ackTimeouts counts the batches whose acknowledgement timed
	// out (INFO min_replicas_ack_timeouts).
	ack         *AckGate
	ackWaiters  map[int64]chan struct{}
	ackRel      []int64
	ackTimeouts atomic.Int64
	// restartGuard is set from start-up as a master until this node
	// becomes a replica or is promoted; guardRefused once the guard
	// refused a replica whose history is ahead of ours (guard.go).
	restartGuard, guardRefused bool
	// fence is the Sentinel fence (fence.go); fenceKnown is set while it
	// knows a Sentinel, so that a master without Sentinels skips it
	// without the lock.
	fence      Fence
	fenceKnown atomic.Bool
	// clusterFence is set once the cluster fence is plugged in
	// (SetClusterFence).
	clusterFence atomic.Bool
}

// NewReplID returns a new random replication id (40 hex characters).
func NewReplID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// noReplID is replid2 when there is no previous history.
var noReplID = strings.Repeat("0", 40)

// NewMaster returns a new history guarded by mu. ackNeed is
// min-replicas-ack; restartGuard arms the restart guard (a node starting
// as a master).
func NewMaster(mu *sync.Mutex, host MasterHost, log *slog.Logger, ackNeed int, restartGuard bool) *Master {
	m := &Master{mu: mu, host: host, log: log, replid: NewReplID(), replid2: noReplID, secondOffset: -1, lastDB: -1}
	m.ackCond = sync.NewCond(mu)
	m.ack = NewAckGate(ackNeed)
	m.ackWaiters = map[int64]chan struct{}{}
	m.restartGuard = restartGuard
	return m
}

// OffsetLocked is master_repl_offset (on a replica: the applied offset).
func (m *Master) OffsetLocked() int64 { return m.offset }

// Offset is OffsetLocked, taking the lock.
func (m *Master) Offset() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset
}

// ReplIDLocked is the current replication id.
func (m *Master) ReplIDLocked() string { return m.replid }

// SetLinkedLocked records whether this node is a replica (its stream is
// its master's).
// A change of role forgets the Sentinels the fence knew.
func (m *Master) SetLinkedLocked(linked bool) {
	if linked != m.linked {
		m.fence.Reset()
		m.fenceKnown.Store(false)
	}
	m.linked = linked
}

// HasReplicas reports whether any replica is connected.
func (m *Master) HasReplicas() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.replicas) > 0
}

// CreateBacklogLocked allocates the backlog, as Redis does when the first
// replica connects.
func (m *Master) CreateBacklogLocked() {
	if m.backlog != nil {
		return
	}
	m.backlog = NewBacklog(m.backlogSize())
	m.lastDB = -1
}

// ResetBacklogLocked drops the backlog's history and starts a new one.
func (m *Master) ResetBacklogLocked() {
	m.backlog = nil
	m.CreateBacklogLocked()
}

// ForceSelectLocked makes the next propagated write start with a SELECT.
func (m *Master) ForceSelectLocked() { m.lastDB = -1 }

// backlogSize is repl-backlog-size with Redis's 16 kB floor.
func (m *Master) backlogSize() int {
	return max(int(m.host.MasterSettings().BacklogSize), 16*1024)
}

// ResizeBacklog applies CONFIG SET repl-backlog-size to an existing
// backlog, keeping as much of its history as the new size holds (Redis's
// resizeReplicationBacklog): a replica cut after the change can still
// continue from an offset the old backlog held.
func (m *Master) ResizeBacklog() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog != nil {
		m.backlog.Resize(m.backlogSize())
	}
}

// FeedLocked appends raw stream bytes to the backlog and every replica.
func (m *Master) FeedLocked(b []byte) {
	if m.backlog == nil {
		return
	}
	m.offset += int64(len(b))
	m.backlog.Write(b)
	cur := m.streamTo.Load()
	same, k := cur != nil, 0
	for _, ri := range m.replicas {
		switch {
		case ri.State == ReplicaOnline && !ri.waitAck:
			ri.conn.Push(b)
			if same && (k >= len(*cur) || (*cur)[k] != ri.conn) {
				same = false
			}
			k++
		default:
			ri.buf = append(ri.buf, b...)
		}
	}
	if !same || k != len(*cur) {
		list := make([]ReplicaConn, 0, k)
		for _, ri := range m.replicas {
			if ri.State == ReplicaOnline && !ri.waitAck {
				list = append(list, ri.conn)
			}
		}
		m.streamTo.Store(&list)
	}
	if k > 0 {
		m.streamDirty.Store(true)
	}
}

// Eager stream writes.
//
// Redis sends the replication stream and the clients' replies in the same
// pass of its event loop (beforeSleep). shardnode's replies leave as
// each client finishes, and the stream when the replica's writer goroutine
// runs, after the clients already runnable: an acknowledged write reached
// the replica ~460 µs after its reply at the median (repllag -probe),
// Redis's ~400 µs. So a client about to reply first writes the pending
// stream itself when streamEagerGap has passed since such a write; more
// often cost a system call per reply (master CPU per SET +25 %, replica
// +70 %, and p99 no better). With 200 µs, 1M keys under a redis-benchmark
// SET load: time lag p50 303–324 µs vs 379–431 µs without and 325–425 µs
// for redis-server, p99 6.3–9.5 ms vs 7.3–9.7 ms (redis-server 5.3–6.0
// ms), for master CPU per SET about +6 % and replica 5.1–6.2 vs 4.4–5.0
// µs (docs/BENCHMARKS.md, Replication).
const streamEagerGap = int64(200 * time.Microsecond)

// StreamDirty reports whether the stream grew since WriteStreamsNow last
// ran.
func (m *Master) StreamDirty() bool { return m.streamDirty.Load() }

// WriteStreamsNow writes the online replicas' pending stream from the
// calling client's goroutine just before it sends its replies, at most
// once per streamEagerGap across clients.
func (m *Master) WriteStreamsNow() {
	now := time.Now().UnixNano()
	last := m.streamLast.Load()
	if now-last < streamEagerGap || !m.streamLast.CompareAndSwap(last, now) {
		return
	}
	m.PushStreamsNow()
}

// PushStreamsNow writes the replicas' pending stream from the calling
// goroutine as far as their sockets take it (a waiting writer's round
// trip starts now, not when the replica's writer goroutine runs).
func (m *Master) PushStreamsNow() {
	m.streamDirty.Store(false)
	if l := m.streamTo.Load(); l != nil {
		for _, c := range *l {
			c.WriteStreamNow()
		}
	}
}

// Propagate encodes the commands (with a SELECT when the database
// changes) into the replication stream (the server's Propagator).
func (m *Master) Propagate(db int, cmds [][][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog == nil || m.linked {
		// No replica ever connected, or we are a replica: our stream is
		// the master's, forwarded verbatim (FeedFromMaster).
		return
	}
	b := m.scratch[:0]
	if db != m.lastDB {
		b = resp.AppendCommandStrings(b, "SELECT", strconv.Itoa(db))
		m.lastDB = db
	}
	for _, cmd := range cmds {
		b = resp.AppendCommand(b, cmd...)
	}
	m.FeedLocked(b)
	if cap(b) <= 64*1024 {
		m.scratch = b[:0]
	} else {
		m.scratch = nil // a big write: don't keep its buffer
	}
}

// FeedFromMaster forwards bytes a replica applied from its master to its
// own backlog and sub-replicas.
func (m *Master) FeedFromMaster(b []byte) {
	m.mu.Lock()
	if m.backlog == nil {
		m.offset += int64(len(b))
	} else {
		m.FeedLocked(b)
	}
	m.mu.Unlock()
}

// ShiftReplIDLocked starts a new history after a promotion, keeping the
// old id as replid2 so replicas of the old master can continue partially
// (PSYNC2).
func (m *Master) ShiftReplIDLocked() {
	m.replid2 = m.replid
	m.secondOffset = m.offset + 1
	m.replid = NewReplID()
	m.log.Info(fmt.Sprintf("Setting secondary replication ID to %s, valid up to offset: %d. New replication ID is %s", m.replid2, m.secondOffset, m.replid))
}

// History returns the replication id and offset of this node's dataset;
// ok is false when it has none worth a partial resync (it has never been
// a master or a synced replica).
func (m *Master) History() (replid string, offset int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.replid, m.offset, m.offset > 0 || m.backlog != nil
}

// ContinueWithLocked adopts the id a master continues us with after a
// partial resync; when it changed (the master was promoted) ours is kept
// as replid2 so our own replicas can still continue. It reports whether
// the id changed.
func (m *Master) ContinueWithLocked(id string) bool {
	if id == "" || id == m.replid {
		return false
	}
	m.replid2 = m.replid
	m.secondOffset = m.offset + 1
	m.replid = id
	m.DisconnectReplicasLocked()
	return true
}

// FullSyncedLocked adopts a master's history after a full resync: our own
// replicas must resync from the new dataset.
func (m *Master) FullSyncedLocked(replid string, offset int64) {
	m.replid = replid
	m.offset = offset
	m.replid2 = noReplID
	m.secondOffset = -1
	m.ResetBacklogLocked()
	m.DisconnectReplicasLocked()
}

// RemoveReplica drops the replica of connection id (its link closed).
func (m *Master) RemoveReplica(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, ri := range m.replicas {
		if ri.conn.ID() == id {
			m.replicas = append(m.replicas[:i], m.replicas[i+1:]...)
			m.ack.Leave(id)
			m.log.Info("Connection with replica " + ri.hello.Name() + " lost.")
			break
		}
	}
	if len(m.replicas) == 0 {
		m.noReplicasAt = time.Now()
	}
	m.ackCond.Broadcast()
	if cur := m.streamTo.Load(); cur != nil {
		list := make([]ReplicaConn, 0, len(*cur))
		for _, x := range *cur {
			if x.ID() != id {
				list = append(list, x)
			}
		}
		m.streamTo.Store(&list)
	}
}

// DisconnectReplicasLocked closes every replica's link so they resync.
//
// They leave the list at once (the connections close asynchronously): no
// byte fed after this point may reach them, or a sub-replica would count
// bytes of our new history (after a replid change) under the old id and
// ask for an offset its next master cannot continue from.
func (m *Master) DisconnectReplicasLocked() {
	for _, ri := range m.replicas {
		go ri.conn.Close()
	}
	for _, ri := range m.replicas {
		m.ack.Leave(ri.conn.ID())
	}
	if len(m.replicas) > 0 {
		m.replicas = nil
		m.noReplicasAt = time.Now()
		m.ackCond.Broadcast()
	}
}

func (m *Master) replicaOf(id int64) *Replica {
	for _, ri := range m.replicas {
		if ri.conn.ID() == id {
			return ri
		}
	}
	return nil
}

// ReplicasLocked returns the replicas, in the order they connected.
func (m *Master) ReplicasLocked() []*Replica { return append([]*Replica(nil), m.replicas...) }

// OnlineLocked returns the online replicas, in the order they connected.
func (m *Master) OnlineLocked() []*Replica {
	var online []*Replica
	for _, ri := range m.replicas {
		if ri.State == ReplicaOnline {
			online = append(online, ri)
		}
	}
	return online
}

// GoodReplicasLocked counts online replicas whose last ACK is within
// maxLag of now (min-replicas-to-write).
func (m *Master) GoodReplicasLocked(now time.Time, maxLag time.Duration) int {
	n := 0
	for _, ri := range m.replicas {
		if ri.State == ReplicaOnline && now.Sub(ri.AckTime) <= maxLag {
			n++
		}
	}
	return n
}

// RefuseWrites reports whether min-replicas-to-write (need, with
// min-replicas-max-lag maxLag) or min-replicas-ack (ackNeed) refuse writes
// now (NOREPLICAS, or NOQUORUM when the Sentinel fence is up: Fenced);
// never on a replica.
func (m *Master) RefuseWrites(now time.Time, need, ackNeed int64, maxLag time.Duration) bool {
	if need <= 0 && ackNeed <= 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.linked {
		return false
	}
	if ackNeed > 0 && (m.guardRefused || m.ackRefuseLocked(ackNeed) || m.fence.Fenced(now)) {
		return true
	}
	return need > 0 && int64(m.GoodReplicasLocked(now, maxLag)) < need
}

// CronLocked is the master's part of the once-a-second replication cron:
// PING in the stream every repl-ping-replica-period, replicas that stopped
// acknowledging closed after repl-timeout, the backlog dropped after
// repl-backlog-ttl without replicas.
func (m *Master) CronLocked(now time.Time, tick int64) {
	st := m.host.MasterSettings()
	period := st.PingPeriod
	if period <= 0 {
		period = 10
	}
	if len(m.replicas) > 0 && !m.linked && tick%period == 0 {
		m.FeedLocked(resp.AppendCommandStrings(nil, "PING"))
	}
	for _, ri := range m.replicas {
		if ri.State != ReplicaOnline {
			continue
		}
		if t := st.Timeout; t > 0 && !ri.AckTime.IsZero() && ri.hello.CapaPSync2 && now.Sub(ri.AckTime) > t {
			go ri.conn.Close()
		}
	}
	if len(m.replicas) == 0 && !m.linked && m.backlog != nil && st.BacklogTTL > 0 && !m.noReplicasAt.IsZero() && now.Sub(m.noReplicasAt) > st.BacklogTTL {
		m.backlog = nil
		m.ShiftReplIDLocked()
	}
}

// SyncCounters returns INFO stats' sync_full, sync_partial_ok and
// sync_partial_err.
func (m *Master) SyncCounters() (full, partialOK, partialErr int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.syncFull, m.syncPartialOK, m.syncPartialErr
}

// ResetSyncCounters zeroes sync_full, sync_partial_ok and sync_partial_err
// (CONFIG RESETSTAT).
func (m *Master) ResetSyncCounters() {
	m.mu.Lock()
	m.syncFull, m.syncPartialOK, m.syncPartialErr = 0, 0, 0
	m.mu.Unlock()
}
