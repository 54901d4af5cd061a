package repl

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// fullSync reads the RDB payload ($len or $EOF:<mark>) and loads it.
func (l *Link) fullSync(nc net.Conn, br *bufio.Reader, st Settings, replid string, offset int64) error {
	l.SetState(StateTransfer)
	var header []byte
	for {
		_ = nc.SetReadDeadline(time.Now().Add(st.Timeout))
		line, err := br.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("repl: reading RDB header: %w", err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue // keep-alive newlines while the master prepares the RDB
		}
		header = bytes.TrimRight(line, "\r\n")
		break
	}
	if len(header) == 0 || header[0] != '$' {
		return fmt.Errorf("repl: bad RDB header %q", header)
	}
	l.mu.Lock()
	l.syncTotal, l.syncRead = 0, 0 // this transfer's counts (the link outlives sessions)
	l.mu.Unlock()
	var payload io.Reader
	var eofMark []byte
	if bytes.HasPrefix(header, []byte("$EOF:")) {
		eofMark = bytes.Clone(header[5:])
		payload = &eofReader{r: br, mark: eofMark}
		l.log.Info("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk")
	} else {
		n, err := strconv.ParseInt(string(header[1:]), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("repl: bad RDB length %q", header)
		}
		l.mu.Lock()
		l.syncTotal = n
		l.mu.Unlock()
		payload = io.LimitReader(br, n)
		l.log.Info(fmt.Sprintf("MASTER <-> REPLICA sync: receiving %d bytes from master to disk", n))
	}
	cr := &countingReader{r: payload, l: l, nc: nc, timeout: st.Timeout}
	start := time.Now()
	var err error
	cur, _, _ := l.h.History()
	sameHistory := replid == cur
	switch mode := st.DisklessLoad; {
	case mode == "swapdb":
		// Redis 7.0: the old dataset is kept until the new one is
		// loaded; LOADING meanwhile unless the master continues our own
		// history (async loading).
		err = l.loadStreaming(cr, eofMark != nil, !sameHistory)
	case l.h.DatasetEmpty():
		err = l.loadStreaming(cr, eofMark != nil, mode == "on-empty-db")
	default:
		err = l.loadFromDisk(cr, st, eofMark != nil)
	}
	if err != nil {
		return err
	}
	l.h.FullSynced(replid, offset, time.Since(start))
	l.log.Info("MASTER <-> REPLICA sync: Finished with success")
	return nil
}

// loadStreaming loads the payload while it arrives into staging databases
// and swaps them in when the whole payload was read and checked: a
// transfer cut half-way drops the staging data and leaves the dataset
// untouched. It is used when the dataset is empty (the staging copy costs
// no extra memory), and with repl-diskless-load swapdb. With loading the
// server answers LOADING meanwhile (on-empty-db, and swapdb with a new
// history, as Redis does); otherwise clients keep seeing the current
// dataset. Receiving and loading overlap (the master encodes while we
// decode), where the disk path does one after the other.
func (l *Link) loadStreaming(payload io.Reader, eofForm, loading bool) error {
	l.log.Info("MASTER <-> REPLICA sync: Loading DB in memory")
	br := bufio.NewReaderSize(payload, 256*1024)
	return l.h.LoadStaged(br, loading, func() error {
		// The RDB ends with its checksum: nothing but the end of the
		// payload (the EOF mark, or the announced length) may follow.
		if n, err := io.Copy(io.Discard, br); err != nil || n != 0 {
			return fmt.Errorf("repl: %d bytes after the end of the master's RDB (%v)", n, err)
		}
		if st := l.Status(); !eofForm && st.SyncRead != st.SyncTotal {
			return fmt.Errorf("repl: the master's RDB was cut after %d of %d bytes", st.SyncRead, st.SyncTotal)
		}
		l.log.Info("MASTER <-> REPLICA sync: Flushing old data")
		return nil
	})
}

// loadFromDisk receives the whole payload into a temporary file first, as
// Redis does with repl-diskless-load disabled: a transfer cut half-way
// leaves the current dataset untouched (served as stale data) instead of a
// half-loaded one. Then the dataset is flushed and the file loaded.
func (l *Link) loadFromDisk(payload io.Reader, st Settings, eofForm bool) error {
	tmp, err := os.CreateTemp(st.Dir, "temp-"+strconv.Itoa(os.Getpid())+"-*.rdb")
	if err != nil {
		return fmt.Errorf("repl: temp file for the master's RDB: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	got, err := io.Copy(tmp, bufio.NewReaderSize(payload, 256*1024))
	if err != nil {
		return fmt.Errorf("repl: receiving the master's RDB: %w", err)
	}
	if total := l.Status().SyncTotal; !eofForm && got != total {
		return fmt.Errorf("repl: the master's RDB was cut after %d of %d bytes", got, total)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("repl: %w", err)
	}
	l.log.Info("MASTER <-> REPLICA sync: Flushing old data")
	l.log.Info("MASTER <-> REPLICA sync: Loading DB in memory")
	if err := l.h.LoadRDB(bufio.NewReaderSize(tmp, 256*1024)); err != nil {
		l.log.Warn("Failed trying to load the MASTER synchronization DB from disk, check server logs.", "err", err)
		return fmt.Errorf("repl: loading the master's RDB: %w", err)
	}
	return nil
}

// eofReader reads a diskless payload that ends with a 40-byte mark. It
// never consumes a byte past the mark, which belong to the command stream.
type eofReader struct {
	r    *bufio.Reader
	mark []byte
	done bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	if e.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	want := max(e.r.Buffered(), len(e.mark)+1)
	buf, err := e.r.Peek(min(want, e.r.Size()))
	if len(buf) < len(e.mark)+1 {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	if i := bytes.Index(buf, e.mark); i >= 0 {
		n := copy(p, buf[:i])
		_, _ = e.r.Discard(n)
		if n == i {
			_, _ = e.r.Discard(len(e.mark))
			e.done = true
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
	// Keep the last len(mark) bytes: they may start the mark.
	n := copy(p, buf[:len(buf)-len(e.mark)])
	_, _ = e.r.Discard(n)
	return n, nil
}

// countingReader counts a full sync's payload as it is read (INFO
// master_sync_read_bytes) and keeps the read deadline moving.
type countingReader struct {
	r       io.Reader
	l       *Link
	nc      net.Conn
	timeout time.Duration
}

func (c *countingReader) Read(p []byte) (int, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.timeout))
	n, err := c.r.Read(p)
	c.l.mu.Lock()
	c.l.syncRead += int64(n)
	c.l.lastIO = time.Now()
	c.l.mu.Unlock()
	return n, err
}
