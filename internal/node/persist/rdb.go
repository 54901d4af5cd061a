package persist

// RDB files: the writer on top of a snapshot, the loader, SAVE and
// BGSAVE's work.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/stream"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
)

func (p *Persistence) auxFields(now time.Time) [][2]string {
	aux := [][2]string{
		{"redis-ver", p.version},
		{"redis-bits", strconv.Itoa(int(unsafe.Sizeof(uintptr(0)) * 8))},
		{"ctime", strconv.FormatInt(now.Unix(), 10)},
		{"used-mem", strconv.FormatInt(p.h.UsedMemory(), 10)},
	}
	// Every shard lock is held, so no write is being fed: the offset is
	// exactly the snapshot's (replication_restore.go).
	aux = append(aux, p.h.RDBAux()...)
	base := "0"
	if p.aof.writingBase.Load() {
		base = "1"
	}
	return append(aux, [2]string{"aof-base", base})
}

// Encode writes the snapshot as an RDB stream and closes it.
func (sn *Snapshot) Encode(w io.Writer) error {
	if !sn.Claim() {
		return errors.New("persist: snapshot expired before it was written")
	}
	defer sn.Close()
	st := sn.p.h.Settings()
	enc := rdb.NewEncoder(w, rdb.Options{Compress: st.RDBCompression, Checksum: st.RDBChecksum, Limits: sn.limits})
	enc.Header()
	for _, a := range sn.aux {
		enc.Aux(a[0], a[1])
	}
	for _, code := range sn.funcs {
		enc.Function(code)
	}
	var val rdb.Value
	pace := sn.newPacer()
	keyDelay := st.RDBKeySaveDelay
	for i, db := range sn.dbs {
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
func (sn *Snapshot) encodeBuf(enc *rdb.Encoder, buf *keyspace.SnapBuf, val *rdb.Value, keyDelay int64, pace *savePacer) {
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
		ToRDBValue(&se, val)
		enc.Key(sbytes(se.Key), meta, val)
		if keyDelay != 0 {
			sn.p.h.KeyDelay(keyDelay) // rdb-key-save-delay (tests)
		}
		pace.step()
	}
}

// ToRDBValue converts a snapshot entry, reusing v's slices.
func ToRDBValue(se *keyspace.SnapEntry, v *rdb.Value) {
	v.Str, v.Elems, v.ZSet, v.Hash, v.Stream = nil, v.Elems[:0], v.ZSet[:0], v.Hash[:0], nil
	switch o := se.Obj.(type) {
	case *stream.Stream:
		v.Kind, v.Stream = rdb.KindStream, streamToRDB(o)
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
func (p *Persistence) WriteRDB(w io.Writer) error {
	p.h.LockAll()
	sn := p.OpenLocked()
	p.h.UnlockAll()
	return sn.Encode(w)
}

// ---- loading -----------------------------------------------------------

// LoadRDB replaces the dataset with the RDB stream r. The loading flag is
// set while it runs. On error the dataset is left empty: a node never
// serves a partial dataset from a broken file.
func (p *Persistence) LoadRDB(r io.Reader) error {
	h := p.h
	h.SetLoading(true)
	defer h.SetLoading(false)
	h.LockAll()
	defer h.UnlockAll()
	p.GuardAllLocked()
	for _, db := range h.DBs() {
		db.Flush()
	}
	// The dataset was just emptied: RESIZEDB hints size the shards, so a
	// load does not grow them step by step.
	err := p.LoadInto(r, h.DBs(), true)
	if err != nil {
		for _, db := range h.DBs() {
			db.Flush()
		}
	}
	p.loadedAt.Store(p.h.Now().Unix())
	return err
}

// LoadInto adds the keys of the RDB stream r to dbs: the server's
// databases with every shard lock held, or databases no one else uses (a
// replica's staging databases during a full sync). With presize, the
// RESIZEDB hints size the empty databases' shards up front, saving their
// rehashing as they grow.
func (p *Persistence) LoadInto(r io.Reader, dbs []*keyspace.DB, presize bool) error {
	h := p.Loader(dbs)
	if presize {
		cur := 0
		sel := h.SelectDB
		h.SelectDB = func(n int) error {
			cur = n
			if sel != nil {
				return sel(n)
			}
			return nil
		}
		h.ResizeDB = func(size, _ uint64) {
			if cur < len(dbs) && dbs[cur].Size() == 0 {
				dbs[cur].Presize(size)
			}
		}
	}
	_, err := rdb.Parse(r, h)
	return err
}

// Loader returns the decoder's handler that loads into dbs (see LoadInto
// for the locking).
func (p *Persistence) Loader(dbs []*keyspace.DB) rdb.Handler {
	host := p.h
	now := host.Now().UnixMilli()
	st := host.Settings()
	lim := st.Limits
	master := host.ExpireOnLoad()
	loadDelay := st.KeyLoadDelay
	return rdb.Handler{
		SelectDB: func(n int) error {
			if n >= len(dbs) {
				return fmt.Errorf("persist: the RDB file selects DB %d but only %d databases are configured", n, len(dbs))
			}
			return nil
		},
		Aux: func(key, val []byte) error {
			host.LoadAux(key, val)
			return nil
		},
		Function: host.LoadFunction,
		Key: func(en *rdb.Entry) error {
			if master && en.ExpireMs != 0 && en.ExpireMs < now {
				// Expired keys are dropped on masters, as Redis does (at
				// start-up their DELs go to the backlog).
				host.LoadExpired(en.DB, en.Key)
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
				return fmt.Errorf("persist: duplicate key %q in DB %d", key, en.DB)
			}
			e := &keyspace.Entry{Expire: en.ExpireMs}
			if err := FillEntry(e, en.Value, lim); err != nil {
				return err
			}
			switch {
			case en.Freq >= 0:
				e.LRU = uint32(en.Freq)
			case en.Idle >= 0:
				e.LRU = host.LRUClock() - uint32(en.Idle)
			default:
				e.LRU = host.LRUClock()
			}
			db.Add(key, e)
			if loadDelay != 0 {
				host.KeyDelay(loadDelay) // key-load-delay (tests)
			}
			return nil
		},
	}
}

// FillEntry sets e's value from a decoded RDB value, built with the
// encodings lim allows. An empty collection is an error (Redis refuses
// one in an RDB file or a RESTORE payload).
func FillEntry(e *keyspace.Entry, v *rdb.Value, lim Limits) error {
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
			st.AddB(el, lim.Intset)
		}
		e.Obj = st
	case rdb.KindZSet:
		z := value.NewZSet()
		for _, m := range v.ZSet {
			z.Set(string(m.Member), m.Score, lim.ZSet)
		}
		e.Obj = z
	case rdb.KindHash:
		h := value.NewHash()
		for _, f := range v.Hash {
			h.SetB(f.Field, f.Value, lim.Hash)
		}
		e.Obj = h
	case rdb.KindStream:
		st, err := streamFromRDB(v.Stream)
		if err != nil {
			return err
		}
		e.Obj = st
		return nil // an empty stream is a stream
	default:
		return fmt.Errorf("persist: unknown value kind %d", v.Kind)
	}
	if tv, ok := e.Obj.(value.Value); ok && tv.Length() == 0 {
		return fmt.Errorf("persist: empty %s value in RDB", tv.TypeName())
	}
	return nil
}

// ---- saving ------------------------------------------------------------

// saveRDB writes a snapshot to dir/dbfilename through a temporary file,
// fsyncs and renames it. It is the work of SAVE and BGSAVE.
func (p *Persistence) saveRDB(sn *Snapshot) error {
	path := p.RDBPath()
	tmp := filepath.Join(filepath.Dir(path), TempRDBPrefix()+fmt.Sprintf("%d.rdb", time.Now().UnixNano()))
	err := writeFileSync(tmp, p.h.Settings().RDBSaveIncrementalFsync, sn.Encode)
	if err == nil {
		err = p.renameSnapshot(sn, tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("persist: saving %s: %w", path, err)
	}
	return nil
}

// TempRDBPrefix is how the names of this process's temporary RDB files
// begin (the server removes leftovers at exit).
func TempRDBPrefix() string { return fmt.Sprintf("temp-%d-", os.Getpid()) }

// renameSnapshot moves a written snapshot into place unless a newer
// snapshot was already renamed there (a SAVE that ran while a BGSAVE was
// writing): then the older file is dropped, and the save still counts as
// done, its data being older than what is on disk.
func (p *Persistence) renameSnapshot(sn *Snapshot, tmp, path string) error {
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

// Save runs a foreground save (SHUTDOWN). The caller must not hold shard
// locks.
func (p *Persistence) Save() error {
	p.saveMu.Lock()
	defer p.saveMu.Unlock()
	p.h.LockAll()
	sn := p.OpenLocked()
	dirty := p.h.Dirty()
	p.h.UnlockAll()
	return p.writeSave(sn, dirty)
}

// SaveHeld is SAVE (and DEBUG RELOAD's save): every shard lock is held by
// the caller (also inside EXEC), so the whole dataset is copied and
// written while clients wait, as Redis's SAVE blocks the server. It does
// not take saveMu: a BGSAVE writer holding it may be waiting for one of
// the caller's shard locks.
func (p *Persistence) SaveHeld() error {
	sn := p.OpenLocked()
	sn.CopyAllLocked()
	return p.writeSave(sn, p.h.Dirty())
}

// writeSave writes an opened snapshot to dump.rdb (SAVE, saves on
// shutdown) and, on success, subtracts the dirty count it covers.
func (p *Persistence) writeSave(sn *Snapshot, dirty int64) error {
	p.lastSaveTry.Store(p.h.Now().Unix())
	if err := p.saveRDB(sn); err != nil {
		p.log.Warn("error saving DB on disk", "err", err)
		return err
	}
	p.h.Saved(dirty, p.h.Now().Unix())
	p.savesDone.Add(1)
	p.log.Info("DB saved on disk")
	return nil
}

// Bgsave starts a background save; it reports false when one is running.
func (p *Persistence) Bgsave() bool {
	p.h.LockAll()
	defer p.h.UnlockAll()
	return p.BgsaveLocked(false)
}

// BgsaveLocked is Bgsave with every shard lock held by the caller (BGSAVE
// runs with them all, also inside EXEC).
//
// Inside EXEC the block's later commands change shards without taking
// locks again (so without the snapshot guard): copyAll copies everything
// now, which puts the snapshot exactly at BGSAVE's place in the block, as
// Redis's fork does.
func (p *Persistence) BgsaveLocked(copyAll bool) bool {
	if !p.bgInProgress.CompareAndSwap(false, true) {
		return false
	}
	p.bgScheduled.Store(false)
	start := time.Now()
	p.bgStart.Store(start.UnixMilli())
	sn := p.OpenLocked()
	sn.Background = true
	if copyAll {
		sn.CopyAllLocked()
	}
	dirty := p.h.Dirty()
	p.log.Info("background saving started")
	go func() {
		p.saveMu.Lock()
		err := p.saveRDB(sn)
		p.saveMu.Unlock()
		p.lastSaveTry.Store(p.h.Now().Unix())
		p.lastBgTimeSec.Store(int64(time.Since(start).Seconds()))
		if err != nil {
			p.lastBgOK.Store(false)
			p.log.Warn("background saving error", "err", err)
		} else {
			p.lastBgOK.Store(true)
			p.h.Saved(dirty, p.h.Now().Unix())
			p.savesDone.Add(1)
			p.log.Info("background saving terminated with success")
		}
		p.bgInProgress.Store(false)
	}()
	return true
}

func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
