package node

// RDB persistence: point-in-time snapshots without stopping the world,
// SAVE/BGSAVE/LASTSAVE, save rules, save on shutdown, load at start-up.
//
// Snapshots (persistence_snapshot.go, docs/PERSISTENCE.md "How a snapshot
// is taken") open in microseconds under every shard lock and are copied
// bucket by bucket by whoever needs a bucket first: a write about to
// change a key of it, or the writer here, which copies the rest a chunk of
// buckets at a time, encodes each copy outside any lock and drops it.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
)

// persistence is the node's RDB and AOF state.
type persistence struct {
	srv *Server

	// snaps are the open snapshots (copy-on-write slice).
	snapMu sync.Mutex
	snaps  atomic.Pointer[[]*snapshot]

	// saveMu serialises the saves that run without shard locks (BGSAVE's
	// writer, the shutdown save). SAVE and DEBUG RELOAD hold every shard
	// lock and must not wait for it (the BGSAVE writer may be waiting for
	// a shard lock); renames are ordered by snapshot sequence instead.
	saveMu sync.Mutex
	// snapSeq numbers snapshots in the order they were opened (under
	// every shard lock); renamed maps an RDB path to the newest sequence
	// renamed into it, so an older snapshot never replaces a newer one.
	snapSeq        atomic.Int64
	renameMu       sync.Mutex
	renamed        map[string]int64
	bgInProgress   atomic.Bool
	bgScheduled    atomic.Bool
	bgStart        atomic.Int64 // unix ms of the running BGSAVE's start
	lastBgOK       atomic.Bool
	lastBgTimeSec  atomic.Int64
	lastSaveTry    atomic.Int64 // unix seconds of the last save attempt
	dirtyAtSave    atomic.Int64 // s.dirty when the running save began
	savesDone      atomic.Int64
	loadedAt       atomic.Int64
	loadedKeys     atomic.Int64
	lastLoadErr    atomic.Pointer[string]
	rdbSaveSizeEst atomic.Int64

	aof *aofState
}

// initPersistence wires persistence into a new server: the RDB loader and
// snapshot hooks replication uses, the shutdown save and the AOF.
func initPersistence(s *Server) {
	p := &persistence{srv: s}
	p.lastBgOK.Store(true)
	empty := []*snapshot{}
	p.snaps.Store(&empty)
	s.persist = p
	s.loadRDB = s.LoadRDB
	s.snapshotRDB = func() func(w io.Writer) error {
		sn := p.openLocked()
		return sn.writeTo
	}
	p.aof = newAOFState(s)
	s.AddShutdownHook(p.onShutdown)
	s.persistInfo = s.persistenceInfo
	registerPersistenceDebug(s)
}

// StartPersistence loads the dataset (the AOF when appendonly is on, else
// the RDB file) and starts the save-rule cron. Run calls it before
// accepting clients; a load failure stops start-up.
func (s *Server) StartPersistence() error {
	p := s.persist
	if p == nil {
		return nil
	}
	if s.cfg.Bool(DirAppendonly) {
		if err := p.aof.loadAtStartup(); err != nil {
			return err
		}
	} else if err := p.loadRDBFile(); err != nil {
		return err
	}
	if err := p.aof.start(); err != nil {
		return err
	}
	go p.cron()
	return nil
}

func (p *persistence) rdbPath() string {
	return filepath.Join(p.srv.cfg.Get(DirDir), p.srv.cfg.Get(DirDbfilename))
}

// loadRDBFile loads dir/dbfilename if it exists.
func (p *persistence) loadRDBFile() error {
	path := p.rdbPath()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node: open %s: %w", path, err)
	}
	defer f.Close()
	start := time.Now()
	p.srv.repl.beforeStartupLoad()
	err = p.srv.LoadRDB(f)
	p.srv.repl.afterStartupLoad(err == nil)
	if err != nil {
		return fmt.Errorf("node: loading %s: %w", path, err)
	}
	n := int64(0)
	for _, db := range p.srv.dbs {
		n += db.Size()
	}
	p.srv.log.Info("DB loaded from disk", "file", path, "keys", n, "seconds", time.Since(start).Seconds())
	return nil
}

