package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadFrom selects which nodes serve read-only commands.
type ReadFrom int

const (
	// ReadMaster sends every command to the slot's master. It is the
	// default.
	ReadMaster ReadFrom = iota
	// ReadReplicas sends read-only commands to the slot's replicas
	// (go-redis's ReadOnly), falling back to the master when there is none.
	ReadReplicas
	// ReadNearest sends read-only commands to the slot's node (master or
	// replica) with the lowest measured latency (go-redis's RouteByLatency).
	ReadNearest
	// ReadRandom sends read-only commands to a random node of the slot
	// (go-redis's RouteRandomly).
	ReadRandom
)

// RefreshEvent describes one refresh of the slot map from the cluster.
type RefreshEvent struct {
	// Reason is what asked for it: "start", "moved", "conn-error",
	// "periodic", "push" or "manual".
	Reason string
	// Node is the address whose CLUSTER SLOTS (and NODES) reply was used ("" on error).
	Node string
	// Changed is the number of slots whose master changed.
	Changed int
	// Stale is the number of slots for which the reply named an owner
	// with a config epoch no higher than the map's (kept; see Stats.Stale).
	Stale int
	// Err is the error when no node answered.
	Err error
	// Duration is how long the refresh took.
	Duration time.Duration
}

// Options configures a [Client]. Zero values mean the documented default;
// -1 disables where said.
type Options struct {
	// Addrs are seed "host:port" addresses of cluster nodes. At least one
	// is required; the rest of the cluster is discovered from them.
	Addrs []string

	// Username and Password authenticate to every node. Default: none.
	Username, Password string
	// ReadFrom routes read-only commands. Default ReadMaster.
	ReadFrom ReadFrom
	// PoolSize is the maximum number of connections per node. Default:
	// go-redis's (10 per GOMAXPROCS).
	PoolSize int
	// MinIdleConns is the number of idle connections kept per node.
	// Default 0.
	MinIdleConns int
	// MaxRedirects is how many MOVED/ASK redirects and retries a command
	// follows. Default: go-redis's (3); -1 disables them.
	MaxRedirects int
	// DialerRetries is how many times a node is dialled before a command
	// fails. Default 1: a dead master is replaced by a failover, which the
	// client learns by refreshing, not by redialling (go-redis's own
	// default is 5 dials 100 ms apart).
	DialerRetries int
	// DialTimeout bounds connecting to a node. Default 5s.
	DialTimeout time.Duration
	// ReadTimeout and WriteTimeout bound socket reads and writes. Default
	// 3s; -1 means no timeout.
	ReadTimeout, WriteTimeout time.Duration
	// TLSConfig, when set, is used for every node connection. Default:
	// plain TCP.
	TLSConfig *tls.Config

	// RefreshInterval is how often the slot map is re-read from the
	// cluster even when nothing asked for it (the fallback when topology
	// is not pushed). Default 10s; -1 disables it.
	RefreshInterval time.Duration
	// MinRefreshInterval is the least time between two refreshes asked
	// for by MOVED replies, push events or the periodic timer, so a MOVED
	// storm costs at most one refresh per interval. Default 1s.
	MinRefreshInterval time.Duration
	// ErrorRefreshInterval is the least time between two refreshes asked
	// for by a refused or reset connection to a master (a failover is
	// likely under way, so the client looks again soon). Default 100ms.
	ErrorRefreshInterval time.Duration
	// RefreshTimeout bounds the CLUSTER SLOTS and CLUSTER NODES pipeline
	// to one node during a refresh. Default 1s.
	RefreshTimeout time.Duration

	// Watcher listens for pushed topology events on up to WatchNodes
	// masters; the client patches its slot map from each event at once
	// and refreshes it (rate-limited by ErrorRefreshInterval). Default
	// ChannelWatcher{}: shardnode's reserved channel (redis-server
	// publishes nothing there, and the client relies on MOVED replies and
	// the periodic refresh). See [TopologyWatcher].
	Watcher TopologyWatcher
	// WatchNodes is how many masters the Watcher listens on, each on its
	// own connection. Default 3; -1 disables watching.
	WatchNodes int

	// OnRefresh, if set, is called after every refresh from the refresh
	// goroutine; it must not block for long. Default nil.
	OnRefresh func(RefreshEvent)
	// Logger receives the client's logs (slot map changes at Info, refresh
	// failures at Warn). Default slog.Default().
	Logger *slog.Logger
	// Customize, if set, is called with the go-redis ClusterOptions the
	// client built, before the ClusterClient is created, to set what
	// Options does not expose. ClusterSlots and the hooks are the client's
	// and must not be replaced. Default nil.
	Customize func(*redis.ClusterOptions)
}

