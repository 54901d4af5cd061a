// Package node implements shardnode, a Redis-protocol data server: the
// keyspace, the command table and its families, client connections, and
// the hooks persistence and replication attach to.
//
// See docs/ARCHITECTURE.md for the concurrency design: a goroutine per
// connection, a keyspace split into shards locked per command through the
// command table's key metadata, and a single ordered write feed.
package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/admin"
	"github.com/shardis/shardis/internal/node/clock"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/migrate"
	"github.com/shardis/shardis/internal/node/netio"
	"github.com/shardis/shardis/internal/node/persist"
	"github.com/shardis/shardis/internal/node/repl"
)

// Version is the Redis version shardnode reports (redis_version), chosen
// so clients and tools enable the Redis 7.0 features it implements.
const Version = "7.0.15"

// Propagator receives every write, in the order the keyspace applied them:
// replication streams and the AOF. Propagate is called with the locks of
// the written keys held, so writes to the same key arrive in execution
// order; cmds run as one atomic unit (a MULTI/EXEC block has several).
// cmds and their arguments are only valid during the call: copy to keep.
type Propagator interface {
	Propagate(db int, cmds [][][]byte)
}

// Server is one shardnode instance.
type Server struct {
	// readLoop: TCP clients are served by Client.serveLoop (always on;
	// tests switch it off to cover the plain loop).
	readLoop atomic.Bool

	cfg *Config
	log *slog.Logger
	// clk is the server's clock (WithClock; the real clock by default):
	// every point in time the node acts on comes from it (see now).
	clk clock.Clock
	dbs []*keyspace.DB
	// ks is what the databases share: the keyspace's observer (this
	// server) and its expiry mode, kept by syncExpiryMode.
	ks       *keyspace.Shared
	expiryMu sync.Mutex // serialises syncExpiryMode
	table    *commandTable
	// scripting is EVAL's and FUNCTION's state (commands_scripting.go).
	scripting scripting
	// acl holds the ACL users and the ACL LOG (aclstate.go).
	acl aclState

	listeners []net.Listener
	runID     string
	startTime time.Time

	clientsMu sync.Mutex
	clients   map[int64]*Client
	nextID    atomic.Int64

	stats serverStats

	pubsub  *pubsubHub
	watches *watchRegistry
	pause   pauseState
	perf    perfState // hot config and command clock, perf_hot.go

	// propagators are attached before Run (replication, AOF).
	propMu      sync.RWMutex
	propagators []Propagator

	// replicaMode is set while this node replicates from a master: expired
	// keys are hidden but not deleted, writes from clients are refused
	// when replica-read-only is on.
	replicaMode atomic.Bool
	loading     atomic.Bool
	// asyncLoading: a replica loads its master's payload into staging
	// databases while serving its dataset (INFO async_loading).
	asyncLoading atomic.Bool
	// loadHeld is set while a load runs under every shard lock (DEBUG
	// RELOAD): clients wait for the locks instead of getting LOADING, as
	// Redis's clients wait for its one thread.
	loadHeld atomic.Bool

	dirty     atomic.Int64 // writes since the last save
	lastSave  atomic.Int64 // unix seconds
	shutdownC chan struct{}
	// shutdownMu serialises Shutdown; shutDown is set once it succeeded
	// (a failed shutdown leaves the server running, as Redis does).
	shutdownMu sync.Mutex
	shutDown   bool
	// shuttingDown is set while Shutdown runs its hooks (HandleSignal: a
	// second SIGINT then exits at once).
	shuttingDown atomic.Bool

	slowlog admin.Slowlog
	monitor monitorHub

	// blocking holds clients blocked by BLPOP & co (blocking.go).
	blocking blockRegistry
	seq      netio.Sequencer // sequence.go

	// activeExpire can be switched off by DEBUG SET-ACTIVE-EXPIRE 0.
	activeExpire atomic.Bool
	// scriptDenyDisabled lets scripts call noscript commands (DEBUG
	// SET-DISABLE-DENY-SCRIPTS 1, for tests).
	scriptDenyDisabled atomic.Bool

	// minReplicasRefuse and masterLinkUp are set by replication: the
	// first refuses writes under min-replicas-to-write, the second tells
	// whether the link to our master is up.
	minReplicasRefuse func() bool
	masterLinkUp      func() bool

	// repl is the replication state (replication.go).
	repl *replication
	// loadRDB replaces the dataset with an RDB stream and snapshotRDB,
	// called with every shard lock held, captures the dataset and returns
	// a function that writes it as an RDB file once the locks are
	// released. Persistence sets both; replication uses them.
	loadRDB     func(r io.Reader) error
	snapshotRDB func() func(w io.Writer) error
	// blockedClients counts clients in blocking commands (INFO).
	blockedClients atomic.Int64
	// failoverState is FAILOVER's state for INFO (no-failover by default).
	failoverStateFn func() string
	// inflightWrites counts write commands past the CLIENT PAUSE check, so
	// a pause can wait for them to finish (see enterWrite).
	inflightWrites atomic.Int64
	// execPauseMu is held by an EXEC that pauses and drains the writes in
	// flight before its transaction runs (pauseBeforeExec).
	execPauseMu sync.Mutex
	// failover is the coordinated FAILOVER in progress, if any.
	failover repl.Coordinator

	// replInfo and persistInfo, when set (by replication and persistence),
	// write the fields of INFO's replication and persistence sections
	// ("name:value\r\n" lines, without the "# Section" header); nil
	// means the defaults of commands_info.go. debugHooks are extra DEBUG
	// subcommands keyed by lower-case name (DEBUG RELOAD, DEBUG OBJECT).
	replInfo    func(b *strings.Builder)
	persistInfo func(b *strings.Builder)
	debugHooks  map[string]handlerFunc
	info        infoState

	// hooks run on shutdown (save on shutdown, AOF fsync ...).
	shutdownHooks []func(ctx context.Context) error

	// persist is the RDB/AOF state (internal/node/persist, persistence.go).
	persist *persist.Persistence

	// cluster is cluster mode's state (clustermode.go); nil unless
	// cluster-enabled is yes.
	cluster *clusterMode
	// keyGuards are the keys MIGRATE is transferring (migrate.Guards;
	// migrate_guard.go is the dispatcher's side).
	keyGuards migrate.Guards
}