func (p *persistence) auxFields(now time.Time) [][2]string {
	s := p.srv
	aux := [][2]string{
		{"redis-ver", Version},
		{"redis-bits", strconv.Itoa(int(unsafe.Sizeof(uintptr(0)) * 8))},
		{"ctime", strconv.FormatInt(now.Unix(), 10)},
		{"used-mem", strconv.FormatInt(s.usedMemory(), 10)},
	}
	if r := s.repl; r != nil {
		// Every shard lock is held, so no write is being fed: the offset
		// is exactly the snapshot's (replication_restore.go).
		aux = append(aux, r.rdbAux()...)
	}
	aof := "0"
	if p.aof != nil && p.aof.writingBase.Load() {
		aof = "1"
	}
	return append(aux, [2]string{"aof-base", aof})
}

// writeTo encodes the snapshot as an RDB stream and closes it.
func (sn *snapshot) writeTo(w io.Writer) error {
	if !sn.started.CompareAndSwap(false, true) {
		return errors.New("node: snapshot expired before it was written")
	}
	defer sn.close()
	s := sn.p.srv
	enc := rdb.NewEncoder(w, rdb.Options{Compress: s.cfg.Bool(DirRdbcompression), Checksum: s.cfg.Bool(DirRdbchecksum), Limits: sn.limits})
	enc.Header()
	for _, a := range sn.aux {
		enc.Aux(a[0], a[1])
	}
	s.rdbSaveFunctions(enc) // commands_function.go
	var val rdb.Value
	pace := sn.newPacer()
	keyDelay := s.cfg.Int(DirRDBKeySaveDelay)
	for i, db := range s.dbs {
		if sn.dbKeys[i] > 0 {
			enc.SelectDB(i)
			enc.ResizeDB(uint64(sn.dbKeys[i]), uint64(sn.dbExp[i]))
		}
		for j := range db.Shards {
			err := sn.ForEachChunk(&db.Shards[j], func(buf *keyspace.SnapBuf) error {
				sn.encodeBuf(enc, buf, &val, keyDelay, &pace)
				return enc.Err()
			})
			if err != nil {
				return err
			}
		}
	}
	return enc.Finish()
}

// encodeBuf encodes the keys of a copied chunk.
func (sn *snapshot) encodeBuf(enc *rdb.Encoder, buf *keyspace.SnapBuf, val *rdb.Value, keyDelay int64, pace *savePacer) {
	var se keyspace.SnapEntry
	for k := range buf.Len() {
		buf.Entry(k, &se)
		meta := rdb.KeyMeta{ExpireMs: se.Expire, Idle: -1, Freq: -1}
		switch sn.lru {
		case "lru":
			meta.Idle = max(0, sn.nowMs/1000-int64(se.LRU))
		case "lfu":
			meta.Freq = int(se.LRU & 0xff)
		}
		toRDBValue(&se, val)
		enc.Key(sbytes(se.Key), meta, val)
		if keyDelay != 0 {
			debugDelay(keyDelay) // rdb-key-save-delay (tests)
		}
		pace.step()
	}
}

// toRDBValue converts a snapshot entry, reusing v's slices.
func toRDBValue(se *keyspace.SnapEntry, v *rdb.Value) {
	v.Str, v.Elems, v.ZSet, v.Hash = nil, v.Elems[:0], v.ZSet[:0], v.Hash[:0]
	switch o := se.Obj.(type) {
	case nil:
		v.Kind, v.Str = rdb.KindString, se.Str
	case *value.List:
		v.Kind = rdb.KindList
		o.ForEach(func(b []byte) bool { v.Elems = append(v.Elems, b); return true })
	case *value.Set:
		v.Kind = rdb.KindSet
		// An intset yields its members in a reused buffer: copy them.
		intset := o.Dict == nil
		o.Each(func(b []byte) bool {
			if intset {
				b = bytes.Clone(b)
			}
			v.Elems = append(v.Elems, b)
			return true
		})
	case *value.ZSet:
		v.Kind = rdb.KindZSet
		o.ForEach(func(m string, sc float64) bool {
			v.ZSet = append(v.ZSet, rdb.ZMember{Member: sbytes(m), Score: sc})
			return true
		})
	case *value.Hash:
		v.Kind = rdb.KindHash
		o.Each(func(f, val []byte) bool { v.Hash = append(v.Hash, rdb.HashField{Field: f, Value: val}); return true })
	default:
		v.Kind, v.Str = rdb.KindString, nil
	}
}

