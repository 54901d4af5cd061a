package compare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
	"github.com/shardis/shardis/client/shardedpool"
	"github.com/shardis/shardis/internal/deploy"
)

// target is one topology under test: its client and what the phases need
// to know about it or do to it.
type target struct {
	name string
	opt  *Options
	// c is the client every workload uses: the pool or the cluster
	// client.
	c    redis.Cmdable
	pool *shardedpool.Pool
	cl   *cluster.Client
	// dep is the deployment compare started (nil for an existing one);
	// sup runs the nodes the growth phase adds.
	dep *deploy.Deployment
	sup *deploy.Supervisor
	// dir holds the deployment's data and the client's log.
	dir string
	log *os.File

	settings       map[string]any
	processes      int
	extraProcesses int
	extraWhat      string
}

// openTarget starts (or connects to) the topology name.
func openTarget(ctx context.Context, opt *Options, name string) (_ *target, err error) {
	// The data directory is absolute: the nodes run with their own
	// directory as the working directory and read their config from here.
	dir, err := filepath.Abs(filepath.Join(opt.Out, name+"-data"))
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	t := &target{name: name, opt: opt, sup: deploy.NewSupervisor(), dir: dir}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	if !opt.external() {
		if err := os.RemoveAll(t.dir); err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
	}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if t.log, err = os.Create(filepath.Join(t.dir, "client.log")); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(t.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.settings = map[string]any{"masters": opt.Masters, "replicas": opt.Replicas, "clients": opt.Clients,
		"keys": opt.Keys, "value_size": opt.ValueSize, "pipeline": opt.Pipeline, "multi_keys": opt.MultiKeys,
		"duration_s": opt.Duration.Seconds(), "implementation": opt.Label}
	switch name {
	case PreSharding:
		err = t.openPreSharding(ctx, logger)
	case Cluster:
		err = t.openCluster(ctx, logger)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (t *target) openPreSharding(ctx context.Context, logger *slog.Logger) error {
	opt := t.opt
	sentinels, names := opt.SentinelAddrs, opt.MasterNames
	if !opt.external() {
		nodes := opt.Masters * (1 + opt.Replicas)
		base, err := freeBlock(nodes+opt.Sentinels+4, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(opt.Progress, "%s: starting %d shards x (1+%d) shardnodes and %d Sentinels (down-after %s)\n",
			t.name, opt.Masters, opt.Replicas, opt.Sentinels, opt.DownAfter)
		t.dep, err = deploy.Up(ctx, deploy.Options{Dir: t.dir, Executable: opt.Executable,
			Plan: deploy.Plan{Shards: opt.Masters, Replicas: opt.Replicas, Sentinels: opt.Sentinels, BasePort: base,
				SentinelPort: base + nodes, SentinelKind: deploy.SentinelOurs, DownAfter: opt.DownAfter}})
		if err != nil {
			return fmt.Errorf("compare: start the pre-sharding deployment: %w", err)
		}
		fmt.Fprintf(opt.Progress, "%s: healthy in %.1fs\n", t.name, t.dep.Healthy.Seconds())
		sentinels, names = t.dep.Layout.SentinelAddrs(), t.dep.Layout.MasterNames()
		t.settings["down_after_ms"] = t.dep.Layout.DownAfterMs
		t.settings["failover_timeout_ms"] = t.dep.Layout.FailoverTimeoutMs
		t.settings["quorum"] = t.dep.Layout.Quorum
		t.settings["sentinels"] = len(sentinels)
		t.processes = nodes + len(sentinels)
	} else {
		t.settings["sentinels"] = len(sentinels)
		t.settings["masters"] = len(names)
		t.processes = -1
	}
	t.extraProcesses = len(sentinels)
	t.extraWhat = strconv.Itoa(len(sentinels)) + " Sentinels"
	pool, err := shardedpool.New(ctx, &shardedpool.Options{MasterNames: names, SentinelAddrs: sentinels,
		KeyTags: true, Logger: logger})
	if err != nil {
		return fmt.Errorf("compare: connect the pool: %w", err)
	}
	t.pool, t.c = pool, pool
	if opt.external() {
		t.readSentinelSettings(ctx, sentinels[0], names[0])
	}
	return nil
}

// readSentinelSettings records an existing deployment's failure detection.
func (t *target) readSentinelSettings(ctx context.Context, addr, name string) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer c.Close()
	m, err := c.Master(ctx, name).Result()
	if err != nil {
		return
	}
	for k, as := range map[string]string{"down-after-milliseconds": "down_after_ms",
		"failover-timeout": "failover_timeout_ms", "quorum": "quorum"} {
		if v, ok := m[k]; ok {
			t.settings[as] = v
		}
	}
}

func (t *target) openCluster(ctx context.Context, logger *slog.Logger) error {
	opt := t.opt
	seeds := []string{opt.ClusterAddr}
	if !opt.external() {
		nodes := opt.Masters * (1 + opt.Replicas)
		base, err := freeBlock(nodes+4, true)
		if err != nil {
			return err
		}
		fmt.Fprintf(opt.Progress, "%s: starting %d masters x (1+%d) shardnodes in cluster mode (cluster-node-timeout %s)\n",
			t.name, opt.Masters, opt.Replicas, opt.DownAfter)
		t.dep, err = deploy.Up(ctx, deploy.Options{Dir: t.dir, Executable: opt.Executable,
			Cluster: &deploy.ClusterPlan{Masters: opt.Masters, Replicas: opt.Replicas, BasePort: base, NodeTimeout: opt.DownAfter}})
		if err != nil {
			return fmt.Errorf("compare: start the cluster: %w", err)
		}
		fmt.Fprintf(opt.Progress, "%s: healthy in %.1fs\n", t.name, t.dep.Healthy.Seconds())
		seeds = t.dep.Layout.NodeAddrs()[:opt.Masters]
		t.settings["cluster_node_timeout_ms"] = t.dep.Layout.NodeTimeoutMs
		t.processes = nodes
	} else {
		t.processes = -1
	}
	t.extraWhat = "none"
	cl, err := cluster.New(ctx, &cluster.Options{Addrs: seeds, Logger: logger})
	if err != nil {
		return fmt.Errorf("compare: connect the cluster client: %w", err)
	}
	t.cl, t.c = cl, cl
	if opt.external() {
		t.settings["masters"] = len(cl.Shards())
		if v, err := cl.ConfigGet(ctx, "cluster-node-timeout").Result(); err == nil {
			t.settings["cluster_node_timeout_ms"] = v["cluster-node-timeout"]
		}
	}
	return nil
}

// close stops the client, the added nodes and the deployment.
func (t *target) close() {
	if t.pool != nil {
		t.pool.Close()
	}
	if t.cl != nil {
		t.cl.Close()
	}
	t.sup.StopAll(3 * time.Second)
	if t.dep != nil {
		t.dep.Stop(3 * time.Second)
	}
	if t.log != nil {
		t.log.Close()
	}
}

// masters returns the current masters' addresses.
func (t *target) masters(ctx context.Context) []string {
	var out []string
	if t.pool != nil {
		for _, s := range t.pool.Stats() {
			out = append(out, s.Addr)
		}
		return out
	}
	_ = t.cl.RefreshNow(ctx)
	for _, s := range t.cl.Shards() {
		out = append(out, s.Master)
	}
	return out
}

// nodeClient is a direct, fail-fast client of one node.
func nodeClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, PoolSize: 2, DialerRetries: 1})
}

