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
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/resp"
)

// Master link states (ROLE on a replica).
const (
	linkConnect   = repl.StateConnect
	linkTransfer  = repl.StateTransfer
	linkConnected = repl.StateConnected
)

// masterLink is a replica's connection to its master (repl.Link) with the
// state of the command stream it applies.
type masterLink struct {
	*repl.Link
	r    *replication
	host string
	port int
	// streamC is the master client while the stream runs: stop closes
	// it, which releases a stream a CLIENT PAUSE holds (streamApplier.hold).
	streamC atomic.Pointer[Client]
}

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

// stop ends the link and waits for its goroutine. It closes the master
// client first: a stream held by CLIENT PAUSE then ends without running
// the held command, which is not in the offset (streamApplier.hold).
func (l *masterLink) stop() {
	if c := l.streamC.Load(); c != nil {
		c.close()
	}
	l.Stop()
}

// sendAck sends REPLCONF ACK <offset> to the master.
func (l *masterLink) sendAck() { l.SendAck(l.r.Offset()) }

// replicaHost is the server as the link sees it (repl.ReplicaHost).
type replicaHost struct{ l *masterLink }

var _ repl.ReplicaHost = replicaHost{}

func (h replicaHost) Settings() repl.Settings {
	s := h.l.r.srv
	port := s.cfg.Get(config.DirReplicaAnnouncePort)
	if port == "0" || port == "" {
		port = s.cfg.Get(config.DirPort)
	}
	return repl.Settings{
		Timeout:      time.Duration(s.cfg.Int(config.DirReplTimeout)) * time.Second,
		MasterAuth:   s.cfg.Get(config.DirMasterauth),
		MasterUser:   s.cfg.Get(config.DirMasteruser),
		ListenPort:   port,
		AnnounceIP:   s.cfg.Get(config.DirReplicaAnnounceIP),
		DisklessLoad: s.cfg.Get(config.DirReplDisklessLoad),
		Dir:          s.cfg.Get(config.DirDir),
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

func (h replicaHost) DatasetEmpty() bool {
	for _, db := range h.l.r.srv.dbs {
		if db.Size() != 0 {
			return false
		}
	}
	return true
}

func (h replicaHost) LoadRDB(rd io.Reader) error {
	s := h.l.r.srv
	if s.loadRDB == nil {
		return errors.New("node: replication: no RDB loader")
	}
	return s.loadRDB(rd)
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

// LoadStaged loads the master's payload into staging databases while the
// dataset stays as it is, and swaps them in once check passed (the whole
// payload was read): with loading the server answers LOADING meanwhile,
// otherwise clients keep seeing the current dataset (async_loading).
func (h replicaHost) LoadStaged(rdb io.Reader, loading bool, check func() error) error {
	s := h.l.r.srv
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
	if err := s.persist.LoadInto(rdb, staging, true); err != nil {
		s.log.Warn("Failed trying to load the MASTER synchronization DB from socket, check server logs.", "err", err)
		return fmt.Errorf("node: replication: loading the master's RDB: %w", err)
	}
	if err := check(); err != nil {
		return err
	}
	s.LockAll()
	s.snapGuardAll()
	for i, db := range s.dbs {
		db.SwapContents(staging[i])
		s.signalDBsSwapped(i, i)
	}
	s.UnlockAll()
	if s.persist != nil {
		s.persist.MarkLoaded(s.now())
	}
	return nil
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
	src = l.BeginStream(src, l.r.Offset())
	defer l.EndStream()
	// KeepRaw: each request is forwarded as read (LastRaw), so a big
	// bulk stays in the request's buffer, as Redis's master client.
	c.rd = resp.NewReader(src, resp.ReaderOptions{MaxBulkLen: 1 << 40, KeepRaw: true})
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
	l.streamC.Store(c)
	defer l.streamC.Store(nil)
	l.setState(linkConnected)
	l.Touch()
	a := &streamApplier{c: c, nc: nc, r: l.r}
	defer a.release()
	return l.RunStream(a, l.r.Master, time.Duration(s.cfg.Int(config.DirReplTimeout))*time.Second)
}

// streamApplier runs the master's stream on the master client
// (repl.Applier).
type streamApplier struct {
	c  *Client
	nc net.Conn
	r  *replication
	// counted: the request Run started counts in the server's
	// inflightWrites until the next Next or Run (by then the stream fed it
	// into the offset), so that CLIENT PAUSE's drain waits for it.
	counted bool
}

// hold waits while CLIENT PAUSE (WRITE or ALL) holds cmd, as Redis 7.0
// postpones its master client: a paused replica applies nothing that
// writes, so its offset, its REPLCONF ACKs and its answer to GETACK stay
// where the pause found them (the Sentinel's replica freeze relies on it:
// docs/ARCHITECTURE.md, "Acknowledged writes"). A request that passes
// counts as a write in flight until it is in the offset: a pause set
// meanwhile waits for it before CLIENT PAUSE replies (cmdClientPause), so
// an INFO after the pause reads the final offset. A master client closed
// while held (REPLICAOF, CLIENT KILL) ends the stream without running the
// request.
func (a *streamApplier) hold(cmd *command) error {
	a.release()
	if cmd == nil {
		return nil // unknown: executeCmd answers it
	}
	c, s := a.c, a.c.srv
	writes := func() bool {
		flags := cmd.flags
		if cmd.name == "exec" {
			flags |= c.multiFlags()
		}
		return flags&(flagWrite|flagMayReplicate) != 0
	}
	for {
		if s.pause.On() {
			s.pause.Wait(streamWaiter{pauseWaiter{c}}, writes)
		}
		if c.closed.Load() {
			return repl.ErrMasterClientClosed
		}
		if !writes() {
			return nil
		}
		s.inflightWrites.Add(1)
		if !s.pause.Holds(false, true) {
			a.counted = true
			return nil
		}
		s.inflightWrites.Add(-1)
	}
}

// release ends the count hold took.
func (a *streamApplier) release() {
	if a.counted {
		a.counted = false
		a.c.srv.inflightWrites.Add(-1)
	}
}

// streamWaiter is the master client as a pause holds its stream: not
// exempt, unlike in the dispatch checks (pauseWaiter).
type streamWaiter struct{ pauseWaiter }

func (streamWaiter) Exempt() bool { return false }

func (a *streamApplier) Next() (repl.Request, error) {
	a.release()
	c := a.c
	args, err := c.rd.Next()
	if err != nil {
		return repl.Request{}, err
	}
	cmd := c.lookupCmd(args[0])
	return repl.Request{Args: args, Raw: c.rd.LastRaw(), Cmd: cmd, Batch: keyspace.PrefetchEnabled && batchable(cmd)}, nil
}

func (a *streamApplier) Buffered() bool { return a.c.rd.Buffered() > 0 }

func (a *streamApplier) Fill(deadline time.Time) error {
	_ = a.nc.SetReadDeadline(deadline)
	return a.c.rd.Fill()
}

func (a *streamApplier) Prefetch(reqs []repl.Request) {
	c := a.c
	c.batch = c.batch[:0]
	for _, r := range reqs {
		c.batch = append(c.batch, batchReq{args: r.Args, cmd: r.Cmd.(*command)})
	}
	c.prefetchBatch(c.batch)
}

// Run executes a request. Replies are built but never sent: an error
// means the datasets diverged, which Redis logs as CRITICAL.
func (a *streamApplier) Run(req repl.Request) (bool, error) {
	c := a.c
	if c.closed.Load() {
		return false, repl.ErrMasterClientClosed
	}
	if err := a.hold(req.Cmd.(*command)); err != nil {
		return false, err
	}
	c.replyMode = replyOn
	c.executeCmd(req.Args, req.Cmd.(*command))
	if len(c.out) > 0 && c.out[0] == '-' {
		msg, _, _ := bytes.Cut(c.out[1:], []byte("\r\n"))
		c.srv.log.Warn(fmt.Sprintf("== CRITICAL == This replica is sending an error to its master: '%s' after processing the command '%s'", msg, strings.ToLower(string(req.Args[0]))))
	}
	c.out = c.out[:0]
	if int64(c.db) != a.r.streamDB.Load() {
		a.r.streamDB.Store(int64(c.db))
	}
	return c.hasFlag(clientMulti), nil
}
