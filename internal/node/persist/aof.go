package persist

// The append-only file, in Redis 7's multi-part layout: a directory
// (appenddirname) holding a manifest (<appendfilename>.manifest), one base
// file (an RDB preamble <appendfilename>.<n>.base.rdb, or commands in
// <appendfilename>.<n>.base.aof) and incremental files
// (<appendfilename>.<n>.incr.aof) with the writes since the base.
//
// The AOF is a Propagator: it receives every write in execution order,
// with the written keys' locks held, and write(2)s it to the current
// incremental file at once, so a killed process loses nothing the kernel
// has. Durability then depends on appendfsync (docs/PERSISTENCE.md):
//   - always: Propagate returns only once the data is fsynced (group
//     commit: concurrent writers share one fsync). Propagate runs before
//     the command's reply is queued, so no client is told OK before its
//     write is on disk.
//   - everysec: a background fsync every second.
//   - no: the kernel decides.

import (
	"bufio"
	"bytes"
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

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/stream"
	"github.com/shardis/shardis/internal/rdb"
)

// AOF is the append-only file: a Propagator of the server's writes, its
// rewrite and its loader.
type AOF struct {
	p *Persistence

	// mu guards the file fields and serialises appends.
	mu       sync.Mutex
	enabled  atomic.Bool
	file     *os.File
	lastDB   int
	written  int64 // bytes appended to the current incr file
	baseSize int64
	incrSize int64 // sum of incr files' sizes, current included
	m        manifest

	// syncMu serialises fsyncs; synced is how much of the current file
	// (by written offset, per generation) is known durable.
	syncMu  sync.Mutex
	synced  atomic.Int64
	gen     atomic.Int64 // bumps when the incr file changes
	lastErr atomic.Pointer[string]

	rewriting       atomic.Bool
	rewriteSched    atomic.Bool
	writingBase     atomic.Bool
	lastRewriteOK   atomic.Bool
	lastRewriteSec  atomic.Int64
	rewriteStart    atomic.Int64
	rewrites        atomic.Int64
	rewriteBaseSize atomic.Int64 // aof size after the last rewrite
	lastFsync       time.Time
	delayedFsync    atomic.Int64
}

// manifest lists the AOF's files.
type manifest struct {
	base    string
	baseSeq int
	incr    []string
	incrSeq []int
	history []string
}

func newAOF(p *Persistence) *AOF {
	a := &AOF{p: p, lastDB: -1}
	a.lastRewriteOK.Store(true)
	return a
}

func (a *AOF) dir() string {
	st := a.p.h.Settings()
	return filepath.Join(st.Dir, st.AppendDirname)
}

func (a *AOF) manifestName() string { return a.p.h.Settings().AppendFilename + ".manifest" }

func (m *manifest) render() []byte {
	var b bytes.Buffer
	if m.base != "" {
		fmt.Fprintf(&b, "file %s seq %d type b\n", m.base, m.baseSeq)
	}
	for _, h := range m.history {
		fmt.Fprintf(&b, "file %s seq 0 type h\n", h)
	}
	for i, f := range m.incr {
		fmt.Fprintf(&b, "file %s seq %d type i\n", f, m.incrSeq[i])
	}
	return b.Bytes()
}

