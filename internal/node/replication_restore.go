package node

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/repl"
)

// Replication state in RDB files, as Redis 7 keeps it: an RDB written by a
// master with a backlog, or by a replica that has a master's history,
// carries repl-stream-db, repl-id and repl-offset aux fields
// (rdbPopulateSaveInfo). At start-up a master keeps the saved id as its
// replid2 (valid up to offset+1) so its replicas continue partially after
// a restart; a replica takes the id and offset as its own cached master.
// A master loading at start-up drops expired keys and feeds their DELs to
// the backlog, which then continues from the saved offset.

// startupLoad is the state of the start-up load (nil otherwise): the aux
// fields read, and whether expired keys feed DELs to the backlog.
type startupLoad struct {
	info    repl.RDBInfo
	feedDEL bool
}

// rdbAux returns the replication aux fields for an RDB opened now, or none
// when Redis would write none. Every shard lock is held (the offset is the
// snapshot's).
func (r *replication) rdbAux() [][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var db int
	switch {
	case r.link == nil && r.backlog != nil:
		db = max(r.lastDB, 0)
	case r.link != nil && (r.offset > 0 || r.backlog != nil):
		db = int(r.streamDB.Load())
	default:
		return nil
	}
	return repl.AuxFields(db, r.replid, r.offset)
}

// beforeStartupLoad prepares the start-up RDB load: a configured replica
// is a replica from now on (expired keys are kept), a master gets its
// backlog so the DELs of expired keys can be fed to it.
func (r *replication) beforeStartupLoad() {
	sl := &startupLoad{info: repl.NewRDBInfo()}
	if len(strings.Fields(r.srv.cfg.Get(DirReplicaof))) == 2 {
		r.srv.SetReplicaMode(true)
	} else {
		r.mu.Lock()
		r.createBacklogLocked()
		r.mu.Unlock()
		sl.feedDEL = true
	}
	r.loadExpiredKeys.Store(0)
	r.startup.Store(sl)
}

// loadAux records a replication aux field of the start-up load.
func (r *replication) loadAux(key, val []byte) {
	sl := r.startup.Load()
	if sl == nil {
		return
	}
	sl.info.Aux(key, val)
}

// loadExpired is called for each expired key a master's load drops: the
// start-up load feeds its DEL to the backlog, as Redis does.
func (r *replication) loadExpired(db int, key []byte) {
	r.loadExpiredKeys.Add(1)
	if sl := r.startup.Load(); sl != nil && sl.feedDEL {
		r.Propagate(db, [][][]byte{{[]byte("DEL"), key}})
	}
}

// afterStartupLoad restores the replication id and offset the loaded RDB
// carried (ok reports a successful load).
func (r *replication) afterStartupLoad(ok bool) {
	sl := r.startup.Swap(nil)
	if sl == nil {
		return
	}
	in := sl.info
	valid := ok && in.Complete()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !valid {
		if sl.feedDEL {
			// No history to continue: the backlog holds no one's data.
			r.backlog = nil
		}
		return
	}
	if !sl.feedDEL {
		// A replica: the saved history is its cached master's.
		r.replid = in.ID
		r.offset = in.Offset
		r.masterDB = in.StreamDB
		r.streamDB.Store(int64(in.StreamDB))
		r.createBacklogLocked()
		r.srv.log.Info("Restored replication ID and offset from the RDB", "replid", in.ID, "offset", in.Offset)
		return
	}
	// A master: the saved id becomes replid2, valid up to offset+1; the
	// DELs fed while loading follow the saved offset.
	r.replid2 = in.ID
	r.secondOffset = in.Offset + 1
	r.offset += in.Offset
	r.noReplicasAt = time.Now()
	r.srv.log.Info("Restored replication ID and offset from the RDB as the secondary ID", "replid2", in.ID, "second_repl_offset", r.secondOffset)
}

// startupState is kept apart from replication's mutex: the loader calls in
// while it holds every shard lock.
type startupState = atomic.Pointer[startupLoad]
