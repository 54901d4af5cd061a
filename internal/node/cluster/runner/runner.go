// Package runner runs a cluster.Machine against the real world: it owns
// the cluster bus sockets (a listener on the bus port, the outbound link
// the machine asks for to each node, the inbound links peers open), the
// nodes.conf file and its lock, and the clock.
//
// The machine is guarded by one mutex, as Redis's event loop owns its
// clusterState: whoever holds it feeds the machine one input (a decoded
// packet, a link that connected or broke, a connection accepted, a tick,
// an operator's command run through Do) and then carries out the
// machine's Ready in Redis's clusterBeforeSleep order before letting go.
// A loop goroutine takes the inputs that arrive on channels; Do runs on
// its caller's goroutine, so a CLUSTER command costs no hand-off to
// another goroutine and back.
//
// nodes.conf: every save is written outside the machine's lock, by a
// goroutine that takes fileMu, renders the newest state under the lock,
// lets go of it and writes, so one write covers every change rendered
// into it and the file never goes back to an older text. A Ready that
// asks for an fsync (an epoch, a vote, a slot rebound by a newer config
// epoch) makes its save the durable save pending; from then on every
// packet any batch queues is held, in order, until a text at least that
// new is durable (confFile.saveDurable: its journal record written and
// fdatasynced, then nodes.conf rewritten in place without a sync; a
// start loads the journal's newest valid record, see readConfig). The
// fdatasync is a group commit (flushDurable): durable saves requested
// while one is syncing are covered by the next sync, whose text holds all
// their changes; it runs without fileMu, so saves without fsync are
// written during it (the journal's third slot). So what a packet
// announces is on disk first, exactly: a packet is queued only once
// every durable save requested up to its batch is durable
// (FAILOVER_AUTH_ACK leaves after lastVoteEpoch is fdatasynced, a
// promotion's or an import's PONG after the new config epoch is), and a
// failed durable save releases none of them. Do returns once its own
// save is written and every durable save of the node's own changes
// pending at its step is durable: a CLUSTER command's reply never
// reflects a change of the node's own that a crash can take back. It
// does not wait for the durable save of what the node learned from a
// peer's durable claim (Ready.FsyncLearned: a slot rebound to a newer
// config epoch), which only the packets wait for; see Do. The durable
// save of a batch from the loop (a packet, a tick) is
// written by a saver goroutine, so no input waits for the disk, and
// neither does Do's step (only its return). Do queues its Ready's
// packets after its save, and Hold keeps every packet back until a
// command's reply is on its way (see Do and Hold). Reading and writing
// the sockets happens in per-link goroutines, so a slow peer never
// stalls the machine: a link whose unsent bytes pass
// cluster-link-sendbuf-limit is closed, as Redis frees it.
package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// Options configures a Runner. Zero values mean the documented default.
type Options struct {
	// ListenAddrs are the "ip:port" addresses the bus listens on (the
	// node's bind addresses with the bus port). Required. An address
	// written "-ip:port" is optional, as in bind: it is skipped when it
	// cannot be listened on.
	ListenAddrs []string
	// ConfigFile is the path of nodes.conf (cluster-config-file). Start
	// locks it (through ConfigFile+".lock"), loads it into the machine
	// when it exists and is not empty, and Ready's SaveConfig rewrites it.
	// Empty: nothing is saved (tests).
	ConfigFile string
	// SendBufLimit is cluster-link-sendbuf-limit in bytes: a link whose
	// unsent data would exceed it is closed. Default 0: no limit.
	// SetSendBufLimit changes it on a running runner (CONFIG SET).
	SendBufLimit int64
	// DialTimeout bounds one connection attempt to a peer's bus port.
	// Default 1 s; the machine reconnects on a later tick.
	DialTimeout time.Duration
	// TickInterval is how often the runner's own timer runs Tick, until
	// the owner calls Runner.Tick. Default 100 ms (clusterCron runs 10
	// times a second).
	TickInterval time.Duration
	// MaxPacket bounds the length a peer may announce for one packet;
	// a larger one closes the link. Default 512 MB + 64 kB (a PUBLISH of
	// a proto-max-bulk-len message).
	MaxPacket int
	// Clock returns the current time. Default time.Now.
	Clock func() time.Time
	// OnReady is called with the machine's lock held after every batch's
	// Ready has been carried out (links opened and closed, packets queued
	// or held; a durable save it asked for may still be syncing, see
	// carryOut), with the machine, so the caller
	// can apply RoleChange, SlotsChanged, StateChanged and Deliveries and
	// read the machine to rebuild what it shows clients. It runs on the
	// loop's goroutine or on Do's caller's; it must not block and must not
	// call Do.
	OnReady func(m *cluster.Machine, rd *cluster.Ready)
	// Logger receives link and file errors. Default slog.Default().
	Logger *slog.Logger
}

