package node

// Replication's server half. The master side (history, backlog, replicas,
// PSYNC answers, min-replicas-ack, FAILOVER's machine) is repl.Master and
// repl.Failover; the replica's link is repl.Link. This file holds their
// adapters: the Master's host (masterHost) and the replicas' connections
// (replicaConn), the cron and INFO.

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/repl"
)

// replication is the node's replication state: the master side
// (repl.Master: the replication id and offset, the backlog, the connected
// replicas) and, on a replica, the link to its master. It implements
// Propagator through the Master: every write is appended to the backlog and
// streamed to online replicas, in the order the keyspace applied it.
type replication struct {
	srv *Server

	// mu guards the Master and link.
	mu sync.Mutex
	*repl.Master

	link *masterLink // non-nil while this node is a replica
	// masterDB is the database the master's stream last selected. It
	// survives a cut link and a change of master, as Redis's cached master
	// client: a master continuing partially sends no SELECT.
	masterDB int

	// localExp holds keys local writes gave a TTL on a writable replica.
	localExp repl.LocalExpires

	// streamDB is the database the master's stream selected last, for
	// the repl-stream-db aux field of a replica's RDB.
	streamDB atomic.Int64
	// startup is set during the start-up RDB load (replication_restore.go).
	startup startupState
	// loadExpiredKeys counts the expired keys the last load dropped
	// (INFO rdb_last_load_keys_expired).
	loadExpiredKeys atomic.Int64
}

func newReplication(s *Server) *replication {
	r := &replication{srv: s}
	guard := len(strings.Fields(s.cfg.Get(config.DirReplicaof))) != 2
	r.Master = repl.NewMaster(&r.mu, masterHost{r}, s.log, int(s.cfg.Int(config.DirMinReplicasAck)), guard)
	registerReplicationDebug(s)
	s.failoverStateFn = s.failover.State
	s.replInfo = r.info
	s.minReplicasRefuse = func() bool {
		h := s.hot()
		if h.minReplicasToWrite <= 0 && h.minReplicasAck <= 0 {
			return false
		}
		return r.RefuseWrites(time.Now(), h.minReplicasToWrite, h.minReplicasAck, time.Duration(s.cfg.Int(config.DirMinReplicasMaxLag))*time.Second)
	}
	s.masterLinkUp = func() bool {
		r.mu.Lock()
		l := r.link
		r.mu.Unlock()
		return l == nil || l.status().state == linkConnected
	}
	return r
}

func init() {
	onConfigSet(config.DirReplBacklogSize, func(s *Server, _ string) {
		if s.repl != nil {
			s.repl.ResizeBacklog()
		}
	})
}

// masterHost is the server as the master side sees it (repl.MasterHost).
type masterHost struct{ r *replication }

var _ repl.MasterHost = masterHost{}

func (h masterHost) MasterSettings() repl.MasterSettings {
	cfg := h.r.srv.cfg
	sec := func(d config.Directive) time.Duration { return time.Duration(cfg.Int(d)) * time.Second }
	return repl.MasterSettings{
		BacklogSize:         cfg.Int(config.DirReplBacklogSize),
		PingPeriod:          cfg.Int(config.DirReplPingReplicaPeriod),
		Timeout:             sec(config.DirReplTimeout),
		BacklogTTL:          sec(config.DirReplBacklogTTL),
		DisklessSync:        cfg.Bool(config.DirReplDisklessSync),
		DisklessDelay:       sec(config.DirReplDisklessSyncDelay),
		DisklessMaxReplicas: cfg.Int(config.DirReplDisklessSyncMaxReplicas),
		MinReplicasToWrite:  cfg.Int(config.DirMinReplicasToWrite),
		MinReplicasMaxLag:   sec(config.DirMinReplicasMaxLag),
		AckTimeout:          cfg.Int(config.DirMinReplicasAckTimeout),
		CanSnapshot:         h.r.srv.snapshotRDB != nil,
	}
}

// LinkDown runs with r.mu held.
func (h masterHost) LinkDown() bool {
	return h.r.link != nil && h.r.link.status().state != linkConnected
}

// Snapshot captures a point-in-time snapshot with every shard locked.
func (h masterHost) Snapshot(at func()) func(io.Writer) error {
	s := h.r.srv
	s.LockAll()
	at()
	write := s.snapshotRDB()
	s.UnlockAll()
	return write
}

func (h masterHost) ReplicaListed() { h.r.srv.seq.Notify() } // sequence.go
func (h masterHost) Frozen() bool   { return h.r.srv.frozen() }

// replicaConn is a replica's client as the master side sees it
// (repl.ReplicaConn): a conversion of *Client, no allocation.
type replicaConn Client

var _ repl.ReplicaConn = (*replicaConn)(nil)

func (rc *replicaConn) c() *Client                 { return (*Client)(rc) }
func (rc *replicaConn) ID() int64                  { return rc.id }
func (rc *replicaConn) Push(b []byte)              { rc.c().pushBytes(b) }
func (rc *replicaConn) WriteStreamNow()            { rc.c().writeStreamNow() }
func (rc *replicaConn) Flush()                     { rc.c().flush() }
func (rc *replicaConn) WriteRaw(b []byte) error    { return rc.c().rawWrite(b) }
func (rc *replicaConn) Attach()                    { rc.c().setFlag(clientReplica, true) }
func (rc *replicaConn) Close()                     { rc.c().close() }
func (rc *replicaConn) Done() <-chan struct{}      { return rc.done }
func (r *replication) removeReplica(c *Client)     { r.RemoveReplica(c.id) }
func (r *replication) setLinkLocked(l *masterLink) { r.link = l; r.SetLinkedLocked(l != nil) }

// cron runs once a second: the master side's cron (PING, repl-timeout,
// backlog TTL); on a replica, REPLCONF ACK and the local keys' expiry.
func (r *replication) cron(now time.Time, tick int64) {
	if r.srv.frozen() {
		return // DEBUG SLEEP stops the cron, as Redis's does
	}
	r.mu.Lock()
	r.CronLocked(now, tick)
	link := r.link
	r.mu.Unlock()
	if link != nil {
		link.sendAck()
		r.expireLocalKeys(now)
	}
}

// info renders INFO's replication section.
func (r *replication) info(b *strings.Builder) {
	s := r.srv
	r.mu.Lock()
	defer r.mu.Unlock()
	if link := r.link; link == nil {
		b.WriteString("role:master\r\n")
	} else {
		link.Info(b, time.Now(), r.OffsetLocked())
		fmt.Fprintf(b, "slave_priority:%d\r\nslave_read_only:%d\r\nreplica_announced:%d\r\n",
			s.cfg.Int(config.DirReplicaPriority), boolInt(s.cfg.Bool(config.DirReplicaReadOnly)), boolInt(s.cfg.Bool(config.DirReplicaAnnounced)))
	}
	r.InfoLocked(b, repl.InfoArgs{Now: time.Now(), Settings: masterHost{r}.MasterSettings(), BacklogSize: s.cfg.Int(config.DirReplBacklogSize),
		AckNeed: int(s.hot().minReplicasAck), FailoverState: s.failoverState()})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// syncCounters returns INFO stats' sync_full, sync_partial_ok and
// sync_partial_err.
func (r *replication) syncCounters() (full, partialOK, partialErr int64) { return r.SyncCounters() }

// resetSyncCounters zeroes them (CONFIG RESETSTAT).
func (r *replication) resetSyncCounters() { r.ResetSyncCounters() }
