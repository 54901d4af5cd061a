// The replica side: the link to the master.

package repl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/netio"
)

// Link states (ROLE on a replica; INFO master_link_status is "up" only in
// StateConnected).
const (
	StateConnect    = "connect"
	StateConnecting = "connecting"
	StateHandshake  = "handshake"
	StateTransfer   = "sync"
	StateConnected  = "connected"
)

// Settings are the directives the link reads, once per session.
type Settings struct {
	Timeout      time.Duration // repl-timeout
	MasterAuth   string        // masterauth
	MasterUser   string        // masteruser
	ListenPort   string        // replica-announce-port, else port
	AnnounceIP   string        // replica-announce-ip
	DisklessLoad string        // repl-diskless-load: disabled, on-empty-db or swapdb
	// Priority is sent as REPLCONF replica-priority: "0" when this
	// replica cannot be promoted; "" sends nothing.
	Priority string
	Dir      string // dir: where a received RDB is stored first
}

// ReplicaHost is what the link needs from its server. The link calls it
// without holding its own lock.
type ReplicaHost interface {
	// Settings returns the current directives.
	Settings() Settings
	// History returns the replication id and offset of this node's
	// dataset; ok is false when it has none worth a partial resync.
	History() (replid string, offset int64, ok bool)
	// ContinueWith is a partial resync the master accepted: replid is
	// the id it continues (it changed when the master was promoted).
	ContinueWith(replid string)
	// DatasetEmpty reports whether no database holds a key.
	DatasetEmpty() bool
	// LoadRDB replaces the dataset with an RDB stream (the payload was
	// received to disk first).
	LoadRDB(r io.Reader) error
	// LoadStaged loads an RDB stream into staging databases, the
	// dataset untouched (with loading, the server answers LOADING
	// meanwhile), and swaps them in once check passed.
	LoadStaged(rdb io.Reader, loading bool, check func() error) error
	// FullSynced adopts the master's history after a full resync that
	// loaded in elapsed.
	FullSynced(replid string, offset int64, elapsed time.Duration)
	// Stream applies the master's command stream from nc (br may hold its
	// first bytes) until the link fails. It calls SetState(StateConnected)
	// once the stream's client can be seen.
	Stream(nc net.Conn, br *bufio.Reader) error
	// WaitUnfrozen returns once DEBUG SLEEP is over.
	WaitUnfrozen()
}

// Link is a replica's connection to its master.
type Link struct {
	// wmu keeps each of SendAck's and SendPriority's commands whole on the
	// connection (a write the socket took in part is finished before
	// another starts).
	wmu sync.Mutex

	h    ReplicaHost
	log  *slog.Logger
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
	// closed reports whether the stream's client was closed (CLIENT KILL);
	// set by the stream.
	closed func() bool
	// readBase is the replication offset the stream started at and
	// readBytes what was read of it since (slave_read_repl_offset) while
	// streaming is set.
	readBase  int64
	readBytes atomic.Int64
	streaming atomic.Bool
	// failoverDone is set while this node hands over to its new master
	// (FAILOVER): the first PSYNC carries FAILOVER, which makes the
	// target promote itself, and its outcome is sent here once.
	failoverDone chan error
	// prioOK is set when the master accepted REPLCONF replica-priority
	// in the handshake (a shardnode master): SendPriority may then
	// repeat it on the live link.
	prioOK atomic.Bool
	// stream is the command stream's state (stream.go).
	stream streamState
	// hold is the node's hold (hold.go), nil outside cluster mode; addr
	// is host:port, the name hold knows this link's master by; quit is
	// closed by Stop (a held stream waits on it).
	hold     *Hold
	addr     string
	quit     chan struct{}
	quitOnce sync.Once
}

// NewLink returns a link to host:port in StateConnect, not yet running.
// failoverDone, if not nil, receives the outcome of a FAILOVER handshake.
func NewLink(h ReplicaHost, log *slog.Logger, host string, port int, failoverDone chan error) *Link {
	l := &Link{h: h, log: log, host: host, port: port, done: make(chan struct{}), state: StateConnect, downSince: time.Now(), failoverDone: failoverDone,
		addr: net.JoinHostPort(host, strconv.Itoa(port)), quit: make(chan struct{})}
	if hh, ok := h.(HoldHost); ok {
		l.hold = hh.ReplHold()
	}
	return l
}

// Start runs the link until Stop.
func (l *Link) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.run(ctx)
}

// Host is the master's host.
func (l *Link) Host() string { return l.host }

// Port is the master's port.
func (l *Link) Port() int { return l.port }

// Status is a link's state for INFO, ROLE and the cluster.
type Status struct {
	State               string
	LastIO, DownSince   time.Time
	SyncTotal, SyncRead int64 // a full sync's payload: announced and read bytes
}

// Status returns the link's state.
func (l *Link) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Status{l.state, l.lastIO, l.downSince, l.syncTotal, l.syncRead}
	if st.State == StateConnected && l.closed != nil && l.closed() {
		// Killed (CLIENT KILL): down at once, as Redis frees its master
		// client, not when the stream's goroutine next reads.
		st.State = StateConnect
	}
	return st
}

// SetState changes the link's state; leaving StateConnected starts the
// down time.
func (l *Link) SetState(st string) {
	l.mu.Lock()
	if st != StateConnected && l.state == StateConnected {
		l.downSince = time.Now()
	}
	l.state = st
	l.mu.Unlock()
}

// Touch records an interaction with the master (master_last_io).
func (l *Link) Touch() {
	l.mu.Lock()
	l.lastIO = time.Now()
	l.mu.Unlock()
}

