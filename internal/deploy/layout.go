// Package deploy runs a whole local high-availability deployment of
// shardis on loopback, as child processes with their own data directories
// and logs, in one of two modes: N shards of shardnode (a master and R
// replicas each) watched by S Sentinels, or a Redis Cluster of M masters
// with R replicas each. It is the engine of "shardnode up" and
// "shardnode status":
//
//   - layout.go: the deployment's shape, persisted in <dir>/deploy.json,
//     and the node and Sentinel configuration files;
//   - supervisor.go: child processes (stopped with their parent);
//   - up.go: start, wait until healthy, print the topology, stop;
//   - status.go: collect what the Sentinels and nodes report and render it
//     as an 80-column table or JSON;
//   - cluster.go and cluster_status.go: the same for cluster mode.
package deploy

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sentinel implementations "up" can run.
const (
	SentinelOurs  = "ours"  // shardis's Sentinel ("shardnode sentinel")
	SentinelRedis = "redis" // redis-sentinel
)

// LayoutFile is the name of the deployment description in the data dir.
const LayoutFile = "deploy.json"

// Deployment modes, Layout.Mode.
const (
	ModeSentinel = "sentinel" // shards watched by Sentinels
	ModeCluster  = "cluster"  // a Redis Cluster
)

// Layout is a deployment's shape. It is written to <dir>/deploy.json at
// the first start and reused by later starts.
type Layout struct {
	// Mode is ModeSentinel or ModeCluster; files written before cluster
	// mode existed have none and are Sentinel deployments.
	Mode string `json:"mode,omitempty"`
	// Host is the address every process binds and announces (127.0.0.1).
	Host string `json:"host"`
	// Shards are the shards in ring order; MasterNames() gives their names.
	// In cluster mode a shard is a master (its first port at creation,
	// owning the shard's slot range) and its replicas.
	Shards []ShardLayout `json:"shards"`
	// NodeTimeoutMs is cluster-node-timeout (cluster mode only).
	NodeTimeoutMs int64 `json:"node_timeout_ms,omitempty"`
	// Created is set, in cluster mode, once the cluster was created: later
	// starts restart every node from its nodes.conf instead of creating it.
	Created bool `json:"created,omitempty"`
	// SentinelPorts are the Sentinels' ports.
	SentinelPorts []int `json:"sentinel_ports,omitempty"`
	// SentinelKind is SentinelOurs or SentinelRedis.
	SentinelKind string `json:"sentinel_kind,omitempty"`
	// Quorum is the Sentinels' quorum per master.
	Quorum int `json:"quorum,omitempty"`
	// DownAfterMs and FailoverTimeoutMs are the Sentinels' timings.
	DownAfterMs       int64 `json:"down_after_ms,omitempty"`
	FailoverTimeoutMs int64 `json:"failover_timeout_ms,omitempty"`
	// MetricsPortOffset, when not 0, gives every process a Prometheus
	// endpoint on its port plus this offset.
	MetricsPortOffset int `json:"metrics_port_offset,omitempty"`
}

// ShardLayout is one shard: a Sentinel master name and its nodes' ports.
// The first port was the master at the first start; later starts take the
// current master from the Sentinels' configuration files.
type ShardLayout struct {
	Name  string `json:"name"`
	Ports []int  `json:"ports"`
}

// MasterNames returns the shards' names in ring order.
func (l *Layout) MasterNames() []string {
	out := make([]string, len(l.Shards))
	for i, s := range l.Shards {
		out[i] = s.Name
	}
	return out
}

// SentinelAddrs returns the Sentinels' "host:port" addresses.
func (l *Layout) SentinelAddrs() []string {
	out := make([]string, len(l.SentinelPorts))
	for i, p := range l.SentinelPorts {
		out[i] = l.Addr(p)
	}
	return out
}

// Addr returns "host:port" for a port of the deployment.
func (l *Layout) Addr(port int) string { return net.JoinHostPort(l.Host, strconv.Itoa(port)) }

