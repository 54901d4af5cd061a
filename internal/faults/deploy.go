package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
)

// Server and Sentinel ports on every host (each host has its own address).
const (
	serverPort   = 6379
	sentinelPort = 26379
)

// Setting is one server configuration of the matrix.
type Setting struct {
	// Name labels the setting in the table.
	Name string
	// Shardis selects shardnode and shardnode's Sentinel; otherwise
	// redis-server and redis-sentinel.
	Shardis bool
	// Directives are extra server flags (--name value ...).
	Directives []string
	// ClusterReplicas is the number of replicas per cluster master
	// (default 1). With min-replicas-ack n a master needs n live replicas
	// to accept writes, so a shard that must survive losing one node
	// needs n+1 replicas.
	ClusterReplicas int
}

// Settings are the settings the harness knows, by name: redis-server
// (asynchronous replication), shardnode (asynchronous), and shardnode
// with acknowledgement by one replica or by every replica of a master
// (min-replicas-ack, default timeout 1000 ms).
var Settings = map[string]Setting{
	"redis":          {Name: "redis"},
	"shardnode":      {Name: "shardnode", Shardis: true},
	"shardnode-ack1": {Name: "shardnode-ack1", Shardis: true, Directives: []string{"--min-replicas-ack", "1"}, ClusterReplicas: 2},
	"shardnode-ack2": {Name: "shardnode-ack2", Shardis: true, Directives: []string{"--min-replicas-ack", "2"}, ClusterReplicas: 3},
}

// Env locates the programs a run needs.
type Env struct {
	// Shardnode is the shardnode binary.
	Shardnode string
	// Self is the harness binary, started in the client namespaces as
	// `<Self> worker ...`.
	Self string
	// Dir receives every run's directory (logs, histories).
	Dir string
}

// Deployment is one topology running in its namespaces.
type Deployment struct {
	// Topology is "sentinel" or "cluster".
	Topology string
	// Setting is the server configuration.
	Setting Setting
	// Net is the namespaces.
	Net *Net
	// Servers and Sentinels are the processes by host.
	Servers, Sentinels map[string]*Proc
	// Master is the host of the master the faults target, Replicas the
	// hosts of its replicas.
	Master   string
	Replicas []string
	// Clients are the client hosts.
	Clients []string
	// sentinelHosts are the hosts running a Sentinel (sentinel topology).
	sentinelHosts []string
	// dir holds the hosts' directories.
	dir string
	env Env
}

// addr returns host's server address.
func (d *Deployment) addr(host string) string {
	return net.JoinHostPort(d.Net.IPs[host], strconv.Itoa(serverPort))
}

// sentinelAddrs returns every Sentinel's address.
func (d *Deployment) sentinelAddrs() []string {
	var out []string
	for _, h := range d.Net.Hosts {
		if d.Sentinels[h] != nil {
			out = append(out, net.JoinHostPort(d.Net.IPs[h], strconv.Itoa(sentinelPort)))
		}
	}
	return out
}

// ClientConfig returns how clients reach the deployment.
func (d *Deployment) ClientConfig() ClientConfig {
	if d.Topology == "sentinel" {
		return ClientConfig{Sentinels: d.sentinelAddrs()}
	}
	var seeds []string
	for _, h := range d.Net.Hosts {
		if d.Servers[h] != nil {
			seeds = append(seeds, d.addr(h))
		}
	}
	return ClientConfig{Seeds: seeds}
}

// hostOf returns the host whose address is addr ("ip:port").
func (d *Deployment) hostOf(addr string) string {
	h, _, _ := net.SplitHostPort(addr)
	for name, a := range d.Net.IPs {
		if a == h {
			return name
		}
	}
	return ""
}

func (d *Deployment) hostDir(host string) (string, error) {
	p := filepath.Join(d.dir, host)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", fmt.Errorf("faults: %w", err)
	}
	return p, nil
}

// startServer starts the data server of host with extra flags.
func (d *Deployment) startServer(host string, extra ...string) error {
	dir, err := d.hostDir(host)
	if err != nil {
		return err
	}
	bin := "redis-server"
	if d.Setting.Shardis {
		bin = d.env.Shardnode
	}
	args := []string{bin, "--bind", d.Net.IPs[host], "--port", strconv.Itoa(serverPort),
		"--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", dir,
		"--repl-diskless-sync-delay", "0", "--daemonize", "no"}
	args = append(args, extra...)
	args = append(args, d.Setting.Directives...)
	p, err := StartProc(host, "server", filepath.Join(dir, "server.log"), args...)
	if err != nil {
		return err
	}
	d.Servers[host] = p
	return nil
}

