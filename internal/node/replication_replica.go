package node

// The replica side's server half: the link itself (connection, handshake,
// full-sync transfer) is internal/node/repl's Link; this file is what it
// calls back (replicaHost): the replication history, the dataset loads,
// and the stream of the master's commands, run on the master client.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/resp"
)

// Master link states (ROLE on a replica).
const (
	linkConnect    = repl.StateConnect
	linkConnecting = repl.StateConnecting
	linkHandshake  = repl.StateHandshake
	linkTransfer   = repl.StateTransfer
	linkConnected  = repl.StateConnected
)

// masterLink is a replica's connection to its master (repl.Link) with the
// state of the command stream it applies.
type masterLink struct {
	*repl.Link
	r    *replication
	host string
	port int

	// raws is applyBatch's list of the batch's raw requests, reused.
	raws [][]byte
	// txn holds the raw stream of a transaction (MULTI and the commands
	// queued after it) until its EXEC or DISCARD: the offset counts a
	// transaction only once it ran, as Redis's reploff stays put while
	// the master client is in MULTI. A link cut mid-transaction discards
	// the queued commands, and the partial resync asks for the
	// transaction again from its MULTI.
	txn []byte
	// askedAt is when the master last sent REPLCONF GETACK and ackedOff
	// the offset of the last ACK the stream sent: for a second after a
	// GETACK the replica acknowledges every batch it applied, so a master
	// with min-replicas-ack waits one round trip, not one GETACK round,
	// for most writes (replication_ack.go). Owned by the stream's
	// goroutine.
	askedAt  time.Time
	ackedOff int64
}

// ackStreamWindow is how long after a GETACK the replica acknowledges every
// applied batch.
const ackStreamWindow = time.Second

type linkStatus struct {
	state               string
	lastIO, downSince   time.Time
	syncTotal, syncRead int64
}

func (l *masterLink) status() linkStatus {
	st := l.Status()
	return linkStatus{st.State, st.LastIO, st.DownSince, st.SyncTotal, st.SyncRead}
}

func (l *masterLink) setState(st string) { l.SetState(st) }

// newMasterLink returns a link to host:port, not yet started.
func newMasterLink(r *replication, host string, port int, failoverDone chan error) *masterLink {
	l := &masterLink{r: r, host: host, port: port}
	l.Link = repl.NewLink(replicaHost{l}, r.srv.log, host, port, failoverDone)
	return l
}

// startLink makes this node a replica of host:port. Callers hold r.mu.
func (r *replication) startLinkLocked(host string, port int, failoverDone chan error) {
	l := newMasterLink(r, host, port, failoverDone)
	r.setLinkLocked(l)
	l.Start()
}

// stop ends the link and waits for its goroutine.
func (l *masterLink) stop() { l.Stop() }

// readOffset is slave_read_repl_offset (repl.Link.ReadOffset).
func (l *masterLink) readOffset(applied int64) int64 { return l.ReadOffset(applied) }

// sendAck sends REPLCONF ACK <offset> to the master.
func (l *masterLink) sendAck() { l.SendAck(l.r.Offset()) }

// info renders INFO replication's fields of a replica's link; applied is
// the applied offset. r.mu is held.
func (l *masterLink) info(b *strings.Builder, applied int64) {
	st := l.status()
	b.WriteString("role:slave\r\n")
	fmt.Fprintf(b, "master_host:%s\r\nmaster_port:%d\r\n", l.host, l.port)
	up := "down"
	if st.state == linkConnected {
		up = "up"
	}
	fmt.Fprintf(b, "master_link_status:%s\r\n", up)
	last := int64(-1)
	if !st.lastIO.IsZero() {
		last = int64(time.Since(st.lastIO).Seconds())
	}
	fmt.Fprintf(b, "master_last_io_seconds_ago:%d\r\n", last)
	inSync := 0
	if st.state == linkTransfer {
		inSync = 1
	}
	fmt.Fprintf(b, "master_sync_in_progress:%d\r\n", inSync)
	fmt.Fprintf(b, "slave_read_repl_offset:%d\r\nslave_repl_offset:%d\r\n", l.readOffset(applied), applied)
	if inSync == 1 {
		fmt.Fprintf(b, "master_sync_total_bytes:%d\r\nmaster_sync_read_bytes:%d\r\nmaster_sync_left_bytes:%d\r\nmaster_sync_perc:0.00\r\nmaster_sync_last_io_seconds_ago:0\r\n", st.syncTotal, st.syncRead, st.syncTotal-st.syncRead)
	}
	if st.state != linkConnected {
		secs := int64(-1)
		if !st.downSince.IsZero() {
			secs = int64(time.Since(st.downSince).Seconds())
		}
		fmt.Fprintf(b, "master_link_down_since_seconds:%d\r\n", secs)
	}
}

