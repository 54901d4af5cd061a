package node

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
	"github.com/shardis/shardis/internal/rdb"
)

type aofState struct {
	srv *Server

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

func newAOFState(s *Server) *aofState {
	a := &aofState{srv: s, lastDB: -1}
	a.lastRewriteOK.Store(true)
	s.AddPropagator(a)
	return a
}

func (a *aofState) dir() string {
	return filepath.Join(a.srv.cfg.Get(DirDir), a.srv.cfg.Get(DirAppenddirname))
}

func (a *aofState) manifestName() string { return a.srv.cfg.Get(DirAppendfilename) + ".manifest" }

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
			return m, fmt.Errorf("node: invalid AOF manifest %s line %d: %q", name, i+1, line)
		}
		if strings.Contains(file, "/") {
			return m, fmt.Errorf("node: invalid AOF manifest %s line %d: file name with a path", name, i+1)
		}
		switch typ {
		case "b":
			if m.base != "" {
				return m, fmt.Errorf("node: invalid AOF manifest %s: more than one base file", name)
			}
			m.base, m.baseSeq = file, seq
		case "h":
			m.history = append(m.history, file)
		case "i":
			if n := len(m.incrSeq); n > 0 && seq <= m.incrSeq[n-1] {
				return m, fmt.Errorf("node: invalid AOF manifest %s: incr files out of order", name)
			}
			m.incr = append(m.incr, file)
			m.incrSeq = append(m.incrSeq, seq)
		default:
			return m, fmt.Errorf("node: invalid AOF manifest %s line %d: unknown type %q", name, i+1, typ)
		}
	}
	if m.base == "" && len(m.incr) == 0 {
		return m, fmt.Errorf("node: invalid AOF manifest %s: no files", name)
	}
	return m, nil
}

// writeManifest replaces the manifest atomically.
func (a *aofState) writeManifest(m manifest) error {
	dir := a.dir()
	tmp := filepath.Join(dir, "temp-"+a.manifestName())
	if err := writeFileSync(tmp, false, func(w io.Writer) error { _, err := w.Write(m.render()); return err }); err != nil {
		return fmt.Errorf("node: writing AOF manifest: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, a.manifestName())); err != nil {
		return fmt.Errorf("node: writing AOF manifest: %w", err)
	}
	syncDir(dir)
	return nil
}

// ---- propagation -------------------------------------------------------

// Propagate appends a write to the AOF (see the file comment).
func (a *aofState) Propagate(db int, cmds [][][]byte) {
	if !a.enabled.Load() {
		return
	}
	if len(cmds) == 1 && len(cmds[0]) > 0 && (eqFold(cmds[0][0], "publish") || eqFold(cmds[0][0], "spublish")) {
		return // PUBLISH goes to replicas only
	}
	var buf []byte
	a.mu.Lock()
	if a.file == nil {
		a.mu.Unlock()
		return
	}
	if db != a.lastDB {
		buf = appendCommand(buf, []byte("SELECT"), []byte(strconv.Itoa(db)))
		a.lastDB = db
	}
	// Several commands form one atomic unit: wrap them in MULTI/EXEC
	// unless they already are (EXEC propagates its own block).
	multi := len(cmds) > 1 && !eqFold(cmds[0][0], "multi")
	if multi {
		buf = appendCommand(buf, []byte("MULTI"))
	}
	for _, c := range cmds {
		buf = appendCommand(buf, c...)
	}
	if multi {
		buf = appendCommand(buf, []byte("EXEC"))
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
		a.srv.log.Warn("error writing to the AOF", "err", err)
		return
	}
	if a.lastErr.Load() != nil {
		a.lastErr.Store(nil)
	}
	if a.srv.cfg.Get(DirAppendfsync) == "always" {
		a.syncTo(f, gen, pos)
	}
}

// syncTo returns once the first pos bytes of file generation gen are
// fsynced. Concurrent callers share fsyncs (group commit).
func (a *aofState) syncTo(f *os.File, gen, pos int64) {
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
		a.srv.log.Warn("AOF fsync failed", "err", err)
		return
	}
	a.synced.Store(upTo)
}