// WriteRDB writes a consistent snapshot of every database, with the aux
// fields, to w. Clients keep being served while it runs.
func (s *Server) WriteRDB(w io.Writer) error {
	s.LockAll()
	sn := s.persist.openLocked()
	s.UnlockAll()
	return sn.writeTo(w)
}

// ---- loading -----------------------------------------------------------

// LoadRDB replaces the dataset with the RDB stream r. The loading flag is
// set while it runs. On error the dataset is left empty: a node never
// serves a partial dataset from a broken file.
func (s *Server) LoadRDB(r io.Reader) error {
	s.loading.Store(true)
	defer s.loading.Store(false)
	s.LockAll()
	defer s.UnlockAll()
	s.snapGuardAll()
	for _, db := range s.dbs {
		db.Flush()
	}
	err := s.loadRDBLocked(r)
	if err != nil {
		for _, db := range s.dbs {
			db.Flush()
		}
	}
	if s.persist != nil {
		s.persist.loadedAt.Store(time.Now().Unix())
	}
	return err
}

// loadRDBLocked adds the keys of r to the dataset. All shards are locked.
func (s *Server) loadRDBLocked(r io.Reader) error {
	// The dataset was just emptied: RESIZEDB hints size the shards, so a
	// load does not grow them step by step (replication_replica.go).
	return s.loadRDBInto(r, s.dbs, true)
}

func (s *Server) rdbHandler() rdb.Handler { return s.rdbHandlerInto(s.dbs) }

// rdbHandlerInto loads into dbs: the server's databases, or a replica's
// staging databases during a full sync (replication_replica.go).
func (s *Server) rdbHandlerInto(dbs []*keyspace.DB) rdb.Handler {
	now := time.Now().UnixMilli()
	hl := s.hashLimits()
	il := s.intsetLimit()
	zl := value.ZSetLimits{Entries: int(s.cfg.Int(DirZsetMaxListpackEntries)), Value: int(s.cfg.Int(DirZsetMaxListpackValue))}
	master := s.expireDeletes()
	loadDelay := s.cfg.Int(DirKeyLoadDelay)
	return rdb.Handler{
		SelectDB: func(n int) error {
			if n >= len(dbs) {
				return fmt.Errorf("node: the RDB file selects DB %d but only %d databases are configured", n, len(dbs))
			}
			return nil
		},
		Aux: func(key, val []byte) error {
			if s.repl != nil {
				s.repl.loadAux(key, val)
			}
			return nil
		},
		Function: s.rdbLoadFunction, // commands_function.go
		Key: func(en *rdb.Entry) error {
			if master && en.ExpireMs != 0 && en.ExpireMs < now {
				// Expired keys are dropped on masters, as Redis does (at
				// start-up their DELs go to the backlog).
				if s.repl != nil {
					s.repl.loadExpired(en.DB, en.Key)
				}
				return nil
			}
			db := dbs[en.DB]
			// The decoder returns a fresh buffer per key: keep it as the
			// key string without a second copy.
			key := ""
			if len(en.Key) > 0 {
				key = unsafe.String(&en.Key[0], len(en.Key))
			}
			if old := db.GetEntry(key); old != nil {
				return fmt.Errorf("node: duplicate key %q in DB %d", key, en.DB)
			}
			e := &keyspace.Entry{Expire: en.ExpireMs}
			if err := fillEntry(e, en.Value, hl, il, zl); err != nil {
				return err
			}
			switch {
			case en.Freq >= 0:
				e.LRU = uint32(en.Freq)
			case en.Idle >= 0:
				e.LRU = lruClock() - uint32(en.Idle)
			default:
				e.LRU = lruClock()
			}
			db.Add(key, e)
			if loadDelay != 0 {
				debugDelay(loadDelay) // key-load-delay (tests)
			}
			return nil
		},
	}
}

