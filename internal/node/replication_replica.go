package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/resp"
)

// Master link states (ROLE on a replica).
const (
	linkConnect    = "connect"
	linkConnecting = "connecting"
	linkHandshake  = "handshake"
	linkTransfer   = "sync"
	linkConnected  = "connected"
)

// masterLink is a replica's connection to its master: it connects,
// performs Redis's handshake (PING, AUTH, REPLCONF, PSYNC), loads the RDB
// of a full resync, then applies the command stream, retrying with backoff
// when the link breaks.
type masterLink struct {
	r    *replication
	host string
	port int

	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	state     string
	lastIO    time.Time
	downSince time.Time
	syncTotal int64
	syncRead  int64
	conn      net.Conn
	// client executes the master's commands.
	client *Client
	// readBase is the replication offset the stream started at and
	// readBytes what was read of it since (slave_read_repl_offset) while
	// streaming is set.
	readBase  int64
	readBytes atomic.Int64
	streaming atomic.Bool
	// raws is applyBatch's list of the batch's raw requests, reused.
	raws [][]byte
	// txn holds the raw stream of a transaction (MULTI and the commands
	// queued after it) until its EXEC or DISCARD: the offset counts a
	// transaction only once it ran, as Redis's reploff stays put while
	// the master client is in MULTI. A link cut mid-transaction discards
	// the queued commands, and the partial resync asks for the
	// transaction again from its MULTI.
	txn []byte
	// failoverDone is set while this node hands over to its new master
	// (FAILOVER): the first PSYNC carries FAILOVER, which makes the
	// target promote itself, and its outcome is sent here once.
	failoverDone chan error
}

// failoverResult reports the outcome of a FAILOVER handshake, once.
func (l *masterLink) failoverResult(err error) {
	l.mu.Lock()
	ch := l.failoverDone
	l.failoverDone = nil
	l.mu.Unlock()
	if ch != nil {
		ch <- err
	}
}

type linkStatus struct {
	state               string
	lastIO, downSince   time.Time
	syncTotal, syncRead int64
}

func (l *masterLink) status() linkStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := linkStatus{l.state, l.lastIO, l.downSince, l.syncTotal, l.syncRead}
	if st.state == linkConnected && l.client != nil && l.client.closed.Load() {
		// Killed (CLIENT KILL): down at once, as Redis frees its master
		// client, not when the stream's goroutine next reads.
		st.state = linkConnect
	}
	return st
}

func (l *masterLink) setState(st string) {
	l.mu.Lock()
	if st != linkConnected && l.state == linkConnected {
		l.downSince = time.Now()
	}
	l.state = st
	l.mu.Unlock()
}

// startLink makes this node a replica of host:port. Callers hold r.mu.
func (r *replication) startLinkLocked(host string, port int, failoverDone chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &masterLink{r: r, host: host, port: port, cancel: cancel, done: make(chan struct{}), state: linkConnect, downSince: time.Now(), failoverDone: failoverDone}
	r.link = l
	go l.run(ctx)
}

// stop ends the link and waits for its goroutine.
func (l *masterLink) stop() {
	l.cancel()
	l.mu.Lock()
	if l.conn != nil {
		_ = l.conn.Close()
	}
	l.mu.Unlock()
	<-l.done
}