// Stats are the runner's counters, read with Runner.Stats.
type Stats struct {
	BytesSent, BytesReceived     int64
	PacketsSent, PacketsReceived int64
	// BufferLimitExceeded counts links closed for passing SendBufLimit
	// (total_cluster_links_buffer_limit_exceeded).
	BufferLimitExceeded int64
	// BadPackets counts packets dropped by the codec.
	BadPackets int64
	// DurableSaves counts the Readies that asked for an fsynced
	// nodes.conf save; Syncs counts the journal's fdatasyncs (also the
	// start's and the first save's), so a Syncs below DurableSaves shows
	// durable saves covered by another's sync (group commit, see
	// flushDurable).
	DurableSaves, Syncs int64
}

// LinkBuffer is one link's send buffer, for CLUSTER LINKS.
type LinkBuffer struct {
	Allocated, Used int
	// Connected is false while an outbound link is still connecting.
	Connected bool
}

// Runner drives one machine. Create it with Start.
type Runner struct {
	// mu guards the machine, links, encBuf and closed: it is held for
	// every input and its Ready.
	mu     sync.Mutex
	m      *cluster.Machine
	closed bool
	opt    Options
	log    *slog.Logger
	lock   *os.File

	// saveGen counts the Readies that asked for a save (written under
	// mu); writtenGen is the saveGen of the newest text on disk, durableGen
	// that of the newest text whose journal record is fdatasynced (written
	// under fileMu and mu), and durWant the saveGen of the newest Ready
	// that asked for an fsync (written under mu): a durable save is
	// pending while durWant > durableGen. A save takes fileMu, then
	// renders the newest state under mu and lets go of mu before it
	// writes, so mu is never held across the disk, and fileMu is never
	// taken with mu held.
	saveGen, writtenGen atomic.Uint64
	durableGen, durWant atomic.Uint64
	durableSaves        atomic.Int64
	// durOwn is the saveGen of the newest Ready that asked for an fsync
	// of a change of the node's own (not Ready.FsyncLearned): what Do's
	// reply waits for besides its own save.
	durOwn atomic.Uint64
	// syncMu serialises the durable saves (flushDurable) and Close's
	// last save: at most one journal record is being fdatasynced, and
	// fileMu is let go during that sync. Order: syncMu, fileMu, mu.
	syncMu sync.Mutex
	fileMu sync.Mutex
	conf   confFile
	// confDone is set (under fileMu) once Close saved for the last time:
	// no save writes after it.
	confDone bool
	// saveKick wakes the saver for the loop's own saves.
	saveKick chan struct{}
	saverWG  sync.WaitGroup

	events chan event
	ops    chan op
	quit   chan struct{}
	done   chan struct{}

	listeners []net.Listener
	wg        sync.WaitGroup

	// links is guarded by mu; bufMu guards the buffer figures
	// mirrored into bufs for LinkBuffers.
	links map[cluster.LinkID]*link
	bufMu sync.Mutex
	bufs  map[cluster.LinkID]*link

	bytesSent, bytesRecv   atomic.Int64
	pktsSent, pktsRecv     atomic.Int64
	limitExceeded, badPkts atomic.Int64
	// sendBufLimit is the current cluster-link-sendbuf-limit, read by the
	// loop at every send (Options.SendBufLimit at start).
	sendBufLimit atomic.Int64

	// external is set by the first Tick: the owner drives the clock.
	external atomic.Bool

	closeOnce sync.Once
	encBuf    []byte
	// released dedupes the messages carryOut gives back (under mu).
	released map[*cluster.Msg]struct{}

	// holds counts the holders of the send hold (guarded by mu): while it
	// is above zero, every packet a batch queues is appended to held, in
	// order, instead of going to its link; so is every packet queued
	// while a durable save is pending or while held is not empty. held
	// goes out in order, as far as durableGen covers each packet's need,
	// once no hold remains (releaseHeld). See Do and Hold.
	holds   int
	held    []heldPacket
	heldBuf []byte
}