// NodeDir and SentinelDir are the working directories of a node and a
// Sentinel under the data dir.
func NodeDir(dir string, port int) string { return filepath.Join(dir, "nodes", strconv.Itoa(port)) }

// SentinelDir is the working directory of the Sentinel on port.
func SentinelDir(dir string, port int) string {
	return filepath.Join(dir, "sentinels", strconv.Itoa(port))
}

// Plan describes a new deployment.
type Plan struct {
	Shards, Replicas, Sentinels int
	// BasePort is the first node port: shard i (from 0) has ports
	// BasePort + i*(Replicas+1) ... + Replicas.
	BasePort int
	// SentinelPort is the first Sentinel port; the others follow.
	SentinelPort int
	SentinelKind string
	// Quorum 0 means a majority of the Sentinels.
	Quorum            int
	DownAfter         time.Duration
	FailoverTimeout   time.Duration
	MetricsPortOffset int
}

// NewLayout builds the layout of a new deployment.
func NewLayout(p Plan) (*Layout, error) {
	switch {
	case p.Shards < 1:
		return nil, errors.New("deploy: at least one shard")
	case p.Replicas < 0:
		return nil, errors.New("deploy: negative replica count")
	case p.Sentinels < 1:
		return nil, errors.New("deploy: at least one Sentinel")
	case p.SentinelKind != SentinelOurs && p.SentinelKind != SentinelRedis:
		return nil, fmt.Errorf("deploy: unknown Sentinel %q (ours or redis)", p.SentinelKind)
	case p.DownAfter < 100*time.Millisecond:
		return nil, errors.New("deploy: down-after below 100ms")
	}
	q := p.Quorum
	if q == 0 {
		q = p.Sentinels/2 + 1
	}
	if q < 1 || q > p.Sentinels {
		return nil, fmt.Errorf("deploy: quorum %d outside 1..%d", q, p.Sentinels)
	}
	ft := p.FailoverTimeout
	if ft == 0 {
		ft = max(3*p.DownAfter, 10*time.Second)
	}
	l := &Layout{Mode: ModeSentinel, Host: "127.0.0.1", SentinelKind: p.SentinelKind, Quorum: q,
		DownAfterMs: p.DownAfter.Milliseconds(), FailoverTimeoutMs: ft.Milliseconds(),
		MetricsPortOffset: p.MetricsPortOffset}
	port := p.BasePort
	for i := range p.Shards {
		s := ShardLayout{Name: "shard-" + strconv.Itoa(i+1)}
		for range p.Replicas + 1 {
			s.Ports = append(s.Ports, port)
			port++
		}
		l.Shards = append(l.Shards, s)
	}
	for i := range p.Sentinels {
		l.SentinelPorts = append(l.SentinelPorts, p.SentinelPort+i)
	}
	for _, pt := range l.allPorts() {
		if pt < 1 || pt > 65535 || (l.MetricsPortOffset != 0 && (pt+l.MetricsPortOffset < 1 || pt+l.MetricsPortOffset > 65535)) {
			return nil, fmt.Errorf("deploy: port %d out of range", pt)
		}
	}
	return l, nil
}

func (l *Layout) allPorts() []int {
	var out []int
	for _, s := range l.Shards {
		out = append(out, s.Ports...)
	}
	return append(out, l.SentinelPorts...)
}

// LoadLayout reads <dir>/deploy.json. It returns an error wrapping
// os.ErrNotExist when the directory holds no deployment.
func LoadLayout(dir string) (*Layout, error) {
	data, err := os.ReadFile(filepath.Join(dir, LayoutFile))
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	var l Layout
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("deploy: %s: %w", LayoutFile, err)
	}
	if l.Mode == "" {
		l.Mode = ModeSentinel
	}
	if l.Mode != ModeSentinel && l.Mode != ModeCluster {
		return nil, fmt.Errorf("deploy: %s: unknown mode %q", LayoutFile, l.Mode)
	}
	if len(l.Shards) == 0 || (l.Mode == ModeSentinel && len(l.SentinelPorts) == 0) || l.Host == "" {
		return nil, fmt.Errorf("deploy: %s: incomplete layout", LayoutFile)
	}
	return &l, nil
}

