package deploy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/admin"
)

// clusterBusOffset is the distance from a node's port to its cluster bus
// port (Redis's default, which shardnode follows).
const clusterBusOffset = 10000

// ClusterPlan describes a new cluster-mode deployment.
type ClusterPlan struct {
	// Masters is the number of masters (at least 3, as Redis Cluster
	// requires); Replicas the replicas of each.
	Masters, Replicas int
	// BasePort is the first node port: the masters take BasePort ...
	// BasePort+Masters-1, then master i's replicas follow in order
	// (BasePort + Masters + i*Replicas ...). Every bus port is the node
	// port + 10000.
	BasePort int
	// NodeTimeout is cluster-node-timeout. Default 5s.
	NodeTimeout time.Duration
	// MetricsPortOffset, when not 0, gives every node a Prometheus
	// endpoint on its port plus this offset.
	MetricsPortOffset int
}

// NewClusterLayout builds the layout of a new cluster deployment. Shard i
// ("shard-<i+1>") is master i with its replicas.
func NewClusterLayout(p ClusterPlan) (*Layout, error) {
	switch {
	case p.Masters < 3:
		return nil, errors.New("deploy: a cluster needs at least 3 masters")
	case p.Replicas < 0:
		return nil, errors.New("deploy: negative replica count")
	}
	nt := p.NodeTimeout
	if nt == 0 {
		nt = 5 * time.Second
	}
	if nt < 100*time.Millisecond {
		return nil, errors.New("deploy: node-timeout below 100ms")
	}
	l := &Layout{Mode: ModeCluster, Host: "127.0.0.1", NodeTimeoutMs: nt.Milliseconds(), MetricsPortOffset: p.MetricsPortOffset}
	for i := range p.Masters {
		s := ShardLayout{Name: "shard-" + strconv.Itoa(i+1), Ports: []int{p.BasePort + i}}
		for j := range p.Replicas {
			s.Ports = append(s.Ports, p.BasePort+p.Masters+i*p.Replicas+j)
		}
		l.Shards = append(l.Shards, s)
	}
	for _, pt := range l.allPorts() {
		if pt < 1 || pt+clusterBusOffset > 65535 ||
			(l.MetricsPortOffset != 0 && (pt+l.MetricsPortOffset < 1 || pt+l.MetricsPortOffset > 65535)) {
			return nil, fmt.Errorf("deploy: port %d out of range (a cluster node's port must be 55535 or less)", pt)
		}
	}
	return l, nil
}

// NodeAddrs returns every node's "host:port", the shards' first ports
// first, then the others in shard order.
func (l *Layout) NodeAddrs() []string {
	var out []string
	for _, s := range l.Shards {
		out = append(out, l.Addr(s.Ports[0]))
	}
	for _, s := range l.Shards {
		for _, p := range s.Ports[1:] {
			out = append(out, l.Addr(p))
		}
	}
	return out
}

// clusterNodeConf renders a cluster node's configuration, regenerated at
// every start: the node's role, slots and peers live in its nodes.conf,
// which the node itself rewrites.
func (l *Layout) clusterNodeConf(dir string, port int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by \"shardnode up --cluster\" at every start: edits are lost.\n")
	fmt.Fprintf(&b, "port %d\nbind %s\nprotected-mode no\ndir %q\n", port, l.Host, NodeDir(dir, port))
	fmt.Fprintf(&b, "appendonly yes\nappendfsync everysec\nsave \"\"\n")
	// A master's replicas attach within milliseconds of each other: waiting
	// for more (Redis's default 5s) only delays them.
	fmt.Fprintf(&b, "repl-diskless-sync-delay 0\n")
	fmt.Fprintf(&b, "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout %d\n", l.NodeTimeoutMs)
	// The other masters keep serving their own slots while a dead
	// master's replica is elected (Redis's default, yes, makes every node
	// answer CLUSTERDOWN until the promotion), as the Sentinel deployment's
	// other shards keep serving during a failover.
	fmt.Fprintf(&b, "cluster-require-full-coverage no\n")
	if l.MetricsPortOffset != 0 {
		fmt.Fprintf(&b, "metrics-addr %s\n", l.Addr(port+l.MetricsPortOffset))
	}
	return b.String()
}