// startSentinel starts a Sentinel on host monitoring master.
func (d *Deployment) startSentinel(host, master string) error {
	dir, err := d.hostDir(host)
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind %s\nprotected-mode no\ndir %s\n"+
		"sentinel monitor %s %s %d 2\nsentinel down-after-milliseconds %[4]s 1000\n"+
		"sentinel failover-timeout %[4]s 5000\nsentinel parallel-syncs %[4]s 2\n",
		sentinelPort, d.Net.IPs[host], dir, MasterName, d.Net.IPs[master], serverPort)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	argv := []string{"redis-sentinel", conf}
	if d.Setting.Shardis {
		argv = []string{d.env.Shardnode, "sentinel", conf}
	}
	p, err := StartProc(host, "sentinel", filepath.Join(dir, "sentinel.log"), argv...)
	if err != nil {
		return err
	}
	d.Sentinels[host] = p
	return nil
}

// Stop kills every process of the deployment.
func (d *Deployment) Stop() {
	for _, m := range []map[string]*Proc{d.Servers, d.Sentinels} {
		for _, p := range m {
			if !p.Exited() {
				_ = p.Kill9()
			}
		}
	}
}

// admin returns a short-lived go-redis client to addr.
func admin(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 1, DialerRetries: 1})
}

// info returns the fields of INFO section of addr.
func info(ctx context.Context, addr, section string) (map[string]string, error) {
	c := admin(addr)
	defer c.Close()
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// waitFor polls cond every 100 ms until it returns nil or limit passes.
func waitFor(limit time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faults: waiting for %s: %w", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replicaSynced checks that addr is a replica whose link is up.
func replicaSynced(ctx context.Context, addr string) error {
	f, err := info(ctx, addr, "replication")
	if err != nil {
		return err
	}
	if f["role"] != "slave" || f["master_link_status"] != "up" {
		return fmt.Errorf("%s: role %s link %s", addr, f["role"], f["master_link_status"])
	}
	return nil
}

// NewSentinel builds the Sentinel deployment: hosts n1 (master), n2 and
// n3 (replicas), each with a Sentinel (quorum 2), and client hosts c1, c2.
// With ownHosts the Sentinels run on hosts of their own, s1, s2 and s3
// (for a fault that cuts the Sentinels but not the replicas from the
// master).
func NewSentinel(env Env, s Setting, dir string, ownHosts bool) (*Deployment, error) {
	hosts := []string{"n1", "n2", "n3", "c1", "c2"}
	sentinelHosts := []string{"n1", "n2", "n3"}
	if ownHosts {
		sentinelHosts = []string{"s1", "s2", "s3"}
		hosts = append(hosts, sentinelHosts...)
	}
	nt, err := NewNet(hosts)
	if err != nil {
		return nil, err
	}
	d := &Deployment{Topology: "sentinel", Setting: s, Net: nt, Servers: map[string]*Proc{},
		Sentinels: map[string]*Proc{}, Master: "n1", Replicas: []string{"n2", "n3"},
		Clients: []string{"c1", "c2"}, sentinelHosts: sentinelHosts, dir: dir, env: env}
	if err := d.startSentinelSet(); err != nil {
		d.Stop()
		nt.Close()
		return nil, err
	}
	return d, nil
}

func (d *Deployment) startSentinelSet() error {
	ctx := context.Background()
	if err := d.startServer("n1"); err != nil {
		return err
	}
	for _, h := range d.Replicas {
		if err := d.startServer(h, "--replicaof", d.Net.IPs["n1"], strconv.Itoa(serverPort)); err != nil {
			return err
		}
	}
	for _, h := range d.sentinelHosts {
		if err := d.startSentinel(h, "n1"); err != nil {
			return err
		}
	}
	for _, h := range d.Replicas {
		if err := waitFor(30*time.Second, "replica "+h, func() error { return replicaSynced(ctx, d.addr(h)) }); err != nil {
			return err
		}
	}
	for _, a := range d.sentinelAddrs() {
		err := waitFor(30*time.Second, "sentinel "+a, func() error {
			c := admin(a)
			defer c.Close()
			m, err := c.Do(ctx, "SENTINEL", "MASTER", MasterName).Result()
			if err != nil {
				return err
			}
			f := fieldMap(m)
			if f["num-slaves"] != "2" || f["num-other-sentinels"] != "2" {
				return fmt.Errorf("num-slaves %s num-other-sentinels %s", f["num-slaves"], f["num-other-sentinels"])
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fieldMap turns a flat RESP2 array or a RESP3 map reply into strings.
func fieldMap(v interface{}) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case []interface{}:
		for i := 0; i+1 < len(x); i += 2 {
			out[fmt.Sprint(x[i])] = fmt.Sprint(x[i+1])
		}
	case map[interface{}]interface{}:
		for k, v := range x {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	}
	return out
}

// NewCluster builds the Cluster deployment: 3 masters with replicas
// replicas each (hosts n1 ...), created with redis-cli --cluster create,
// and client hosts c1, c2. The target master is the one serving
// RegisterKeys[0].
func NewCluster(env Env, s Setting, dir string, replicas int) (*Deployment, error) {
	var hosts []string
	n := 3 * (1 + replicas)
	for i := 1; i <= n; i++ {
		hosts = append(hosts, "n"+strconv.Itoa(i))
	}
	nt, err := NewNet(append(hosts, "c1", "c2"))
	if err != nil {
		return nil, err
	}
	d := &Deployment{Topology: "cluster", Setting: s, Net: nt, Servers: map[string]*Proc{},
		Sentinels: map[string]*Proc{}, Clients: []string{"c1", "c2"}, dir: dir, env: env}
	if err := d.startCluster(hosts, replicas); err != nil {
		d.Stop()
		nt.Close()
		return nil, err
	}
	return d, nil
}

func (d *Deployment) startCluster(hosts []string, replicas int) error {
	ctx := context.Background()
	var addrs []string
	for _, h := range hosts {
		if err := d.startServer(h, "--cluster-enabled", "yes", "--cluster-node-timeout", "1000",
			"--cluster-config-file", "nodes.conf"); err != nil {
			return err
		}
		addrs = append(addrs, d.addr(h))
	}
	for _, a := range addrs {
		if err := waitFor(20*time.Second, "node "+a, func() error { return admin(a).Ping(ctx).Err() }); err != nil {
			return err
		}
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("faults: redis-cli --cluster create: %w: %s", err, out)
	}
	for _, a := range addrs {
		err := waitFor(30*time.Second, "cluster state of "+a, func() error {
			f, err := info(ctx, a, "cluster")
			if err != nil {
				return err
			}
			c := admin(a)
			defer c.Close()
			ci, err := c.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(ci, "cluster_state:ok") || !strings.Contains(ci, "cluster_known_nodes:"+strconv.Itoa(len(addrs))) {
				return fmt.Errorf("%s: not ok yet (%v)", a, f)
			}
			r, err := info(ctx, a, "replication")
			if err != nil {
				return err
			}
			if r["role"] == "slave" && r["master_link_status"] != "up" {
				return fmt.Errorf("%s: replica link %s", a, r["master_link_status"])
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// The replicas' flags reach every view by gossip, a little after the
	// states turn ok.
	return waitFor(10*time.Second, "the target master's replicas", func() error {
		d.Master, d.Replicas = "", nil
		return d.findTarget(ctx, addrs[0], replicas)
	})
}

// findTarget sets Master and Replicas from CLUSTER NODES on addr.
func (d *Deployment) findTarget(ctx context.Context, addr string, replicas int) error {
	c := admin(addr)
	defer c.Close()
	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return fmt.Errorf("faults: cluster nodes: %w", err)
	}
	slot := cluster.Slot(RegisterKeys[0])
	ids := map[string]string{} // id -> host
	masterID := ""
	type rep struct{ host, master string }
	var reps []rep
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		host := d.hostOf(strings.Split(f[1], "@")[0])
		ids[f[0]] = host
		if strings.Contains(f[2], "slave") {
			reps = append(reps, rep{host, f[3]})
			continue
		}
		for _, r := range f[8:] {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, _ := strconv.Atoi(lo)
			b, _ := strconv.Atoi(hi)
			if slot >= a && slot <= b {
				masterID = f[0]
			}
		}
	}
	if masterID == "" {
		return fmt.Errorf("faults: no master serves slot %d", slot)
	}
	d.Master = ids[masterID]
	for _, r := range reps {
		if r.master == masterID {
			d.Replicas = append(d.Replicas, r.host)
		}
	}
	if len(d.Replicas) != replicas {
		return fmt.Errorf("faults: master %s has replicas %v, want %d", d.Master, d.Replicas, replicas)
	}
	return nil
}
