package node

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/resp"
)

// Replica link states on the master (INFO replication slaveN:state=).
const (
	replStateWaitBgsave = "wait_bgsave"
	replStateSendBulk   = "send_bulk"
	replStateOnline     = "online"
)

// replicaInfo is a replica connected to this node.
type replicaInfo struct {
	c             *Client
	state         string
	listeningPort int
	announceIP    string
	ackOffset     int64
	ackTime       time.Time
	capaEOF       bool
	capaPSync2    bool
	// waitAck holds the stream back after a diskless transfer until the
	// replica's first ACK, as Redis does, so the stream cannot be mistaken
	// for the end of the payload.
	waitAck bool
	// buf collects the stream while the replica waits for its RDB.
	buf []byte
}

// replication is the node's replication state: the replication id and
// offset, the backlog, the connected replicas, and (on a replica) the link
// to its master. It implements Propagator: every write is appended to the
// backlog and streamed to online replicas, in the order the keyspace
// applied it.
type replication struct {
	srv *Server

	mu           sync.Mutex
	replid       string
	replid2      string
	offset       int64         // master_repl_offset
	secondOffset int64         // second_repl_offset, -1 if none
	backlog      *repl.Backlog // nil until the first replica (or a restored history)
	lastDB       int           // database of the last SELECT sent, -1 forces one
	// streamTo lists the replicas the stream goes to (online, not
	// waiting for an ACK), for writeStreamsNow; streamDirty is set when
	// the stream grew since its last run, streamLast is when it last
	// wrote (unix ns).
	streamTo    atomic.Pointer[[]*Client]
	streamDirty atomic.Bool
	streamLast  atomic.Int64
	// scratch is Propagate's encoding buffer, reused (feedLocked copies
	// what it keeps): no allocation per propagated write.
	scratch      []byte
	replicas     []*replicaInfo
	ackCond      *sync.Cond
	noReplicasAt time.Time // when the last replica left (repl-backlog-ttl)
	// disklessWindowEnd ends the current repl-diskless-sync-delay wait.
	disklessWindowEnd time.Time

	syncFull       int64
	syncPartialOK  int64
	syncPartialErr int64

	link *masterLink // non-nil while this node is a replica
	// masterDB is the database the master's stream last selected. It
	// survives a cut link and a change of master, as Redis's cached master
	// client: a master continuing partially sends no SELECT.
	masterDB int

	// localExp holds keys local writes gave a TTL on a writable replica.
	localExp localExpires

	// streamDB is the database the master's stream selected last, for
	// the repl-stream-db aux field of a replica's RDB.
	streamDB atomic.Int64
	// startup is set during the start-up RDB load (replication_restore.go).
	startup startupState
	// loadExpiredKeys counts the expired keys the last load dropped
	// (INFO rdb_last_load_keys_expired).
	loadExpiredKeys atomic.Int64

	// ack is min-replicas-ack's gate (replication_ack.go); ackWaiters
	// are the waiting writers' wake-up channels by client id, ackRel
	// Release's scratch. ackTimeouts counts the batches whose
	// acknowledgement timed out (INFO min_replicas_ack_timeouts).
	ack         *repl.AckGate
	ackWaiters  map[int64]chan struct{}
	ackRel      []int64
	ackTimeouts atomic.Int64
	// restartGuard is set from start-up as a master until this node
	// becomes a replica or is promoted (REPLICAOF, REPLICAOF NO ONE,
	// FAILOVER, a cluster election); guardRefused once the guard refused
	// a replica whose history is ahead of ours (replication_ack.go).
	restartGuard, guardRefused bool
}

func newReplID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func newReplication(s *Server) *replication {
	r := &replication{srv: s, replid: newReplID(), replid2: strings.Repeat("0", 40), secondOffset: -1, lastDB: -1}
	r.ackCond = sync.NewCond(&r.mu)
	r.ack = repl.NewAckGate(int(s.cfg.Int(DirMinReplicasAck)))
	r.ackWaiters = map[int64]chan struct{}{}
	r.restartGuard = len(strings.Fields(s.cfg.Get(DirReplicaof))) != 2
	registerReplicationDebug(s)
	s.failoverStateFn = s.failover.getState
	s.replInfo = r.info
	s.minReplicasRefuse = func() bool {
		h := s.hot()
		need, ack := h.minReplicasToWrite, h.minReplicasAck
		if need <= 0 && ack <= 0 {
			return false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.link != nil {
			return false
		}
		if ack > 0 && (r.guardRefused || r.ackRefuseLocked(ack)) {
			return true
		}
		return need > 0 && int64(r.goodReplicasLocked(time.Duration(s.cfg.Int(DirMinReplicasMaxLag))*time.Second)) < need
	}
	s.masterLinkUp = func() bool {
		r.mu.Lock()
		l := r.link
		r.mu.Unlock()
		return l == nil || l.status().state == linkConnected
	}
	return r
}

// createBacklogLocked allocates the backlog, as Redis does when the first
// replica connects.
func (r *replication) createBacklogLocked() {
	if r.backlog != nil {
		return
	}
	r.backlog = repl.NewBacklog(r.backlogSize())
	r.lastDB = -1
}

// backlogSize is repl-backlog-size with Redis's 16 kB floor.
func (r *replication) backlogSize() int {
	return max(int(r.srv.cfg.Int(DirReplBacklogSize)), 16*1024)
}

// resizeBacklog applies CONFIG SET repl-backlog-size to an existing
// backlog, keeping as much of its history as the new size holds (Redis's
// resizeReplicationBacklog): a replica cut after the change can still
// continue from an offset the old backlog held.
func (r *replication) resizeBacklog() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.backlog != nil {
		r.backlog.Resize(r.backlogSize())
	}
}