// nodesConfRole reads the role a node's nodes.conf gives it: "master",
// "replica", or "" when the file is missing or names no "myself" line.
func nodesConfRole(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 3 || !strings.Contains(w[2], "myself") {
			continue
		}
		for _, fl := range strings.Split(w[2], ",") {
			switch fl {
			case "slave":
				return "replica"
			case "master":
				return "master"
			}
		}
	}
	return ""
}

// nodeClient is a small, fail-fast client of one node for the waits.
func nodeClient(addr string, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		MaxRetries: -1, PoolSize: 1, DialerRetries: 1})
}

// upCluster is Up for a cluster-mode layout: start every node, create the
// cluster the first time, wait until every node reports cluster_state:ok,
// every node has the same slot map and every replica's link is up.
func (d *Deployment) upCluster(ctx context.Context, opt Options, start time.Time, progress io.Writer) error {
	l, dir := d.Layout, d.Dir
	if err := l.checkPortsFree(); err != nil {
		return err
	}
	if !l.Created {
		// A first start, or one whose creation did not finish: begin from
		// empty nodes (nothing was ever served from them).
		for _, p := range l.allPorts() {
			if err := os.RemoveAll(NodeDir(dir, p)); err != nil {
				return fmt.Errorf("deploy: %w", err)
			}
		}
		d.Restarted = false
		if err := l.Save(dir); err != nil {
			return err
		}
	}
	for _, s := range l.Shards {
		for i, port := range s.Ports {
			nd := NodeDir(dir, port)
			if err := os.MkdirAll(nd, 0o755); err != nil {
				return fmt.Errorf("deploy: %w", err)
			}
			conf := filepath.Join(nd, "node.conf")
			if err := os.WriteFile(conf, []byte(l.clusterNodeConf(dir, port)), 0o644); err != nil {
				return fmt.Errorf("deploy: %w", err)
			}
			role := nodesConfRole(filepath.Join(nd, "nodes.conf"))
			if role == "" {
				role = "master"
				if i > 0 {
					role = "replica"
				}
			}
			group := groupMaster
			if role == "replica" {
				group = groupReplica
			}
			p, err := d.sup.Start(fmt.Sprintf("node %s (%s)", l.Addr(port), s.Name), group, nd,
				filepath.Join(nd, "node.log"), opt.Executable, conf)
			if err != nil {
				return err
			}
			d.procs[port] = p
		}
	}
	addrs := l.NodeAddrs()
	verb := "starting"
	if d.Restarted {
		verb = "restarting"
	}
	fmt.Fprintf(progress, "%s %d cluster nodes (%d masters) in %s\n", verb, len(addrs), len(l.Shards), dir)
	wctx, cancel := context.WithTimeout(ctx, opt.WaitTimeout)
	defer cancel()
	err := d.waitFor(wctx, progress, "nodes", func(context.Context) string {
		for _, a := range addrs {
			if !listening(a) {
				return a + " not listening"
			}
		}
		return ""
	})
	if err != nil {
		return err
	}
	if !l.Created {
		if err := d.createCluster(wctx, progress); err != nil {
			return err
		}
	}
	clients := map[string]*redis.Client{}
	for _, a := range addrs {
		clients[a] = nodeClient(a, time.Second)
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	err = d.waitFor(wctx, progress, "cluster", func(ctx context.Context) string {
		return clusterHealthy(ctx, addrs, clients)
	})
	if err != nil {
		return err
	}
	d.Masters = d.clusterMasters(wctx, clients)
	d.Healthy = time.Since(start)
	return nil
}

// createCluster runs admin.Create with master i of the plan on shard i's
// first port and its replicas on the shard's other ports, then records
// the creation in deploy.json.
func (d *Deployment) createCluster(ctx context.Context, progress io.Writer) error {
	l := d.Layout
	aopt := &admin.Options{Timeout: 2 * time.Second}
	if dl, ok := ctx.Deadline(); ok {
		aopt.WaitTimeout = time.Until(dl)
	}
	replicas := len(l.Shards[0].Ports) - 1
	plan, err := admin.PlanCreate(ctx, l.NodeAddrs(), replicas, aopt)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	if len(plan.Masters) != len(l.Shards) {
		return fmt.Errorf("deploy: create plan has %d masters, want %d", len(plan.Masters), len(l.Shards))
	}
	for i, s := range l.Shards {
		m := &plan.Masters[i]
		if m.Addr != l.Addr(s.Ports[0]) {
			return fmt.Errorf("deploy: create plan puts master %d on %s, want %s", i+1, m.Addr, l.Addr(s.Ports[0]))
		}
		m.Replicas = m.Replicas[:0]
		for _, p := range s.Ports[1:] {
			m.Replicas = append(m.Replicas, l.Addr(p))
		}
	}
	t0 := time.Now()
	if err := admin.Create(ctx, plan, aopt); err != nil {
		return fmt.Errorf("deploy: create the cluster: %w", err)
	}
	fmt.Fprintf(progress, "cluster created in %.1fs\n", time.Since(t0).Seconds())
	l.Created = true
	return l.Save(d.Dir)
}

// clusterHealthy returns what the cluster still misses ("" if nothing):
// every node answers, reports cluster_state:ok with every node known and
// every slot assigned, holds the same slot map and the same replica of
// each master as the others, and every replica's replication link is up.
func clusterHealthy(ctx context.Context, addrs []string, clients map[string]*redis.Client) string {
	var ref string
	for _, a := range addrs {
		c := clients[a]
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Sprintf("%s: %v", a, err)
		}
		f := infoFields(info)
		if f["cluster_state"] != "ok" {
			return fmt.Sprintf("%s: cluster_state:%s", a, f["cluster_state"])
		}
		if f["cluster_known_nodes"] != strconv.Itoa(len(addrs)) || f["cluster_slots_assigned"] != "16384" {
			return fmt.Sprintf("%s: knows %s/%d nodes, %s slots assigned", a, f["cluster_known_nodes"], len(addrs), f["cluster_slots_assigned"])
		}
		text, err := c.ClusterNodes(ctx).Result()
		if err != nil {
			return fmt.Sprintf("%s: %v", a, err)
		}
		nodes := parseClusterNodes(text)
		if sig := topologySignature(nodes); ref == "" {
			ref = sig
		} else if sig != ref {
			return fmt.Sprintf("%s: slot map or replicas differ from %s's", a, addrs[0])
		}
		if me := myself(nodes); me != nil && me.replica() {
			repl, err := c.Info(ctx, "replication").Result()
			if err != nil {
				return fmt.Sprintf("%s: %v", a, err)
			}
			if st := infoFields(repl)["master_link_status"]; st != "up" {
				return fmt.Sprintf("replica %s: master_link_status:%s", a, st)
			}
		}
	}
	return ""
}

