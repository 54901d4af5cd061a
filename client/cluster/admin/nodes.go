package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotCount is the number of hash slots of a Redis cluster.
const SlotCount = 16384

// Options are shared by every operation. Zero values mean the documented
// default.
type Options struct {
	// Username and Password authenticate to every node. Default: none.
	Username, Password string
	// Timeout bounds each request to a node (MIGRATE included, as
	// redis-cli's --cluster-timeout). Default 60s.
	Timeout time.Duration
	// Pipeline is how many keys one GETKEYSINSLOT / MIGRATE batch moves
	// (redis-cli's --cluster-pipeline). Default 10.
	Pipeline int
	// Replace moves keys that already exist on the target with MIGRATE
	// REPLACE (redis-cli's --cluster-replace). Default false: a key with a
	// different value on the target stops the move.
	Replace bool
	// WaitTimeout bounds each wait for the cluster to converge (nodes
	// joining, configurations agreeing, a failover). Default 60s.
	WaitTimeout time.Duration
	// Progress, if set, is called as long operations advance.
	Progress func(Progress)
	// Logger receives one Info line per step, in redis-cli's words.
	// Default: discard.
	Logger *slog.Logger
	// Mover moves slots between two masters. Default MigrationMover{}:
	// whole-slot migration where both masters support it, key by key
	// (KeyMover) otherwise.
	Mover SlotMover
}

// Progress reports how far a long operation is.
type Progress struct {
	// Op is the operation: "reshard", "rebalance", "fix", "create",
	// "failover".
	Op string
	// Done and Total count units of work (slots moved, steps).
	Done, Total int
	// Detail says what was just done ("slot 42 -> 127.0.0.1:7001").
	Detail string
}