// Option adjusts a server New builds.
type Option func(*Server)

// WithClock makes the server read time from c instead of the real clock:
// key expiry (lazy and active), TTL replies, the client idle timeout,
// blocking-command timeouts, CLIENT PAUSE, the server and persistence
// crons, the LRU clock, slowlog and ACL LOG timestamps, TIME and INFO's
// times. Durations that measure work (a command's duration, the active
// expiry budget, the busy-script limit) and replication's timeouts stay
// on the real clock. Tests pass a *clock.Manual and advance it instead of
// sleeping; a nil c keeps the real clock.
func WithClock(c clock.Clock) Option {
	return func(s *Server) {
		if c != nil {
			s.clk = c
			s.perf.virt = c
		}
	}
}

// New builds a server from a validated configuration.
func New(cfg *Config, log *slog.Logger, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	var id [20]byte
	_, _ = rand.Read(id[:])
	s := &Server{
		cfg:       cfg,
		log:       log,
		clk:       clock.Real(),
		table:     newCommandTable(),
		runID:     hex.EncodeToString(id[:]),
		clients:   make(map[int64]*Client),
		shutdownC: make(chan struct{}),
		pubsub:    newPubsubHub(),
		watches:   newWatchRegistry(),
	}
	for _, o := range opts {
		o(s)
	}
	s.startTime = s.now()
	s.pause.Clk = s.clk
	s.activeExpire.Store(true)
	s.readLoop.Store(true)
	s.lastSave.Store(s.now().Unix())
	n := int(cfg.Int(config.DirDatabases))
	s.ks = keyspace.NewShared(ksObserver{s})
	s.pause.Changed = s.syncExpiryMode
	s.dbs = make([]*keyspace.DB, n)
	for i := range s.dbs {
		s.dbs[i] = keyspace.NewDB(s.ks, i)
	}
	if err := s.initACL(); err != nil {
		return nil, err
	}
	cfg.SetUserLines(s.aclUserLines)
	s.applyGCPercent()
	s.repl = newReplication(s)
	s.AddPropagator(s.repl)
	initPersistence(s)
	registerClusterDebug(s)
	return s, nil
}

func (s *Server) applyGCPercent() { s.tuneGC() }

// Config returns the server's live configuration.
func (s *Server) Config() *Config { return s.cfg }

// Logger returns the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// RunID returns the 40-hex-character run id (run_id in INFO).
func (s *Server) RunID() string { return s.runID }

// AddPropagator attaches a write consumer (replication, AOF).
func (s *Server) AddPropagator(p Propagator) {
	s.propMu.Lock()
	s.propagators = append(s.propagators, p)
	s.propMu.Unlock()
}

// AddShutdownHook registers fn to run on shutdown, before listeners close
// for good (SHUTDOWN's save, AOF flush).
func (s *Server) AddShutdownHook(fn func(ctx context.Context) error) {
	s.shutdownHooks = append(s.shutdownHooks, fn)
}

