package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrCrossSlot is returned for a command or transaction whose keys hash
// to different slots; it is go-redis's error (Redis's CROSSSLOT text), so
// errors.Is works with either package's name for it.
var ErrCrossSlot = redis.ErrCrossSlot

// ErrClosed is returned by commands after [Client.Close].
var ErrClosed = errors.New("cluster: client is closed")

// Stats counts what the client did to follow the cluster.
type Stats struct {
	// Refreshes is the number of slot map reads from the cluster (CLUSTER
	// SLOTS replies, each with CLUSTER NODES where the node answers it),
	// the start-up read included.
	Refreshes int64
	// RefreshErrors is the number of refreshes in which no node answered.
	RefreshErrors int64
	// Moved is the number of MOVED replies the client received.
	Moved int64
	// Patched is the number of slots moved in the local map because of a
	// MOVED reply, without a refresh.
	Patched int64
	// Direct is the number of commands sent straight to a slot's new
	// master because go-redis's routing state had not caught up yet.
	Direct int64
	// ConnErrors is the number of refused or reset connections to
	// masters, each of which asks for an immediate refresh.
	ConnErrors int64
	// Rebuilds is the number of times go-redis rebuilt its routing state
	// from the client's slot map (a local copy, no network request).
	Rebuilds int64
	// Pushes is the number of topology notices received from watched
	// nodes (see ReservedChannel).
	Pushes int64
	// Stale is the number of slots for which a refresh named an owner
	// with a config epoch no higher than the one the map holds (a node
	// that had not heard of a newer move yet); the map kept its owner.
	Stale int64
}

// Client is a Redis Cluster client: a go-redis ClusterClient (embedded,
// so the whole [redis.Cmdable] surface, Pipeline, TxPipeline, Watch and
// the pub/sub methods are there) whose slot map is kept by this package.
// It is safe for concurrent use.
type Client struct {
	*redis.ClusterClient

	opt Options

	// refreshMu makes refreshes (the loop's and RefreshNow's) run one at
	// a time.
	refreshMu sync.Mutex
	// mu serialises slot map writers (MOVED patches and refreshes).
	mu    sync.Mutex
	table atomic.Pointer[slotTable]
	// pending holds slots whose master changed in the table but that
	// go-redis's routing state may not reflect yet (it rebuilds from the
	// table asynchronously, with a 200 ms cooldown); value: new master.
	pending  map[int]string
	npending atomic.Int32
	// slotEpochs holds, per slot, the config epoch of the claim that gave
	// the map the slot's owner (a refresh's CLUSTER NODES, a notice's
	// config-epoch; see epochs.go); nil until a refresh or notice carries
	// one. Guarded by mu.
	slotEpochs []ownerEpoch
	// nodeEpochs is the config epoch of each master by address, from the
	// last refresh that had them, raised by notices: a lower bound of the
	// node's config epoch now, which a MOVED to it keeps for the slot.
	// Guarded by mu.
	nodeEpochs map[string]uint64

	// nodes maps an address to go-redis's client for that node.
	nodes sync.Map

	// refresh requests: wake is a one-slot doorbell; the flags say which
	// kind was asked for since the last refresh; avoid is the address of
	// a master that refused a connection.
	wake      chan struct{}
	wantError atomic.Bool
	wantSlow  atomic.Bool
	reason    atomic.Value
	avoid     atomic.Value

	stats struct {
		refreshes, refreshErrors, moved, patched, direct, connErrors, rebuilds, pushes, stale atomic.Int64
	}

	closed atomic.Bool
	stop   context.CancelFunc
	done   sync.WaitGroup
}

