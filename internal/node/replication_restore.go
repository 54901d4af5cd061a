package node

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Replication state in RDB files, as Redis 7 keeps it: an RDB written by a
// master with a backlog, or by a replica that has a master's history,
// carries repl-stream-db, repl-id and repl-offset aux fields
// (rdbPopulateSaveInfo). At start-up a master keeps the saved id as its
// replid2 (valid up to offset+1) so its replicas continue partially after
// a restart; a replica takes the id and offset as its own cached master.
// A master loading at start-up drops expired keys and feeds their DELs to
// the backlog, which then continues from the saved offset.

// rdbReplInfo is what an RDB's aux fields say of replication.
type rdbReplInfo struct {
	id       string
	offset   int64
	streamDB int
	hasID    bool
}

// startupLoad is the state of the start-up load (nil otherwise): the aux
// fields read, and whether expired keys feed DELs to the backlog.
type startupLoad struct {
	info    rdbReplInfo
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
	return [][2]string{
		{"repl-stream-db", strconv.Itoa(db)},
		{"repl-id", r.replid},
		{"repl-offset", strconv.FormatInt(r.offset, 10)},
	}
}

// beforeStartupLoad prepares the start-up RDB load: a configured replica
// is a replica from now on (expired keys are kept), a master gets its
// backlog so the DELs of expired keys can be fed to it.
func (r *replication) beforeStartupLoad() {
	sl := &startupLoad{info: rdbReplInfo{offset: -1, streamDB: -1}}
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
	switch string(key) {
	case "repl-id":
		if len(val) == 40 {
			sl.info.id, sl.info.hasID = string(val), true
		}
	case "repl-offset":
		if n, err := strconv.ParseInt(string(val), 10, 64); err == nil {
			sl.info.offset = n
		}
	case "repl-stream-db":
		if n, err := strconv.Atoi(string(val)); err == nil {
			sl.info.streamDB = n
		}
	}
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
	valid := ok && in.hasID && in.offset != -1 && in.streamDB != -1
	r.mu.Lock()
	defer r.mu.Unlock()
	if !valid {
		if sl.feedDEL {
			// No history to continue: the backlog holds no one's data.
			r.backlog, r.histlen, r.backlogIdx = nil, 0, 0
		}
		return
	}
	if !sl.feedDEL {
		// A replica: the saved history is its cached master's.
		r.replid = in.id
		r.offset = in.offset
		r.masterDB = in.streamDB
		r.streamDB.Store(int64(in.streamDB))
		r.createBacklogLocked()
		r.srv.log.Info("Restored replication ID and offset from the RDB", "replid", in.id, "offset", in.offset)
		return
	}
	// A master: the saved id becomes replid2, valid up to offset+1; the
	// DELs fed while loading follow the saved offset.
	r.replid2 = in.id
	r.secondOffset = in.offset + 1
	r.offset += in.offset
	r.noReplicasAt = time.Now()
	r.srv.log.Info("Restored replication ID and offset from the RDB as the secondary ID", "replid2", in.id, "second_repl_offset", r.secondOffset)
}

// startupState is kept apart from replication's mutex: the loader calls in
// while it holds every shard lock.
type startupState = atomic.Pointer[startupLoad]