func init() {
	configDefs["repl-backlog-size"].apply = func(s *Server, _ string) {
		if s.repl != nil {
			s.repl.resizeBacklog()
		}
	}
}

// feedLocked appends raw stream bytes to the backlog and every replica.
func (r *replication) feedLocked(b []byte) {
	if r.backlog == nil {
		return
	}
	r.offset += int64(len(b))
	r.backlog.Write(b)
	cur := r.streamTo.Load()
	same, k := cur != nil, 0
	for _, ri := range r.replicas {
		switch {
		case ri.state == replStateOnline && !ri.waitAck:
			ri.c.pushBytes(b)
			if same && (k >= len(*cur) || (*cur)[k] != ri.c) {
				same = false
			}
			k++
		default:
			ri.buf = append(ri.buf, b...)
		}
	}
	if !same || k != len(*cur) {
		list := make([]*Client, 0, k)
		for _, ri := range r.replicas {
			if ri.state == replStateOnline && !ri.waitAck {
				list = append(list, ri.c)
			}
		}
		r.streamTo.Store(&list)
	}
	if k > 0 {
		r.streamDirty.Store(true)
	}
}

// Eager stream writes.
//
// Redis sends the replication stream and the clients' replies in the same
// pass of its event loop (beforeSleep). shardnode's replies leave as
// each client finishes, and the stream when the replica's writer goroutine
// runs, after the clients already runnable (flushPending): an
// acknowledged write reached the replica ~460 µs after its reply at the
// median (repllag -probe), Redis's ~400 µs. So a client about to reply
// first writes the pending stream itself when streamEagerGap has passed
// since such a write; more often cost a system call per reply (the
// client, not the writer, writing every time: master CPU per SET +25 %,
// replica +70 %, and p99 no better). With 200 µs, 3 alternating rounds
// on 2026-11-30 19:28–19:35 UTC, 1M keys, redis-benchmark SET load: time
// lag p50 303–324 µs vs 379–431 µs without and 325–425 µs for
// redis-server, p99 6.3–9.5 ms vs 7.3–9.7 ms (redis-server 5.3–6.0 ms).
// Cost, measured on its own (3 rounds, 300k SETs): master CPU per SET
// about +6 % (18.0 / 23.4 / 20.8 µs vs 16.8 / 21.0 / 20.8 µs), replica
// 5.1–6.2 vs 4.4–5.0 µs.
const streamEagerGap = int64(200 * time.Microsecond)

// writeStreamsNow writes the online replicas' pending stream from the
// calling client's goroutine just before it sends its replies, at most
// once per streamEagerGap across clients.
func (r *replication) writeStreamsNow() {
	now := time.Now().UnixNano()
	last := r.streamLast.Load()
	if now-last < streamEagerGap || !r.streamLast.CompareAndSwap(last, now) {
		return
	}
	r.streamDirty.Store(false)
	if l := r.streamTo.Load(); l != nil {
		for _, c := range *l {
			c.writeStreamNow()
		}
	}
}