// fillEntry sets e's value from a decoded RDB value.
func fillEntry(e *keyspace.Entry, v *rdb.Value, hl value.HashLimits, il int, zl value.ZSetLimits) error {
	switch v.Kind {
	case rdb.KindString:
		e.Str = v.Str
		if e.Str == nil {
			e.Str = []byte{}
		}
	case rdb.KindList:
		l := value.NewList()
		for _, el := range v.Elems {
			l.PushBack(el)
		}
		e.Obj = l
	case rdb.KindSet:
		st := value.NewSet()
		for _, el := range v.Elems {
			st.AddB(el, il)
		}
		e.Obj = st
	case rdb.KindZSet:
		z := value.NewZSet()
		for _, m := range v.ZSet {
			z.Set(string(m.Member), m.Score, zl)
		}
		e.Obj = z
	case rdb.KindHash:
		h := value.NewHash()
		for _, f := range v.Hash {
			h.SetB(f.Field, f.Value, hl)
		}
		e.Obj = h
	default:
		return fmt.Errorf("node: unknown value kind %d", v.Kind)
	}
	if tv, ok := e.Obj.(value.Value); ok && tv.Length() == 0 {
		return fmt.Errorf("node: empty %s value in RDB", tv.TypeName())
	}
	return nil
}

// ---- saving ------------------------------------------------------------

// saveRDB writes a snapshot to dir/dbfilename through a temporary file,
// fsyncs and renames it. It is the work of SAVE and BGSAVE.
func (p *persistence) saveRDB(sn *snapshot) error {
	path := p.rdbPath()
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf("temp-%d-%d.rdb", os.Getpid(), time.Now().UnixNano()))
	err := writeFileSync(tmp, p.srv.cfg.Bool(DirRDBSaveIncrementalFsync), sn.writeTo)
	if err == nil {
		err = p.renameSnapshot(sn, tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("node: saving %s: %w", path, err)
	}
	return nil
}

// renameSnapshot moves a written snapshot into place unless a newer
// snapshot was already renamed there (a SAVE that ran while a BGSAVE was
// writing): then the older file is dropped, and the save still counts as
// done, its data being older than what is on disk.
func (p *persistence) renameSnapshot(sn *snapshot, tmp, path string) error {
	p.renameMu.Lock()
	defer p.renameMu.Unlock()
	if p.renamed[path] > sn.seq {
		return os.Remove(tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if p.renamed == nil {
		p.renamed = make(map[string]int64)
	}
	p.renamed[path] = sn.seq
	syncDir(filepath.Dir(path))
	return nil
}

// writeFileSync creates path, fills it with write and fsyncs it. With
// autoSync the file is pushed to disk every autoSyncBytes as it is
// written (autoSyncFile), and written in pieces of at most 64 kB (the
// encoder's), so no single system call copies more.
func writeFileSync(path string, autoSync bool, write func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	var bw *bufio.Writer
	if autoSync {
		bw = bufio.NewWriterSize(&autoSyncFile{f: f}, 64<<10)
	} else {
		bw = bufio.NewWriterSize(f, 1<<20)
	}
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// save runs a foreground save (SAVE, SHUTDOWN, DEBUG RELOAD). The caller
// must not hold shard locks.
func (p *persistence) save() error {
	p.saveMu.Lock()
	defer p.saveMu.Unlock()
	return p.saveOnce()
}

// saveHeld is SAVE (and DEBUG RELOAD's save): every shard lock is held by
// the caller (flagLockAll, also inside EXEC), so the whole dataset is
// copied and written while clients wait, as Redis's SAVE blocks the
// server. It does not take saveMu: a BGSAVE writer holding it may be
// waiting for one of our shard locks.
func (p *persistence) saveHeld() error {
	s := p.srv
	sn := p.openLocked()
	sn.CopyAllLocked()
	return p.writeSave(sn, s.dirty.Load())
}

func (p *persistence) saveOnce() error {
	s := p.srv
	s.LockAll()
	sn := p.openLocked()
	dirty := s.dirty.Load()
	s.UnlockAll()
	return p.writeSave(sn, dirty)
}

// writeSave writes an opened snapshot to dump.rdb (SAVE, saves on
// shutdown) and, on success, subtracts the dirty count it covers.
func (p *persistence) writeSave(sn *snapshot, dirty int64) error {
	s := p.srv
	p.lastSaveTry.Store(time.Now().Unix())
	if err := p.saveRDB(sn); err != nil {
		s.log.Warn("error saving DB on disk", "err", err)
		return err
	}
	s.dirty.Add(-dirty)
	s.lastSave.Store(time.Now().Unix())
	p.savesDone.Add(1)
	s.log.Info("DB saved on disk")
	return nil
}

// bgsave starts a background save; it reports false when one is running.
func (p *persistence) bgsave() bool {
	s := p.srv
	s.LockAll()
	defer s.UnlockAll()
	return p.bgsaveLocked(false)
}

// bgsaveLocked is bgsave with every shard lock held by the caller (BGSAVE
// runs with flagLockAll, also inside EXEC).
//
// Inside EXEC the block's later commands change shards without taking
// locks again (so without snapGuard): copyAll copies everything now, which
// puts the snapshot exactly at BGSAVE's place in the block, as Redis's
// fork does.
func (p *persistence) bgsaveLocked(copyAll bool) bool {
	if !p.bgInProgress.CompareAndSwap(false, true) {
		return false
	}
	p.bgScheduled.Store(false)
	start := time.Now()
	p.bgStart.Store(start.UnixMilli())
	s := p.srv
	sn := p.openLocked()
	sn.Background = true
	if copyAll {
		sn.CopyAllLocked()
	}
	dirty := s.dirty.Load()
	s.log.Info("background saving started")
	go func() {
		p.saveMu.Lock()
		err := p.saveRDB(sn)
		p.saveMu.Unlock()
		p.lastSaveTry.Store(time.Now().Unix())
		p.lastBgTimeSec.Store(int64(time.Since(start).Seconds()))
		if err != nil {
			p.lastBgOK.Store(false)
			s.log.Warn("background saving error", "err", err)
		} else {
			p.lastBgOK.Store(true)
			s.dirty.Add(-dirty)
			s.lastSave.Store(time.Now().Unix())
			p.savesDone.Add(1)
			s.log.Info("background saving terminated with success")
		}
		p.bgInProgress.Store(false)
	}()
	return true
}

// cron applies the save rules and the scheduled BGSAVE, and drives the
// AOF's periodic work, until shutdown.
func (p *persistence) cron() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.srv.shutdownC:
			return
		case now := <-t.C:
			p.saveCron(now)
			p.aof.cron(now)
		}
	}
}

