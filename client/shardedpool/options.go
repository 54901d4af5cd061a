package shardedpool

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/shardis/shardis/internal/consistent"
)

// Hash maps a key to the index of its shard in the shard list. It must
// return a value in [0, number of shards) and be safe for concurrent use;
// commands on a key it maps out of range fail, and ShardFor and Client
// panic.
type Hash interface {
	Get(key string) int
}

// NewJumpHash returns Google's jump consistent hash over n shards (keys
// hashed with XXH64). It is not Jedis-compatible; shards can only be added
// at the end of the list.
func NewJumpHash(n int) Hash { return consistent.NewJump(n) }

// Labels selects how the ring points of named shards are labelled.
type Labels = consistent.Labels

const (
	// LabelsJedis3 labels named shards' points "<name>*<n>", as Jedis 2.10
	// and 3.x do. It is the default.
	LabelsJedis3 = consistent.LabelsJedis3
	// LabelsJedis2 labels named shards' points "<name>*<weight><n>", as
	// Jedis 2.9 and earlier do.
	LabelsJedis2 = consistent.LabelsJedis2
)

// StaticShard is one shard of a Sentinel-less deployment.
type StaticShard struct {
	// Name identifies the shard (in logs, ShardFor, and the ring in
	// named-shard mode).
	Name string
	// Addr is the shard master's "host:port".
	Addr string
}

// SwitchEvent describes a change of a shard's master.
type SwitchEvent struct {
	// Shard is the shard's name (its master name in Sentinel mode).
	Shard string
	// From and To are the old and new master addresses.
	From, To string
	// Epoch is the Sentinel config epoch of the new master, or -1 when
	// unknown (static and topology-file modes, or a Sentinel that does not
	// report it).
	Epoch int64
	// Reason says what triggered the switch (an event, a re-query, a
	// topology file edit).
	Reason string
	// Time is when the switch was applied.
	Time time.Time
}

// Options configures a [Pool]. Zero values mean the documented default.
type Options struct {
	// MasterNames are the Sentinel master names, one per shard. Their order
	// is the ring order (shard i is labelled SHARD-i in Jedis's unnamed
	// mode), so it must be the same in every client of a deployment.
	// Required with SentinelAddrs; with TopologyFile it fixes the order
	// (default: the file's order).
	MasterNames []string
	// SentinelAddrs are the "host:port" addresses of the Sentinels. Every
	// one is queried and listened to. Exactly one of SentinelAddrs, Shards
	// and TopologyFile must be set.
	SentinelAddrs []string
	// Shards is a static shard list for a deployment without Sentinel, in
	// ring order.
	Shards []StaticShard
	// TopologyFile is the path of a topology file for a deployment without
	// Sentinel: one shard per line, "<name> <host:port>", blank lines and
	// lines starting with '#' ignored. The file is watched: an edit that
	// changes addresses is applied live; an edit that adds, removes,
	// renames or reorders shards, or does not parse, is logged and
	// ignored, and the old topology stays.
	TopologyFile string

	// Weights are the shards' ring weights, in shard order. Default: all 1.
	// Must be empty or have one positive entry per shard.
	Weights []int
	// NamedShards labels ring points with the shard names (Jedis named
	// shards) instead of their positions (SHARD-<i>-NODE-<n>, as
	// ShardedJedisSentinelPool does). Default false.
	NamedShards bool
	// Labels selects Jedis 3 (default) or Jedis <= 2.9 labels for named
	// shards. Ignored unless NamedShards.
	Labels Labels
	// KeyTags hashes only the first {tag} of a key, with Jedis's
	// \{(.+?)\} semantics, so related keys share a shard. Default false.
	KeyTags bool
	// Hash places keys on shards. Default: the Jedis-compatible murmur ring
	// built from the shard list, Weights, NamedShards, Labels and KeyTags.
	// Use NewJumpHash or your own to replace it.
	Hash Hash

	// Username and Password authenticate to the shards' Redis servers.
	// Default: none.
	Username, Password string
	// SentinelUsername and SentinelPassword authenticate to the Sentinels.
	// Default: none.
	SentinelUsername, SentinelPassword string
	// DB is the database selected on every shard. Default 0.
	DB int
	// PoolSize is the maximum number of connections per shard. Default:
	// go-redis's default (10 per GOMAXPROCS).
	PoolSize int
	// MinIdleConns is the number of idle connections kept open per shard.
	// Default 0.
	MinIdleConns int
	// MaxRetries is go-redis's retry count per command. Default: go-redis's
	// (3); -1 disables retries.
	MaxRetries int
	// DialerRetries is how many times go-redis dials a shard before a
	// command fails. Default 1: a dead master is fixed by a Sentinel
	// failover, not by redialling, so commands to it fail fast (go-redis's
	// own default is 5 dials 100ms apart).
	DialerRetries int
	// DialTimeout bounds connecting to a shard. Default 5s.
	DialTimeout time.Duration
	// ReadTimeout and WriteTimeout bound socket reads and writes on shard
	// connections. Default 3s; -1 means no timeout.
	ReadTimeout, WriteTimeout time.Duration
	// TLSConfig, when set, is used for shard and Sentinel connections.
	// Default: plain TCP.
	TLSConfig *tls.Config

	// SentinelTimeout bounds each request to one Sentinel (dial, query or
	// subscribe). Default 500ms.
	SentinelTimeout time.Duration
	// SentinelPingInterval is how often an idle Sentinel subscription is
	// pinged; a subscription silent for three intervals is reconnected.
	// Default 1s.
	SentinelPingInterval time.Duration
	// RecheckInterval is how often every master is re-queried even without
	// events, as a safety net. Default 10s; -1 disables it.
	RecheckInterval time.Duration
	// SwitchGracePeriod is how long an old shard client stays open after a
	// switch so in-flight commands can finish. Default 5s.
	SwitchGracePeriod time.Duration
	// ReadOnlyWait is how long a command that the shard's master refused
	// with READONLY (it has become a replica: a planned switch such as
	// migrate-shard, FAILOVER or SENTINEL FAILOVER, or a failover the pool
	// has not heard of yet) waits for the pool to switch that shard; it
	// then runs once on the new master (a READONLY command did not run, so
	// it runs at most once in all). Single commands and pipelines wait;
	// MULTI/EXEC and commands split over several shards return the error.
	// Default 5s; -1 returns READONLY at once, as a plain client does.
	ReadOnlyWait time.Duration

	// ClusterPollInterval is how often the pool looks for the notice of a
	// `shardnode migrate-to-cluster` cut-over on the shards (one GET on one
	// shard); a write refused by a fenced source also looks at once. Once
	// the cut-over is committed the pool moves every command to a
	// client/cluster Client (multi-key commands split by slot) and stays
	// there. Default 1s; -1 disables following a migration.
	ClusterPollInterval time.Duration
	// OnClusterSwitch, if set, is called once when the pool moves to the
	// cluster. Default nil.
	OnClusterSwitch func(ClusterSwitchEvent)

	// OnSwitch, if set, is called after each master switch, from the
	// goroutine that applied it; it must not block for long. Default nil.
	OnSwitch func(SwitchEvent)
	// Logger receives the pool's logs (every switch at Info, ignored and
	// malformed events at Warn). Default slog.Default().
	Logger *slog.Logger
}