// heldPacket is one packet kept back by the send hold or a pending
// durable save: heldBuf[start:end] for link l (queued to it on release
// only if it is still the link's record), which may leave once the save
// of generation need is durable (0: none pending when it was queued).
type heldPacket struct {
	l          *link
	id         cluster.LinkID
	start, end int
	need       uint64
}

// ErrConfigLocked is returned by Start when another process holds the
// nodes.conf lock. Its text is Redis's.
var ErrConfigLocked = errors.New("runner: Sorry, the cluster configuration file is already used by a different Redis Cluster node. Please make sure that different nodes use different cluster configuration files.")

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("runner: closed")

type eventKind int

const (
	evAccepted eventKind = iota
	evDialed
	evBroken
)

type event struct {
	kind eventKind
	id   cluster.LinkID
	conn net.Conn
	err  error
	gen  *link // the link record the event belongs to
}

type op struct {
	fn func(m *cluster.Machine, now time.Time)
}

// Start locks and loads nodes.conf into m (when it exists and is not
// empty), listens on the bus addresses and starts the loop. The machine
// belongs to the runner from then on: touch it only inside Do or OnReady.
func Start(m *cluster.Machine, opt Options) (*Runner, error) {
	if len(opt.ListenAddrs) == 0 {
		return nil, errors.New("runner: no bus listen address")
	}
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = time.Second
	}
	if opt.TickInterval <= 0 {
		opt.TickInterval = 100 * time.Millisecond
	}
	if opt.MaxPacket <= 0 {
		opt.MaxPacket = 512<<20 + 64<<10
	}
	if opt.Clock == nil {
		opt.Clock = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	r := &Runner{
		released: map[*cluster.Msg]struct{}{},
		m:        m, opt: opt, log: opt.Logger,
		events:   make(chan event, 1024),
		ops:      make(chan op, 256),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		links:    map[cluster.LinkID]*link{},
		bufs:     map[cluster.LinkID]*link{},
		saveKick: make(chan struct{}, 1),
	}
	r.conf.path = opt.ConfigFile
	r.sendBufLimit.Store(opt.SendBufLimit)
	if opt.ConfigFile != "" {
		if err := r.loadConfig(); err != nil {
			return nil, err
		}
	}
	for _, a := range opt.ListenAddrs {
		optional := strings.HasPrefix(a, "-")
		a = strings.TrimPrefix(a, "-")
		l, err := net.Listen("tcp", a)
		if err != nil && optional {
			continue
		}
		if err != nil {
			r.closeListeners()
			r.unlock()
			return nil, fmt.Errorf("runner: listen on bus %s: %w", a, err)
		}
		r.listeners = append(r.listeners, l)
	}
	if len(r.listeners) == 0 {
		r.unlock()
		return nil, errors.New("runner: no bus address could be listened on")
	}
	for _, l := range r.listeners {
		r.wg.Add(1)
		go r.accept(l)
	}
	r.saverWG.Add(1)
	go r.saver()
	go r.loop()
	return r, nil
}

