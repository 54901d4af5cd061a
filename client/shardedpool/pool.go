package shardedpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/consistent"
)

// cmdable lets Pool embed the router client's command methods without
// exporting a field.
type cmdable = redis.Cmdable

// Pool is a sharded client. It implements [redis.Cmdable] by routing each
// command to the shard of its key; it is safe for concurrent use.
type Pool struct {
	cmdable // the router client: every command goes through Pool.process

	router *redis.Client
	opt    Options
	log    *slog.Logger
	hash   Hash
	shards []*shard
	byName map[string]*shard

	sentinels []*redis.SentinelClient // query clients, one per SentinelAddrs entry

	ctx    context.Context // cancelled by Close; stops background goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	retiredMu sync.Mutex
	retired   map[*redis.Client]*time.Timer // old clients waiting out their grace period

	counts eventCounts

	// follow is the cluster-follow mode (tocluster.go); nil when disabled.
	follow *clusterFollower
}

// eventCounts count what the Sentinel listeners and the shard workers
// decided, so that a test can observe that an event was handled (and
// changed nothing) instead of waiting and hoping.
type eventCounts struct {
	malformed   atomic.Int64 // +switch-master payloads that did not parse
	duplicates  atomic.Int64 // +switch-master naming the current master
	stale       atomic.Int64 // rechecks that ignored an older master
	unconfirmed atomic.Int64 // rechecks whose candidate was not a master yet
	subscribed  atomic.Int64 // subscriptions set up, each after requesting a recheck of every shard

	readOnlyWaits   atomic.Int64 // commands refused with READONLY that waited for a switch
	readOnlyRetries atomic.Int64 // of those, the ones run again on a new master
}

// shard is one master/replica group.
type shard struct {
	idx  int
	name string
	cur  atomic.Pointer[shardConn]
	// wake asks the shard's worker to re-query its master; the string is
	// the reason, for logs. Capacity 1: a pending request covers new ones.
	wake chan string

	switches   atomic.Int64
	lastSwitch atomic.Int64 // unix nanoseconds, 0 = never

	// requested counts the recheck requests queued on wake, handled
	// those the worker has taken and finished with: equal when the worker
	// is idle and nothing is queued.
	requested, handled atomic.Int64

	pubsubOnce sync.Once
	pubsub     *redis.Client // follows the current master at dial time
}

// shardConn is a shard's current master: replaced as a whole on a switch.
type shardConn struct {
	client *redis.Client
	addr   string
	epoch  int64 // Sentinel config epoch of addr, -1 unknown
	// replaced is closed when another shardConn takes this one's place
	// (a switch, or a new epoch for the same address).
	replaced chan struct{}
}

func newShardConn(c *redis.Client, addr string, epoch int64) *shardConn {
	return &shardConn{client: c, addr: addr, epoch: epoch, replaced: make(chan struct{})}
}

func (s *shard) conn() *shardConn { return s.cur.Load() }

// setConn makes nc the shard's current master and wakes whoever waits on
// the one it replaces. It returns the old one (nil at start-up).
func (s *shard) setConn(nc *shardConn) *shardConn {
	old := s.cur.Swap(nc)
	if old != nil {
		close(old.replaced)
	}
	return old
}

func (s *shard) requestRecheck(reason string) {
	s.requested.Add(1) // before the send, so requested >= handled always
	select {
	case s.wake <- reason:
	default:
		s.requested.Add(-1) // a queued request already covers this one
	}
}

// idle reports whether the shard's worker has finished every recheck
// requested so far.
func (s *shard) idle() bool { return s.handled.Load() == s.requested.Load() }

// ShardStats reports one shard's state.
type ShardStats struct {
	// Name is the shard's name.
	Name string
	// Addr is the current master address.
	Addr string
	// Epoch is the Sentinel config epoch of Addr, -1 when unknown.
	Epoch int64
	// Switches counts master switches since New.
	Switches int64
	// LastSwitch is the time of the last switch, zero if none.
	LastSwitch time.Time
}

// ErrCrossShard is wrapped by the error of a command whose keys are on
// several shards and that the pool cannot split.
var ErrCrossShard = errors.New("keys on different shards")

// ErrClosed is returned by commands on a closed Pool.
var ErrClosed = errors.New("shardedpool: pool is closed")

