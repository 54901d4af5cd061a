package persist

// Snapshots for BGSAVE, AOF rewrite and full syncs: a snapshot is the
// keyspace's copy-on-write view (keyspace.Snapshot, keyspace/snapshot.go)
// plus what the writers need (aux fields, limits, pacing).

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/rdb"
)

// Snapshot is an open point-in-time view of the keyspace. It is written
// once (Encode, or the AOF rewrite's writer) and then closed.
type Snapshot struct {
	// Snapshot is the keyspace's copy-on-write view the writer walks.
	*keyspace.Snapshot
	p      *Persistence
	dbs    []*keyspace.DB
	seq    int64
	opened time.Time
	nowMs  int64
	dbKeys []int64 // keys per db when opened
	dbExp  []int64
	aux    [][2]string
	funcs  [][]byte // the function libraries when the snapshot opened
	// started is set by the writer, or by the timer that drops a snapshot
	// whose writer never came (whichever is first).
	started atomic.Bool
	closed  atomic.Bool
	limits  rdb.Limits
	lru     string // "lru", "lfu" or "": what per-key metadata to write
}

// OpenLocked opens a snapshot. Every shard lock must be held.
func (p *Persistence) OpenLocked() *Snapshot {
	dbs := p.h.DBs()
	st := p.h.Settings()
	sn := &Snapshot{Snapshot: keyspace.OpenSnapshot(dbs), p: p, dbs: dbs, seq: p.snapSeq.Add(1), opened: time.Now()}
	sn.nowMs = sn.opened.UnixMilli()
	for _, db := range dbs {
		sn.dbKeys = append(sn.dbKeys, db.Size())
		sn.dbExp = append(sn.dbExp, db.Expires.Load())
	}
	sn.limits = st.Limits.RDB()
	sn.lru = st.LRU
	sn.aux = p.auxFields(sn.opened)
	sn.funcs = p.h.FunctionCodes()
	p.snapMu.Lock()
	old := *p.snaps.Load()
	nw := append(append([]*Snapshot(nil), old...), sn)
	p.snaps.Store(&nw)
	p.snapMu.Unlock()
	// A snapshot whose writer never runs (a replica that went away before
	// the transfer) must not keep its shards frozen and copied forever.
	time.AfterFunc(2*time.Minute, func() {
		if sn.started.CompareAndSwap(false, true) {
			sn.Close()
		}
	})
	return sn
}

// Claim marks the snapshot as taken by a writer; it reports false when a
// writer (or the expiry timer) took it first.
func (sn *Snapshot) Claim() bool { return sn.started.CompareAndSwap(false, true) }

// Close unregisters the snapshot; shards it has not copied yet are
// unlisted (their copies dropped).
func (sn *Snapshot) Close() {
	if sn.closed.Swap(true) {
		return
	}
	p := sn.p
	p.snapMu.Lock()
	old := *p.snaps.Load()
	nw := make([]*Snapshot, 0, len(old))
	for _, o := range old {
		if o != sn {
			nw = append(nw, o)
		}
	}
	p.snaps.Store(&nw)
	p.snapMu.Unlock()
	sn.Release()
}

// GuardAllLocked copies, into every open snapshot, every shard not copied
// yet. All shard locks must be held (whole-keyspace replacements).
func (p *Persistence) GuardAllLocked() {
	if !p.SnapshotsOpen() {
		return
	}
	for _, db := range p.h.DBs() {
		for i := range db.Shards {
			keyspace.SnapGuard([]*sync.Mutex{&db.Shards[i].Mu})
		}
	}
}

// savePacer lets a background save's writer give way to clients, as a
// low-priority process would, in short time slices.
//
// Yielding with runtime.Gosched is not enough: with one thread
// (io-threads 1) a goroutine that yields goes back to the run queue, and
// the scheduler runs it again before it polls the network, so clients
// whose requests arrived meanwhile wait for the runtime's background poll
// (up to 10 ms). Pausing after each shard left the writer running for a
// whole shard (~15k keys, several ms) at a time. scripts/bench-bgsave.sh,
// 1M keys, io-threads 1: p99 during saves 13-17 ms against a 1-3 ms
// baseline, whatever the copy cost.
//
// So the writer works for at most saveSlice at a time; then, if clients
// ran commands since its last pause, it sleeps for saveRest, which parks
// it: the runtime polls the network and runs every client that is ready
// before the writer runs again. On an idle server (or one polled by a
// monitor now and then) it only yields and runs flat out.
type savePacer struct {
	h     Host
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

func (sn *Snapshot) newPacer() savePacer {
	p := savePacer{h: sn.p.h, on: sn.Background}
	if p.on {
		p.start, p.cmds = time.Now(), p.h.CommandsProcessed()
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
	c := p.h.CommandsProcessed()
	if c-p.cmds >= saveBusyCommands {
		time.Sleep(saveRest)
	} else {
		runtime.Gosched()
	}
	p.cmds = c
	p.start = time.Now()
}