// loadConfig takes the lock and feeds an existing nodes.conf to the
// machine.
func (r *Runner) loadConfig() error {
	f, err := os.OpenFile(r.opt.ConfigFile+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("runner: open cluster config lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w (%s)", ErrConfigLocked, r.opt.ConfigFile)
		}
		return fmt.Errorf("runner: lock cluster config: %w", err)
	}
	r.lock = f
	text, fallback, err := readConfig(r.opt.ConfigFile)
	if err != nil {
		r.unlock()
		return err
	}
	if text == "" {
		return nil // a new node: the machine asked to save already
	}
	err = r.m.LoadNodesConf(r.opt.Clock(), text)
	if err != nil && fallback != "" && r.m.LoadNodesConf(r.opt.Clock(), fallback) == nil {
		r.log.Warn("cluster: nodes.conf does not parse, loaded the last fsynced save from its journal", "file", r.opt.ConfigFile, "err", err)
		err = nil
	}
	if err != nil {
		r.unlock()
		return fmt.Errorf("runner: load %s: %w", r.opt.ConfigFile, err)
	}
	return nil
}

func (r *Runner) unlock() {
	if r.lock != nil {
		r.lock.Close() // releases the flock
		r.lock = nil
	}
}

func (r *Runner) closeListeners() {
	for _, l := range r.listeners {
		l.Close()
	}
}

// Do runs fn with the machine and the current time on the caller's
// goroutine, under the machine's lock, carries out the Ready it leaves,
// and returns once a nodes.conf save that Ready asked for is written and
// every durable save of the node's own changes pending when it ran (its
// own, when the Ready asked for an fsync, and any other batch's before
// it: an epoch, a vote, a promotion) is durable. Guarantee: what a
// CLUSTER command changed is written (a process crash keeps it; a power
// loss may take back a change Redis saves without fsync too, such as
// SETSLOT NODE's), and no change of the node's own that must survive a
// crash, made up to its step, can be taken back once it replied (but for
// a save that fails, which is logged as an error: Redis exits there).
// What the node learned from a peer's durable claim (a slot rebound to
// a node announcing a newer config epoch, that node's epoch) may show in
// a reply while its fdatasync runs, as it does on the data path
// (carryOut): a crash that takes it back is undone by the claimant's
// next packet, and the packets that would spread it wait for the sync.
// Redis's reply comes after any such fsync of its event-loop iteration;
// shardnode's SETSLOT NODE on a source whose slot a PONG just rebound
// replies after its own save's write instead of after the PONG's
// fdatasync. The lock is not held across the disk:
// other inputs, and other Do calls, run their steps while the save is
// written. The packets of the Ready are queued after the save is
// written, as Redis's clusterBeforeSleep saves nodes.conf before any
// cluster link output of the event-loop iteration is written: a peer
// never learns of a change before the node that made it has written it
// (packets other inputs queue meanwhile wait behind them, in order; see
// Hold).
func (r *Runner) Do(fn func(m *cluster.Machine, now time.Time)) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	r.holds++
	fn(r.m, r.opt.Clock())
	gen := r.carryOut()
	need := r.durOwn.Load()
	if need <= r.durableGen.Load() {
		need = 0
	}
	if gen == 0 && need == 0 {
		r.unhold()
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	if need == 0 || r.flushDurable(need) {
		r.flushConfig(gen)
	}
	r.mu.Lock()
	r.unhold()
	r.mu.Unlock()
	return nil
}

// Hold keeps every packet the machine's batches queue from now on back,
// in order, until the release function it returns is called (once; later
// calls do nothing): a CLUSTER command holds the packets of its change
// until its reply is written, as Redis writes a command's reply in
// beforeSleep, before the cluster link output of the same event-loop
// iteration (SETSLOT NODE's broadcast PONG then reaches the other masters
// after redis-cli had the reply, as with redis-server). Holds nest; the
// last release queues what was held. The holder must release without
// waiting on anything that may not come (a peer, a client's reads).
func (r *Runner) Hold() (release func()) {
	r.mu.Lock()
	r.holds++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.unhold()
			r.mu.Unlock()
		})
	}
}

// unhold lets go of one hold (mu held) and queues the held packets that
// may leave when it was the last.
func (r *Runner) unhold() {
	r.holds--
	r.releaseHeld()
}