// usage is the masters' memory and key count.
type usage struct{ used, keys int64 }

// memory sums used_memory and DBSIZE over the current masters. Each
// master gets MEMORY PURGE first: shardnode's used_memory counts the Go
// heap's objects, garbage included, until a collection, which PURGE runs
// (redis-server's figure is exact; PURGE only releases allocator pages).
func (t *target) memory(ctx context.Context) (usage, error) {
	var u usage
	for _, a := range t.masters(ctx) {
		c := nodeClient(a)
		if err := c.Do(ctx, "MEMORY", "PURGE").Err(); err != nil {
			c.Close()
			return u, fmt.Errorf("compare: MEMORY PURGE on %s: %w", a, err)
		}
		info, err := c.Info(ctx, "memory").Result()
		n, err2 := c.DBSize(ctx).Result()
		c.Close()
		if err = errors.Join(err, err2); err != nil {
			return u, fmt.Errorf("compare: memory of %s: %w", a, err)
		}
		used, _ := strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
		u.used += used
		u.keys += n
	}
	return u, nil
}

// infoField returns one "name:value" field of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == name {
			return v
		}
	}
	return ""
}

// kill sends SIGKILL to the node at addr: a process compare started is
// known by its pid; a node of an existing deployment must be on this
// machine, and its pid is read from INFO server (process_id).
func (t *target) kill(ctx context.Context, addr string) error {
	pid := 0
	if t.dep != nil {
		_, ps, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(ps)
		if p := t.dep.Proc(port); p != nil {
			pid = p.Pid()
		}
	}
	if pid == 0 {
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("compare: cannot kill %s: kill -9 needs a node on this machine (a loopback address)", addr)
		}
		c := nodeClient(addr)
		info, err := c.Info(ctx, "server").Result()
		c.Close()
		if err != nil {
			return fmt.Errorf("compare: pid of %s: %w", addr, err)
		}
		pid, _ = strconv.Atoi(infoField(info, "process_id"))
		if pid <= 0 {
			return fmt.Errorf("compare: %s reports no process_id", addr)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("compare: kill -9 %d (%s): %w", pid, addr, err)
	}
	return nil
}

// freeBlock finds n consecutive free loopback ports (and, for a cluster,
// their bus ports, 10000 higher).
func freeBlock(n int, bus bool) (int, error) {
	free := func(p int) bool {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
	for range 100 {
		base := 20000 + rand.IntN(20000)
		ok := true
		for p := base; p < base+n && ok; p++ {
			ok = free(p) && (!bus || free(p+10000))
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("compare: no block of free ports found")
}