func (l *masterLink) run(ctx context.Context) {
	defer close(l.done)
	defer l.failoverResult(errors.New("replication link stopped"))
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		l.r.srv.waitUnfrozen(nil) // DEBUG SLEEP: no reconnection meanwhile
		err := l.session(ctx)
		l.failoverResult(err)
		if ctx.Err() != nil {
			return
		}
		l.setState(linkConnect)
		l.r.srv.log.Warn("replication: link with master lost", "master", net.JoinHostPort(l.host, strconv.Itoa(l.port)), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

// session runs one connection to the master until it fails.
func (l *masterLink) session(ctx context.Context) error {
	s := l.r.srv
	l.setState(linkConnecting)
	s.log.Info(fmt.Sprintf("Connecting to MASTER %s:%d", l.host, l.port))
	s.log.Info("MASTER <-> REPLICA sync started")
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(l.host, strconv.Itoa(l.port)))
	if err != nil {
		return fmt.Errorf("node: replication: connect: %w", err)
	}
	l.mu.Lock()
	l.conn = nc
	l.mu.Unlock()
	defer nc.Close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	l.setState(linkHandshake)
	br := bufio.NewReaderSize(nc, 64*1024)
	timeout := time.Duration(s.cfg.Int(DirReplTimeout)) * time.Second
	call := func(args ...string) (resp.Value, error) {
		_ = nc.SetDeadline(time.Now().Add(timeout))
		if _, err := nc.Write(resp.AppendCommandStrings(nil, args...)); err != nil {
			return resp.Value{}, err
		}
		return resp.ReadValue(br)
	}
	v, err := call("PING")
	if err != nil {
		return l.handshakeErr("ping", err)
	}
	if v.IsError() && !strings.HasPrefix(v.Str, "NOAUTH") && !strings.HasPrefix(v.Str, "NOPERM") && !strings.HasPrefix(v.Str, "ERR operation not permitted") {
		s.log.Warn("Error reply to PING from master: '" + v.Str + "'")
		return fmt.Errorf("node: replication: master replied to PING: %s", v.Str)
	}
	s.log.Info("Master replied to PING, replication can continue...")
	if pass := s.cfg.Get(DirMasterauth); pass != "" {
		args := []string{"AUTH", pass}
		if user := s.cfg.Get(DirMasteruser); user != "" {
			args = []string{"AUTH", user, pass}
		}
		if v, err = call(args...); err != nil || v.IsError() {
			return fmt.Errorf("node: replication: AUTH failed: %v %s", err, v.Str)
		}
	}
	port := s.cfg.Get(DirReplicaAnnouncePort)
	if port == "0" || port == "" {
		port = s.cfg.Get(DirPort)
	}
	if v, err = call("REPLCONF", "listening-port", port); err != nil {
		return fmt.Errorf("node: replication: REPLCONF: %w", err)
	}
	if ip := s.cfg.Get(DirReplicaAnnounceIP); ip != "" {
		_, _ = call("REPLCONF", "ip-address", ip)
	}
	_, _ = call("REPLCONF", "capa", "eof", "capa", "psync2")

	l.r.mu.Lock()
	replid, offset := l.r.replid, l.r.offset
	l.r.mu.Unlock()
	psyncID, psyncOff := replid, strconv.FormatInt(offset+1, 10)
	if !l.r.hasHistory() {
		psyncID, psyncOff = "?", "-1"
		s.log.Info("Partial resynchronization not possible (no cached master)")
	} else {
		s.log.Info("Trying a partial resynchronization (request " + psyncID + ":" + psyncOff + ").")
	}
	// The master may send newlines to keep the link alive before it
	// answers PSYNC (while a diskless sync waits for more replicas).
	_ = nc.SetDeadline(time.Now().Add(timeout))
	psyncArgs := []string{"PSYNC", psyncID, psyncOff}
	l.mu.Lock()
	failover := l.failoverDone != nil
	l.mu.Unlock()
	if failover {
		psyncArgs = append(psyncArgs, "FAILOVER")
	}
	if _, err := nc.Write(resp.AppendCommandStrings(nil, psyncArgs...)); err != nil {
		return fmt.Errorf("node: replication: PSYNC: %w", err)
	}
	for {
		_ = nc.SetReadDeadline(time.Now().Add(timeout))
		b, err := br.Peek(1)
		if err != nil {
			return l.handshakeErr("PSYNC", err)
		}
		if b[0] != '\n' && b[0] != '\r' {
			break
		}
		_, _ = br.ReadByte()
	}
	v, err = resp.ReadValue(br)
	if err != nil {
		return l.handshakeErr("PSYNC", err)
	}
	if v.IsError() {
		if failover {
			s.log.Warn("Failover target rejected psync request: " + v.Str)
		} else {
			s.log.Warn("Unexpected reply to PSYNC from master: " + v.Str)
		}
		return fmt.Errorf("node: replication: PSYNC refused: %s", v.Str)
	}
	if failover {
		l.failoverResult(nil)
	}
	f := strings.Fields(v.Str)
	switch {
	case len(f) >= 3 && f[0] == "FULLRESYNC":
		off, _ := strconv.ParseInt(f[2], 10, 64)
		s.log.Info("Full resync from master: " + f[1] + ":" + f[2])
		if err := l.fullSync(nc, br, f[1], off); err != nil {
			return err
		}
	case len(f) >= 1 && f[0] == "CONTINUE":
		l.r.mu.Lock()
		if len(f) >= 2 && f[1] != l.r.replid {
			// The master changed history (it was promoted): keep ours as
			// replid2 so our own replicas can still continue.
			l.r.replid2 = l.r.replid
			l.r.secondOffset = l.r.offset + 1
			l.r.replid = f[1]
			l.r.disconnectReplicasLocked()
			s.log.Info("Master replication ID changed to " + f[1])
		}
		l.r.mu.Unlock()
		s.log.Info("Successful partial resynchronization with master.")
		s.log.Info("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")
	default:
		return fmt.Errorf("node: replication: unexpected PSYNC reply %q", v.Str)
	}
	_ = nc.SetDeadline(time.Time{})
	err = l.stream(nc, br)
	if ctx.Err() == nil {
		s.log.Info("Connection with master lost.")
		s.log.Info("Caching the disconnected master state.")
	}
	return err
}

// handshakeErr logs a failed handshake step as Redis does (a timeout is
// "Timeout connecting to the MASTER...") and returns it wrapped.
func (l *masterLink) handshakeErr(step string, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		l.r.srv.log.Warn("Timeout connecting to the MASTER...")
	} else {
		l.r.srv.log.Warn("Error condition on socket for SYNC: " + err.Error())
	}
	return fmt.Errorf("node: replication: %s: %w", step, err)
}

