package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options configures [Up].
type Options struct {
	// Dir holds the deployment: deploy.json, nodes/<port>/ and
	// sentinels/<port>/. Required.
	Dir string
	// Plan shapes a new Sentinel deployment; it is ignored when Dir
	// already holds one (the existing layout is restarted) or when Cluster
	// is set.
	Plan Plan
	// Cluster, when set, shapes a new cluster-mode deployment instead of
	// Plan; it is ignored when Dir already holds a deployment, whose mode
	// then decides.
	Cluster *ClusterPlan
	// Executable is the shardnode binary the nodes (and our Sentinels, as
	// "shardnode sentinel") run. Default: os.Executable().
	Executable string
	// RedisSentinel is the redis-sentinel binary for SentinelRedis.
	// Default: redis-sentinel on the PATH.
	RedisSentinel string
	// WaitTimeout bounds the wait for a healthy deployment. Default 30s.
	WaitTimeout time.Duration
	// Progress receives progress lines. Default: discarded.
	Progress io.Writer
}

// Deployment is a running deployment started by [Up].
type Deployment struct {
	// Dir is the absolute data directory.
	Dir string
	// Layout is the deployment's shape.
	Layout *Layout
	// Restarted tells whether Dir already held the deployment.
	Restarted bool
	// Masters are the shards' master ports at start-up, by shard name.
	Masters map[string]int
	// Healthy is how long the start took, from Up's call to the moment
	// every Sentinel saw every master with its replicas (in cluster mode:
	// every node reported cluster_state:ok and the same topology, and
	// every replica's link was up).
	Healthy time.Duration

	sup    *Supervisor
	procs  map[int]*Proc
	unlock func()
}

// Proc returns the process listening on port (node or Sentinel).
func (d *Deployment) Proc(port int) *Proc { return d.procs[port] }

// Exited delivers the processes that exited without being stopped.
func (d *Deployment) Exited() <-chan *Proc { return d.sup.Exited() }

// Stop stops the Sentinels, then the replicas, then the masters (SIGTERM,
// then SIGKILL after grace), and releases the data dir. In cluster mode
// the roles are those the nodes report at the time of the call.
func (d *Deployment) Stop(grace time.Duration) {
	if d.Layout != nil && d.Layout.Mode == ModeCluster {
		d.regroup()
	}
	d.sup.StopAll(grace)
	if d.unlock != nil {
		d.unlock()
		d.unlock = nil
	}
}

// Process groups, stopped highest first.
const (
	groupMaster = iota
	groupReplica
	groupSentinel
)