func (p *persistence) saveCron(now time.Time) {
	s := p.srv
	if p.bgInProgress.Load() || p.aof.rewriting.Load() {
		return
	}
	if p.bgScheduled.Load() {
		p.bgsave()
		return
	}
	rules := strings.Fields(s.cfg.Get(DirSave))
	dirty := s.dirty.Load()
	if dirty == 0 {
		return
	}
	since := now.Unix() - s.lastSave.Load()
	for i := 0; i+1 < len(rules); i += 2 {
		secs, _ := strconv.ParseInt(rules[i], 10, 64)
		changes, _ := strconv.ParseInt(rules[i+1], 10, 64)
		// After a failed save Redis waits 5 seconds before retrying.
		if dirty >= changes && since >= secs && (p.lastBgOK.Load() || now.Unix()-p.lastSaveTry.Load() > 5) {
			s.log.Info("saving: changes reached the save rule", "changes", changes, "seconds", secs)
			p.bgsave()
			return
		}
	}
}

// onShutdown flushes the AOF and saves when save rules are configured (or
// SHUTDOWN SAVE was given), as Redis's finishShutdown does. When the save
// fails and the shutdown is not forced, the AOF is left running and the
// error cancels the shutdown (Server.Shutdown): the server keeps serving.
func (p *persistence) onShutdown(ctx context.Context) error {
	s := p.srv
	o := ShutdownOptionsFrom(ctx)
	if p.aof.enabled.Load() {
		for p.aof.rewriting.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		s.log.Info("Calling fsync() on the AOF file.")
		if err := p.aof.fsyncNow(); err != nil {
			s.log.Warn("Fail to fsync the AOF file", "err", err)
		}
	}
	// A dataset being loaded is never saved (it would be partial).
	if !s.loading.Load() && (o.Save || (!o.NoSave && s.cfg.Get(DirSave) != "")) {
		s.log.Info("Saving the final RDB snapshot before exiting.")
		for p.bgInProgress.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if err := p.save(); err != nil {
			if !o.Force {
				s.log.Warn("Error trying to save the DB, can't exit.")
				return err
			}
			s.log.Warn("Error trying to save the DB. Exit anyway.")
		}
	}
	p.aof.stop()
	return nil
}