// New connects a sharded pool. In Sentinel mode it resolves every master
// through the Sentinels, retrying with backoff until ctx ends, confirms
// each one with ROLE, and starts following failovers; ctx only bounds
// start-up. In static and topology-file modes it does not contact the
// shards: connections are made on first use.
func New(ctx context.Context, o *Options) (*Pool, error) {
	if o == nil {
		return nil, errors.New("shardedpool: nil Options")
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	opt := o.defaulted()
	var static []StaticShard
	switch {
	case len(opt.Shards) > 0:
		static = opt.Shards
	case opt.TopologyFile != "":
		var err error
		if static, err = readTopology(opt.TopologyFile, opt.MasterNames); err != nil {
			return nil, err
		}
	}
	names := opt.MasterNames
	if static != nil {
		names = make([]string, len(static))
		for i, s := range static {
			names[i] = s.Name
		}
	}
	if len(opt.Weights) > 0 && len(opt.Weights) != len(names) {
		return nil, fmt.Errorf("shardedpool: %d weights for %d shards", len(opt.Weights), len(names))
	}

	p := &Pool{
		opt:     opt,
		log:     opt.Logger,
		hash:    opt.Hash,
		byName:  make(map[string]*shard, len(names)),
		retired: make(map[*redis.Client]*time.Timer),
	}
	if p.hash == nil {
		ring := make([]consistent.Shard, len(names))
		for i, n := range names {
			if opt.NamedShards {
				ring[i].Name = n
			}
			if len(opt.Weights) > 0 {
				ring[i].Weight = opt.Weights[i]
			}
		}
		p.hash = consistent.NewMurmur(ring, consistent.MurmurOptions{Labels: opt.Labels, KeyTags: opt.KeyTags})
	}
	for i, n := range names {
		s := &shard{idx: i, name: n, wake: make(chan string, 1)}
		p.shards = append(p.shards, s)
		p.byName[n] = s
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())

	if static != nil {
		for i, st := range static {
			p.shards[i].setConn(newShardConn(p.newShardClient(st.Addr), st.Addr, -1))
		}
	} else {
		for _, a := range opt.SentinelAddrs {
			p.sentinels = append(p.sentinels, p.newSentinelClient(a))
		}
		if err := p.resolveAll(ctx); err != nil {
			p.Close()
			return nil, err
		}
	}

	p.router = redis.NewClient(&redis.Options{Addr: "shardedpool-router.invalid:0", MaxRetries: -1})
	p.router.AddHook(followHook{routerHook{p}})
	p.cmdable = p.router

	if len(p.sentinels) > 0 {
		for _, s := range p.shards {
			p.wg.Add(1)
			go p.shardWorker(s)
		}
		for _, a := range opt.SentinelAddrs {
			p.wg.Add(1)
			go p.watchSentinel(a)
		}
		if opt.RecheckInterval > 0 {
			p.wg.Add(1)
			go p.periodicRecheck()
		}
	}
	p.startClusterFollow()
	if opt.TopologyFile != "" {
		if err := p.watchTopology(); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// clientOptions returns the go-redis options of a shard client for addr.
func (p *Pool) clientOptions(addr string) *redis.Options {
	o := &p.opt
	return &redis.Options{
		Addr:          addr,
		Username:      o.Username,
		Password:      o.Password,
		DB:            o.DB,
		PoolSize:      o.PoolSize,
		MinIdleConns:  o.MinIdleConns,
		MaxRetries:    o.MaxRetries,
		DialerRetries: o.DialerRetries,
		DialTimeout:   o.DialTimeout,
		ReadTimeout:   o.ReadTimeout,
		WriteTimeout:  o.WriteTimeout,
		TLSConfig:     o.TLSConfig,
	}
}

func (p *Pool) newShardClient(addr string) *redis.Client {
	return redis.NewClient(p.clientOptions(addr))
}

// switchTo makes c (a client for addr) the shard's master client and
// retires the old one. Callers serialize switches of one shard.
func (p *Pool) switchTo(s *shard, c *redis.Client, addr string, epoch int64, reason string) {
	old := s.setConn(newShardConn(c, addr, epoch))
	now := time.Now()
	s.switches.Add(1)
	s.lastSwitch.Store(now.UnixNano())
	from := ""
	if old != nil {
		from = old.addr
		p.retire(old.client)
	}
	p.log.Info("shardedpool: switched master", "shard", s.name, "from", from, "to", addr,
		"epoch", epoch, "reason", reason, "switches", s.switches.Load())
	if p.opt.OnSwitch != nil {
		p.opt.OnSwitch(SwitchEvent{Shard: s.name, From: from, To: addr, Epoch: epoch, Reason: reason, Time: now})
	}
}

// retire closes c after the grace period, or at Close.
func (p *Pool) retire(c *redis.Client) {
	p.retiredMu.Lock()
	defer p.retiredMu.Unlock()
	if p.closed.Load() {
		_ = c.Close()
		return
	}
	p.retired[c] = time.AfterFunc(p.opt.SwitchGracePeriod, func() {
		p.retiredMu.Lock()
		delete(p.retired, c)
		p.retiredMu.Unlock()
		_ = c.Close()
	})
}

// shardIndex returns the index of key's shard.
func (p *Pool) shardIndex(key string) (int, error) {
	i := p.hash.Get(key)
	if i < 0 || i >= len(p.shards) {
		return 0, fmt.Errorf("shardedpool: hash returned shard %d for %q, want [0, %d)", i, key, len(p.shards))
	}
	return i, nil
}

func (p *Pool) shardOf(key string) *shard {
	i, err := p.shardIndex(key)
	if err != nil {
		panic(err) // a broken custom Hash: not a runtime condition
	}
	return p.shards[i]
}

// ShardFor returns the name of the shard that owns key (its master name
// in Sentinel mode).
func (p *Pool) ShardFor(key string) string { return p.shardOf(key).name }

// Client returns the current client of key's shard. After a failover it
// stays usable for the grace period, then is closed: do not keep it.
// After a move to a cluster (ClusterClient is not nil) it is the client
// of the cluster master that owns key's slot, as go-redis's MasterForKey
// finds it; when the cluster's slot map cannot be read it is still the
// source shard's client, whose writes a fenced source refuses.
func (p *Pool) Client(key string) *redis.Client {
	if cc := p.clusterClient(); cc != nil {
		if c, err := cc.MasterForKey(p.ctx, key); err == nil {
			return c
		}
	}
	return p.shardOf(key).conn().client
}

// ShardClient returns the current client of the named shard, or nil.
func (p *Pool) ShardClient(name string) *redis.Client {
	if s := p.byName[name]; s != nil {
		return s.conn().client
	}
	return nil
}

// Shards returns the shard names in ring order.
func (p *Pool) Shards() []string {
	names := make([]string, len(p.shards))
	for i, s := range p.shards {
		names[i] = s.name
	}
	return names
}

// ForEachShard calls fn concurrently with every shard's current client and
// returns the errors joined.
func (p *Pool) ForEachShard(ctx context.Context, fn func(ctx context.Context, shard string, c *redis.Client) error) error {
	errs := make([]error, len(p.shards))
	var wg sync.WaitGroup
	for i, s := range p.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, s.name, s.conn().client); err != nil {
				errs[i] = fmt.Errorf("shardedpool: shard %s: %w", s.name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Stats returns every shard's current master and switch counters, in ring
// order.
func (p *Pool) Stats() []ShardStats {
	out := make([]ShardStats, len(p.shards))
	for i, s := range p.shards {
		c := s.conn()
		out[i] = ShardStats{Name: s.name, Addr: c.addr, Epoch: c.epoch, Switches: s.switches.Load()}
		if ns := s.lastSwitch.Load(); ns != 0 {
			out[i].LastSwitch = time.Unix(0, ns)
		}
	}
	return out
}

// Watch runs fn in an optimistic transaction (WATCH keys ... MULTI/EXEC)
// on the shard of keys, which must all be on one shard.
func (p *Pool) Watch(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error {
	if len(keys) == 0 {
		return errors.New("shardedpool: Watch needs at least one key")
	}
	if cc := p.clusterClient(); cc != nil {
		return cc.Watch(ctx, fn, keys...)
	}
	i, err := p.sameShard("WATCH", keys)
	if err != nil {
		return err
	}
	return p.shards[i].conn().client.Watch(ctx, fn, keys...)
}

// Subscribe subscribes to channels on the shard that owns them (channels
// are placed like keys, and PUBLISH through the pool goes to the same
// shard). All channels must be on one shard. The subscription's client
// dials the shard's current master whenever it (re)connects.
func (p *Pool) Subscribe(ctx context.Context, channels ...string) (*redis.PubSub, error) {
	if len(channels) == 0 {
		return nil, errors.New("shardedpool: Subscribe needs at least one channel")
	}
	if cc := p.clusterClient(); cc != nil {
		return cc.Subscribe(ctx, channels...), nil
	}
	i, err := p.sameShard("SUBSCRIBE", channels)
	if err != nil {
		return nil, err
	}
	return p.pubsubClient(p.shards[i]).Subscribe(ctx, channels...), nil
}

func (p *Pool) pubsubClient(s *shard) *redis.Client {
	s.pubsubOnce.Do(func() {
		o := p.clientOptions(s.conn().addr)
		d := &net.Dialer{Timeout: o.DialTimeout}
		if d.Timeout == 0 {
			d.Timeout = 5 * time.Second
		}
		o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, s.conn().addr)
		}
		if o.TLSConfig != nil {
			tlsCfg := o.TLSConfig
			o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
				return tlsDial(ctx, d, network, s.conn().addr, tlsCfg)
			}
		}
		s.pubsub = redis.NewClient(o)
	})
	return s.pubsub
}

// Close stops following the Sentinels and closes every client.
func (p *Pool) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.cancel()
	p.wg.Wait()
	var errs []error
	if p.follow != nil {
		errs = append(errs, p.follow.close())
	}
	if p.router != nil {
		errs = append(errs, p.router.Close())
	}
	for _, s := range p.shards {
		if c := s.conn(); c != nil {
			errs = append(errs, c.client.Close())
		}
		if s.pubsub != nil {
			errs = append(errs, s.pubsub.Close())
		}
	}
	for _, sc := range p.sentinels {
		errs = append(errs, sc.Close())
	}
	p.retiredMu.Lock()
	for c, t := range p.retired {
		t.Stop()
		errs = append(errs, c.Close())
	}
	clear(p.retired)
	p.retiredMu.Unlock()
	return errors.Join(errs...)
}

// Do runs any command, routed like the typed methods (by its key; see the
// package documentation).
func (p *Pool) Do(ctx context.Context, args ...interface{}) *redis.Cmd {
	return p.router.Do(ctx, args...)
}

// Process runs cmd, routed by its key.
func (p *Pool) Process(ctx context.Context, cmd redis.Cmder) error {
	return p.router.Process(ctx, cmd)
}

var _ redis.Cmdable = (*Pool)(nil)