func (o *Options) defaulted() *Options {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Timeout == 0 {
		opt.Timeout = 60 * time.Second
	}
	if opt.Pipeline == 0 {
		opt.Pipeline = 10
	}
	if opt.WaitTimeout == 0 {
		opt.WaitTimeout = 60 * time.Second
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Mover == nil {
		opt.Mover = MigrationMover{}
	}
	return &opt
}

func (o *Options) progress(op string, done, total int, detail string) {
	if o.Progress != nil {
		o.Progress(Progress{Op: op, Done: done, Total: total, Detail: detail})
	}
}

func (o *Options) logf(format string, args ...any) {
	o.Logger.Info(fmt.Sprintf(format, args...))
}

// Node is one cluster node as it describes itself (its own "myself" line
// of CLUSTER NODES), with a connection to it.
type Node struct {
	// ID is the 40-character node ID.
	ID string
	// Addr is "ip:port"; BusPort is the cluster bus port.
	Addr    string
	BusPort int
	// Flags are the CLUSTER NODES flags (myself, master, slave, fail ...).
	Flags []string
	// ReplicaOf is the master's ID for a replica, "" for a master.
	ReplicaOf string
	// ConfigEpoch is the node's configuration epoch.
	ConfigEpoch int64
	// Link is the link state as seen by the node that listed it.
	Link string
	// Slots are the slots the node serves, in ascending order.
	Slots []int
	// Migrating and Importing map open slots to the other node's ID.
	Migrating, Importing map[int]string

	client *redis.Client
}

// IsMaster reports whether the node is a master.
func (n *Node) IsMaster() bool { return slices.Contains(n.Flags, "master") }

func (n *Node) hasFlag(f string) bool { return slices.Contains(n.Flags, f) }

// Client returns the node's connection (owned by the Cluster).
func (n *Node) Client() *redis.Client { return n.client }

// host and port of Addr.
func (n *Node) hostPort() (string, int) {
	h, p, _ := net.SplitHostPort(n.Addr)
	port, _ := strconv.Atoi(p)
	return h, port
}

// parseNodes parses a CLUSTER NODES reply.
func parseNodes(text string) ([]*Node, error) {
	var out []*Node
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("admin: CLUSTER NODES line %q: too few fields", line)
		}
		n := &Node{ID: f[0], Flags: strings.Split(f[2], ","), Link: f[7],
			Migrating: map[int]string{}, Importing: map[int]string{}}
		addr := f[1]
		if i := strings.IndexByte(addr, ','); i >= 0 {
			addr = addr[:i] // hostname
		}
		if i := strings.IndexByte(addr, '@'); i >= 0 {
			n.BusPort, _ = strconv.Atoi(addr[i+1:])
			addr = addr[:i]
		}
		n.Addr = addr
		if f[3] != "-" {
			n.ReplicaOf = f[3]
		}
		n.ConfigEpoch, _ = strconv.ParseInt(f[6], 10, 64)
		for _, s := range f[8:] {
			switch {
			case strings.HasPrefix(s, "["):
				body := strings.Trim(s, "[]")
				if i := strings.Index(body, "->-"); i > 0 {
					slot, _ := strconv.Atoi(body[:i])
					n.Migrating[slot] = body[i+3:]
				} else if i := strings.Index(body, "-<-"); i > 0 {
					slot, _ := strconv.Atoi(body[:i])
					n.Importing[slot] = body[i+3:]
				}
			case strings.Contains(s, "-"):
				a, b, _ := strings.Cut(s, "-")
				lo, err1 := strconv.Atoi(a)
				hi, err2 := strconv.Atoi(b)
				if err1 != nil || err2 != nil || lo > hi || hi >= SlotCount {
					return nil, fmt.Errorf("admin: CLUSTER NODES slot range %q", s)
				}
				for x := lo; x <= hi; x++ {
					n.Slots = append(n.Slots, x)
				}
			default:
				x, err := strconv.Atoi(s)
				if err != nil || x < 0 || x >= SlotCount {
					return nil, fmt.Errorf("admin: CLUSTER NODES slot %q", s)
				}
				n.Slots = append(n.Slots, x)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// signature is a node's view of slot ownership, as redis-cli compares
// them: "id:ranges" for every node listed with slots, sorted.
func signature(text string) string {
	var parts []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) <= 8 {
			continue
		}
		var slots []string
		for _, s := range f[8:] {
			if !strings.HasPrefix(s, "[") {
				slots = append(slots, s)
			}
		}
		if len(slots) == 0 {
			continue
		}
		sort.Strings(slots)
		parts = append(parts, f[0]+":"+strings.Join(slots, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, "|")
}

// Cluster is the configuration of a cluster read from all its reachable
// nodes. Close releases its connections.
type Cluster struct {
	// Nodes are the reachable nodes, the entry node first.
	Nodes []*Node
	// Unreachable lists the addresses of known nodes that did not answer
	// (with "fail" nodes among them).
	Unreachable []string
	// UnreachableMasters counts the unreachable nodes flagged master.
	UnreachableMasters int

	opt *Options
}

func (o *Options) dial(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Username: o.Username, Password: o.Password,
		DialTimeout: 5 * time.Second, ReadTimeout: o.Timeout + 5*time.Second, WriteTimeout: o.Timeout,
		DialerRetries: 1, MaxRetries: -1, PoolSize: 2, DisableIdentity: true, Protocol: 2,
	})
}

func (o *Options) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.Timeout)
}

// loadNode connects to addr and reads its own line of CLUSTER NODES; it
// returns the node and the full list (friends included).
func loadNode(ctx context.Context, opt *Options, addr string) (*Node, []*Node, error) {
	c := opt.dial(addr)
	cctx, cancel := opt.ctx(ctx)
	defer cancel()
	text, err := c.ClusterNodes(cctx).Result()
	if err != nil {
		c.Close()
		if strings.Contains(err.Error(), "cluster support disabled") {
			return nil, nil, fmt.Errorf("admin: node %s is not configured as a cluster node", addr)
		}
		return nil, nil, fmt.Errorf("admin: CLUSTER NODES on %s: %w", addr, err)
	}
	all, err := parseNodes(text)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	for _, n := range all {
		if n.hasFlag("myself") {
			n.client = c
			if h, _, _ := net.SplitHostPort(n.Addr); h == "" {
				n.Addr = addr // a node that has met no one does not know its IP
			}
			return n, all, nil
		}
	}
	c.Close()
	return nil, nil, fmt.Errorf("admin: CLUSTER NODES on %s has no myself line", addr)
}