// Propagate implements Propagator: encodes the commands (with a SELECT when
// the database changes) into the replication stream.
func (r *replication) Propagate(db int, cmds [][][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.backlog == nil || r.link != nil {
		// No replica ever connected, or we are a replica: our stream is
		// the master's, forwarded verbatim (feedFromMaster).
		return
	}
	b := r.scratch[:0]
	if db != r.lastDB {
		b = resp.AppendCommandStrings(b, "SELECT", strconv.Itoa(db))
		r.lastDB = db
	}
	for _, cmd := range cmds {
		b = resp.AppendCommand(b, cmd...)
	}
	r.feedLocked(b)
	if cap(b) <= 64*1024 {
		r.scratch = b[:0]
	} else {
		r.scratch = nil // a big write: don't keep its buffer
	}
}

// feedFromMaster forwards bytes a replica applied from its master to its
// own backlog and sub-replicas (chained replication keeps one offset space).
func (r *replication) feedFromMaster(b []byte) {
	r.mu.Lock()
	r.feedRawLocked(b)
	r.mu.Unlock()
}

func (r *replication) feedRawLocked(b []byte) {
	if r.backlog == nil {
		r.offset += int64(len(b))
		return
	}
	r.feedLocked(b)
}

// backlogFromLocked returns the backlog bytes from offset psyncOffset
// on, or ok false when they are no longer (or not yet) held.
func (r *replication) backlogFromLocked(psyncOffset int64) ([]byte, bool) {
	return r.backlog.From(psyncOffset, r.offset)
}

// shiftReplID starts a new history after a promotion, keeping the old id as
// replid2 so replicas of the old master can continue partially (PSYNC2).
func (r *replication) shiftReplIDLocked() {
	r.replid2 = r.replid
	r.secondOffset = r.offset + 1
	r.replid = newReplID()
	r.srv.log.Info(fmt.Sprintf("Setting secondary replication ID to %s, valid up to offset: %d. New replication ID is %s", r.replid2, r.secondOffset, r.replid))
}

func (r *replication) removeReplica(c *Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, ri := range r.replicas {
		if ri.c == c {
			r.replicas = append(r.replicas[:i], r.replicas[i+1:]...)
			r.ackLeaveLocked(c)
			r.srv.log.Info("Connection with replica " + replicaName(c) + " lost.")
			break
		}
	}
	if len(r.replicas) == 0 {
		r.noReplicasAt = time.Now()
	}
	r.ackCond.Broadcast()
	if cur := r.streamTo.Load(); cur != nil {
		list := make([]*Client, 0, len(*cur))
		for _, x := range *cur {
			if x != c {
				list = append(list, x)
			}
		}
		r.streamTo.Store(&list)
	}
}

func (r *replication) replicaOf(c *Client) *replicaInfo {
	for _, ri := range r.replicas {
		if ri.c == c {
			return ri
		}
	}
	return nil
}

// goodReplicas counts online replicas whose last ACK is within maxLag.
func (r *replication) goodReplicasLocked(maxLag time.Duration) int {
	n := 0
	now := time.Now()
	for _, ri := range r.replicas {
		if ri.state == replStateOnline && now.Sub(ri.ackTime) <= maxLag {
			n++
		}
	}
	return n
}

// cron runs once a second: PING in the stream every repl-ping-replica-period,
// REPLCONF ACK from replicas, backlog TTL.
func (r *replication) cron(now time.Time, tick int64) {
	if r.srv.frozen() {
		return // DEBUG SLEEP stops the cron, as Redis's does
	}
	period := r.srv.cfg.Int(DirReplPingReplicaPeriod)
	if period <= 0 {
		period = 10
	}
	r.mu.Lock()
	if len(r.replicas) > 0 && r.link == nil && tick%period == 0 {
		r.feedLocked(resp.AppendCommandStrings(nil, "PING"))
	}
	// Replicas in wait_bgsave get newlines so they don't time out.
	for _, ri := range r.replicas {
		if ri.state != replStateOnline {
			continue
		}
		if t := r.srv.cfg.Int(DirReplTimeout); t > 0 && !ri.ackTime.IsZero() && ri.capaPSync2 && now.Sub(ri.ackTime) > time.Duration(t)*time.Second {
			go ri.c.close()
		}
	}
	ttl := r.srv.cfg.Int(DirReplBacklogTTL)
	if len(r.replicas) == 0 && r.link == nil && r.backlog != nil && ttl > 0 && !r.noReplicasAt.IsZero() && now.Sub(r.noReplicasAt) > time.Duration(ttl)*time.Second {
		r.backlog = nil
		r.shiftReplIDLocked()
	}
	link := r.link
	r.mu.Unlock()
	if link != nil {
		link.sendAck()
		r.expireLocalKeys(now)
	}
}

// infoReplication renders INFO's replication section.
func (r *replication) info(b *strings.Builder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	link := r.link
	if link == nil {
		b.WriteString("role:master\r\n")
	} else {
		b.WriteString("role:slave\r\n")
		st := link.status()
		fmt.Fprintf(b, "master_host:%s\r\nmaster_port:%d\r\n", link.host, link.port)
		up := "down"
		if st.state == linkConnected {
			up = "up"
		}
		fmt.Fprintf(b, "master_link_status:%s\r\n", up)
		last := int64(-1)
		if !st.lastIO.IsZero() {
			last = int64(time.Since(st.lastIO).Seconds())
		}
		fmt.Fprintf(b, "master_last_io_seconds_ago:%d\r\n", last)
		inSync := 0
		if st.state == linkTransfer {
			inSync = 1
		}
		fmt.Fprintf(b, "master_sync_in_progress:%d\r\n", inSync)
		fmt.Fprintf(b, "slave_read_repl_offset:%d\r\nslave_repl_offset:%d\r\n", r.link.readOffset(r.offset), r.offset)
		if inSync == 1 {
			fmt.Fprintf(b, "master_sync_total_bytes:%d\r\nmaster_sync_read_bytes:%d\r\nmaster_sync_left_bytes:%d\r\nmaster_sync_perc:0.00\r\nmaster_sync_last_io_seconds_ago:0\r\n", st.syncTotal, st.syncRead, st.syncTotal-st.syncRead)
		}
		if st.state != linkConnected {
			secs := int64(-1)
			if !st.downSince.IsZero() {
				secs = int64(time.Since(st.downSince).Seconds())
			}
			fmt.Fprintf(b, "master_link_down_since_seconds:%d\r\n", secs)
		}
		fmt.Fprintf(b, "slave_priority:%d\r\nslave_read_only:%d\r\nreplica_announced:%d\r\n",
			r.srv.cfg.Int(DirReplicaPriority), boolInt(r.srv.cfg.Bool(DirReplicaReadOnly)), boolInt(r.srv.cfg.Bool(DirReplicaAnnounced)))
	}
	fmt.Fprintf(b, "connected_slaves:%d\r\n", len(r.replicas))
	if n := r.srv.cfg.Int(DirMinReplicasToWrite); n > 0 && link == nil {
		fmt.Fprintf(b, "min_slaves_good_slaves:%d\r\n", r.goodReplicasLocked(time.Duration(r.srv.cfg.Int(DirMinReplicasMaxLag))*time.Second))
	}
	if n := r.srv.cfg.Int(DirMinReplicasAck); n > 0 && link == nil {
		// Fields redis-server lacks: our Sentinel reads them for its
		// election rule (internal/sentinel, docs/ARCHITECTURE.md
		// "Acknowledged writes").
		r.syncAckNeedLocked()
		fmt.Fprintf(b, "min_replicas_ack:%d\r\nmin_replicas_ack_timeout:%d\r\nmin_replicas_ack_eligible:%d\r\nmin_replicas_acked_offset:%d\r\nmin_replicas_ack_timeouts:%d\r\nmin_replicas_ack_restart_refused:%d\r\n",
			n, r.srv.cfg.Int(DirMinReplicasAckTimeout), r.ack.Eligible(), r.ack.Acked(), r.ackTimeouts.Load(), boolInt(r.guardRefused))
	}
	for i, ri := range r.replicas {
		lag := int64(0)
		if !ri.ackTime.IsZero() {
			lag = int64(time.Since(ri.ackTime).Seconds())
		}
		fmt.Fprintf(b, "slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d\r\n", i, ri.ip(), ri.listeningPort, ri.state, ri.ackOffset, lag)
	}
	fmt.Fprintf(b, "master_failover_state:%s\r\n", r.srv.failoverState())
	fmt.Fprintf(b, "master_replid:%s\r\nmaster_replid2:%s\r\n", r.replid, r.replid2)
	fmt.Fprintf(b, "master_repl_offset:%d\r\nsecond_repl_offset:%d\r\n", r.offset, r.secondOffset)
	active := 0
	if r.backlog != nil {
		active = 1
	}
	first := int64(0)
	if r.backlog != nil {
		first = r.offset - int64(r.backlog.Histlen()) + 1
	}
	fmt.Fprintf(b, "repl_backlog_active:%d\r\nrepl_backlog_size:%d\r\nrepl_backlog_first_byte_offset:%d\r\nrepl_backlog_histlen:%d\r\n",
		active, r.srv.cfg.Int(DirReplBacklogSize), first, r.backlog.Histlen())
}

func (ri *replicaInfo) ip() string {
	if ri.announceIP != "" {
		return ri.announceIP
	}
	host, _, err := net.SplitHostPort(ri.c.addr)
	if err != nil {
		return ri.c.addr
	}
	return host
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// syncCounters returns INFO stats' sync_full, sync_partial_ok and
// sync_partial_err.
func (r *replication) syncCounters() (full, partialOK, partialErr int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncFull, r.syncPartialOK, r.syncPartialErr
}

// resetSyncCounters zeroes sync_full, sync_partial_ok and sync_partial_err
// (CONFIG RESETSTAT).
func (r *replication) resetSyncCounters() {
	r.mu.Lock()
	r.syncFull, r.syncPartialOK, r.syncPartialErr = 0, 0, 0
	r.mu.Unlock()
}