// replicaHost is the server as the link sees it (repl.ReplicaHost).
type replicaHost struct{ l *masterLink }

var _ repl.ReplicaHost = replicaHost{}

func (h replicaHost) Settings() repl.Settings {
	s := h.l.r.srv
	port := s.cfg.Get(DirReplicaAnnouncePort)
	if port == "0" || port == "" {
		port = s.cfg.Get(DirPort)
	}
	return repl.Settings{
		Timeout:      time.Duration(s.cfg.Int(DirReplTimeout)) * time.Second,
		MasterAuth:   s.cfg.Get(DirMasterauth),
		MasterUser:   s.cfg.Get(DirMasteruser),
		ListenPort:   port,
		AnnounceIP:   s.cfg.Get(DirReplicaAnnounceIP),
		DisklessLoad: s.cfg.Get(DirReplDisklessLoad),
		Dir:          s.cfg.Get(DirDir),
		Priority:     strconv.FormatInt(announcedPriority(s), 10),
	}
}

func (h replicaHost) History() (string, int64, bool) { return h.l.r.History() }

func (h replicaHost) ContinueWith(id string) {
	r := h.l.r
	r.mu.Lock()
	if r.ContinueWithLocked(id) {
		r.srv.log.Info("Master replication ID changed to " + id)
	}
	r.mu.Unlock()
}

func (h replicaHost) DatasetEmpty() bool { return h.l.r.srv.datasetEmpty() }

func (h replicaHost) LoadRDB(rd io.Reader) error {
	s := h.l.r.srv
	if s.loadRDB == nil {
		return errors.New("node: replication: no RDB loader")
	}
	return s.loadRDB(rd)
}

func (h replicaHost) LoadStreaming(payload io.Reader, eofForm, loading bool) error {
	return h.l.loadStreaming(payload, eofForm, loading)
}

func (h replicaHost) FullSynced(replid string, offset int64, elapsed time.Duration) {
	r := h.l.r
	s := r.srv
	var keys int64
	for _, db := range s.dbs {
		keys += db.Size()
	}
	s.log.Info(fmt.Sprintf("Done loading RDB, keys loaded: %d, keys expired: 0.", keys), "seconds", elapsed.Seconds())
	r.localExp.Reset()
	r.mu.Lock()
	r.FullSyncedLocked(replid, offset)
	r.masterDB = 0 // the master starts the stream with a SELECT
	r.streamDB.Store(0)
	r.mu.Unlock()
}

func (h replicaHost) Stream(nc net.Conn, br *bufio.Reader) error { return h.l.stream(nc, br) }

func (h replicaHost) WaitUnfrozen() { h.l.r.srv.waitUnfrozen(nil) }

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
	} else {
		s.asyncLoading.Store(true)
		defer s.asyncLoading.Store(false)
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
	base := l.r.Offset()
	l.txn = l.txn[:0]
	src = l.BeginStream(src, base)
	defer l.EndStream()
	c.rd = resp.NewReader(src, resp.ReaderOptions{MaxBulkLen: 1 << 40})
	c.setFlag(clientMaster, true)
	c.replyMode = replyOff
	l.SetStreamClient(c.closed.Load)
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
	l.Touch()
	l.sendAck()
	timeout := time.Duration(s.cfg.Int(DirReplTimeout)) * time.Second
	for {
		if s.frozen() {
			s.waitUnfrozen(nil) // DEBUG SLEEP: the stream waits too
		}
		args, err := c.rd.Next()
		if err == resp.ErrIncomplete {
			now := time.Now()
			if now.Sub(l.askedAt) < ackStreamWindow {
				l.ackApplied()
			}
			_ = nc.SetReadDeadline(now.Add(timeout))
			if err := c.rd.Fill(); err != nil {
				return fmt.Errorf("node: replication: stream: %w", err)
			}
			l.Touch()
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
		l.r.FeedFromMaster(l.txn)
		l.txn = l.txn[:0]
		if cap(l.txn) > 1<<20 {
			l.txn = nil
		}
		return nil
	}
	l.r.FeedFromMaster(raw)
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
		l.r.FeedFromMaster(raw)
	}
	l.askedAt = time.Now()
	l.sendAck()
}

// ackApplied acknowledges what the stream applied since the last ACK it
// sent (the master asked recently: see askedAt).
func (l *masterLink) ackApplied() {
	off := l.r.Offset()
	if off != l.ackedOff && len(l.txn) == 0 {
		l.ackedOff = off
		l.SendAck(off)
	}
}