// appendCommand encodes a command as a RESP multibulk.
func appendCommand(b []byte, args ...[]byte) []byte {
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

// fsyncNow fsyncs the current incr file (everysec, shutdown).
func (a *aofState) fsyncNow() error {
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
func (a *aofState) start() error {
	if !a.srv.cfg.Bool(DirAppendonly) {
		return nil
	}
	if a.m.base == "" && len(a.m.incr) == 0 {
		return a.rewrite(true)
	}
	return a.openIncr(false)
}

// openIncr opens the manifest's last incr file for appending, or a new
// one (rotate), and enables propagation.
func (a *aofState) openIncr(rotate bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.openIncrLocked(rotate)
}

func (a *aofState) openIncrLocked(rotate bool) error {
	dir := a.dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("node: AOF directory: %w", err)
	}
	m := a.m
	if rotate || len(m.incr) == 0 {
		seq := 1
		if n := len(m.incrSeq); n > 0 {
			seq = m.incrSeq[n-1] + 1
		}
		name := fmt.Sprintf("%s.%d.incr.aof", a.srv.cfg.Get(DirAppendfilename), seq)
		m.incr = append(append([]string(nil), m.incr...), name)
		m.incrSeq = append(append([]int(nil), m.incrSeq...), seq)
	}
	name := m.incr[len(m.incr)-1]
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("node: opening AOF %s: %w", name, err)
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

// stop turns the AOF off (CONFIG SET appendonly no).
func (a *aofState) stop() {
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
func (a *aofState) cron(now time.Time) {
	if a.rewriteSched.Load() && !a.rewriting.Load() && !a.srv.persist.bgInProgress.Load() {
		a.rewriteSched.Store(false)
		go a.rewrite(false)
	}
	if !a.enabled.Load() {
		return
	}
	if a.srv.cfg.Get(DirAppendfsync) == "everysec" && now.Sub(a.lastFsync) >= time.Second {
		a.lastFsync = now
		go func() {
			if err := a.fsyncNow(); err != nil {
				a.srv.log.Warn("AOF fsync failed", "err", err)
			}
		}()
	}
	perc := a.srv.cfg.Int(DirAutoAOFRewritePercentage)
	if perc > 0 && !a.rewriting.Load() && !a.srv.persist.bgInProgress.Load() {
		a.mu.Lock()
		cur := a.baseSize + a.incrSize
		a.mu.Unlock()
		base := max(a.rewriteBaseSize.Load(), 1)
		if cur >= a.srv.cfg.Int(DirAutoAOFRewriteMinSize) && (cur*100/base)-100 >= perc {
			a.srv.log.Info("starting automatic rewriting of AOF", "growth_percent", (cur*100/base)-100)
			go a.rewrite(false)
		}
	}
}

// ---- rewrite ---------------------------------------------------------------

// rewrite writes a new base from a snapshot and makes a fresh incr file
// take the writes from the snapshot's instant on; then the manifest drops
// the old files. A rewrite that fails leaves the old files in place.
func (a *aofState) rewrite(enable bool) error {
	if !a.rewriting.CompareAndSwap(false, true) {
		return errors.New("node: AOF rewrite already in progress")
	}
	return a.rewriteReserved(enable)
}

// rewriteReserved runs a rewrite the caller reserved by setting rewriting
// (so INFO shows it in progress from the moment BGREWRITEAOF answers).
func (a *aofState) rewriteReserved(enable bool) error {
	defer a.rewriting.Store(false)
	start := time.Now()
	a.rewriteStart.Store(start.UnixMilli())
	s := a.srv
	p := s.persist
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
		return fmt.Errorf("node: AOF directory: %w", err)
	}
	// Cut: with every shard locked no write is in flight, so the snapshot
	// and the switch to a new incr file happen at one instant.
	s.LockAll()
	a.writingBase.Store(true)
	sn := p.openLocked()
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
	s.UnlockAll()
	if err != nil {
		sn.close()
		a.lastRewriteOK.Store(false)
		return err
	}
	baseSeq := a.m.baseSeq + 1
	ext := "rdb"
	if !s.cfg.Bool(DirAOFUseRDBPreamble) {
		ext = "aof"
	}
	baseName := fmt.Sprintf("%s.%d.base.%s", s.cfg.Get(DirAppendfilename), baseSeq, ext)
	basePath := filepath.Join(a.dir(), baseName)
	tmp := filepath.Join(a.dir(), fmt.Sprintf("temp-rewriteaof-%d.aof", time.Now().UnixNano()))
	autoSync := s.cfg.Bool(DirAOFRewriteIncrementalFsync)
	if ext == "rdb" {
		err = writeFileSync(tmp, autoSync, sn.writeTo)
	} else {
		err = writeFileSync(tmp, autoSync, sn.writeCommands)
	}
	if err == nil {
		err = os.Rename(tmp, basePath)
	}
	if err != nil {
		os.Remove(tmp)
		a.lastRewriteOK.Store(false)
		s.log.Warn("AOF rewrite failed", "err", err)
		return fmt.Errorf("node: AOF rewrite: %w", err)
	}
	st, _ := os.Stat(basePath)
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
	if st != nil {
		a.baseSize = st.Size()
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
	s.log.Info("background AOF rewrite finished successfully")
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
func (sn *snapshot) writeCommands(w io.Writer) error {
	if !sn.started.CompareAndSwap(false, true) {
		return errors.New("node: snapshot expired before it was written")
	}
	defer sn.close()
	s := sn.p.srv
	bw := bufio.NewWriterSize(w, 64<<10)
	var val rdb.Value
	var b []byte
	b = s.aofWriteFunctions(bw, b) // commands_function.go
	for i, db := range s.dbs {
		selected := false
		for j := range db.Shards {
			err := sn.ForEachChunk(&db.Shards[j], func(buf *keyspace.SnapBuf) error {
				var entry keyspace.SnapEntry
				se := &entry
				for k := range buf.Len() {
					buf.Entry(k, se)
					if !selected {
						b = appendCommand(b[:0], []byte("SELECT"), []byte(strconv.Itoa(i)))
						bw.Write(b)
						selected = true
					}
					toRDBValue(se, &val)
					key := sbytes(se.Key)
					b = b[:0]
					switch val.Kind {
					case rdb.KindString:
						b = appendCommand(b, []byte("SET"), key, val.Str)
					case rdb.KindList, rdb.KindSet:
						name := "RPUSH"
						if val.Kind == rdb.KindSet {
							name = "SADD"
						}
						for x := 0; x < len(val.Elems); x += 64 {
							args := [][]byte{[]byte(name), key}
							args = append(args, val.Elems[x:min(x+64, len(val.Elems))]...)
							b = appendCommand(b, args...)
						}
					case rdb.KindZSet:
						for x := 0; x < len(val.ZSet); x += 64 {
							args := [][]byte{[]byte("ZADD"), key}
							for _, m := range val.ZSet[x:min(x+64, len(val.ZSet))] {
								args = append(args, []byte(strconv.FormatFloat(m.Score, 'g', 17, 64)), m.Member)
							}
							b = appendCommand(b, args...)
						}
					case rdb.KindHash:
						for x := 0; x < len(val.Hash); x += 64 {
							args := [][]byte{[]byte("HSET"), key}
							for _, f := range val.Hash[x:min(x+64, len(val.Hash))] {
								args = append(args, f.Field, f.Value)
							}
							b = appendCommand(b, args...)
						}
					}
					if se.Expire != 0 {
						b = appendCommand(b, []byte("PEXPIREAT"), key, []byte(strconv.FormatInt(se.Expire, 10)))
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

// ---- loading -----------------------------------------------------------

// loadAtStartup replays the AOF directory. Without one, the node starts
// empty (appendonly yes ignores dump.rdb, as Redis does).
func (a *aofState) loadAtStartup() error {
	s := a.srv
	dir := a.dir()
	data, err := os.ReadFile(filepath.Join(dir, a.manifestName()))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node: reading AOF manifest: %w", err)
	}
	m, err := parseManifest(data, a.manifestName())
	if err != nil {
		return err
	}
	s.loading.Store(true)
	defer s.loading.Store(false)
	start := time.Now()
	files := m.incr
	if m.base != "" {
		files = append([]string{m.base}, files...)
	}
	var total int64
	for i, name := range files {
		last := i == len(files)-1
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && !(name == m.base) && i > 0 {
				// Redis tolerates a missing empty last incr file.
				if last {
					continue
				}
			}
			return fmt.Errorf("node: AOF file %s: %w", path, err)
		}
		if err := a.loadFile(path, last); err != nil {
			return err
		}
		total += st.Size()
		if name == m.base {
			a.baseSize = st.Size()
		}
	}
	a.m = m
	a.incrSize = total - a.baseSize
	a.rewriteBaseSize.Store(total)
	s.log.Info("DB loaded from append only file", "files", len(files), "seconds", time.Since(start).Seconds())
	return nil
}

// loadFile replays one AOF file (an RDB preamble and/or commands).
func (a *aofState) loadFile(path string, last bool) error {
	s := a.srv
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("node: AOF file %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	if head, _ := br.Peek(5); string(head) == "REDIS" {
		d := rdb.NewDecoder(br)
		s.LockAll()
		_, err := d.Parse(s.rdbHandler())
		s.UnlockAll()
		if err != nil {
			return fmt.Errorf("node: AOF file %s: RDB preamble: %w", path, err)
		}
		off = d.Offset()
	}
	rp := &aofReader{br: br, off: off}
	c := newLoaderClient(s)
	var multi [][][]byte
	multiStart := int64(-1)
	for {
		start := rp.off
		args, err := rp.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, errAOFTruncated) {
				if multiStart >= 0 {
					start = multiStart
				}
				return a.truncated(path, start, last)
			}
			return fmt.Errorf("node: Bad file format reading the append only file %s at offset %d: %w (use redis-check-aof --fix)", path, start, err)
		}
		if len(args) == 0 {
			continue
		}
		switch {
		case eqFold(args[0], "multi"):
			multi = [][][]byte{}
			multiStart = start
			continue
		case eqFold(args[0], "exec") && multi != nil:
			for _, q := range multi {
				if err := c.replay(q); err != nil {
					return fmt.Errorf("node: AOF file %s at offset %d: %w", path, start, err)
				}
			}
			multi, multiStart = nil, -1
			continue
		}
		if multi != nil {
			multi = append(multi, args)
			continue
		}
		if err := c.replay(args); err != nil {
			return fmt.Errorf("node: AOF file %s at offset %d: %w", path, start, err)
		}
	}
	if multi != nil {
		// A MULTI without EXEC at the end: a truncated transaction.
		return a.truncated(path, multiStart, last)
	}
	return nil
}

// truncated handles a file that ends in the middle of a command: with
// aof-load-truncated (and only for the last file) the partial command is
// cut off and loading goes on, as Redis does; otherwise start-up stops.
func (a *aofState) truncated(path string, validUpTo int64, last bool) error {
	s := a.srv
	if !last || !s.cfg.Bool(DirAOFLoadTruncated) {
		return fmt.Errorf("node: unexpected end of file reading the append only file %s at offset %d; start with aof-load-truncated yes or fix it with redis-check-aof --fix", path, validUpTo)
	}
	s.log.Warn("!!! Warning: short read while loading the AOF file !!!", "file", path, "valid_bytes", validUpTo)
	if err := os.Truncate(path, validUpTo); err != nil {
		return fmt.Errorf("node: truncating %s to %d: %w", path, validUpTo, err)
	}
	s.log.Warn("AOF loaded anyway because aof-load-truncated is enabled", "file", path)
	return nil
}

var errAOFTruncated = errors.New("truncated")

// aofReader parses RESP multibulk commands, tracking the offset.
type aofReader struct {
	br  *bufio.Reader
	off int64
}

func (r *aofReader) line() ([]byte, error) {
	l, err := r.br.ReadSlice('\n')
	r.off += int64(len(l))
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errAOFTruncated
		}
		if err == bufio.ErrBufferFull {
			return nil, errors.New("line too long")
		}
		return nil, err
	}
	if len(l) < 2 || l[len(l)-2] != '\r' {
		return nil, errors.New("expected CRLF")
	}
	return l[:len(l)-2], nil
}

func (r *aofReader) next() ([][]byte, error) {
	for {
		b, err := r.br.Peek(1)
		if err == io.EOF {
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		if b[0] == '#' { // annotation (aof-timestamp-enabled)
			if _, err := r.line(); err != nil {
				return nil, err
			}
			continue
		}
		if b[0] != '*' {
			return nil, fmt.Errorf("expected '*', got %q", b[0])
		}
		break
	}
	l, err := r.line()
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(string(l[1:]))
	if err != nil || n < 1 || n > 1<<20 {
		return nil, fmt.Errorf("invalid multibulk length %q", l)
	}
	args := make([][]byte, n)
	for i := range args {
		l, err := r.line()
		if err != nil {
			return nil, err
		}
		if len(l) == 0 || l[0] != '$' {
			return nil, fmt.Errorf("expected '$', got %q", l)
		}
		sz, err := strconv.Atoi(string(l[1:]))
		if err != nil || sz < 0 || sz > 512<<20 {
			return nil, fmt.Errorf("invalid bulk length %q", l)
		}
		buf := make([]byte, sz+2)
		m, err := io.ReadFull(r.br, buf)
		r.off += int64(m)
		if err != nil {
			return nil, errAOFTruncated
		}
		if buf[sz] != '\r' || buf[sz+1] != '\n' {
			return nil, errors.New("bulk not terminated by CRLF")
		}
		args[i] = buf[:sz]
	}
	return args, nil
}

// newLoaderClient returns a connection-less client that replays commands
// (AOF loading, DEBUG RELOAD of an AOF).
func newLoaderClient(s *Server) *Client {
	c := &Client{srv: s, id: -1, proto: 2, done: make(chan struct{}), user: "default", created: time.Now()}
	c.authed.Store(true)
	return c
}

// replay runs one command from the AOF: no propagation, no statistics.
func (c *Client) replay(args [][]byte) error {
	cmd := c.srv.table.lookup(args[0])
	if cmd == nil {
		return fmt.Errorf("unknown command '%s' reading the append only file", truncArg(args[0]))
	}
	if cmd.subs != nil && len(args) >= 2 {
		if sub := cmd.subs[strings.ToLower(string(args[1]))]; sub != nil {
			cmd = sub
		}
	}
	if !arityOK(cmd, len(args)) {
		return fmt.Errorf("wrong number of arguments for '%s' reading the append only file", cmd.fullName())
	}
	c.now = time.Now().UnixMilli()
	c.cmd = cmd
	c.dirty = 0
	c.propArgs = nil
	c.lockFor(cmd, args)
	if cmd.flags&flagWrite != 0 && c.srv.snapOpen() {
		c.snapGuardKeys(cmd, args)
	}
	cmd.fn(c, args)
	c.unlockHeld()
	c.readyKeys = nil
	c.out = c.out[:0]
	return nil
}

// ---- INFO ----------------------------------------------------------------

func (a *aofState) info(b *strings.Builder) {
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

// ---- commands and config -------------------------------------------------

// BGREWRITEAOF
func cmdBgRewriteAOF(c *Client, args [][]byte) {
	p := c.srv.persist
	a := p.aof
	if a.rewriting.Load() {
		c.addError("ERR Background append only file rewriting already in progress")
		return
	}
	if p.bgInProgress.Load() {
		a.rewriteSched.Store(true)
		c.addSimple("Background append only file rewriting scheduled")
		return
	}
	if !a.rewriting.CompareAndSwap(false, true) {
		c.addError("ERR Background append only file rewriting already in progress")
		return
	}
	go func() {
		if err := a.rewriteReserved(false); err != nil {
			c.srv.log.Warn("BGREWRITEAOF failed", "err", err)
		}
	}()
	c.addSimple("Background append only file rewriting started")
}

func init() {
	configDefs["appendonly"].apply = func(s *Server, v string) {
		p := s.persist
		if p == nil {
			return
		}
		if v == "yes" && !p.aof.enabled.Load() {
			// As Redis: switching the AOF on writes a base from the
			// current dataset, then appends.
			go func() {
				for p.aof.rewriting.Load() {
					time.Sleep(10 * time.Millisecond)
				}
				if err := p.aof.rewrite(true); err != nil {
					s.log.Warn("enabling the AOF failed", "err", err)
				}
			}()
		} else if v == "no" {
			p.aof.stop()
		}
	}
}