func (s *Server) propagate(db int, cmds [][][]byte) {
	s.propMu.RLock()
	for _, p := range s.propagators {
		p.Propagate(db, cmds)
	}
	s.propMu.RUnlock()
}

func (s *Server) hasPropagators() bool {
	s.propMu.RLock()
	defer s.propMu.RUnlock()
	return len(s.propagators) > 0
}

// propagateExpired tells replicas and the AOF that an expired key was
// deleted.
func (s *Server) propagateExpired(db int, key string) {
	if !s.hasPropagators() {
		return
	}
	s.propagate(db, [][][]byte{{[]byte("DEL"), []byte(key)}})
}

// expireDeletes reports whether lookups delete expired keys (masters) or
// only hide them (replicas, and any node during a CLIENT PAUSE, which
// stops active expiry too, as Redis does).
func (s *Server) expireDeletes() bool { return !s.replicaMode.Load() && !s.pause.On() }

// SetReplicaMode switches expiry and write handling between master and
// replica behaviour.
func (s *Server) SetReplicaMode(on bool) {
	s.replicaMode.Store(on)
	s.syncExpiryMode()
}

// syncExpiryMode tells the keyspace whether lookups delete expired keys,
// after the replica mode or a CLIENT PAUSE changed.
func (s *Server) syncExpiryMode() {
	s.expiryMu.Lock()
	s.ks.SetHideExpired(!s.expireDeletes())
	s.expiryMu.Unlock()
}

// Addr returns the address of the first listener (after Listen).
func (s *Server) Addr() net.Addr {
	if len(s.listeners) == 0 {
		return nil
	}
	return s.listeners[0].Addr()
}

// Listen opens the configured listeners. Port 0 picks a free port.
func (s *Server) Listen() error {
	port := s.cfg.Get(config.DirPort)
	for _, b := range strings.Fields(s.cfg.Get(config.DirBind)) {
		b, optional := config.BindHost(b)
		if len(s.listeners) > 0 && port == "0" {
			// A second listener would get another random port.
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(b, port))
		if err != nil {
			if optional {
				continue
			}
			s.closeListeners()
			// Redis's wording, which its test harness looks for to retry
			// on another port.
			s.log.Warn(fmt.Sprintf("Failed listening on port %s (TCP), aborting.", port), "err", err)
			return fmt.Errorf("node: listen %s: %w", net.JoinHostPort(b, port), err)
		}
		s.listeners = append(s.listeners, ln)
		if port == "0" {
			port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			_ = s.cfg.Set("port", port)
		}
	}
	if len(s.listeners) == 0 {
		return errors.New("node: no address to listen on")
	}
	// unixsocket: an extra listener after the TCP ones (Addr stays TCP).
	if path := s.cfg.Get(config.DirUnixsocket); path != "" {
		_ = os.Remove(path)
		ln, err := net.Listen("unix", path)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("node: listen on unix socket %s: %w", path, err)
		}
		s.listeners = append(s.listeners, ln)
	}
	// The cluster bus and nodes.conf come first, as in Redis's
	// clusterInit, then the dataset (RDB or AOF) before serving.
	if s.cfg.Bool(config.DirClusterEnabled) && s.cluster == nil {
		if err := s.startCluster(); err != nil {
			s.closeListeners()
			s.listeners = nil
			return err
		}
	}
	err := s.StartPersistence()
	if s.cluster != nil {
		select {
		case <-s.cluster.Loaded():
		default:
			s.cluster.DatasetLoaded()
		}
	}
	if err != nil {
		s.closeListeners()
		s.listeners = nil
		return err
	}
	return nil
}

func (s *Server) closeListeners() {
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
}