func (o *Options) defaulted() Options {
	opt := *o
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1
	}
	if opt.SentinelTimeout == 0 {
		opt.SentinelTimeout = 500 * time.Millisecond
	}
	if opt.SentinelPingInterval == 0 {
		opt.SentinelPingInterval = time.Second
	}
	if opt.RecheckInterval == 0 {
		opt.RecheckInterval = 10 * time.Second
	}
	if opt.SwitchGracePeriod == 0 {
		opt.SwitchGracePeriod = 5 * time.Second
	}
	if opt.ReadOnlyWait == 0 {
		opt.ReadOnlyWait = 5 * time.Second
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.ClusterPollInterval == 0 {
		opt.ClusterPollInterval = time.Second
	}
	return opt
}

// validate checks the options and returns the shard names in ring order.
// In topology-file mode without MasterNames the names come later, from the
// file.
func (o *Options) validate() error {
	modes := 0
	for _, set := range []bool{len(o.SentinelAddrs) > 0, len(o.Shards) > 0, o.TopologyFile != ""} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return errors.New("shardedpool: set exactly one of SentinelAddrs, Shards and TopologyFile")
	}
	if len(o.SentinelAddrs) > 0 && len(o.MasterNames) == 0 {
		return errors.New("shardedpool: MasterNames is required with SentinelAddrs")
	}
	if len(o.Shards) > 0 && len(o.MasterNames) > 0 {
		return errors.New("shardedpool: MasterNames and Shards are exclusive")
	}
	for _, a := range o.SentinelAddrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("shardedpool: sentinel address %q: %w", a, err)
		}
	}
	seen := map[string]bool{}
	for _, n := range o.MasterNames {
		if n == "" || seen[n] {
			return fmt.Errorf("shardedpool: master name %q empty or repeated", n)
		}
		seen[n] = true
	}
	for _, s := range o.Shards {
		if s.Name == "" || seen[s.Name] {
			return fmt.Errorf("shardedpool: shard name %q empty or repeated", s.Name)
		}
		seen[s.Name] = true
		if _, _, err := net.SplitHostPort(s.Addr); err != nil {
			return fmt.Errorf("shardedpool: shard %s address %q: %w", s.Name, s.Addr, err)
		}
	}
	for i, w := range o.Weights {
		if w <= 0 {
			return fmt.Errorf("shardedpool: weight %d of shard %d must be positive", w, i)
		}
	}
	return nil
}