// SetStreamClient tells the link how to see that the stream's client was
// closed.
func (l *Link) SetStreamClient(closed func() bool) {
	l.mu.Lock()
	l.closed = closed
	l.mu.Unlock()
}

// BeginStream starts counting the stream read from src, which begins at
// replication offset base; the returned reader counts.
func (l *Link) BeginStream(src io.Reader, base int64) io.Reader {
	l.mu.Lock()
	l.readBase = base
	l.mu.Unlock()
	l.readBytes.Store(0)
	l.streaming.Store(true)
	return &streamCounter{r: src, n: &l.readBytes}
}

// EndStream stops counting (the stream ended).
func (l *Link) EndStream() { l.streaming.Store(false) }

// ReadOffset is slave_read_repl_offset: the offset of the stream read
// from the master, applied or not; applied while not streaming.
func (l *Link) ReadOffset(applied int64) int64 {
	if l == nil || !l.streaming.Load() {
		return applied
	}
	l.mu.Lock()
	base := l.readBase
	l.mu.Unlock()
	return max(applied, base+l.readBytes.Load())
}

// SendAck sends REPLCONF ACK <offset> to the master while the link is up.
func (l *Link) SendAck(offset int64) {
	l.mu.Lock()
	nc, st := l.conn, l.state
	l.mu.Unlock()
	if nc == nil || st != StateConnected || l.hold.HeldFor(l.addr) {
		return // held: no acknowledgement (hold.go)
	}
	cmd := appendCommand(nil, "REPLCONF", "ACK", strconv.FormatInt(offset, 10))
	// Once a second on an idle replica: a write the socket takes at once
	// arms no deadline timer and wakes no second thread (netio.WriteNow).
	l.wmu.Lock()
	defer l.wmu.Unlock()
	n := netio.WriteConnNow(nc, cmd)
	if n == len(cmd) {
		return
	}
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(cmd[n:])
	_ = nc.SetWriteDeadline(time.Time{})
}

// SendPriority sends REPLCONF replica-priority <prio> on the live link, if
// the master accepted it in the handshake (a shardnode master, which does
// not reply to it on the stream's connection).
func (l *Link) SendPriority(prio string) {
	l.mu.Lock()
	nc, st := l.conn, l.state
	l.mu.Unlock()
	if nc == nil || st != StateConnected || !l.prioOK.Load() {
		return
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(appendCommand(nil, "REPLCONF", "replica-priority", prio))
	_ = nc.SetWriteDeadline(time.Time{})
}

// CloseConn closes the current connection (tests cut the link with it;
// the link reconnects).
func (l *Link) CloseConn() {
	l.mu.Lock()
	if l.conn != nil {
		_ = l.conn.Close()
	}
	l.mu.Unlock()
}

// Stop ends the link and waits for its goroutine.
func (l *Link) Stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	l.quitOnce.Do(func() { close(l.quit) })
	l.CloseConn()
	<-l.done
}

// failoverResult reports the outcome of a FAILOVER handshake, once.
func (l *Link) failoverResult(err error) {
	l.mu.Lock()
	ch := l.failoverDone
	l.failoverDone = nil
	l.mu.Unlock()
	if ch != nil {
		ch <- err
	}
}

func (l *Link) run(ctx context.Context) {
	defer close(l.done)
	defer l.failoverResult(errors.New("replication link stopped"))
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		l.h.WaitUnfrozen() // DEBUG SLEEP: no reconnection meanwhile
		if l.waitRelease() != nil {
			return // stopped while held (hold.go): no new connection
		}
		err := l.session(ctx)
		l.failoverResult(err)
		if ctx.Err() != nil {
			return
		}
		l.SetState(StateConnect)
		l.log.Warn("replication: link with master lost", "master", net.JoinHostPort(l.host, strconv.Itoa(l.port)), "err", err)
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
func (l *Link) session(ctx context.Context) error {
	l.SetState(StateConnecting)
	l.log.Info(fmt.Sprintf("Connecting to MASTER %s:%d", l.host, l.port))
	l.log.Info("MASTER <-> REPLICA sync started")
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(l.host, strconv.Itoa(l.port)))
	if err != nil {
		return fmt.Errorf("repl: connect: %w", err)
	}
	l.mu.Lock()
	l.conn = nc
	failover := l.failoverDone != nil
	l.mu.Unlock()
	defer nc.Close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	l.SetState(StateHandshake)
	br := bufio.NewReaderSize(nc, 64*1024)
	st := l.h.Settings()
	replid, offset, ok := l.h.History()
	reply, err := handshake(nc, br, st, l.log, psyncRequest{replid: replid, offset: offset, continuable: ok, failover: failover})
	if err != nil {
		return err
	}
	l.prioOK.Store(reply.prioOK)
	if failover {
		l.failoverResult(nil)
	}
	if reply.full {
		l.log.Info("Full resync from master: " + reply.replid + ":" + strconv.FormatInt(reply.offset, 10))
		if err := l.fullSync(nc, br, st, reply.replid, reply.offset); err != nil {
			return err
		}
	} else {
		l.h.ContinueWith(reply.replid)
		l.log.Info("Successful partial resynchronization with master.")
		l.log.Info("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")
	}
	_ = nc.SetDeadline(time.Time{})
	err = l.h.Stream(nc, br)
	if ctx.Err() == nil {
		l.log.Info("Connection with master lost.")
		l.log.Info("Caching the disconnected master state.")
	}
	return err
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