// New connects to the cluster through the seed addresses, reads the slot
// map (CLUSTER SLOTS from the first seed that answers) before it returns,
// and starts the refresh goroutine. Unlike go-redis's lazy
// NewClusterClient, an unreachable cluster is an error here.
func New(ctx context.Context, opt *Options) (*Client, error) {
	if opt == nil {
		return nil, errors.New("cluster: nil Options")
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	c := &Client{opt: opt.defaulted(), pending: map[int]string{}, wake: make(chan struct{}, 1)}
	c.reason.Store("")
	c.avoid.Store("")
	if err := c.initialLoad(ctx); err != nil {
		return nil, err
	}
	c.ClusterClient = redis.NewClusterClient(c.opt.clusterOptions(func() []redis.ClusterSlot {
		c.stats.rebuilds.Add(1)
		return c.table.Load().clusterSlots()
	}))
	c.ClusterClient.OnNewNode(func(rdb *redis.Client) {
		addr := rdb.Options().Addr
		c.nodes.Store(nodeKey(addr), rdb)
		rdb.AddHook(nodeHook{c: c, addr: addr})
	})
	c.ClusterClient.AddHook(topHook{c: c})
	rctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.done.Add(1)
	go c.refreshLoop(rctx)
	if c.opt.WatchNodes > 0 {
		c.startWatchers(rctx)
	}
	return c, nil
}

// initialLoad reads the slot map from the first seed that answers.
func (c *Client) initialLoad(ctx context.Context) error {
	var errs []error
	for _, addr := range c.opt.Addrs {
		start := time.Now()
		slots, epochs, err := c.queryView(ctx, addr, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.table.Store(emptyTable())
		c.apply(tableFromSlots(slots), epochs)
		// Nothing is routed yet: no slot waits for go-redis's state.
		clear(c.pending)
		c.npending.Store(0)
		c.stats.refreshes.Add(1)
		c.report(RefreshEvent{Reason: "start", Node: addr, Changed: SlotCount, Duration: time.Since(start)})
		return nil
	}
	return fmt.Errorf("cluster: no seed node answered CLUSTER SLOTS: %w", errors.Join(errs...))
}

// Close stops the refresh and watch goroutines and closes every node
// connection.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.stop()
	c.done.Wait()
	return c.ClusterClient.Close()
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{
		Refreshes:     c.stats.refreshes.Load(),
		RefreshErrors: c.stats.refreshErrors.Load(),
		Moved:         c.stats.moved.Load(),
		Patched:       c.stats.patched.Load(),
		Direct:        c.stats.direct.Load(),
		ConnErrors:    c.stats.connErrors.Load(),
		Rebuilds:      c.stats.rebuilds.Load(),
		Pushes:        c.stats.pushes.Load(),
		Stale:         c.stats.stale.Load(),
	}
}

// SlotMaster returns the address of slot's master in the client's slot
// map, "" when no node serves it.
func (c *Client) SlotMaster(slot int) string {
	if slot < 0 || slot >= SlotCount {
		return ""
	}
	return c.table.Load().master(slot)
}

// Shards returns the masters and replicas of the client's slot map.
func (c *Client) Shards() []Shard {
	t := c.table.Load()
	out := make([]Shard, len(t.shards))
	for i, sh := range t.shards {
		out[i] = Shard{Master: sh.Master, Replicas: slices.Clone(sh.Replicas)}
	}
	return out
}

// Refresh asks for a refresh of the slot map now (rate-limited by
// MinRefreshInterval like every other request) and returns at once.
func (c *Client) Refresh() { c.requestRefresh(false, "manual", "") }

// ReloadState replaces go-redis's method of the same name (which would
// only rebuild go-redis's routing from this client's map): it asks for a
// refresh from the cluster, as Refresh does.
func (c *Client) ReloadState(context.Context) { c.Refresh() }

// RefreshNow reads the slot map from the cluster before returning,
// bypassing the rate limit. Tests and admin tools use it after changing
// the cluster themselves.
func (c *Client) RefreshNow(ctx context.Context) error {
	return c.refresh(ctx, "manual", "")
}

func (c *Client) report(ev RefreshEvent) {
	if ev.Err != nil {
		c.opt.Logger.Warn("cluster: refresh failed", "reason", ev.Reason, "err", ev.Err)
	} else if ev.Changed > 0 && ev.Reason != "start" {
		c.opt.Logger.Info("cluster: slot map changed", "reason", ev.Reason, "node", ev.Node, "slots", ev.Changed)
	}
	if c.opt.OnRefresh != nil {
		c.opt.OnRefresh(ev)
	}
}

// internalCtx marks the client's own requests, whose errors must not ask
// for more refreshes.
type internalCtx struct{}

func isInternal(ctx context.Context) bool { return ctx.Value(internalCtx{}) != nil }

// requestRefresh asks the refresh goroutine for a refresh. urgent ones
// (connection errors) are rate-limited by ErrorRefreshInterval, the others
// by MinRefreshInterval; requests made while one is pending coalesce.
func (c *Client) requestRefresh(urgent bool, reason, avoid string) {
	if urgent {
		if avoid != "" {
			c.avoid.Store(avoid)
		}
		c.wantError.Store(true)
	} else {
		c.wantSlow.Store(true)
	}
	c.reason.Store(reason)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// refreshLoop runs every refresh, one at a time: the periodic one and the
// requested ones, each kind no more often than its interval allows.
func (c *Client) refreshLoop(ctx context.Context) {
	defer c.done.Done()
	var tick <-chan time.Time
	if c.opt.RefreshInterval > 0 {
		t := time.NewTicker(c.opt.RefreshInterval)
		defer t.Stop()
		tick = t.C
	}
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			c.wantSlow.Store(true)
			c.reason.Store("periodic")
		case <-c.wake:
		}
		// Wait out the interval of the most urgent kind asked for; a
		// request arriving meanwhile (the doorbell) re-evaluates it, so a
		// connection error cuts a wait for a slow refresh short.
		for {
			if !c.wantError.Load() && !c.wantSlow.Load() {
				break
			}
			gap := c.opt.MinRefreshInterval
			if c.wantError.Load() {
				gap = c.opt.ErrorRefreshInterval
			}
			wait := time.Until(last.Add(gap))
			if wait <= 0 {
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-c.wake:
				t.Stop()
			case <-t.C:
			}
		}
		if !c.wantError.Swap(false) && !c.wantSlow.Load() {
			continue // a stale doorbell: served by the previous refresh
		}
		c.wantSlow.Store(false)
		last = time.Now()
		reason, _ := c.reason.Load().(string)
		avoid, _ := c.avoid.Swap("").(string)
		_ = c.refresh(ctx, reason, avoid)
	}
}