// parseManifest reads a manifest file, as Redis's aofLoadManifestFromFile.
func parseManifest(data []byte, name string) (manifest, error) {
	var m manifest
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		kv := map[string]string{}
		for j := 0; j+1 < len(f); j += 2 {
			kv[f[j]] = f[j+1]
		}
		file, typ := kv["file"], kv["type"]
		seq, err := strconv.Atoi(kv["seq"])
		if file == "" || typ == "" || err != nil || len(f)%2 != 0 {
			return m, fmt.Errorf("persist: invalid AOF manifest %s line %d: %q", name, i+1, line)
		}
		if strings.Contains(file, "/") {
			return m, fmt.Errorf("persist: invalid AOF manifest %s line %d: file name with a path", name, i+1)
		}
		switch typ {
		case "b":
			if m.base != "" {
				return m, fmt.Errorf("persist: invalid AOF manifest %s: more than one base file", name)
			}
			m.base, m.baseSeq = file, seq
		case "h":
			m.history = append(m.history, file)
		case "i":
			if n := len(m.incrSeq); n > 0 && seq <= m.incrSeq[n-1] {
				return m, fmt.Errorf("persist: invalid AOF manifest %s: incr files out of order", name)
			}
			m.incr = append(m.incr, file)
			m.incrSeq = append(m.incrSeq, seq)
		default:
			return m, fmt.Errorf("persist: invalid AOF manifest %s line %d: unknown type %q", name, i+1, typ)
		}
	}
	if m.base == "" && len(m.incr) == 0 {
		return m, fmt.Errorf("persist: invalid AOF manifest %s: no files", name)
	}
	return m, nil
}

// writeManifest replaces the manifest atomically.
func (a *AOF) writeManifest(m manifest) error {
	dir := a.dir()
	tmp := filepath.Join(dir, "temp-"+a.manifestName())
	if err := writeFileSync(tmp, false, func(w io.Writer) error { _, err := w.Write(m.render()); return err }); err != nil {
		return fmt.Errorf("persist: writing AOF manifest: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, a.manifestName())); err != nil {
		return fmt.Errorf("persist: writing AOF manifest: %w", err)
	}
	syncDir(dir)
	return nil
}

// ---- propagation -------------------------------------------------------

// Propagate appends a write to the AOF (see the file comment).
func (a *AOF) Propagate(db int, cmds [][][]byte) {
	if !a.enabled.Load() {
		return
	}
	if len(cmds) == 1 && len(cmds[0]) > 0 && (equalFold(cmds[0][0], "publish") || equalFold(cmds[0][0], "spublish")) {
		return // PUBLISH goes to replicas only
	}
	var buf []byte
	a.mu.Lock()
	if a.file == nil {
		a.mu.Unlock()
		return
	}
	if db != a.lastDB {
		buf = AppendCommand(buf, []byte("SELECT"), []byte(strconv.Itoa(db)))
		a.lastDB = db
	}
	// Several commands form one atomic unit: wrap them in MULTI/EXEC
	// unless they already are (EXEC propagates its own block).
	multi := len(cmds) > 1 && !equalFold(cmds[0][0], "multi")
	if multi {
		buf = AppendCommand(buf, []byte("MULTI"))
	}
	for _, c := range cmds {
		buf = AppendCommand(buf, c...)
	}
	if multi {
		buf = AppendCommand(buf, []byte("EXEC"))
	}
	f := a.file
	n, err := f.Write(buf)
	a.written += int64(n)
	a.incrSize += int64(n)
	pos, gen := a.written, a.gen.Load()
	a.mu.Unlock()
	if err != nil {
		msg := err.Error()
		a.lastErr.Store(&msg)
		a.p.log.Warn("error writing to the AOF", "err", err)
		return
	}
	if a.lastErr.Load() != nil {
		a.lastErr.Store(nil)
	}
	if a.p.h.Settings().AppendFsync == "always" {
		a.syncTo(f, gen, pos)
	}
}

// syncTo returns once the first pos bytes of file generation gen are
// fsynced. Concurrent callers share fsyncs (group commit).
func (a *AOF) syncTo(f *os.File, gen, pos int64) {
	if a.gen.Load() == gen && a.synced.Load() >= pos {
		return
	}
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	if a.gen.Load() != gen {
		// The file was switched by a rewrite, which fsyncs the old file
		// before closing it.
		return
	}
	if a.synced.Load() >= pos {
		return
	}
	a.mu.Lock()
	upTo := a.written
	a.mu.Unlock()
	if err := f.Sync(); err != nil {
		msg := err.Error()
		a.lastErr.Store(&msg)
		a.p.log.Warn("AOF fsync failed", "err", err)
		return
	}
	a.synced.Store(upTo)
}

// appendCommand encodes a command as a RESP multibulk.
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// FsyncNow fsyncs the current incr file (everysec, shutdown, DEBUG
// LOADAOF).
func (a *AOF) FsyncNow() error {
	a.mu.Lock()
	f, upTo, gen := a.file, a.written, a.gen.Load()
	a.mu.Unlock()
	if f == nil {
		return nil
	}
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	if err := f.Sync(); err != nil {
		return err
	}
	if a.gen.Load() == gen {
		a.synced.Store(upTo)
	}
	return nil
}

// ---- start-up and switching ----------------------------------------------

// start turns the AOF on at start-up when appendonly is yes: the dataset
// was loaded from it (or is empty), and a fresh incr file takes new writes;
// with no base yet, one is written first, as Redis does.
func (a *AOF) start() error {
	if !a.p.h.Settings().AppendOnly {
		return nil
	}
	if a.m.base == "" && len(a.m.incr) == 0 {
		return a.rewrite(true)
	}
	return a.openIncr(false)
}

// openIncr opens the manifest's last incr file for appending, or a new
// one (rotate), and enables propagation.
func (a *AOF) openIncr(rotate bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.openIncrLocked(rotate)
}

func (a *AOF) openIncrLocked(rotate bool) error {
	dir := a.dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("persist: AOF directory: %w", err)
	}
	m := a.m
	if rotate || len(m.incr) == 0 {
		seq := 1
		if n := len(m.incrSeq); n > 0 {
			seq = m.incrSeq[n-1] + 1
		}
		name := fmt.Sprintf("%s.%d.incr.aof", a.p.h.Settings().AppendFilename, seq)
		m.incr = append(append([]string(nil), m.incr...), name)
		m.incrSeq = append(append([]int(nil), m.incrSeq...), seq)
	}
	name := m.incr[len(m.incr)-1]
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("persist: opening AOF %s: %w", name, err)
	}
	st, _ := f.Stat()
	if err := a.writeManifest(m); err != nil {
		f.Close()
		return err
	}
	a.m = m
	old := a.file
	if old != nil {
		_ = old.Sync()
		old.Close()
	}
	a.file = f
	a.written = 0
	if st != nil {
		a.written = st.Size()
	}
	a.gen.Add(1)
	a.synced.Store(a.written)
	a.lastDB = -1
	a.enabled.Store(true)
	return nil
}