// Load reads the cluster's configuration through the node at addr: that
// node's view lists the others, and each is asked for its own line.
func Load(ctx context.Context, addr string, opt *Options) (*Cluster, error) {
	opt = opt.defaulted()
	entry, friends, err := loadNode(ctx, opt, addr)
	if err != nil {
		return nil, err
	}
	cl := &Cluster{Nodes: []*Node{entry}, opt: opt}
	for _, f := range friends {
		if f.hasFlag("myself") || f.hasFlag("noaddr") || f.hasFlag("handshake") {
			continue
		}
		n, _, err := loadNode(ctx, opt, f.Addr)
		if err != nil {
			if ctx.Err() != nil {
				cl.Close()
				return nil, ctx.Err()
			}
			cl.Unreachable = append(cl.Unreachable, f.Addr)
			if f.hasFlag("master") {
				cl.UnreachableMasters++
			}
			continue
		}
		cl.Nodes = append(cl.Nodes, n)
	}
	return cl, nil
}

// Close closes the connections to the nodes.
func (cl *Cluster) Close() {
	for _, n := range cl.Nodes {
		if n.client != nil {
			n.client.Close()
		}
	}
}

// Masters returns the reachable masters.
func (cl *Cluster) Masters() []*Node {
	var out []*Node
	for _, n := range cl.Nodes {
		if n.IsMaster() {
			out = append(out, n)
		}
	}
	return out
}

// ReplicasOf returns the reachable replicas of the master with id.
func (cl *Cluster) ReplicasOf(id string) []*Node {
	var out []*Node
	for _, n := range cl.Nodes {
		if n.ReplicaOf == id {
			out = append(out, n)
		}
	}
	return out
}

// ByID finds a node by ID or by an unambiguous ID prefix.
func (cl *Cluster) ByID(id string) (*Node, error) {
	var found *Node
	for _, n := range cl.Nodes {
		if n.ID == id {
			return n, nil
		}
		if id != "" && strings.HasPrefix(n.ID, id) {
			if found != nil {
				return nil, fmt.Errorf("admin: node ID prefix %q is ambiguous", id)
			}
			found = n
		}
	}
	if found == nil {
		return nil, fmt.Errorf("admin: no such node ID %s", id)
	}
	return found, nil
}

// ByAddr finds a node by "host:port".
func (cl *Cluster) ByAddr(addr string) *Node {
	for _, n := range cl.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// do runs one command on n and returns its reply.
func (cl *Cluster) do(ctx context.Context, n *Node, args ...interface{}) *redis.Cmd {
	cctx, cancel := cl.opt.ctx(ctx)
	defer cancel()
	return n.client.Do(cctx, args...)
}

// must runs one command on n and returns its error, wrapped.
func (cl *Cluster) must(ctx context.Context, n *Node, args ...interface{}) error {
	if err := cl.do(ctx, n, args...).Err(); err != nil {
		return fmt.Errorf("admin: %s on %s: %w", cmdString(args), n.Addr, err)
	}
	return nil
}

func cmdString(args []interface{}) string {
	parts := make([]string, 0, 3)
	for i, a := range args {
		if i == 3 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, strings.ToUpper(fmt.Sprint(a)))
	}
	return strings.Join(parts, " ")
}

// countKeys returns CLUSTER COUNTKEYSINSLOT slot on n.
func (cl *Cluster) countKeys(ctx context.Context, n *Node, slot int) (int64, error) {
	v, err := cl.do(ctx, n, "cluster", "countkeysinslot", slot).Int64()
	if err != nil {
		return 0, fmt.Errorf("admin: CLUSTER COUNTKEYSINSLOT on %s: %w", n.Addr, err)
	}
	return v, nil
}

// consistent reports whether every reachable node has the same view of
// slot ownership.
func (cl *Cluster) consistent(ctx context.Context) (bool, error) {
	first := ""
	for i, n := range cl.Nodes {
		text, err := cl.do(ctx, n, "cluster", "nodes").Text()
		if err != nil {
			return false, fmt.Errorf("admin: CLUSTER NODES on %s: %w", n.Addr, err)
		}
		sig := signature(text)
		if i == 0 {
			first = sig
		} else if sig != first {
			return false, nil
		}
	}
	return true, nil
}

// waitConsistent polls until the nodes agree, up to WaitTimeout.
func (cl *Cluster) waitConsistent(ctx context.Context) error {
	return poll(ctx, cl.opt.WaitTimeout, "the nodes to agree about the configuration", func() (bool, error) {
		return cl.consistent(ctx)
	})
}

// poll calls cond every 50 ms until it is true, fails or timeout passes.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("admin: timed out after %v waiting for %s", timeout, what)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// errStop is returned when a check finds problems an operation refuses to
// run with.
var errStop = errors.New("admin: the cluster has problems; run check and fix first")