// refresh reads CLUSTER SLOTS and CLUSTER NODES from one node (masters
// first in random order, then replicas, then the seeds; avoid last) and
// applies them (apply: per slot, by config epoch).
func (c *Client) refresh(ctx context.Context, reason, avoid string) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	start := time.Now()
	masters, replicas := c.table.Load().addrs()
	rand.Shuffle(len(masters), func(i, j int) { masters[i], masters[j] = masters[j], masters[i] })
	var cands []string
	seen := map[string]bool{"": true, nodeKey(avoid): true}
	for _, group := range [][]string{masters, replicas, c.opt.Addrs} {
		for _, a := range group {
			if k := nodeKey(a); !seen[k] {
				seen[k] = true
				cands = append(cands, a)
			}
		}
	}
	if avoid != "" {
		cands = append(cands, avoid)
	}
	var errs []error
	for _, addr := range cands {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var rdb *redis.Client
		if v, ok := c.nodes.Load(nodeKey(addr)); ok {
			rdb = v.(*redis.Client)
		}
		slots, epochs, err := c.queryView(ctx, addr, rdb)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		changed, stale := c.apply(tableFromSlots(slots), epochs)
		c.stats.refreshes.Add(1)
		c.stats.stale.Add(int64(stale))
		c.report(RefreshEvent{Reason: reason, Node: addr, Changed: changed, Stale: stale, Duration: time.Since(start)})
		return nil
	}
	err := fmt.Errorf("cluster: refresh: no node answered: %w", errors.Join(errs...))
	c.stats.refreshErrors.Add(1)
	c.report(RefreshEvent{Reason: reason, Err: err, Duration: time.Since(start)})
	return err
}

// moved records a MOVED reply: slot is now served by addr. The local map
// is patched at once (no full reload) and a rate-limited refresh is asked
// for, to learn the rest of a moved range. A MOVED carries no config
// epoch, but it comes from the node the map named as the owner, saying
// it is not: it applies whatever epoch the map kept. The slot's kept
// epoch becomes addr's config epoch as last seen (nodeEpochs; unknown if
// none was), a lower bound of the epoch addr claims the slot with now,
// so that a refresh from a node that still names the old owner with an
// epoch no higher cannot undo it.
func (c *Client) moved(slot int, addr string) {
	c.stats.moved.Add(1)
	if slot < 0 || slot >= SlotCount {
		return
	}
	c.mu.Lock()
	t := c.table.Load()
	patched := t.master(slot) != addr
	if patched {
		c.table.Store(t.withOwner(slot, addr))
		c.pending[slot] = addr
		c.npending.Store(int32(len(c.pending)))
		if c.slotEpochs != nil {
			if e, ok := c.nodeEpochs[addr]; ok {
				c.slotEpochs[slot] = ownerEpoch{addr, e}
			} else {
				c.slotEpochs[slot] = ownerEpoch{}
			}
		}
	}
	c.mu.Unlock()
	if patched {
		c.stats.patched.Add(1)
		c.ClusterClient.ReloadState(context.Background())
	}
	c.requestRefresh(false, "moved", "")
}

// directTarget returns the node client to send a command for slot to when
// go-redis's routing state has not caught up with a change of the slot's
// master yet, or nil when go-redis routes it right.
func (c *Client) directTarget(ctx context.Context, slot int) *redis.Client {
	if c.npending.Load() == 0 {
		return nil
	}
	c.mu.Lock()
	addr, ok := c.pending[slot]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	if mc, err := c.ClusterClient.MasterForKey(ctx, slotKeys()[slot]); err == nil && nodeKey(mc.Options().Addr) == nodeKey(addr) {
		c.mu.Lock()
		if c.pending[slot] == addr {
			delete(c.pending, slot)
			c.npending.Store(int32(len(c.pending)))
		}
		c.mu.Unlock()
		return nil
	}
	if v, ok := c.nodes.Load(nodeKey(addr)); ok {
		return v.(*redis.Client)
	}
	return nil
}

// nodeKey names a node the way go-redis names its node clients: with
// ClusterSlots set, go-redis drops a loopback host (it replaces it with
// the empty origin host), so "127.0.0.1:7000" becomes ":7000".
func nodeKey(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsLoopback()) {
		return ":" + port
	}
	return addr
}

// connError is a refused or reset connection, or a peer that went away.
func connError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// connFailed handles a connection error on addr: if addr is a master, an
// urgent refresh is asked for.
func (c *Client) connFailed(ctx context.Context, addr string, err error) {
	if isInternal(ctx) || !connError(err) || !c.table.Load().isMaster(addr) {
		return
	}
	c.stats.connErrors.Add(1)
	c.requestRefresh(true, "conn-error", addr)
}
