package persist

// Loading the AOF: the manifest's files in order, each an RDB preamble
// and/or commands, replayed through the host's Applier.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/rdb"
)

// loadAtStartup replays the AOF directory. Without one, the node starts
// empty (appendonly yes ignores dump.rdb, as Redis does).
func (a *AOF) loadAtStartup() error {
	h := a.p.h
	dir := a.dir()
	data, err := os.ReadFile(filepath.Join(dir, a.manifestName()))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("persist: reading AOF manifest: %w", err)
	}
	m, err := parseManifest(data, a.manifestName())
	if err != nil {
		return err
	}
	h.SetLoading(true)
	defer h.SetLoading(false)
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
			return fmt.Errorf("persist: AOF file %s: %w", path, err)
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
	a.p.log.Info("DB loaded from append only file", "files", len(files), "seconds", time.Since(start).Seconds())
	return nil
}

// loadFile replays one AOF file (an RDB preamble and/or commands).
func (a *AOF) loadFile(path string, last bool) error {
	h := a.p.h
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("persist: AOF file %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	if head, _ := br.Peek(5); string(head) == "REDIS" {
		d := rdb.NewDecoder(br)
		h.LockAll()
		_, err := d.Parse(a.p.Loader(h.DBs()))
		h.UnlockAll()
		if err != nil {
			return fmt.Errorf("persist: AOF file %s: RDB preamble: %w", path, err)
		}
		off = d.Offset()
	}
	rp := &aofReader{br: br, off: off}
	c := h.Replayer()
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
			return fmt.Errorf("persist: Bad file format reading the append only file %s at offset %d: %w (use redis-check-aof --fix)", path, start, err)
		}
		if len(args) == 0 {
			continue
		}
		switch {
		case equalFold(args[0], "multi"):
			multi = [][][]byte{}
			multiStart = start
			continue
		case equalFold(args[0], "exec") && multi != nil:
			for _, q := range multi {
				if err := c.Apply(q); err != nil {
					return fmt.Errorf("persist: AOF file %s at offset %d: %w", path, start, err)
				}
			}
			multi, multiStart = nil, -1
			continue
		}
		if multi != nil {
			multi = append(multi, args)
			continue
		}
		if err := c.Apply(args); err != nil {
			return fmt.Errorf("persist: AOF file %s at offset %d: %w", path, start, err)
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
func (a *AOF) truncated(path string, validUpTo int64, last bool) error {
	if !last || !a.p.h.Settings().AOFLoadTruncated {
		return fmt.Errorf("persist: unexpected end of file reading the append only file %s at offset %d; start with aof-load-truncated yes or fix it with redis-check-aof --fix", path, validUpTo)
	}
	a.p.log.Warn("!!! Warning: short read while loading the AOF file !!!", "file", path, "valid_bytes", validUpTo)
	if err := os.Truncate(path, validUpTo); err != nil {
		return fmt.Errorf("persist: truncating %s to %d: %w", path, validUpTo, err)
	}
	a.p.log.Warn("AOF loaded anyway because aof-load-truncated is enabled", "file", path)
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

// Reload flushes the AOF and replays it into the (emptied) dataset: DEBUG
// LOADAOF. The caller holds no shard lock.
func (a *AOF) Reload() error {
	h := a.p.h
	if a.enabled.Load() {
		_ = a.FsyncNow()
	}
	h.LockAll()
	a.p.GuardAllLocked()
	for _, db := range h.DBs() {
		db.Flush()
	}
	h.UnlockAll()
	a.mu.Lock()
	saved := a.m
	a.mu.Unlock()
	if err := a.loadAtStartup(); err != nil {
		return err
	}
	a.mu.Lock()
	if a.m.base == "" && len(a.m.incr) == 0 {
		a.m = saved
	}
	a.mu.Unlock()
	return nil
}

// LoadFile replays one AOF file as the manifest's last one (fuzzing).
func (a *AOF) LoadFile(path string) error { return a.loadFile(path, true) }