// Up starts the deployment in opt.Dir (creating it from opt.Plan, or
// opt.Cluster, the first time) and waits until every Sentinel sees every
// master with its replicas and the other Sentinels, or, for a cluster,
// until the cluster is healthy (see [Deployment].Healthy). On error
// everything started is stopped.
func Up(ctx context.Context, opt Options) (_ *Deployment, err error) {
	start := time.Now()
	progress := opt.Progress
	if progress == nil {
		progress = io.Discard
	}
	if opt.WaitTimeout <= 0 {
		opt.WaitTimeout = 30 * time.Second
	}
	if opt.Executable == "" {
		if opt.Executable, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
	}
	dir, err := filepath.Abs(opt.Dir)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	d := &Deployment{Dir: dir, sup: NewSupervisor(), procs: map[int]*Proc{}, unlock: unlock}
	defer func() {
		if err != nil {
			d.Stop(3 * time.Second)
		}
	}()
	if d.Layout, err = LoadLayout(dir); err == nil {
		d.Restarted = true
	} else if errors.Is(err, os.ErrNotExist) {
		if opt.Cluster != nil {
			d.Layout, err = NewClusterLayout(*opt.Cluster)
		} else {
			d.Layout, err = NewLayout(opt.Plan)
		}
		if err != nil {
			return nil, err
		}
	} else {
		return nil, err
	}
	if d.Layout.Mode == ModeCluster {
		if err := d.upCluster(ctx, opt, start, progress); err != nil {
			return nil, err
		}
		return d, nil
	}
	l := d.Layout
	sentinelBin := opt.Executable
	if l.SentinelKind == SentinelRedis {
		sentinelBin = opt.RedisSentinel
		if sentinelBin == "" {
			if sentinelBin, err = exec.LookPath("redis-sentinel"); err != nil {
				return nil, errors.New("deploy: --sentinel redis needs redis-sentinel (apt-get install redis-sentinel)")
			}
		}
	}
	if err := l.checkPortsFree(); err != nil {
		return nil, err
	}
	if !d.Restarted {
		if err := l.Save(dir); err != nil {
			return nil, err
		}
	}
	d.Masters = l.CurrentMasters(dir)

	// Nodes: the masters first, so the replicas find them listening.
	nNodes := 0
	startNode := func(s ShardLayout, port int) error {
		master := d.Masters[s.Name]
		nd := NodeDir(dir, port)
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return fmt.Errorf("deploy: %w", err)
		}
		conf := filepath.Join(nd, "node.conf")
		if err := os.WriteFile(conf, []byte(l.nodeConf(dir, port, master)), 0o644); err != nil {
			return fmt.Errorf("deploy: %w", err)
		}
		group, role := groupReplica, "replica"
		if port == master {
			group, role = groupMaster, "master"
		}
		p, err := d.sup.Start(fmt.Sprintf("node %s (%s %s)", l.Addr(port), s.Name, role), group, nd,
			filepath.Join(nd, "node.log"), opt.Executable, conf)
		if err != nil {
			return err
		}
		d.procs[port] = p
		nNodes++
		return nil
	}
	for _, s := range l.Shards {
		if err := startNode(s, d.Masters[s.Name]); err != nil {
			return nil, err
		}
	}
	for _, s := range l.Shards {
		deadline := time.Now().Add(opt.WaitTimeout)
		for !listening(l.Addr(d.Masters[s.Name])) && time.Now().Before(deadline) {
			select {
			case p := <-d.sup.Exited():
				return nil, fmt.Errorf("deploy: %s exited (%v) during start-up; last lines of %s:\n%s", p.Name, p.Err(), p.LogPath, Tail(p.LogPath, 15))
			case <-time.After(20 * time.Millisecond):
			}
		}
		for _, port := range s.Ports {
			if port != d.Masters[s.Name] {
				if err := startNode(s, port); err != nil {
					return nil, err
				}
			}
		}
	}
	verb := "starting"
	if d.Restarted {
		verb = "restarting"
	}
	fmt.Fprintf(progress, "%s %d nodes (%d shards) in %s\n", verb, nNodes, len(l.Shards), dir)
	wctx, cancel := context.WithTimeout(ctx, opt.WaitTimeout)
	defer cancel()
	clients := map[string]*redis.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	client := func(addr string) *redis.Client {
		if clients[addr] == nil {
			clients[addr] = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true,
				DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1, PoolSize: 1, DialerRetries: 1})
		}
		return clients[addr]
	}
	// Every master streams to all its replicas before the Sentinels start:
	// their first INFO then lists every replica.
	err = d.waitFor(wctx, progress, "replication", func(ctx context.Context) string {
		for _, s := range l.Shards {
			master := l.Addr(d.Masters[s.Name])
			info, err := client(master).Info(ctx, "replication").Result()
			if err != nil {
				return fmt.Sprintf("master %s of %s: %v", master, s.Name, err)
			}
			if online := strings.Count(info, "state=online"); online < len(s.Ports)-1 {
				return fmt.Sprintf("master %s of %s: %d/%d replicas online", master, s.Name, online, len(s.Ports)-1)
			}
		}
		return ""
	})
	if err != nil {
		return nil, err
	}

	// Sentinels.
	for _, port := range l.SentinelPorts {
		sd := SentinelDir(dir, port)
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		conf := filepath.Join(sd, "sentinel.conf")
		if _, err := os.Stat(conf); err != nil {
			if err := os.WriteFile(conf, []byte(l.sentinelConf(dir, port)), 0o644); err != nil {
				return nil, fmt.Errorf("deploy: %w", err)
			}
		}
		argv := []string{sentinelBin, conf}
		if l.SentinelKind == SentinelOurs {
			argv = []string{sentinelBin, "sentinel", conf}
			if l.MetricsPortOffset != 0 {
				argv = append(argv, "--metrics-addr", l.Addr(port+l.MetricsPortOffset))
			}
		}
		p, err := d.sup.Start(fmt.Sprintf("sentinel %s (%s)", l.Addr(port), l.SentinelKind), groupSentinel, sd,
			filepath.Join(sd, "sentinel.log"), argv...)
		if err != nil {
			return nil, err
		}
		d.procs[port] = p
	}
	fmt.Fprintf(progress, "starting %d Sentinels (%s, quorum %d, down-after %dms)\n",
		len(l.SentinelPorts), l.SentinelKind, l.Quorum, l.DownAfterMs)
	err = d.waitFor(wctx, progress, "Sentinels", func(ctx context.Context) string {
		for _, sp := range l.SentinelPorts {
			if msg := d.sentinelHealthy(ctx, client(l.Addr(sp))); msg != "" {
				return fmt.Sprintf("sentinel %s: %s", l.Addr(sp), msg)
			}
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	d.Healthy = time.Since(start)
	return d, nil
}

// sentinelHealthy returns what one Sentinel still misses ("" if nothing).
func (d *Deployment) sentinelHealthy(ctx context.Context, c *redis.Client) string {
	l := d.Layout
	for _, s := range l.Shards {
		v, err := c.Do(ctx, "SENTINEL", "MASTER", s.Name).Result()
		if err != nil {
			return err.Error()
		}
		m := pairs(v)
		if want := l.Addr(d.Masters[s.Name]); hostPort(m) != want {
			return fmt.Sprintf("%s at %s, want %s", s.Name, hostPort(m), want)
		}
		if m["flags"] != "master" {
			return fmt.Sprintf("%s flags %s", s.Name, m["flags"])
		}
		if n := atoi64(m["num-other-sentinels"]); n < int64(len(l.SentinelPorts)-1) {
			return fmt.Sprintf("%s: sees %d other Sentinels, want %d", s.Name, n, len(l.SentinelPorts)-1)
		}
		reps, err := c.Do(ctx, "SENTINEL", "REPLICAS", s.Name).Result()
		if err != nil {
			return err.Error()
		}
		ok := 0
		for _, r := range pairList(reps) {
			if r["flags"] == "slave" && r["master-link-status"] == "ok" {
				ok++
			}
		}
		if ok < len(s.Ports)-1 {
			return fmt.Sprintf("%s: sees %d/%d replicas", s.Name, ok, len(s.Ports)-1)
		}
	}
	return ""
}

// waitFor polls check (which returns what is missing, "" when done) every
// 100ms until it succeeds, ctx ends, or a process exits.
func (d *Deployment) waitFor(ctx context.Context, progress io.Writer, what string, check func(ctx context.Context) string) error {
	start := time.Now()
	lastMsg, lastPrint := "", time.Now()
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msg := check(cctx)
		cancel()
		if msg == "" {
			fmt.Fprintf(progress, "%s ready in %.1fs\n", what, time.Since(start).Seconds())
			return nil
		}
		if msg != lastMsg && time.Since(lastPrint) > 2*time.Second {
			fmt.Fprintf(progress, "  waiting: %s\n", msg)
			lastMsg, lastPrint = msg, time.Now()
		}
		select {
		case p := <-d.sup.Exited():
			return fmt.Errorf("deploy: %s exited (%v) during start-up; last lines of %s:\n%s", p.Name, p.Err(), p.LogPath, Tail(p.LogPath, 15))
		case <-ctx.Done():
			return fmt.Errorf("deploy: %s not ready: %s (%w)", what, msg, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// listening tells whether something accepts connections on addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// checkPortsFree fails if a port of the deployment is taken.
func (l *Layout) checkPortsFree() error {
	var busy []string
	ports := l.allPorts()
	if l.Mode == ModeCluster {
		for _, p := range l.allPorts() {
			ports = append(ports, p+clusterBusOffset)
		}
	}
	if l.MetricsPortOffset != 0 {
		for _, p := range l.allPorts() {
			ports = append(ports, p+l.MetricsPortOffset)
		}
	}
	for _, p := range ports {
		ln, err := net.Listen("tcp", l.Addr(p))
		if err != nil {
			busy = append(busy, strconv.Itoa(p))
			continue
		}
		ln.Close()
	}
	if len(busy) > 0 {
		return fmt.Errorf("deploy: ports in use on %s: %s (another deployment? choose --base-port/--sentinel-port)",
			l.Host, strings.Join(busy, ", "))
	}
	return nil
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WriteSummary prints the topology and how to use the deployment.
func (d *Deployment) WriteSummary(w io.Writer) {
	l := d.Layout
	if l.Mode == ModeCluster {
		d.writeClusterSummary(w)
		return
	}
	state := "started"
	if d.Restarted {
		state = "restarted"
	}
	fmt.Fprintf(w, "\nshardis deployment %s, healthy in %.1fs\n", state, d.Healthy.Seconds())
	fmt.Fprintf(w, "  data and logs: %s\n\n", d.Dir)
	for _, s := range l.Shards {
		var reps []string
		for _, p := range s.Ports {
			if p != d.Masters[s.Name] {
				reps = append(reps, l.Addr(p))
			}
		}
		fmt.Fprintf(w, "  %-9s master %-16s replicas %s\n", s.Name, l.Addr(d.Masters[s.Name]), strings.Join(reps, " "))
	}
	fmt.Fprintf(w, "  sentinels (%s, quorum %d): %s\n", l.SentinelKind, l.Quorum, strings.Join(l.SentinelAddrs(), " "))
	if l.MetricsPortOffset != 0 {
		fmt.Fprintf(w, "  metrics: http://%s/metrics (every process: its port + %d)\n", l.Addr(l.Shards[0].Ports[0]+l.MetricsPortOffset), l.MetricsPortOffset)
	}
	fmt.Fprintf(w, "\nConnect a ShardedSentinelPool (github.com/shardis/shardis/client/shardedpool):\n\n%s\n", d.Snippet())
	fmt.Fprintf(w, "Status:        go run ./cmd/shardnode status --sentinel %s --watch\n", l.SentinelAddrs()[0])
	fmt.Fprintf(w, "Try failover:  go run ./examples/quickstart --dir %s --kill-master %s\n", d.Dir, l.Shards[len(l.Shards)/2].Name)
	fmt.Fprintf(w, "Ctrl-C stops everything; \"up\" again with the same --dir brings it back with its data.\n\n")
}

// Snippet is the Go code connecting a ShardedSentinelPool to the
// deployment.
func (d *Deployment) Snippet() string {
	l := d.Layout
	q := func(ss []string) string {
		for i, s := range ss {
			ss[i] = strconv.Quote(s)
		}
		return strings.Join(ss, ", ")
	}
	return fmt.Sprintf("\tpool, err := shardedpool.New(ctx, &shardedpool.Options{\n"+
		"\t\tMasterNames:   []string{%s},\n"+
		"\t\tSentinelAddrs: []string{%s},\n"+
		"\t})\n\tif err != nil {\n\t\treturn err\n\t}\n\tdefer pool.Close()\n"+
		"\terr = pool.Set(ctx, \"greeting\", \"hello\", 0).Err()\n",
		q(l.MasterNames()), q(l.SentinelAddrs()))
}