// Stop turns the AOF off (CONFIG SET appendonly no, shutdown).
func (a *AOF) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.enabled.Store(false)
	if a.file != nil {
		_ = a.file.Sync()
		a.file.Close()
		a.file = nil
	}
}

// cron fsyncs every second (everysec) and triggers automatic rewrites.
func (a *AOF) cron(now time.Time) {
	if a.rewriteSched.Load() && !a.rewriting.Load() && !a.p.bgInProgress.Load() {
		a.rewriteSched.Store(false)
		go a.rewrite(false)
	}
	if !a.enabled.Load() {
		return
	}
	if a.p.h.Settings().AppendFsync == "everysec" && now.Sub(a.lastFsync) >= time.Second {
		a.lastFsync = now
		go func() {
			if err := a.FsyncNow(); err != nil {
				a.p.log.Warn("AOF fsync failed", "err", err)
			}
		}()
	}
	st := a.p.h.Settings()
	perc := st.AutoAOFRewritePercentage
	if perc > 0 && !a.rewriting.Load() && !a.p.bgInProgress.Load() {
		a.mu.Lock()
		cur := a.baseSize + a.incrSize
		a.mu.Unlock()
		base := max(a.rewriteBaseSize.Load(), 1)
		if cur >= st.AutoAOFRewriteMinSize && (cur*100/base)-100 >= perc {
			a.p.log.Info("starting automatic rewriting of AOF", "growth_percent", (cur*100/base)-100)
			go a.rewrite(false)
		}
	}
}