// Run serves clients until ctx ends or SHUTDOWN; it calls Listen if needed.
func (s *Server) Run(ctx context.Context) error {
	if len(s.listeners) == 0 {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	if ro := strings.Fields(s.cfg.Get(config.DirReplicaof)); len(ro) == 2 {
		if port, err := strconv.Atoi(ro[1]); err == nil {
			s.repl.becomeReplica(ro[0], port)
		}
	}
	// The first two messages read like redis-server's, which tools (and
	// Redis's own test harness) wait for.
	s.log.Info(fmt.Sprintf("shardnode version=%s, just started, PID: %d", Version, os.Getpid()))
	s.log.Info("Ready to accept connections", "addr", s.Addr().String())
	var wg sync.WaitGroup
	for _, ln := range s.listeners {
		wg.Add(1)
		go func(ln net.Listener) {
			defer wg.Done()
			s.acceptLoop(ln)
		}(ln)
	}
	cronDone := make(chan struct{})
	// Armed on the server's clock before the cron starts: with a manual
	// clock the first tick is due one period after the clock's time here.
	beat, hzT := s.cronTickers()
	go func() {
		defer close(cronDone)
		s.cron(beat, hzT)
	}()
	select {
	case <-ctx.Done():
		if s.Shutdown(context.Background()) != nil {
			// The final save failed: keep serving, as Redis does, until
			// SHUTDOWN (NOSAVE, FORCE) or a later signal (HandleSignal).
			<-s.shutdownC
		}
	case <-s.shutdownC:
	}
	s.closeListeners()
	wg.Wait()
	<-cronDone
	s.forEachClient(func(c *Client) { c.close() })
	s.log.Info("server stopped")
	return nil
}

// Shutdown runs the shutdown hooks and stops Run. If a hook fails (the
// final save could not be written) and the shutdown is not forced
// (SHUTDOWN FORCE), the shutdown is cancelled and the server keeps
// serving, as Redis's finishShutdown does; the error is returned. It is
// safe to call more than once and concurrently.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownMu.Lock()
	defer s.shutdownMu.Unlock()
	if s.shutDown {
		return nil
	}
	s.shuttingDown.Store(true)
	defer s.shuttingDown.Store(false)
	var errs []error
	for _, h := range s.shutdownHooks {
		if e := h(ctx); e != nil {
			errs = append(errs, e)
			s.log.Error("shutdown hook failed", "err", e)
		}
	}
	if err := errors.Join(errs...); err != nil && !ShutdownOptionsFrom(ctx).Force {
		s.log.Warn("Errors trying to shut down the server. Check the logs for more information.")
		return err
	}
	s.shutDown = true
	// The listeners close before SHUTDOWN's own connection does, so a
	// client that sees that connection end cannot connect any more (as
	// with redis-server, which exits before replying).
	s.closeListeners()
	if s.cluster != nil {
		s.cluster.Close() // saves nodes.conf, closes the bus
	}
	s.log.Warn("shardnode is now ready to exit, bye bye...")
	close(s.shutdownC)
	return nil
}

func (s *Server) acceptLoop(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.shutdownC:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.stats.connectionsReceived.Add(1)
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
			if ka := s.cfg.Int(config.DirTCPKeepalive); ka > 0 {
				_ = tc.SetKeepAlive(true)
				_ = tc.SetKeepAlivePeriod(time.Duration(ka) * time.Second)
			}
		}
		c := newClient(s, nc)
		if msg := s.admit(c); msg != "" {
			s.stats.rejectedConnections.Add(1)
			_, _ = nc.Write([]byte("-" + msg + "\r\n"))
			_ = nc.Close()
			continue
		}
		go c.serve()
	}
}

// admit registers a new client, or returns the error that refuses it.
// As Redis's acceptCommonHandler and clientAcceptHandler, the client
// limit is checked before protected mode (security.go).
func (s *Server) admit(c *Client) string {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if int64(len(s.clients)) >= s.cfg.Int(config.DirMaxclients) {
		return "ERR max number of clients reached"
	}
	if s.protectedModeRefuses(c.conn) {
		return protectedModeError
	}
	s.clients[c.id] = c
	s.clientAdmitted(c) // sequence.go
	return ""
}

func (s *Server) unregister(c *Client) {
	s.clientsMu.Lock()
	if r := c.raw; r != nil && s.clients[c.id] == c {
		s.stats.readsGone.Add(r.Reads())
		s.stats.writesGone.Add(r.Writes())
	}
	delete(s.clients, c.id)
	s.clientGone(c) // sequence.go
	s.clientsMu.Unlock()
}

// ioCalls returns the read and write system calls made on client
// connections since the start (INFO stats).
func (s *Server) ioCalls() (reads, writes int64) {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	reads, writes = s.stats.readsGone.Load(), s.stats.writesGone.Load()
	for _, c := range s.clients {
		if r := c.raw; r != nil {
			reads += r.Reads()
			writes += r.Writes()
		}
	}
	return reads, writes
}

// forEachClient calls fn for a snapshot of the connected clients.
func (s *Server) forEachClient(fn func(c *Client)) {
	s.clientsMu.Lock()
	list := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		list = append(list, c)
	}
	s.clientsMu.Unlock()
	for _, c := range list {
		fn(c)
	}
}

// DB returns database i (for persistence and replication code).
func (s *Server) DB(i int) *keyspace.DB { return s.dbs[i] }