// clusterMasters maps each shard to the port of its current master: the
// one of its ports that serves slots.
func (d *Deployment) clusterMasters(ctx context.Context, clients map[string]*redis.Client) map[string]int {
	l := d.Layout
	out := map[string]int{}
	for _, s := range l.Shards {
		out[s.Name] = s.Ports[0]
		for _, p := range s.Ports {
			text, err := clients[l.Addr(p)].ClusterNodes(ctx).Result()
			if err != nil {
				continue
			}
			if me := myself(parseClusterNodes(text)); me != nil && !me.replica() && me.slotCount > 0 {
				out[s.Name] = p
				break
			}
		}
	}
	return out
}

// regroup assigns the stop groups from the roles the nodes report now
// (ROLE), so that Stop stops the current replicas before the current
// masters even after failovers. A node that does not answer keeps its
// group.
func (d *Deployment) regroup() {
	for port, p := range d.procs {
		select {
		case <-p.Done():
			continue
		default:
		}
		c := nodeClient(d.Layout.Addr(port), 500*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		v, err := c.Do(ctx, "ROLE").Slice()
		cancel()
		c.Close()
		if err != nil || len(v) == 0 {
			continue
		}
		switch v[0] {
		case "master":
			p.Group = groupMaster
		case "slave":
			p.Group = groupReplica
		}
	}
}

// writeClusterSummary prints a cluster deployment's topology and the code
// that connects to it.
func (d *Deployment) writeClusterSummary(w io.Writer) {
	l := d.Layout
	state := "started"
	if d.Restarted {
		state = "restarted"
	}
	fmt.Fprintf(w, "\nshardis cluster %s, healthy in %.1fs\n", state, d.Healthy.Seconds())
	fmt.Fprintf(w, "  data and logs: %s\n", d.Dir)
	fmt.Fprintf(w, "  %d masters, cluster-node-timeout %dms\n\n", len(l.Shards), l.NodeTimeoutMs)
	col := NewClusterCollector(l.NodeAddrs()...)
	defer col.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	st, err := col.Collect(ctx)
	cancel()
	if err == nil {
		for _, m := range st.Masters {
			var reps []string
			for _, r := range m.Replicas {
				reps = append(reps, r.Addr)
			}
			if len(reps) == 0 {
				reps = []string{"(none)"}
			}
			fmt.Fprintf(w, "  master %-16s slots %-12s replicas %s\n", m.Addr, m.Ranges, strings.Join(reps, " "))
		}
	} else {
		for _, s := range l.Shards {
			fmt.Fprintf(w, "  %-9s master %s\n", s.Name, l.Addr(d.Masters[s.Name]))
		}
	}
	if l.MetricsPortOffset != 0 {
		fmt.Fprintf(w, "  metrics: http://%s/metrics (every node: its port + %d)\n", l.Addr(l.Shards[0].Ports[0]+l.MetricsPortOffset), l.MetricsPortOffset)
	}
	fmt.Fprintf(w, "\nConnect a cluster client (github.com/shardis/shardis/client/cluster):\n\n%s\n", d.ClusterSnippet())
	fmt.Fprintf(w, "Status:        go run ./cmd/shardnode status --dir %s --watch\n", d.Dir)
	fmt.Fprintf(w, "redis-cli:     redis-cli -c -p %d   |   redis-cli --cluster check %s\n", l.Shards[0].Ports[0], l.NodeAddrs()[0])
	fmt.Fprintf(w, "Try failover:  go run ./examples/cluster --dir %s --kill-master %s\n", d.Dir, l.Addr(d.Masters[l.Shards[len(l.Shards)/2].Name]))
	fmt.Fprintf(w, "Ctrl-C stops everything; \"up\" again with the same --dir brings it back with its data.\n\n")
}

// ClusterSnippet is the Go code connecting a client/cluster Client to the
// deployment.
func (d *Deployment) ClusterSnippet() string {
	l := d.Layout
	var seeds []string
	for _, s := range l.Shards {
		seeds = append(seeds, strconv.Quote(l.Addr(s.Ports[0])))
	}
	return fmt.Sprintf("\tclient, err := cluster.New(ctx, &cluster.Options{\n"+
		"\t\tAddrs: []string{%s},\n"+
		"\t})\n\tif err != nil {\n\t\treturn err\n\t}\n\tdefer client.Close()\n"+
		"\terr = client.Set(ctx, \"greeting\", \"hello\", 0).Err()\n",
		strings.Join(seeds, ", "))
}

// infoFields parses "key:value" lines (INFO, CLUSTER INFO).
func infoFields(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}