// Save writes <dir>/deploy.json.
func (l *Layout) Save(dir string) error {
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, LayoutFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	return nil
}

// CurrentMasters returns each shard's current master port: the address in
// the Sentinel configuration file with the highest config epoch for that
// master (Sentinels rewrite their file after every failover), or the
// shard's first port when no file names one of its nodes.
func (l *Layout) CurrentMasters(dir string) map[string]int {
	type seen struct {
		port  int
		epoch int64
	}
	best := map[string]seen{}
	for _, sp := range l.SentinelPorts {
		monitors, epochs := readSentinelConf(filepath.Join(SentinelDir(dir, sp), "sentinel.conf"))
		for name, port := range monitors {
			if b, ok := best[name]; !ok || epochs[name] > b.epoch {
				best[name] = seen{port, epochs[name]}
			}
		}
	}
	out := map[string]int{}
	for _, s := range l.Shards {
		out[s.Name] = s.Ports[0]
		if b, ok := best[s.Name]; ok {
			for _, p := range s.Ports {
				if p == b.port {
					out[s.Name] = p
				}
			}
		}
	}
	return out
}

// readSentinelConf extracts "sentinel monitor <name> <ip> <port> <q>" and
// "sentinel config-epoch <name> <epoch>" from a sentinel.conf (ours or
// redis-sentinel's).
func readSentinelConf(path string) (ports map[string]int, epochs map[string]int64) {
	ports, epochs = map[string]int{}, map[string]int64{}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 4 || !strings.EqualFold(w[0], "sentinel") {
			continue
		}
		switch strings.ToLower(w[1]) {
		case "monitor":
			if len(w) >= 5 {
				if p, err := strconv.Atoi(w[4]); err == nil {
					ports[w[2]] = p
				}
			}
		case "config-epoch":
			if e, err := strconv.ParseInt(w[3], 10, 64); err == nil {
				epochs[w[2]] = e
			}
		}
	}
	return
}

// nodeConf renders a node's configuration: regenerated at every start,
// with replicaof pointing at the shard's current master.
func (l *Layout) nodeConf(dir string, port, masterPort int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by \"shardnode up\" at every start: edits are lost.\n")
	fmt.Fprintf(&b, "port %d\nbind %s\nprotected-mode no\ndir %q\n", port, l.Host, NodeDir(dir, port))
	// Data survives restarts through the append-only file.
	fmt.Fprintf(&b, "appendonly yes\nappendfsync everysec\nsave \"\"\n")
	if port != masterPort {
		fmt.Fprintf(&b, "replicaof %s %d\n", l.Host, masterPort)
	}
	if l.MetricsPortOffset != 0 {
		fmt.Fprintf(&b, "metrics-addr %s\n", l.Addr(port+l.MetricsPortOffset))
	}
	return b.String()
}

// sentinelConf renders a Sentinel's first configuration. The Sentinel
// rewrites it; later starts reuse the rewritten file.
func (l *Layout) sentinelConf(dir string, port int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by \"shardnode up\"; the Sentinel rewrites it with what it learns.\n")
	fmt.Fprintf(&b, "port %d\nbind %s\ndir %q\n", port, l.Host, SentinelDir(dir, port))
	for _, s := range l.Shards {
		fmt.Fprintf(&b, "sentinel monitor %s %s %d %d\n", s.Name, l.Host, s.Ports[0], l.Quorum)
		fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", s.Name, l.DownAfterMs)
		fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", s.Name, l.FailoverTimeoutMs)
		fmt.Fprintf(&b, "sentinel parallel-syncs %s 1\n", s.Name)
	}
	return b.String()
}
