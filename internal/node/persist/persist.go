// Package persist is the node's persistence: RDB snapshots without
// stopping the world (SAVE, BGSAVE, save rules, the save on shutdown, the
// load at start-up), the conversions between keyspace entries and RDB
// values (DUMP/RESTORE payloads), and the append-only file in Redis 7's
// multi-part layout (its writer, rewrite and loader).
//
// It works on a keyspace snapshot (keyspace.Snapshot) and knows the
// server only through Host: the databases and their locks, the dirty
// counter, the replication aux fields, and an Applier that replays the
// AOF's commands (the root runs them through its command table; this
// package never sees a client). The RDB format itself is internal/rdb.
//
// Snapshots (docs/PERSISTENCE.md "How a snapshot is taken") open in
// microseconds under every shard lock and are copied bucket by bucket by
// whoever needs a bucket first: a write about to change a key of it, or
// the writer here, which copies the rest a chunk of buckets at a time,
// encodes each copy outside any lock and drops it.
package persist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
)

// Settings are the directives persistence reads. The host builds them
// from its configuration and returns the same pointer until the
// configuration changes, so reading them is cheap.
type Settings struct {
	Dir        string // dir
	DBFilename string // dbfilename
	// Save is the save directive: "<seconds> <changes>" pairs, "" for none.
	Save                    string
	RDBCompression          bool  // rdbcompression
	RDBChecksum             bool  // rdbchecksum
	RDBSaveIncrementalFsync bool  // rdb-save-incremental-fsync
	RDBKeySaveDelay         int64 // rdb-key-save-delay (µs per key, tests)
	KeyLoadDelay            int64 // key-load-delay (µs per key, tests)
	// Limits are the collection encodings' thresholds.
	Limits Limits
	// LRU is "lru" or "lfu" when maxmemory-policy keeps that per-key
	// metadata (written to the RDB), "" otherwise.
	LRU string

	AppendOnly                 bool   // appendonly
	AppendDirname              string // appenddirname
	AppendFilename             string // appendfilename
	AppendFsync                string // appendfsync: always, everysec or no
	AutoAOFRewritePercentage   int64  // auto-aof-rewrite-percentage
	AutoAOFRewriteMinSize      int64  // auto-aof-rewrite-min-size
	AOFUseRDBPreamble          bool   // aof-use-rdb-preamble
	AOFRewriteIncrementalFsync bool   // aof-rewrite-incremental-fsync
	AOFLoadTruncated           bool   // aof-load-truncated
}

// Limits are the encoding thresholds a loaded value is built with
// (hash-max-listpack-*, zset-max-listpack-*, set-max-intset-entries).
type Limits struct {
	Hash   value.HashLimits
	ZSet   value.ZSetLimits
	Intset int
}

// RDB returns the limits as the RDB encoder takes them.
func (l Limits) RDB() rdb.Limits {
	return rdb.Limits{
		HashEntries: l.Hash.Entries, HashValue: l.Hash.Value,
		ZSetEntries: l.ZSet.Entries, ZSetValue: l.ZSet.Value,
		SetIntsetEntries: l.Intset, ListNodeBytes: 8192,
	}
}

// Host is what persistence needs from the server that owns it.
type Host interface {
	Dataset
	Counters
	ReplHooks
	FunctionHooks
	// Settings returns the current directives.
	Settings() *Settings
	// Replayer returns an Applier for one AOF file's commands.
	Replayer() Applier
	// Done is closed when the server shuts down (it stops the cron).
	Done() <-chan struct{}
}

// Dataset is the keyspace and its locks.
type Dataset interface {
	// DBs returns the databases; the slice never changes.
	DBs() []*keyspace.DB
	// LockAll and UnlockAll take and release every shard lock, in the
	// server's lock order.
	LockAll()
	UnlockAll()
	// SetLoading sets the flag that makes the server answer LOADING.
	SetLoading(on bool)
	// Loading reports the flag.
	Loading() bool
	// AsyncLoading reports a replica loading its master's payload while it
	// keeps serving its current dataset (repl-diskless-load swapdb).
	AsyncLoading() bool
	// ExpireOnLoad reports whether a load drops keys already expired (a
	// master does; a replica keeps them for its master to expire).
	ExpireOnLoad() bool
}

