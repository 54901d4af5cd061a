package node

// Snapshots for BGSAVE, AOF rewrite and full syncs: a snapshot is the
// keyspace's copy-on-write view (keyspace.Snapshot, keyspace/snapshot.go) plus what the
// writers need (aux fields, limits, pacing).

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/rdb"
)

// snapshot is an open point-in-time view of the keyspace.
type snapshot struct {
	// keyspace.Snapshot is the keyspace's copy-on-write view the writer walks.
	*keyspace.Snapshot
	p      *persistence
	seq    int64
	opened time.Time
	nowMs  int64
	dbKeys []int64 // keys per db when opened
	dbExp  []int64
	aux    [][2]string
	// started is set by the writer, or by the timer that drops a snapshot
	// whose writer never came (whichever is first).
	started atomic.Bool
	closed  atomic.Bool
	limits  rdb.Limits
	lru     string // "lru", "lfu" or "": what per-key metadata to write
}

// openLocked opens a snapshot. Every shard lock must be held.
func (p *persistence) openLocked() *snapshot {
	s := p.srv
	sn := &snapshot{Snapshot: keyspace.OpenSnapshot(s.dbs), p: p, seq: p.snapSeq.Add(1), opened: time.Now()}
	sn.nowMs = sn.opened.UnixMilli()
	for _, db := range s.dbs {
		sn.dbKeys = append(sn.dbKeys, db.Size())
		sn.dbExp = append(sn.dbExp, db.Expires.Load())
	}
	sn.limits = rdb.Limits{
		HashEntries: int(s.cfg.Int(DirHashMaxListpackEntries)), HashValue: int(s.cfg.Int(DirHashMaxListpackValue)),
		ZSetEntries: int(s.cfg.Int(DirZsetMaxListpackEntries)), ZSetValue: int(s.cfg.Int(DirZsetMaxListpackValue)),
		SetIntsetEntries: int(s.cfg.Int(DirSetMaxIntsetEntries)), ListNodeBytes: 8192,
	}
	switch pol := s.cfg.Get(DirMaxmemoryPolicy); {
	case strings.HasSuffix(pol, "-lru"):
		sn.lru = "lru"
	case strings.HasSuffix(pol, "-lfu"):
		sn.lru = "lfu"
	}
	sn.aux = p.auxFields(sn.opened)
	p.snapMu.Lock()
	old := *p.snaps.Load()
	nw := append(append([]*snapshot(nil), old...), sn)
	p.snaps.Store(&nw)
	p.snapMu.Unlock()
	// A snapshot whose writer never runs (a replica that went away before
	// the transfer) must not keep its shards frozen and copied forever.
	time.AfterFunc(2*time.Minute, func() {
		if sn.started.CompareAndSwap(false, true) {
			sn.close()
		}
	})
	return sn
}

// close unregisters the snapshot; shards it has not copied yet are
// unlisted (their copies dropped).
func (sn *snapshot) close() {
	if sn.closed.Swap(true) {
		return
	}
	p := sn.p
	p.snapMu.Lock()
	old := *p.snaps.Load()
	nw := make([]*snapshot, 0, len(old))
	for _, o := range old {
		if o != sn {
			nw = append(nw, o)
		}
	}
	p.snaps.Store(&nw)
	p.snapMu.Unlock()
	sn.Release()
}

// snapGuard completes, in every open snapshot, the copies of the held
// shards: the caller may change anything in them (commands that lock a
// whole database or every shard, blocked clients being served, loads).
func (s *Server) snapGuard(held []*sync.Mutex) { keyspace.SnapGuard(held) }

// snapOpen reports whether a snapshot is open (a cheap check before
// snapGuardKeys).
func (s *Server) snapOpen() bool {
	return s.persist != nil && len(*s.persist.snaps.Load()) != 0
}

// snapGuardKeys copies, in every open snapshot, the buckets holding the
// keys of a write command about to run (its locks are held, in the
// client's current database). The dispatcher calls it for write commands
// while a snapshot is open; commands that lock whole databases were
// guarded when they locked.
func (c *Client) snapGuardKeys(cmd *command, args [][]byte) {
	if cmd.flags&(flagLockAll|flagLockDB) != 0 {
		return
	}
	db := c.srv.dbs[c.db]
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				db.SnapTouchKey(bstr(args[p]))
			}
		}
		return
	}
	if cmd.first <= 0 {
		return
	}
	last := cmd.last
	if last < 0 {
		last = len(args) + last
	}
	last = min(last, len(args)-1)
	for i := cmd.first; i <= last; i += max(cmd.step, 1) {
		db.SnapTouchKey(bstr(args[i]))
	}
}

// savePacer lets a background save's writer give way to clients, as a
// low-priority process would, in short time slices.
//
// Yielding with runtime.Gosched is not enough: with one thread
// (io-threads 1) a goroutine that yields goes back to the run queue, and
// the scheduler runs it again before it polls the network, so clients
// whose requests arrived meanwhile wait for the runtime's background poll
// (up to 10 ms). Pausing after each shard (the pacer before 2026-11-30)
// left the writer running for a whole shard (~15k keys, several ms) at a
// time. scripts/bench-bgsave.sh, 1M keys, io-threads 1: p99 during saves
// 13-17 ms against a 1-3 ms baseline, whatever the copy cost.
//
// So the writer works for at most saveSlice at a time; then, if clients
// ran commands since its last pause, it sleeps for saveRest, which parks
// it: the runtime polls the network and runs every client that is ready
// before the writer runs again. On an idle server (or one polled by a
// monitor now and then) it only yields and runs flat out.
type savePacer struct {
	srv   *Server
	on    bool      // a background save: pace
	start time.Time // the current slice's start
	cmds  int64     // the command counter at the last pause
	n     int       // keys since the clock was last read
}

const (
	// saveSlice and saveRest are the writer's work and sleep while
	// clients are active: it takes about a fifth of a core, and a client
	// waits at most one slice behind it.
	saveSlice = 500 * time.Microsecond
	saveRest  = 2 * time.Millisecond
	// saveBusyCommands is how many commands since the last pause mean
	// clients are active (not a monitoring poll).
	saveBusyCommands = 8
)

func (sn *snapshot) newPacer() savePacer {
	p := savePacer{srv: sn.p.srv, on: sn.Background}
	if p.on {
		p.start, p.cmds = time.Now(), p.srv.stats.commands.Load()
	}
	return p
}

// step is called after each key written; it reads the clock every 16 keys
// and pauses once the slice is over.
func (p *savePacer) step() {
	if !p.on {
		return
	}
	if p.n++; p.n < 16 {
		return
	}
	p.n = 0
	if time.Since(p.start) < saveSlice {
		return
	}
	c := p.srv.stats.commands.Load()
	if c-p.cmds >= saveBusyCommands {
		time.Sleep(saveRest)
	} else {
		runtime.Gosched()
	}
	p.cmds = c
	p.start = time.Now()
}