// ---- rewrite ---------------------------------------------------------------

// rewrite writes a new base from a snapshot and makes a fresh incr file
// take the writes from the snapshot's instant on; then the manifest drops
// the old files. A rewrite that fails leaves the old files in place.
func (a *AOF) rewrite(enable bool) error {
	if !a.rewriting.CompareAndSwap(false, true) {
		return errors.New("persist: AOF rewrite already in progress")
	}
	return a.rewriteReserved(enable)
}

// rewriteReserved runs a rewrite the caller reserved by setting rewriting
// (so INFO shows it in progress from the moment BGREWRITEAOF answers).
func (a *AOF) rewriteReserved(enable bool) error {
	defer a.rewriting.Store(false)
	start := time.Now()
	a.rewriteStart.Store(start.UnixMilli())
	p := a.p
	st := p.h.Settings()
	if a.m.base == "" && len(a.m.incr) == 0 {
		// Switched on at run time: continue the sequence numbers of files
		// left by an earlier run, which become history.
		if data, err := os.ReadFile(filepath.Join(a.dir(), a.manifestName())); err == nil {
			if m, err := parseManifest(data, a.manifestName()); err == nil {
				a.m = m
			}
		}
	}
	if err := os.MkdirAll(a.dir(), 0o755); err != nil {
		a.lastRewriteOK.Store(false)
		return fmt.Errorf("persist: AOF directory: %w", err)
	}
	// Cut: with every shard locked no write is in flight, so the snapshot
	// and the switch to a new incr file happen at one instant.
	p.h.LockAll()
	a.writingBase.Store(true)
	sn := p.OpenLocked()
	a.writingBase.Store(false)
	a.mu.Lock()
	var err error
	if a.enabled.Load() || enable {
		err = a.openIncrLocked(true)
	}
	// With the AOF off the rewrite leaves a base alone (as Redis 7).
	var newIncr []string
	var newIncrSeq []int
	if err == nil && a.enabled.Load() {
		newIncr = a.m.incr[len(a.m.incr)-1:]
		newIncrSeq = a.m.incrSeq[len(a.m.incrSeq)-1:]
	}
	a.mu.Unlock()
	p.h.UnlockAll()
	if err != nil {
		sn.Close()
		a.lastRewriteOK.Store(false)
		return err
	}
	baseSeq := a.m.baseSeq + 1
	ext := "rdb"
	if !st.AOFUseRDBPreamble {
		ext = "aof"
	}
	baseName := fmt.Sprintf("%s.%d.base.%s", st.AppendFilename, baseSeq, ext)
	basePath := filepath.Join(a.dir(), baseName)
	tmp := filepath.Join(a.dir(), fmt.Sprintf("temp-rewriteaof-%d.aof", time.Now().UnixNano()))
	autoSync := st.AOFRewriteIncrementalFsync
	if ext == "rdb" {
		err = writeFileSync(tmp, autoSync, sn.Encode)
	} else {
		err = writeFileSync(tmp, autoSync, sn.writeCommands)
	}
	if err == nil {
		err = os.Rename(tmp, basePath)
	}
	if err != nil {
		os.Remove(tmp)
		a.lastRewriteOK.Store(false)
		a.p.log.Warn("AOF rewrite failed", "err", err)
		return fmt.Errorf("persist: AOF rewrite: %w", err)
	}
	fi, _ := os.Stat(basePath)
	a.mu.Lock()
	old := a.m
	m := manifest{base: baseName, baseSeq: baseSeq, incr: append([]string(nil), newIncr...), incrSeq: append([]int(nil), newIncrSeq...)}
	// Writes may have rotated nothing else meanwhile: newIncr is current.
	if err := a.writeManifest(m); err != nil {
		a.mu.Unlock()
		a.lastRewriteOK.Store(false)
		return err
	}
	a.m = m
	if fi != nil {
		a.baseSize = fi.Size()
	}
	a.incrSize = a.written
	a.rewriteBaseSize.Store(a.baseSize + a.incrSize)
	a.mu.Unlock()
	// The old base and incr files are history now: delete them.
	for _, f := range append(append([]string{old.base}, old.incr...), old.history...) {
		if f != "" && f != baseName && !contains(newIncr, f) {
			os.Remove(filepath.Join(a.dir(), f))
		}
	}
	a.lastRewriteOK.Store(true)
	a.rewrites.Add(1)
	a.lastRewriteSec.Store(int64(time.Since(start).Seconds()))
	a.p.log.Info("background AOF rewrite finished successfully")
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeCommands writes the snapshot as commands (aof-use-rdb-preamble no).
func (sn *Snapshot) writeCommands(w io.Writer) error {
	if !sn.Claim() {
		return errors.New("persist: snapshot expired before it was written")
	}
	defer sn.Close()
	bw := bufio.NewWriterSize(w, 64<<10)
	var val rdb.Value
	var b []byte
	for _, code := range sn.funcs { // as Redis's rewriteFunctions
		b = AppendCommand(b[:0], []byte("FUNCTION"), []byte("LOAD"), code)
		bw.Write(b)
	}
	for i, db := range sn.dbs {
		selected := false
		for j := range db.Shards {
			err := sn.ForEachChunk(&db.Shards[j], func(buf *keyspace.SnapBuf) error {
				var entry keyspace.SnapEntry
				se := &entry
				for k := range buf.Len() {
					buf.Entry(k, se)
					if !selected {
						b = AppendCommand(b[:0], []byte("SELECT"), []byte(strconv.Itoa(i)))
						bw.Write(b)
						selected = true
					}
					key := sbytes(se.Key)
					b = b[:0]
					if st, ok := se.Obj.(*stream.Stream); ok {
						val.Kind = rdb.KindStream
						b = appendStreamCommands(b, key, st)
					} else {
						ToRDBValue(se, &val)
					}
					switch val.Kind {
					case rdb.KindString:
						b = AppendCommand(b, []byte("SET"), key, val.Str)
					case rdb.KindList, rdb.KindSet:
						name := "RPUSH"
						if val.Kind == rdb.KindSet {
							name = "SADD"
						}
						for x := 0; x < len(val.Elems); x += 64 {
							args := [][]byte{[]byte(name), key}
							args = append(args, val.Elems[x:min(x+64, len(val.Elems))]...)
							b = AppendCommand(b, args...)
						}
					case rdb.KindZSet:
						for x := 0; x < len(val.ZSet); x += 64 {
							args := [][]byte{[]byte("ZADD"), key}
							for _, m := range val.ZSet[x:min(x+64, len(val.ZSet))] {
								args = append(args, []byte(strconv.FormatFloat(m.Score, 'g', 17, 64)), m.Member)
							}
							b = AppendCommand(b, args...)
						}
					case rdb.KindHash:
						for x := 0; x < len(val.Hash); x += 64 {
							args := [][]byte{[]byte("HSET"), key}
							for _, f := range val.Hash[x:min(x+64, len(val.Hash))] {
								args = append(args, f.Field, f.Value)
							}
							b = AppendCommand(b, args...)
						}
					}
					if se.Expire != 0 {
						b = AppendCommand(b, []byte("PEXPIREAT"), key, []byte(strconv.FormatInt(se.Expire, 10)))
					}
					if _, err := bw.Write(b); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

func equalFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// ---- INFO ----------------------------------------------------------------

func (a *AOF) info(b *strings.Builder) {
	on := a.enabled.Load()
	cur := int64(-1)
	if a.rewriting.Load() {
		cur = (time.Now().UnixMilli() - a.rewriteStart.Load()) / 1000
	}
	st := "ok"
	if !a.lastRewriteOK.Load() {
		st = "err"
	}
	ws := "ok"
	if a.lastErr.Load() != nil {
		ws = "err"
	}
	last := a.lastRewriteSec.Load()
	if a.rewrites.Load() == 0 {
		last = -1
	}
	fmt.Fprintf(b, "aof_enabled:%d\r\n", boolInt(on))
	fmt.Fprintf(b, "aof_rewrite_in_progress:%d\r\n", boolInt(a.rewriting.Load()))
	fmt.Fprintf(b, "aof_rewrite_scheduled:%d\r\n", boolInt(a.rewriteSched.Load()))
	fmt.Fprintf(b, "aof_last_rewrite_time_sec:%d\r\n", last)
	fmt.Fprintf(b, "aof_current_rewrite_time_sec:%d\r\n", cur)
	fmt.Fprintf(b, "aof_last_bgrewrite_status:%s\r\n", st)
	fmt.Fprintf(b, "aof_rewrites:%d\r\n", a.rewrites.Load())
	fmt.Fprintf(b, "aof_rewrites_consecutive_failures:0\r\n")
	fmt.Fprintf(b, "aof_last_write_status:%s\r\n", ws)
	fmt.Fprintf(b, "aof_last_cow_size:0\r\n")
	if on {
		a.mu.Lock()
		cs, bs := a.baseSize+a.incrSize, a.baseSize
		a.mu.Unlock()
		fmt.Fprintf(b, "aof_current_size:%d\r\naof_base_size:%d\r\naof_pending_rewrite:0\r\naof_buffer_length:0\r\naof_pending_bio_fsync:0\r\naof_delayed_fsync:%d\r\n", cs, bs, a.delayedFsync.Load())
	}
}

// Enabled reports whether writes are appended (appendonly yes, running).
func (a *AOF) Enabled() bool { return a.enabled.Load() }

// Rewriting reports whether a rewrite is running.
func (a *AOF) Rewriting() bool { return a.rewriting.Load() }

// Rewrites counts the rewrites done.
func (a *AOF) Rewrites() int64 { return a.rewrites.Load() }

// LastWriteError is the error of the last failed append, or "" once an
// append succeeded again (Redis's MISCONF).
func (a *AOF) LastWriteError() string {
	if e := a.lastErr.Load(); e != nil {
		return *e
	}
	return ""
}

// BackgroundRewrite is BGREWRITEAOF: it starts a rewrite, schedules one
// while a BGSAVE runs, or reports that one is running; the reply is
// Redis's status text or error.
func (a *AOF) BackgroundRewrite() (status string, errText string) {
	if a.rewriting.Load() {
		return "", "ERR Background append only file rewriting already in progress"
	}
	if a.p.bgInProgress.Load() {
		a.rewriteSched.Store(true)
		return "Background append only file rewriting scheduled", ""
	}
	if !a.rewriting.CompareAndSwap(false, true) {
		return "", "ERR Background append only file rewriting already in progress"
	}
	go func() {
		if err := a.rewriteReserved(false); err != nil {
			a.p.log.Warn("BGREWRITEAOF failed", "err", err)
		}
	}()
	return "Background append only file rewriting started", ""
}

// SetAppendOnly applies CONFIG SET appendonly: switching the AOF on
// writes a base from the current dataset, then appends (as Redis);
// switching it off stops appending.
func (a *AOF) SetAppendOnly(on bool) {
	if on && !a.enabled.Load() {
		go func() {
			for a.rewriting.Load() {
				time.Sleep(10 * time.Millisecond)
			}
			if err := a.rewrite(true); err != nil {
				a.p.log.Warn("enabling the AOF failed", "err", err)
			}
		}()
	} else if !on {
		a.Stop()
	}
}