// Counters are the server's counters persistence reads and updates.
type Counters interface {
	// Dirty is the number of changes since the last save.
	Dirty() int64
	// Saved records a successful save, at unix second at, that covered
	// dirty changes (subtracted from the counter).
	Saved(dirty, at int64)
	// LastSave is the unix second of the last successful save.
	LastSave() int64
	// CommandsProcessed counts the commands run (a background save gives
	// way to clients while it grows).
	CommandsProcessed() int64
	// UsedMemory is the used-mem aux field.
	UsedMemory() int64
	// LRUClock is the server's LRU clock (a loaded key's idle time is
	// relative to it).
	LRUClock() uint32
	// Now is the server clock's time: the time a load drops expired keys
	// at and the save times the save rules count from. Durations (how
	// long a save took) are measured on the real clock.
	Now() time.Time
	// KeyDelay sleeps for rdb-key-save-delay and key-load-delay.
	KeyDelay(usec int64)
}

// ReplHooks are replication's part in RDB files: the aux fields a
// snapshot carries and the start-up load's bookkeeping
// (replication_restore.go in the root).
type ReplHooks interface {
	// RDBAux returns the replication aux fields of a snapshot opened
	// now; every shard lock is held.
	RDBAux() [][2]string
	// LoadAux is called for each aux field a load reads.
	LoadAux(key, val []byte)
	// LoadExpired is called for each expired key a master's load drops.
	LoadExpired(db int, key []byte)
	// LoadExpiredKeys counts the keys LoadExpired saw in the last load.
	LoadExpiredKeys() int64
	// BeforeStartupLoad and AfterStartupLoad bracket the start-up load
	// of the RDB file (ok: it loaded).
	BeforeStartupLoad()
	AfterStartupLoad(ok bool)
}

// FunctionHooks are the function libraries' part in persistence
// (commands_function.go in the root): RDB files and command-form AOF
// rewrites carry every library, before the databases, as Redis's do.
type FunctionHooks interface {
	// FunctionCodes returns every library's source, in a stable order;
	// it is called when a snapshot opens (every shard lock held).
	FunctionCodes() [][]byte
	// LoadFunction loads a library read from an RDB file (ours or
	// redis-server's), replacing one of the same name.
	LoadFunction(code []byte) error
}

// Applier replays the commands of one AOF file, in order, as one
// loading client of the server: SELECT changes the database of the
// commands after it (a refused SELECT leaves it, the error reply being
// dropped, as Redis's loading client drops it). The loader handles
// MULTI/EXEC itself. A command that can block runs as if its timeout had
// expired (the loading client never blocks). An error stops the load
// (unknown command, wrong arity); a command's error reply does not.
type Applier interface {
	Apply(argv [][]byte) error
}

// ShutdownOptions are SHUTDOWN's SAVE, NOSAVE and FORCE.
type ShutdownOptions struct {
	Save, NoSave, Force bool
}

// Persistence is the node's RDB and AOF state.
type Persistence struct {
	h       Host
	log     *slog.Logger
	version string

	// snaps are the open snapshots (copy-on-write slice).
	snapMu sync.Mutex
	snaps  atomic.Pointer[[]*Snapshot]

	// saveMu serialises the saves that run without shard locks (BGSAVE's
	// writer, the shutdown save). SAVE and DEBUG RELOAD hold every shard
	// lock and must not wait for it (the BGSAVE writer may be waiting for
	// a shard lock); renames are ordered by snapshot sequence instead.
	saveMu sync.Mutex
	// snapSeq numbers snapshots in the order they were opened (under
	// every shard lock); renamed maps an RDB path to the newest sequence
	// renamed into it, so an older snapshot never replaces a newer one.
	snapSeq       atomic.Int64
	renameMu      sync.Mutex
	renamed       map[string]int64
	bgInProgress  atomic.Bool
	bgScheduled   atomic.Bool
	bgStart       atomic.Int64 // unix ms of the running BGSAVE's start
	lastBgOK      atomic.Bool
	lastBgTimeSec atomic.Int64
	lastSaveTry   atomic.Int64 // unix seconds of the last save attempt
	savesDone     atomic.Int64
	loadedAt      atomic.Int64
	loadedKeys    atomic.Int64

	aof *AOF
}