// hasHistory reports whether this node has a dataset worth a partial
// resync (it has been a master or a synced replica).
func (r *replication) hasHistory() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.offset > 0 || r.backlog != nil
}

// fullSync reads the RDB payload ($len or $EOF:<mark>) and loads it.
func (l *masterLink) fullSync(nc net.Conn, br *bufio.Reader, replid string, offset int64) error {
	s := l.r.srv
	l.setState(linkTransfer)
	timeout := time.Duration(s.cfg.Int(DirReplTimeout)) * time.Second
	var header []byte
	for {
		_ = nc.SetReadDeadline(time.Now().Add(timeout))
		line, err := br.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("node: replication: reading RDB header: %w", err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue // keep-alive newlines while the master prepares the RDB
		}
		header = bytes.TrimRight(line, "\r\n")
		break
	}
	if len(header) == 0 || header[0] != '$' {
		return fmt.Errorf("node: replication: bad RDB header %q", header)
	}
	l.mu.Lock()
	l.syncTotal, l.syncRead = 0, 0 // this transfer's counts (the link outlives sessions)
	l.mu.Unlock()
	var payload io.Reader
	var eofMark []byte
	if bytes.HasPrefix(header, []byte("$EOF:")) {
		eofMark = bytes.Clone(header[5:])
		payload = &eofReader{r: br, mark: eofMark}
		s.log.Info("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk")
	} else {
		n, err := strconv.ParseInt(string(header[1:]), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("node: replication: bad RDB length %q", header)
		}
		l.mu.Lock()
		l.syncTotal = n
		l.mu.Unlock()
		payload = io.LimitReader(br, n)
		s.log.Info(fmt.Sprintf("MASTER <-> REPLICA sync: receiving %d bytes from master to disk", n))
	}
	cr := &countingReader{r: payload, l: l, nc: nc, timeout: timeout}
	if s.loadRDB == nil {
		return errors.New("node: replication: no RDB loader")
	}
	start := time.Now()
	var err error
	l.r.mu.Lock()
	sameHistory := replid == l.r.replid
	l.r.mu.Unlock()
	switch mode := s.cfg.Get(DirReplDisklessLoad); {
	case mode == "swapdb":
		// Redis 7.0: the old dataset is kept until the new one is
		// loaded; LOADING meanwhile unless the master continues our own
		// history (async loading).
		err = l.loadStreaming(cr, eofMark != nil, !sameHistory)
	case s.datasetEmpty():
		err = l.loadStreaming(cr, eofMark != nil, mode == "on-empty-db")
	default:
		err = l.loadFromDisk(cr, eofMark != nil)
	}
	if err != nil {
		return err
	}
	var keys int64
	for _, db := range s.dbs {
		keys += db.Size()
	}
	s.log.Info(fmt.Sprintf("Done loading RDB, keys loaded: %d, keys expired: 0.", keys), "seconds", time.Since(start).Seconds())
	l.r.forgetLocalExpires()
	l.r.mu.Lock()
	l.r.replid = replid
	l.r.offset = offset
	l.r.replid2 = strings.Repeat("0", 40)
	l.r.secondOffset = -1
	l.r.masterDB = 0 // the master starts the stream with a SELECT
	l.r.streamDB.Store(0)
	// Our own replicas must resync from the new dataset.
	l.r.backlog = nil
	l.r.createBacklogLocked()
	l.r.disconnectReplicasLocked()
	l.r.mu.Unlock()
	s.log.Info("MASTER <-> REPLICA sync: Finished with success")
	return nil
}