// persistRefused is Redis's MISCONF: with stop-writes-on-bgsave-error and
// save rules, writes are refused after a failed background save; with the
// AOF on, after a failed AOF write.
func (s *Server) persistRefused() string {
	p := s.persist
	if p == nil {
		return ""
	}
	if !p.lastBgOK.Load() && s.hot().stopWritesOnBgsaveErr && s.hot().saveRules {
		return "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."
	}
	if e := p.aof.lastErr.Load(); e != nil && p.aof.enabled.Load() {
		return "MISCONF Errors writing to the AOF file: " + *e
	}
	return ""
}

// ---- commands ----------------------------------------------------------

func registerPersistenceCommands(t *commandTable) {
	t.add(&command{name: "save", arity: 1, flags: flagAdmin | flagNoScript | flagNoAsyncLoading | flagLockAll | flagNoMulti, fn: cmdSave, group: "server", since: "1.0.0"})
	t.add(&command{name: "bgsave", arity: -1, flags: flagAdmin | flagNoScript | flagNoAsyncLoading | flagLockAll, fn: cmdBgsave, group: "server", since: "1.0.0"})
	t.add(&command{name: "lastsave", arity: 1, flags: flagLoading | flagStale | flagFast, fn: cmdLastSave, group: "server", since: "1.0.0"})
	t.add(&command{name: "bgrewriteaof", arity: 1, flags: flagAdmin | flagNoScript | flagNoAsyncLoading, fn: cmdBgRewriteAOF, group: "server", since: "1.0.0"})
}

// flagNoAsyncLoading is a documentation marker (Redis's no-async-loading).
const flagNoAsyncLoading cmdFlag = 0

// SAVE
func cmdSave(c *Client, args [][]byte) {
	p := c.srv.persist
	if p.bgInProgress.Load() {
		c.addError("ERR Background save already in progress")
		return
	}
	if err := p.saveHeld(); err != nil {
		c.addError("ERR " + err.Error())
		return
	}
	c.addOK()
}

// BGSAVE [SCHEDULE]
func cmdBgsave(c *Client, args [][]byte) {
	p := c.srv.persist
	schedule := false
	if len(args) > 1 {
		if len(args) == 2 && eqFold(args[1], "schedule") {
			schedule = true
		} else {
			c.addError(errSyntax)
			return
		}
	}
	if p.bgInProgress.Load() {
		if schedule {
			p.bgScheduled.Store(true)
			c.addSimple("Background saving scheduled")
			return
		}
		c.addError("ERR Background save already in progress")
		return
	}
	if p.aof.rewriting.Load() {
		if schedule {
			p.bgScheduled.Store(true)
			c.addSimple("Background saving scheduled")
			return
		}
		c.addError("ERR An AOF log rewriting in progress: can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
		return
	}
	if !p.bgsaveLocked(c.inExec) {
		c.addError("ERR Background save already in progress")
		return
	}
	c.addSimple("Background saving started")
}

// LASTSAVE
func cmdLastSave(c *Client, args [][]byte) { c.addInt(c.srv.lastSave.Load()) }

// persistenceInfo writes INFO's persistence section fields.
func (s *Server) persistenceInfo(b *strings.Builder) {
	p := s.persist
	if p == nil {
		return
	}
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
	a := p.aof
	fmt.Fprintf(b, "loading:%d\r\n", boolInt(s.loading.Load()))
	fmt.Fprintf(b, "async_loading:0\r\n")
	fmt.Fprintf(b, "current_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n")
	fmt.Fprintf(b, "rdb_changes_since_last_save:%d\r\n", s.dirty.Load())
	fmt.Fprintf(b, "rdb_bgsave_in_progress:%d\r\n", boolInt(bg))
	fmt.Fprintf(b, "rdb_last_save_time:%d\r\n", s.lastSave.Load())
	fmt.Fprintf(b, "rdb_last_bgsave_status:%s\r\n", st)
	fmt.Fprintf(b, "rdb_last_bgsave_time_sec:%d\r\n", lastBgTime)
	fmt.Fprintf(b, "rdb_current_bgsave_time_sec:%d\r\n", cur)
	fmt.Fprintf(b, "rdb_saves:%d\r\n", p.savesDone.Load())
	fmt.Fprintf(b, "rdb_last_cow_size:0\r\nrdb_last_load_keys_expired:%d\r\nrdb_last_load_keys_loaded:%d\r\n", p.srv.repl.loadExpiredKeys.Load(), p.loadedKeys.Load())
	a.info(b)
	fmt.Fprintf(b, "module_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n")
}