// New returns the persistence of a server; version is the redis-ver aux
// field. Start loads the dataset and starts the cron.
func New(h Host, log *slog.Logger, version string) *Persistence {
	p := &Persistence{h: h, log: log, version: version}
	p.lastBgOK.Store(true)
	empty := []*Snapshot{}
	p.snaps.Store(&empty)
	p.aof = newAOF(p)
	return p
}

// AOF returns the append-only file (a Propagator of the server's writes).
func (p *Persistence) AOF() *AOF { return p.aof }

// Start loads the dataset (the AOF when appendonly is on, else the RDB
// file) and starts the save-rule cron. The server calls it before
// accepting clients; a load failure stops start-up.
func (p *Persistence) Start() error {
	if err := p.load(); err != nil {
		return err
	}
	go p.cron()
	return nil
}

// StartDriven is Start without the cron goroutine: the caller runs Cron
// every 100 ms from its own timer (shardnode's server cron does, so an
// idle server wakes once per period, not once per timer).
func (p *Persistence) StartDriven() error { return p.load() }

// load loads the dataset and opens the AOF.
func (p *Persistence) load() error {
	if p.h.Settings().AppendOnly {
		if err := p.aof.loadAtStartup(); err != nil {
			return err
		}
	} else if err := p.loadRDBFile(); err != nil {
		return err
	}
	return p.aof.start()
}

// RDBPath is dir/dbfilename.
func (p *Persistence) RDBPath() string {
	st := p.h.Settings()
	return filepath.Join(st.Dir, st.DBFilename)
}

// loadRDBFile loads dir/dbfilename if it exists.
func (p *Persistence) loadRDBFile() error {
	path := p.RDBPath()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("persist: open %s: %w", path, err)
	}
	defer f.Close()
	start := time.Now()
	p.h.BeforeStartupLoad()
	err = p.LoadRDB(f)
	p.h.AfterStartupLoad(err == nil)
	if err != nil {
		return fmt.Errorf("persist: loading %s: %w", path, err)
	}
	n := int64(0)
	for _, db := range p.h.DBs() {
		n += db.Size()
	}
	p.log.Info("DB loaded from disk", "file", path, "keys", n, "seconds", time.Since(start).Seconds())
	return nil
}

// MarkLoaded records that a dataset was just loaded (a replica's full
// sync), for INFO.
func (p *Persistence) MarkLoaded(at time.Time) { p.loadedAt.Store(at.Unix()) }

// BgsaveInProgress reports whether a BGSAVE is running.
func (p *Persistence) BgsaveInProgress() bool { return p.bgInProgress.Load() }

// LastBgsaveOK reports whether the last background save succeeded.
func (p *Persistence) LastBgsaveOK() bool { return p.lastBgOK.Load() }

// ScheduleBgsave makes the cron start a BGSAVE once the running save or
// rewrite is over (BGSAVE SCHEDULE).
func (p *Persistence) ScheduleBgsave() { p.bgScheduled.Store(true) }

// SnapshotsOpen reports whether a snapshot is open (a cheap check before
// the dispatcher copies what a write is about to change).
func (p *Persistence) SnapshotsOpen() bool { return len(*p.snaps.Load()) != 0 }

// cron applies the save rules and the scheduled BGSAVE, and drives the
// AOF's periodic work, until shutdown.
func (p *Persistence) cron() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.h.Done():
			return
		case now := <-t.C:
			p.Cron(now)
		}
	}
}

// Cron runs one pass of the periodic work: the save rules, a scheduled
// BGSAVE, the AOF's everysec fsync and rewrite checks. Start's goroutine
// calls it every 100 ms; after StartDriven the caller does.
func (p *Persistence) Cron(now time.Time) {
	p.saveCron(now)
	p.aof.cron(now)
}

