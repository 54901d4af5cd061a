package node

import (
	"strings"
	"sync/atomic"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/repl"
)

// The start-up load's hooks (persist.ReplHooks); what the RDB's replication
// aux fields mean is repl/restore.go's.

// startupLoad is the state of the start-up load (nil otherwise): the aux
// fields read, and whether expired keys feed DELs to the backlog.
type startupLoad struct {
	info    repl.RDBInfo
	feedDEL bool
}

// rdbAux returns the replication aux fields for an RDB opened now. Every
// shard lock is held (the offset is the snapshot's).
func (r *replication) rdbAux() [][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.RDBAuxLocked(int(r.streamDB.Load()))
}

// beforeStartupLoad prepares the start-up RDB load: a configured replica
// is a replica from now on (expired keys are kept), a master gets its
// backlog so the DELs of expired keys can be fed to it.
func (r *replication) beforeStartupLoad() {
	sl := &startupLoad{info: repl.NewRDBInfo()}
	if len(strings.Fields(r.srv.cfg.Get(config.DirReplicaof))) == 2 {
		r.srv.SetReplicaMode(true)
	} else {
		r.mu.Lock()
		r.CreateBacklogLocked()
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.RestoreLocked(in, ok && in.Complete(), !sl.feedDEL) {
		r.masterDB = in.StreamDB
		r.streamDB.Store(int64(in.StreamDB))
	}
}

// startupState is kept apart from replication's mutex: the loader calls in
// while it holds every shard lock.
type startupState = atomic.Pointer[startupLoad]