// loadFromDisk receives the whole payload into a temporary file first, as
// Redis does with repl-diskless-load disabled: a transfer cut half-way
// leaves the current dataset untouched (served as stale data) instead of a
// half-loaded one. Then the dataset is flushed and the file loaded.
func (l *masterLink) loadFromDisk(payload io.Reader, eofForm bool) error {
	s := l.r.srv
	tmp, err := os.CreateTemp(s.cfg.Get(DirDir), "temp-"+strconv.Itoa(os.Getpid())+"-*.rdb")
	if err != nil {
		return fmt.Errorf("node: replication: temp file for the master's RDB: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	got, err := io.Copy(tmp, bufio.NewReaderSize(payload, 256*1024))
	if err != nil {
		return fmt.Errorf("node: replication: receiving the master's RDB: %w", err)
	}
	if !eofForm && got != l.status().syncTotal {
		return fmt.Errorf("node: replication: the master's RDB was cut after %d of %d bytes", got, l.status().syncTotal)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("node: replication: %w", err)
	}
	s.log.Info("MASTER <-> REPLICA sync: Flushing old data")
	s.log.Info("MASTER <-> REPLICA sync: Loading DB in memory")
	if err := s.loadRDB(bufio.NewReaderSize(tmp, 256*1024)); err != nil {
		s.log.Warn("Failed trying to load the MASTER synchronization DB from disk, check server logs.", "err", err)
		return fmt.Errorf("node: replication: loading the master's RDB: %w", err)
	}
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
func (l *masterLink) loadStreaming(payload io.Reader, eofForm, loading bool) error {
	s := l.r.srv
	s.log.Info("MASTER <-> REPLICA sync: Loading DB in memory")
	if loading {
		s.loading.Store(true)
		defer s.loading.Store(false)
	}
	staging := make([]*keyspace.DB, len(s.dbs))
	for i := range staging {
		staging[i] = keyspace.NewDB(s.ks, i)
		staging[i].Staged = true
	}
	br := bufio.NewReaderSize(payload, 256*1024)
	if err := s.persist.LoadInto(br, staging, true); err != nil {
		s.log.Warn("Failed trying to load the MASTER synchronization DB from socket, check server logs.", "err", err)
		return fmt.Errorf("node: replication: loading the master's RDB: %w", err)
	}
	// The RDB ends with its checksum: nothing but the end of the payload
	// (the EOF mark, or the announced length) may follow.
	if n, err := io.Copy(io.Discard, br); err != nil || n != 0 {
		return fmt.Errorf("node: replication: %d bytes after the end of the master's RDB (%v)", n, err)
	}
	if !eofForm && l.status().syncRead != l.status().syncTotal {
		return fmt.Errorf("node: replication: the master's RDB was cut after %d of %d bytes", l.status().syncRead, l.status().syncTotal)
	}
	s.log.Info("MASTER <-> REPLICA sync: Flushing old data")
	s.LockAll()
	s.snapGuardAll()
	for i, db := range s.dbs {
		db.SwapContents(staging[i])
		s.signalDBsSwapped(i, i)
	}
	s.UnlockAll()
	if s.persist != nil {
		s.persist.MarkLoaded(time.Now())
	}
	return nil
}

// datasetEmpty reports whether no database holds a key.
func (s *Server) datasetEmpty() bool {
	for _, db := range s.dbs {
		if db.Size() != 0 {
			return false
		}
	}
	return true
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

type countingReader struct {
	r       io.Reader
	l       *masterLink
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

// stream applies the master's command stream until the link fails.
func (l *masterLink) stream(nc net.Conn, br *bufio.Reader) error {
	s := l.r.srv
	c := newClient(s, nc)
	c.authed.Store(true)
	// The stream is read with raw system calls (c.io, conn_raw.go), as
	// clients are: a read through net.Conn enters the scheduler's syscall
	// state, which woke sysmon at every read and cost the replica about a
	// third more CPU per applied write (docs/BENCHMARKS.md, Replication).
	// The handshake's reader may already hold the first bytes.
	var src io.Reader = c.io
	if n := br.Buffered(); n > 0 {
		pre, _ := br.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(pre)), c.io)
	}
	l.r.mu.Lock()
	l.readBase = l.r.offset
	l.r.mu.Unlock()
	l.readBytes.Store(0)
	l.txn = l.txn[:0]
	l.streaming.Store(true)
	defer l.streaming.Store(false)
	src = &streamCounter{r: src, n: &l.readBytes}
	c.rd = resp.NewReader(src, resp.ReaderOptions{MaxBulkLen: 1 << 40})
	c.setFlag(clientMaster, true)
	c.replyMode = replyOff
	l.mu.Lock()
	l.client = c
	l.mu.Unlock()
	l.r.mu.Lock()
	c.db = l.r.masterDB
	l.r.streamDB.Store(int64(c.db))
	l.r.mu.Unlock()
	defer func() {
		l.r.mu.Lock()
		l.r.masterDB = c.db
		l.r.mu.Unlock()
	}()
	// The master client is listed (CLIENT LIST flags=M) and can be killed
	// with CLIENT KILL, which cuts the link as in Redis.
	s.clientsMu.Lock()
	s.clients[c.id] = c
	s.clientsMu.Unlock()
	defer c.close()
	// The link is up once its client is listed: an operator who sees
	// master_link_status:up can kill it.
	l.setState(linkConnected)
	l.mu.Lock()
	l.lastIO = time.Now()
	l.mu.Unlock()
	l.sendAck()
	timeout := time.Duration(s.cfg.Int(DirReplTimeout)) * time.Second
	for {
		if s.frozen() {
			s.waitUnfrozen(nil) // DEBUG SLEEP: the stream waits too
		}
		args, err := c.rd.Next()
		if err == resp.ErrIncomplete {
			_ = nc.SetReadDeadline(time.Now().Add(timeout))
			if err := c.rd.Fill(); err != nil {
				return fmt.Errorf("node: replication: stream: %w", err)
			}
			l.mu.Lock()
			l.lastIO = time.Now()
			l.mu.Unlock()
			continue
		}
		if err != nil {
			return fmt.Errorf("node: replication: stream: %w", err)
		}
		// raw points into the reader's buffer, which only the next read
		// reuses: feeding copies it (backlog, sub-replicas' output).
		raw := c.rd.LastRaw()
		if isGetAck(args) {
			l.ackRequested(raw)
			continue
		}
		cmd := c.lookupCmd(args[0])
		if keyspace.PrefetchEnabled && batchable(cmd) && c.rd.Buffered() > 0 {
			if err := l.applyBatch(c, args, raw, cmd); err != nil {
				return err
			}
			continue
		}
		if err := l.apply(c, args, raw, cmd); err != nil {
			return err
		}
	}
}

// apply runs one command of the master's stream and forwards it. It
// returns an error, running nothing, once the master client was closed
// (CLIENT KILL, or the link failing): a command left in the read buffer
// then must not count in the offset, because it never ran, and the
// partial resync asks for it again.
func (l *masterLink) apply(c *Client, args [][]byte, raw []byte, cmd *command) error {
	if c.closed.Load() {
		return errMasterClientClosed
	}
	// Replies are built but never sent: an error means the datasets
	// diverged, which Redis logs as CRITICAL.
	c.replyMode = replyOn
	c.executeCmd(args, cmd)
	if len(c.out) > 0 && c.out[0] == '-' {
		msg, _, _ := bytes.Cut(c.out[1:], []byte("\r\n"))
		c.srv.log.Warn(fmt.Sprintf("== CRITICAL == This replica is sending an error to its master: '%s' after processing the command '%s'", msg, strings.ToLower(string(args[0]))))
	}
	c.out = c.out[:0]
	if int64(c.db) != l.r.streamDB.Load() {
		l.r.streamDB.Store(int64(c.db))
	}
	if c.hasFlag(clientMulti) {
		l.txn = append(l.txn, raw...) // MULTI or a queued command
		return nil
	}
	if len(l.txn) > 0 {
		l.txn = append(l.txn, raw...) // EXEC or DISCARD
		l.r.feedFromMaster(l.txn)
		l.txn = l.txn[:0]
		if cap(l.txn) > 1<<20 {
			l.txn = nil
		}
		return nil
	}
	l.r.feedFromMaster(raw)
	return nil
}

// errMasterClientClosed ends the stream when its client was closed.
var errMasterClientClosed = errors.New("node: replication: stream: master client closed")

// applyBatch runs a run of keyed commands already in the reader's buffer,
// starting with args, after prefetching their keys (perf_prefetch.go), as
// serve does for a client's pipeline: the stream of a busy master is one
// long pipeline, and without it most of the replica's time went to the
// cache misses of each command's key lookup, one after another. The
// commands run in order, each forwarded after it ran, as apply does.
func (l *masterLink) applyBatch(c *Client, args [][]byte, raw []byte, cmd *command) error {
	c.batch = c.batch[:0]
	c.batchArgs = append(c.batchArgs[:0], args...)
	c.batch = append(c.batch, batchReq{args: c.batchArgs[:len(args):len(args)], cmd: cmd})
	raws := append(l.raws[:0], raw)
	var tail [][]byte // a parsed request that may not join the batch
	var tailCmd *command
	var perr error
	for len(c.batch) < maxBatch {
		next, err := c.rd.Next()
		if err != nil {
			if err != resp.ErrIncomplete {
				perr = err
			}
			break
		}
		ncmd := c.lookupCmd(next[0])
		if !batchable(ncmd) {
			tail, tailCmd = next, ncmd
			break
		}
		start := len(c.batchArgs)
		c.batchArgs = append(c.batchArgs, next...)
		c.batch = append(c.batch, batchReq{args: c.batchArgs[start:len(c.batchArgs):len(c.batchArgs)], cmd: ncmd})
		raws = append(raws, c.rd.LastRaw())
	}
	var tailRaw []byte
	if tail != nil {
		tailRaw = c.rd.LastRaw()
	}
	c.prefetchBatch(c.batch)
	var aerr error
	for i := range c.batch {
		if aerr = l.apply(c, c.batch[i].args, raws[i], c.batch[i].cmd); aerr != nil {
			break
		}
	}
	l.raws = raws[:0]
	if cap(c.batchArgs) > 4096 {
		c.batchArgs = nil
	}
	if aerr != nil {
		return aerr
	}
	if perr != nil {
		return fmt.Errorf("node: replication: stream: %w", perr)
	}
	if tail != nil {
		if isGetAck(tail) {
			l.ackRequested(tailRaw)
			return nil
		}
		return l.apply(c, tail, tailRaw, tailCmd)
	}
	return nil
}

// isGetAck reports whether a request of the stream is REPLCONF GETACK.
func isGetAck(args [][]byte) bool {
	return len(args) >= 2 && eqFold(args[0], "REPLCONF") && eqFold(args[1], "GETACK")
}

// ackRequested answers the master's REPLCONF GETACK: the request counts in
// the offset (Redis's master sends it through the stream) and the ACK
// carries the offset including it. Inside a transaction it waits with the
// transaction's bytes.
func (l *masterLink) ackRequested(raw []byte) {
	if len(l.txn) > 0 {
		l.txn = append(l.txn, raw...)
	} else {
		l.r.feedFromMaster(raw)
	}
	l.sendAck()
}

// streamCounter counts the bytes read of the master's stream.
type streamCounter struct {
	r io.Reader
	n *atomic.Int64
}

func (sc *streamCounter) Read(p []byte) (int, error) {
	n, err := sc.r.Read(p)
	sc.n.Add(int64(n))
	return n, err
}

// readOffset is slave_read_repl_offset: the offset of the stream read
// from the master, applied or not; applied while not streaming.
func (l *masterLink) readOffset(applied int64) int64 {
	if l == nil || !l.streaming.Load() {
		return applied
	}
	return max(applied, l.readBase+l.readBytes.Load())
}

// sendAck sends REPLCONF ACK <offset> to the master.
func (l *masterLink) sendAck() {
	l.mu.Lock()
	nc, st := l.conn, l.state
	l.mu.Unlock()
	if nc == nil || st != linkConnected {
		return
	}
	l.r.mu.Lock()
	off := l.r.offset
	l.r.mu.Unlock()
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(resp.AppendCommandStrings(nil, "REPLCONF", "ACK", strconv.FormatInt(off, 10)))
	_ = nc.SetWriteDeadline(time.Time{})
}

// disconnectReplicasLocked closes every replica's link so they resync.
//
// They leave the list at once (the connections close asynchronously): no
// byte fed after this point may reach them, or a sub-replica would count
// bytes of our new history (after a replid change) under the old id and
// ask for an offset its next master cannot continue from.
func (r *replication) disconnectReplicasLocked() {
	for _, ri := range r.replicas {
		go ri.c.close()
	}
	if len(r.replicas) > 0 {
		r.replicas = nil
		r.noReplicasAt = time.Now()
		r.ackCond.Broadcast()
	}
}