// releaseHeld queues, in order, the held packets whose durable save is
// done, up to the first whose save is still pending, when no hold
// remains (mu held). What is left stays held, in order.
func (r *Runner) releaseHeld() {
	if r.holds > 0 || len(r.held) == 0 {
		return
	}
	durable := r.durableGen.Load()
	n := 0
	for ; n < len(r.held) && r.held[n].need <= durable; n++ {
		h := r.held[n]
		if r.links[h.id] != h.l {
			continue // closed meanwhile: its packets go with it
		}
		r.send(h.l, h.id, r.heldBuf[h.start:h.end])
	}
	if n < len(r.held) {
		// A durable save is still pending: keep the rest, moved to the
		// front so that heldBuf does not grow without bound.
		off := r.held[n].start
		m := copy(r.held, r.held[n:])
		r.held = r.held[:m]
		for i := range r.held {
			r.held[i].start -= off
			r.held[i].end -= off
		}
		r.heldBuf = r.heldBuf[:copy(r.heldBuf, r.heldBuf[off:])]
		return
	}
	r.held = r.held[:0]
	r.heldBuf = r.heldBuf[:0]
	if cap(r.heldBuf) > 1<<20 {
		r.heldBuf = nil
	}
}

// send queues one encoded packet to link l (mu held), closing the link
// when it passes cluster-link-sendbuf-limit.
func (r *Runner) send(l *link, id cluster.LinkID, pkt []byte) {
	if !l.queue(pkt, r.sendBufLimit.Load()) {
		r.limitExceeded.Add(1)
		r.log.Warn("cluster: link send buffer over cluster-link-sendbuf-limit, closing it", "link", id)
		r.dropLink(l)
		r.m.LinkDown(r.opt.Clock(), id)
		return
	}
	r.pktsSent.Add(1)
}

// Post runs fn like Do from the loop's goroutine, without waiting for it
// (PUBLISH's broadcast); functions posted run in the order posted. It
// reports false after Close.
func (r *Runner) Post(fn func(m *cluster.Machine, now time.Time)) bool {
	select {
	case r.ops <- op{fn: fn}:
		return true
	case <-r.done:
		return false
	}
}