func (p *Persistence) saveCron(now time.Time) {
	if p.bgInProgress.Load() || p.aof.rewriting.Load() {
		return
	}
	if p.bgScheduled.Load() {
		p.Bgsave()
		return
	}
	rules := strings.Fields(p.h.Settings().Save)
	dirty := p.h.Dirty()
	if dirty == 0 {
		return
	}
	since := now.Unix() - p.h.LastSave()
	for i := 0; i+1 < len(rules); i += 2 {
		secs, _ := strconv.ParseInt(rules[i], 10, 64)
		changes, _ := strconv.ParseInt(rules[i+1], 10, 64)
		// After a failed save Redis waits 5 seconds before retrying.
		if dirty >= changes && since >= secs && (p.lastBgOK.Load() || now.Unix()-p.lastSaveTry.Load() > 5) {
			p.log.Info("saving: changes reached the save rule", "changes", changes, "seconds", secs)
			p.Bgsave()
			return
		}
	}
}

// Shutdown flushes the AOF and saves when save rules are configured (or
// SHUTDOWN SAVE was given), as Redis's finishShutdown does. When the save
// fails and the shutdown is not forced, the AOF is left running and the
// error cancels the shutdown: the server keeps serving.
func (p *Persistence) Shutdown(_ context.Context, o ShutdownOptions) error {
	a := p.aof
	if a.enabled.Load() {
		for a.rewriting.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		p.log.Info("Calling fsync() on the AOF file.")
		if err := a.FsyncNow(); err != nil {
			p.log.Warn("Fail to fsync the AOF file", "err", err)
		}
	}
	// A dataset being loaded is never saved (it would be partial).
	if !p.h.Loading() && (o.Save || (!o.NoSave && p.h.Settings().Save != "")) {
		p.log.Info("Saving the final RDB snapshot before exiting.")
		for p.bgInProgress.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if err := p.Save(); err != nil {
			if !o.Force {
				p.log.Warn("Error trying to save the DB, can't exit.")
				return err
			}
			p.log.Warn("Error trying to save the DB. Exit anyway.")
		}
	}
	a.Stop()
	return nil
}

// Info writes INFO's persistence section fields.
func (p *Persistence) Info(b *strings.Builder) {
	bg := p.bgInProgress.Load()
	cur := int64(-1)
	if bg {
		cur = (time.Now().UnixMilli() - p.bgStart.Load()) / 1000
	}
	st := "ok"
	if !p.lastBgOK.Load() {
		st = "err"
	}
	lastBgTime := p.lastBgTimeSec.Load()
	if p.savesDone.Load() == 0 && lastBgTime == 0 {
		lastBgTime = -1
	}
	fmt.Fprintf(b, "loading:%d\r\n", boolInt(p.h.Loading()))
	fmt.Fprintf(b, "async_loading:%d\r\n", boolInt(p.h.AsyncLoading()))
	fmt.Fprintf(b, "current_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n")
	fmt.Fprintf(b, "rdb_changes_since_last_save:%d\r\n", p.h.Dirty())
	fmt.Fprintf(b, "rdb_bgsave_in_progress:%d\r\n", boolInt(bg))
	fmt.Fprintf(b, "rdb_last_save_time:%d\r\n", p.h.LastSave())
	fmt.Fprintf(b, "rdb_last_bgsave_status:%s\r\n", st)
	fmt.Fprintf(b, "rdb_last_bgsave_time_sec:%d\r\n", lastBgTime)
	fmt.Fprintf(b, "rdb_current_bgsave_time_sec:%d\r\n", cur)
	fmt.Fprintf(b, "rdb_saves:%d\r\n", p.savesDone.Load())
	fmt.Fprintf(b, "rdb_last_cow_size:0\r\nrdb_last_load_keys_expired:%d\r\nrdb_last_load_keys_loaded:%d\r\n", p.h.LoadExpiredKeys(), p.loadedKeys.Load())
	p.aof.info(b)
	fmt.Fprintf(b, "module_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