// NumDBs returns the number of databases.
func (s *Server) NumDBs() int { return len(s.dbs) }

// LockAll locks every shard of every database, in order, stopping all
// keyspace access (snapshots, full syncs, FLUSHALL). UnlockAll releases.
func (s *Server) LockAll() {
	s.scripting.gate.Lock() // see scripting (commands_scripting.go)
	for _, db := range s.dbs {
		db.LockAll()
	}
}

// UnlockAll releases LockAll.
func (s *Server) UnlockAll() {
	for _, db := range s.dbs {
		db.UnlockAll()
	}
	s.scripting.gate.Unlock()
}

// cron runs the periodic work Redis does in serverCron: active expiry,
// client timeouts, statistics, and on a fixed 100 ms beat the cluster
// bus's tick (clusterCron) and the persistence cron. One timer drives
// them all at the default hz 10, so an idle node wakes the runtime ten
// times a second, not once per timer: each wake-up of an idle Go process
// costs more than the work it does. The tickers are the server clock's
// (cronTickers): a manual clock steps the cron, and each tick is marked
// handled (Ticker.Done) once its work is over.
func (s *Server) cron(beat, hzT clock.Ticker) {
	defer beat.Stop()
	var hzC <-chan time.Time // nil: the beat runs serverCron too
	if hzT != nil {
		defer hzT.Stop()
		hzC = hzT.C()
	}
	hz := cronHz(s)
	var sc serverCronState
	for {
		select {
		case <-s.shutdownC:
			return
		case now := <-beat.C():
			s.beatCron(now)
			if hzC == nil {
				s.serverCron(now, hz, &sc)
			}
			beat.Done()
		case now := <-hzC:
			s.serverCron(now, hz, &sc)
			hzT.Done()
		}
	}
}

// beatCron is the 100 ms beat's work: the cluster bus's tick (clusterCron)
// and the persistence cron.
func (s *Server) beatCron(now time.Time) {
	if cm := s.cluster; cm != nil {
		cm.Tick()
	}
	if s.persist != nil {
		s.persist.Cron(now)
	}
}

// serverCronState is what serverCron keeps between calls.
type serverCronState struct {
	lastSec, tick int64
	gcSeen        uint64 // gcCycles when tuneGC last ran (tuneGCAfterCycle)
}

// serverCron is serverCron's work at hz calls a second.
func (s *Server) serverCron(now time.Time, hz int64, sc *serverCronState) {
	if sec := now.Unix(); sec != sc.lastSec {
		sc.lastSec = sec
		sc.tick++
		s.repl.cron(now, sc.tick)
	}
	if s.activeExpire.Load() && s.expireDeletes() {
		s.activeExpireCycle(now.UnixMilli(), time.Second/time.Duration(hz)/4)
	}
	s.clientsCron(now)
	s.pause.Expire(now)
	s.syncClock()
	s.tuneGCAfterCycle(&sc.gcSeen)
}

// cronHz is the hz directive (10 when unset or invalid).
func cronHz(s *Server) int64 {
	if h := s.cfg.Int(config.DirHz); h > 0 {
		return h
	}
	return 10
}

// cronTickers arms the cron's tickers on the server's clock: the 100 ms
// beat, and a second one at hz when hz is not 10 (nil otherwise). On the
// real clock the beat is a netio.Beat, which arms no runtime timer where
// the platform allows: an idle node then sleeps in one epoll_wait that
// the beat and bus packets end, and Go's sysmon thread, which wakes at
// every runtime timer's expiry, sleeps.
func (s *Server) cronTickers() (beat, hzT clock.Ticker) {
	if s.clk == clock.Real() {
		beat = netio.NewBeatTicker(cronBeat)
	} else {
		beat = s.clk.NewTicker(cronBeat)
	}
	if period := time.Second / time.Duration(cronHz(s)); period != cronBeat {
		hzT = s.clk.NewTicker(period)
	}
	return beat, hzT
}

// cronBeat is the period of clusterCron and the persistence cron, and of
// serverCron at the default hz.
const cronBeat = 100 * time.Millisecond

// configChanged applies settings that running parts read once (limits of
// connected clients' readers, GC target).
func (s *Server) configChanged() {
	s.applyGCPercent()
	maxBulk := s.cfg.Int(config.DirProtoMaxBulkLen)
	qbuf := int(s.cfg.Int(config.DirClientQueryBufferLimit))
	s.forEachClient(func(c *Client) {
		c.rdLimits(maxBulk, qbuf)
	})
}

func (s *Server) failoverState() string {
	if s.failoverStateFn != nil {
		return s.failoverStateFn()
	}
	return "no-failover"
}