// Tick runs the machine's Tick on the caller's goroutine, under the
// machine's lock, and hands the clock to the caller: the runner's own
// timer stops at the first Tick, and from then on the machine ticks when
// the owner calls Tick, as Redis's serverCron calls clusterCron
// (shardnode's cron does, so an idle node wakes once per period for all
// its periodic work, not once per timer, and no other goroutine is woken
// for it). A save the tick asks for is left to the saver goroutine.
func (r *Runner) Tick() {
	r.external.Store(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.m.Tick(r.opt.Clock())
	r.carryOutLoop()
}

// Close stops the loop, closes every link and listener, saves nodes.conf
// one last time (durably: a durable save still pending is covered by it,
// and one in progress is waited for) and releases its lock.
func (r *Runner) Close() {
	r.closeOnce.Do(func() {
		close(r.quit)
		<-r.done
		r.mu.Lock()
		r.closed = true
		r.closeListeners()
		for _, l := range r.links {
			l.close()
		}
		r.mu.Unlock()
		r.wg.Wait()
		r.saverWG.Wait()
		if r.opt.ConfigFile != "" {
			r.syncMu.Lock() // a durable save's sync in flight ends first
			defer r.syncMu.Unlock()
			r.fileMu.Lock()
			r.mu.Lock()
			text, g := r.m.RenderNodesConf(), r.saveGen.Load()
			r.mu.Unlock()
			if err := r.conf.saveAtClose(text); err != nil {
				r.log.Warn("cluster: saving nodes.conf at shutdown", "err", err)
			} else {
				r.wrote(g)
				r.mu.Lock()
				r.durableGen.Store(g)
				r.mu.Unlock()
			}
			r.confDone = true
			r.conf.close()
			r.fileMu.Unlock()
			st := r.Stats()
			r.log.Debug("cluster: nodes.conf saves", "durable_saves", st.DurableSaves, "syncs", st.Syncs)
		}
		r.unlock()
	})
}

// SetSendBufLimit sets cluster-link-sendbuf-limit (bytes, 0: none) for
// the packets queued from now on, as CONFIG SET does in Redis.
func (r *Runner) SetSendBufLimit(n int64) { r.sendBufLimit.Store(n) }

// SendBufLimit returns the current cluster-link-sendbuf-limit.
func (r *Runner) SendBufLimit() int64 { return r.sendBufLimit.Load() }

// Stats returns the runner's counters.
func (r *Runner) Stats() Stats {
	return Stats{
		BytesSent: r.bytesSent.Load(), BytesReceived: r.bytesRecv.Load(),
		PacketsSent: r.pktsSent.Load(), PacketsReceived: r.pktsRecv.Load(),
		BufferLimitExceeded: r.limitExceeded.Load(), BadPackets: r.badPkts.Load(),
		DurableSaves: r.durableSaves.Load(), Syncs: r.conf.syncs.Load(),
	}
}

// LinkBuffers returns the send buffer of every open link.
func (r *Runner) LinkBuffers() map[cluster.LinkID]LinkBuffer {
	r.bufMu.Lock()
	defer r.bufMu.Unlock()
	out := make(map[cluster.LinkID]LinkBuffer, len(r.bufs))
	for id, l := range r.bufs {
		l.mu.Lock()
		out[id] = LinkBuffer{Allocated: cap(l.out), Used: len(l.out), Connected: l.conn != nil && !l.closed}
		l.mu.Unlock()
	}
	return out
}

// loop feeds the machine the inputs that arrive on channels: link
// events (accepted, connected, broken), its own timer until Tick takes over, and Post's
// functions.
func (r *Runner) loop() {
	defer close(r.done)
	own := time.NewTicker(r.opt.TickInterval)
	defer own.Stop()
	ownC := own.C // nil once Tick took over
	// The machine may have work from New or LoadNodesConf (save the
	// config of a new node).
	r.mu.Lock()
	r.carryOutLoop()
	r.mu.Unlock()
	for {
		select {
		case <-r.quit:
			return
		case ev := <-r.events:
			r.mu.Lock()
			r.handle(ev)
			// Take what else is there before carrying out the batch.
			for n := 0; n < 256; n++ {
				select {
				case ev = <-r.events:
					r.handle(ev)
					continue
				default:
				}
				break
			}
			r.carryOutLoop()
			r.mu.Unlock()
		case <-ownC:
			r.mu.Lock()
			// Checked under the lock: after Tick returned, the own timer
			// never reads the clock again.
			if r.external.Load() {
				r.mu.Unlock()
				own.Stop()
				ownC = nil
				continue
			}
			r.m.Tick(r.opt.Clock())
			r.carryOutLoop()
			r.mu.Unlock()
		case o := <-r.ops:
			r.mu.Lock()
			o.fn(r.m, r.opt.Clock())
			r.carryOutLoop()
			r.mu.Unlock()
		}
	}
}

// carryOutLoop is carryOut for the loop's inputs (mu held): a save it
// asks for, durable or not, is left to the saver goroutine, which is
// also kicked while a durable save is pending (after a failed one, the
// next batch retries it).
func (r *Runner) carryOutLoop() {
	if r.carryOut() != 0 || r.durWant.Load() > r.durableGen.Load() {
		select {
		case r.saveKick <- struct{}{}:
		default: // a kick is pending: its save renders the newest state
		}
	}
}

// saver writes nodes.conf for the loop's saves, one write per kick
// covering every change made until it renders: the durable save pending,
// if any (which releases the packets held for it), else a save without
// fsync.
func (r *Runner) saver() {
	defer r.saverWG.Done()
	for {
		select {
		case <-r.saveKick:
			r.saveLoopState()
		case <-r.quit:
			return
		}
	}
}

// saveLoopState makes the loop's saves: durable ones until none is
// pending (those requested during one sync are covered by the next), then
// the newest state without fsync when no durable save wrote it. After a
// failed durable save it stops: the next kick tries again.
func (r *Runner) saveLoopState() {
	for {
		w := r.durWant.Load()
		if w <= r.durableGen.Load() {
			break
		}
		if !r.flushDurable(w) {
			return
		}
	}
	r.flushConfig(r.saveGen.Load())
}

func (r *Runner) handle(ev event) {
	now := r.opt.Clock()
	switch ev.kind {
	case evAccepted:
		peer, local := hostOf(ev.conn.RemoteAddr()), hostOf(ev.conn.LocalAddr())
		id := r.m.Accepted(now, peer, local)
		l := r.newLink(id)
		l.mu.Lock()
		l.conn = ev.conn
		l.mu.Unlock()
		r.startIO(l)
	case evDialed:
		l := r.links[ev.id]
		if l == nil || l != ev.gen {
			if ev.conn != nil {
				ev.conn.Close()
			}
			return
		}
		if ev.err != nil {
			r.dropLink(l)
			r.m.LinkDown(now, ev.id)
			return
		}
		l.mu.Lock()
		l.conn = ev.conn
		l.mu.Unlock()
		r.startIO(l)
		r.m.LinkUp(now, ev.id)
	case evBroken:
		l := r.links[ev.id]
		if l == nil || l != ev.gen {
			return
		}
		r.dropLink(l)
		r.m.LinkDown(now, ev.id)
	}
}

// carryOut performs the machine's Ready (mu held): closes, connects,
// sends, then OnReady. A save is only counted: carryOut returns its
// generation (0: nothing to save), which the caller passes to
// flushConfig once it has let go of mu; a Ready that asks for an fsync
// also makes its generation the durable save pending (durWant), and
// every packet queued from then until that save is durable is held
// (heldPacket.need), so what a packet announces is on disk first.
//
// OnReady runs here, before a pending durable save is done: the data
// path may see the new routing or role up to one fdatasync before it is
// durable, as Redis's clients of the same event-loop iteration see it
// (their replies wait for beforeSleep; the data path's here do not).
// What that exposes is bounded: a slot rebound to a node with a newer
// config epoch is that node's durable claim (it fdatasynced it before
// announcing it), which a restarted node learns again from it; a change
// of the node's own (a promotion's epoch, an import's bump) is announced
// to nobody before it is durable, so a crash in the window takes it back
// with only what a master's crash loses anyway, writes no replica
// acknowledged (a replica follows the new master only on its announced
// packets).
func (r *Runner) carryOut() uint64 {
	rd := r.m.Ready()
	var gen uint64
	if rd.SaveConfig && r.opt.ConfigFile != "" {
		gen = r.saveGen.Add(1)
		if rd.Fsync {
			r.durWant.Store(gen)
			r.durableSaves.Add(1)
			if !rd.FsyncLearned {
				r.durOwn.Store(gen)
			}
		}
	}
	need := r.durWant.Load()
	if need <= r.durableGen.Load() {
		need = 0
	}
	for _, id := range rd.Closes {
		if l := r.links[id]; l != nil {
			r.dropLink(l)
		}
	}
	for _, c := range rd.Connects {
		l := r.newLink(c.Link)
		r.wg.Add(1)
		go r.dial(l, net.JoinHostPort(c.IP, strconv.Itoa(c.CPort)))
	}
	for _, s := range rd.Sends {
		l := r.links[s.Link]
		if l == nil || l.conn == nil {
			continue
		}
		if r.holds > 0 || need > 0 || len(r.held) > 0 {
			start := len(r.heldBuf)
			r.heldBuf = cluster.AppendMsg(r.heldBuf, s.Msg)
			r.held = append(r.held, heldPacket{l: l, id: s.Link, start: start, end: len(r.heldBuf), need: need})
			continue
		}
		r.encBuf = cluster.AppendMsg(r.encBuf[:0], s.Msg)
		r.send(l, s.Link, r.encBuf)
	}
	r.releaseHeld()
	if r.opt.OnReady != nil {
		r.opt.OnReady(r.m, &rd)
	}
	// Encoded above: give the messages back, each once (a broadcast sends
	// one message on every link).
	for _, s := range rd.Sends {
		if _, seen := r.released[s.Msg]; s.Msg != nil && !seen {
			r.released[s.Msg] = struct{}{}
			cluster.ReleaseMsg(s.Msg)
		}
	}
	clear(r.released)
	return gen
}

// wrote records that the text of generation gen is on disk (fileMu held).
func (r *Runner) wrote(gen uint64) {
	if gen > r.writtenGen.Load() {
		r.writtenGen.Store(gen)
	}
}

// flushConfig returns once nodes.conf holds a text at least as new as
// save generation gen, writing it when no other save did already (mu not
// held; gen 0: nothing to do). The writer takes fileMu, then renders the
// newest state under mu, so the file is written by one goroutine at a
// time, never goes back to an older text, and one write covers every
// change made before it.
func (r *Runner) flushConfig(gen uint64) {
	if gen == 0 || r.writtenGen.Load() >= gen {
		return
	}
	r.fileMu.Lock()
	defer r.fileMu.Unlock()
	if r.writtenGen.Load() >= gen || r.confDone {
		return
	}
	r.mu.Lock()
	text, g := r.m.RenderNodesConf(), r.saveGen.Load()
	r.mu.Unlock()
	err := r.conf.saveInPlace(text)
	if err != nil {
		// No file yet, or it cannot be written in place: the atomic path.
		err = r.conf.saveAtomic(text)
	}
	if err != nil {
		r.log.Error("cluster: can't update cluster config file", "file", r.opt.ConfigFile, "err", err)
		return
	}
	r.wrote(g)
}

// flushDurable returns once the journal holds, fdatasynced, a text at
// least as new as save generation need, and reports whether it does (mu
// not held). It is the group commit: the goroutine that gets fileMu
// renders the newest state under mu, lets go of mu, and writes and
// fdatasyncs it (confFile.saveDurable), so one fdatasync covers every
// change rendered into its text, and the saves requested during it wait
// for at most one more. The machine's lock is free meanwhile: other
// inputs run their steps, and the packets they queue wait in held. Once
// the record is durable, durableGen advances under mu and the held
// packets it covers go out, in order (releaseHeld), unless a hold
// remains. A failed save is logged as an error and releases nothing:
// the packets that announce its state stay held, and the next save
// tries again.
func (r *Runner) flushDurable(need uint64) bool {
	if r.durableGen.Load() >= need {
		return true
	}
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	r.fileMu.Lock()
	defer r.fileMu.Unlock()
	if r.durableGen.Load() >= need {
		return true
	}
	if r.confDone {
		return false
	}
	r.mu.Lock()
	text, g := r.m.RenderNodesConf(), r.saveGen.Load()
	r.mu.Unlock()
	d, err := r.conf.beginDurable(text)
	if err == nil {
		r.wrote(g)
		if !d.done {
			// The sync runs without fileMu: saves without fsync (a
			// CLUSTER command's own save, the loop's) are written
			// meanwhile into the journal's free slot and nodes.conf.
			r.fileMu.Unlock()
			serr := d.sync()
			r.fileMu.Lock()
			err = r.conf.endDurable(d, serr)
		}
	}
	if err != nil {
		// Redis exits here ("Fatal: can't update cluster config
		// file."): a node that cannot persist a vote or an epoch must
		// not go on announcing it, so what was held for it stays held.
		r.log.Error("cluster: can't update cluster config file", "file", r.opt.ConfigFile, "err", err)
		return false
	}
	r.mu.Lock()
	r.durableGen.Store(g)
	r.releaseHeld()
	r.mu.Unlock()
	return true
}

func (r *Runner) accept(ln net.Listener) {
	defer r.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		select {
		case r.events <- event{kind: evAccepted, conn: c}:
		case <-r.quit:
			c.Close()
			return
		}
	}
}

func (r *Runner) dial(l *link, addr string) {
	defer r.wg.Done()
	c, err := net.DialTimeout("tcp", addr, r.opt.DialTimeout)
	if err == nil {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
	}
	select {
	case r.events <- event{kind: evDialed, id: l.id, conn: c, err: err, gen: l}:
	case <-r.quit:
		if c != nil {
			c.Close()
		}
	}
}

func hostOf(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		if v4 := t.IP.To4(); v4 != nil {
			return v4.String()
		}
		return t.IP.String()
	}
	h, _, _ := net.SplitHostPort(a.String())
	return h
}