func (o *Options) defaulted() Options {
	opt := *o
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1
	}
	if opt.DialTimeout == 0 {
		opt.DialTimeout = 5 * time.Second
	}
	if opt.RefreshInterval == 0 {
		opt.RefreshInterval = 10 * time.Second
	}
	if opt.MinRefreshInterval == 0 {
		opt.MinRefreshInterval = time.Second
	}
	if opt.ErrorRefreshInterval == 0 {
		opt.ErrorRefreshInterval = 100 * time.Millisecond
	}
	if opt.RefreshTimeout == 0 {
		opt.RefreshTimeout = time.Second
	}
	if opt.WatchNodes == 0 {
		opt.WatchNodes = 3
	}
	if opt.Watcher == nil {
		opt.Watcher = ChannelWatcher{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return opt
}

func (o *Options) validate() error {
	if len(o.Addrs) == 0 {
		return errors.New("cluster: Addrs needs at least one seed node")
	}
	for _, a := range o.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("cluster: seed address %q: %w", a, err)
		}
	}
	if o.ReadFrom < ReadMaster || o.ReadFrom > ReadRandom {
		return fmt.Errorf("cluster: unknown ReadFrom %d", o.ReadFrom)
	}
	for name, d := range map[string]time.Duration{
		"MinRefreshInterval": o.MinRefreshInterval, "ErrorRefreshInterval": o.ErrorRefreshInterval,
		"RefreshTimeout": o.RefreshTimeout, "DialTimeout": o.DialTimeout,
	} {
		if d < 0 {
			return fmt.Errorf("cluster: %s must not be negative", name)
		}
	}
	if o.WatchNodes < -1 {
		return errors.New("cluster: WatchNodes must be -1 (disabled), 0 (default) or positive")
	}
	return nil
}

// clusterOptions builds go-redis's options; slots feeds ClusterSlots.
func (o *Options) clusterOptions(slots func() []redis.ClusterSlot) *redis.ClusterOptions {
	co := &redis.ClusterOptions{
		Addrs:         o.Addrs,
		Username:      o.Username,
		Password:      o.Password,
		PoolSize:      o.PoolSize,
		MinIdleConns:  o.MinIdleConns,
		MaxRedirects:  o.MaxRedirects,
		DialerRetries: o.DialerRetries,
		DialTimeout:   o.DialTimeout,
		ReadTimeout:   o.ReadTimeout,
		WriteTimeout:  o.WriteTimeout,
		TLSConfig:     o.TLSConfig,
		// The slot map is the client's: go-redis rebuilds its routing
		// state from it (no network), and the client re-reads it from the
		// cluster on its own schedule. go-redis's periodic rebuild is then
		// only a local copy, kept at its default.
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) { return slots(), nil },
	}
	switch o.ReadFrom {
	case ReadReplicas:
		co.ReadOnly = true
	case ReadNearest:
		co.RouteByLatency = true
	case ReadRandom:
		co.RouteRandomly = true
	}
	if o.ReadFrom != ReadMaster {
		// go-redis does not send READONLY when ClusterSlots is set (it
		// assumes standalone servers); replicas of a real cluster need it.
		co.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }
	}
	if o.Customize != nil {
		o.Customize(co)
	}
	return co
}
