package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/admin"
	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/deploy"
	"github.com/shardis/shardis/internal/migrate"
)

// GrowResult is what adding a machine cost.
type GrowResult struct {
	// Method says how the topology grew.
	Method string `json:"method"`
	// NewNode is the added node's address.
	NewNode string `json:"new_node"`
	// Seconds is the whole operation, from the first command to the
	// moment the client routes to the new node.
	Seconds float64 `json:"seconds"`
	// SwitchSeconds (pre-sharding only) is the part from migrate-shard's
	// start to the pool's switch, without the wait for the Sentinels to
	// learn the new replica and the others' replica-priority 0 (their
	// INFO period, 10s).
	SwitchSeconds float64 `json:"switch_seconds,omitempty"`
	// KeysMoved counts the keys the new node holds afterwards.
	KeysMoved int64 `json:"keys_moved"`
	// SlotsMoved and SlotsTotal are the slots rebalanced and to rebalance
	// (cluster only).
	SlotsMoved int `json:"slots_moved,omitempty"`
	SlotsTotal int `json:"slots_total,omitempty"`
	// Completed is false when the rebalance was stopped by GrowTimeout;
	// ProjectedSeconds then extrapolates its whole length from its rate.
	Completed        bool    `json:"completed"`
	ProjectedSeconds float64 `json:"projected_seconds,omitempty"`
	// ClientRequests and ClientErrors count the GET/SET traffic that ran
	// during the operation and its failures.
	ClientRequests int64 `json:"client_requests"`
	ClientErrors   int64 `json:"client_errors"`
	// RingChangeKeys and RingChangeFraction (pre-sharding only) are how
	// many of the preloaded keys would change shard if the ring grew by
	// one shard instead.
	RingChangeKeys     int64   `json:"ring_change_keys,omitempty"`
	RingChangeFraction float64 `json:"ring_change_fraction,omitempty"`
}

// newNode starts an empty shardnode for the growth phase (in cluster mode
// for a cluster), or returns opt.GrowNode for an existing deployment ("" to
// skip the phase).
func (t *target) newNode(ctx context.Context) (string, error) {
	opt := t.opt
	if opt.external() {
		return opt.GrowNode, nil
	}
	port, err := freeBlock(1, t.cl != nil)
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := filepath.Join(t.dir, "grow", strconv.Itoa(port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("compare: %w", err)
	}
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %q\nappendonly yes\nappendfsync everysec\nsave \"\"\n"+
		"repl-diskless-sync-delay 0\n", port, dir)
	if t.cl != nil {
		conf += fmt.Sprintf("cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout %d\ncluster-require-full-coverage no\n",
			opt.DownAfter.Milliseconds())
	}
	path := filepath.Join(dir, "node.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return "", fmt.Errorf("compare: %w", err)
	}
	p, err := t.sup.Start("node "+addr+" (grown)", 0, dir, filepath.Join(dir, "node.log"), opt.Executable, path)
	if err != nil {
		return "", fmt.Errorf("compare: %w", err)
	}
	c := nodeClient(addr)
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c.Ping(ctx).Err() == nil {
			return addr, nil
		}
		select {
		case <-p.Done():
			return "", fmt.Errorf("compare: new node %s exited: %v\n%s", addr, p.Err(), deploy.Tail(p.LogPath, 10))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("compare: new node %s does not answer", addr)
		}
	}
}

// growPace spaces the requests of one client goroutine during growth:
// the traffic is paced (250 requests/s per goroutine) so that the
// operation's time measures the operation, not the share of two cores
// that a saturating load leaves it.
const growPace = 4 * time.Millisecond

// runGrow adds a machine to the topology under paced GET/SET traffic.
func runGrow(ctx context.Context, opt *Options, t *target) (*GrowResult, error) {
	addr, err := t.newNode(ctx)
	if err != nil {
		return nil, err
	}
	if addr == "" {
		fmt.Fprintf(opt.Progress, "%s: growth skipped (no --grow-node)\n", t.name)
		return nil, nil
	}
	// GET/SET traffic for the whole operation, its errors counted.
	var reqs, errs atomic.Int64
	var firstErr atomic.Value
	tctx, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range opt.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newGen(opt, t, uint64(i+1)*104729)
			next := time.Now()
			for tctx.Err() == nil {
				next = next.Add(growPace)
				if d := time.Until(next); d > 0 {
					select {
					case <-tctx.Done():
						return
					case <-time.After(d):
					}
				}
				_, err := workloads[0].step(tctx, g)
				if tctx.Err() != nil {
					return
				}
				reqs.Add(1)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	stopProgress := progress(opt, func(el time.Duration) string {
		return fmt.Sprintf("%s growing %4.0fs: %d requests, %d errors", t.name, el.Seconds(), reqs.Load(), errs.Load())
	})
	start := time.Now()
	var g *GrowResult
	if t.pool != nil {
		g, err = t.growPreSharding(ctx, addr)
	} else {
		g, err = t.growCluster(ctx, addr)
	}
	elapsed := time.Since(start)
	stopTraffic()
	wg.Wait()
	stopProgress()
	if err != nil {
		return nil, err
	}
	g.NewNode = addr
	g.Seconds = round(elapsed.Seconds(), 2)
	g.ClientRequests, g.ClientErrors = reqs.Load(), errs.Load()
	c := nodeClient(addr)
	g.KeysMoved, err = c.DBSize(ctx).Result()
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("compare: DBSIZE of %s: %w", addr, err)
	}
	msg := ""
	if e, ok := firstErr.Load().(string); ok {
		msg = " (first: " + e + ")"
	}
	fmt.Fprintf(opt.Progress, "%s: grew in %.2fs (%s): %d keys moved, %d client errors in %d requests%s\n",
		t.name, g.Seconds, g.Method, g.KeysMoved, g.ClientErrors, g.ClientRequests, msg)
	if g.RingChangeKeys > 0 {
		fmt.Fprintf(opt.Progress, "%s: adding a shard to the ring instead would move %d of %d keys (%.1f%%)\n",
			t.name, g.RingChangeKeys, opt.Keys, 100*g.RingChangeFraction)
	}
	return g, nil
}

// growPreSharding moves the last shard to the new node: migrate-shard's
// procedure (replicate, catch up, FAILOVER TO with writes paused), then
// SENTINEL FAILOVER to the new node (the shard's other replicas made
// ineligible for the time) so that the Sentinels, and through them every
// pool, follow the move with a new configuration epoch.
func (t *target) growPreSharding(ctx context.Context, addr string) (*GrowResult, error) {
	stats := t.pool.Stats()
	shard := stats[len(stats)-1]
	sentinels := t.opt.SentinelAddrs
	if t.dep != nil {
		sentinels = t.dep.Layout.SentinelAddrs()
	}
	out := t.opt.Progress
	fmt.Fprintf(out, "%s: moving %s from %s to the new node %s (migrate-shard, then SENTINEL FAILOVER)\n",
		t.name, shard.Name, shard.Addr, addr)
	nn, master := nodeClient(addr), nodeClient(shard.Addr)
	defer nn.Close()
	defer master.Close()
	mh, mp, _ := net.SplitHostPort(shard.Addr)
	// Only the new node may be promoted.
	info, err := master.Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	var others []string
	for _, a := range replicaAddrs(info) {
		if a != addr {
			others = append(others, a)
		}
	}
	setPriority := func(prio string) error {
		for _, a := range others {
			c := nodeClient(a)
			err := c.ConfigSet(ctx, "replica-priority", prio).Err()
			c.Close()
			if err != nil {
				return fmt.Errorf("compare: replica-priority on %s: %w", a, err)
			}
		}
		return nil
	}
	if err := setPriority("0"); err != nil {
		return nil, err
	}
	defer setPriority("100")
	// The Sentinels learn replicas, and their priorities, from INFO: the
	// new node replicates first, and the others get replica-priority 0,
	// so that the Sentinels know both before the switch.
	if err := nn.Do(ctx, "REPLICAOF", mh, mp).Err(); err != nil {
		return nil, fmt.Errorf("compare: REPLICAOF on %s: %w", addr, err)
	}
	scs := make([]*redis.SentinelClient, len(sentinels))
	for i, a := range sentinels {
		scs[i] = redis.NewSentinelClient(&redis.Options{Addr: a, DisableIdentity: true, DialTimeout: time.Second})
		defer scs[i].Close()
	}
	err = waitUntil(ctx, 60*time.Second, func() string {
		for i, sc := range scs {
			reps, err := sc.Replicas(ctx, shard.Name).Result()
			if err != nil {
				return fmt.Sprintf("sentinel %s: %v", sentinels[i], err)
			}
			if !slicesContainsAddr(reps, addr) {
				return "sentinel " + sentinels[i] + " does not list the new node yet"
			}
			for _, r := range reps {
				if a := net.JoinHostPort(r["ip"], r["port"]); a != addr && r["slave-priority"] != "0" {
					return "sentinel " + sentinels[i] + " has not seen replica-priority 0 on " + a + " yet"
				}
			}
		}
		return ""
	})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	switchStart := time.Now()
	if err := migrate.Run(ctx, migrate.Options{From: shard.Addr, To: addr, Force: true}); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	// A failover can abort (the Sentinel's view of the new node not
	// fresh enough yet): it is asked again every 2s until the Sentinel
	// names the new node.
	var asked time.Time
	var lastErr string
	err = waitUntil(ctx, 30*time.Second, func() string {
		if a, err := scs[0].GetMasterAddrByName(ctx, shard.Name).Result(); err == nil && len(a) == 2 &&
			net.JoinHostPort(a[0], a[1]) == addr {
			return ""
		}
		if time.Since(asked) > 2*time.Second {
			asked = time.Now()
			if err := scs[0].Failover(ctx, shard.Name).Err(); err != nil && !strings.HasPrefix(err.Error(), "INPROG") {
				lastErr = err.Error()
			}
		}
		return "Sentinel " + sentinels[0] + " does not name the new node as master of " + shard.Name + " (" + lastErr + ")"
	})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	err = waitUntil(ctx, 30*time.Second, func() string {
		for _, s := range t.pool.Stats() {
			if s.Name == shard.Name && s.Addr != addr {
				return "the pool still routes " + shard.Name + " to " + s.Addr
			}
		}
		return ""
	})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	g := &GrowResult{Method: "migrate-shard of " + shard.Name + " + SENTINEL FAILOVER", Completed: true,
		SwitchSeconds: round(time.Since(switchStart).Seconds(), 2)}
	n := len(stats)
	before := consistent.NewMurmur(unnamed(n), consistent.MurmurOptions{KeyTags: true})
	after := consistent.NewMurmur(unnamed(n+1), consistent.MurmurOptions{KeyTags: true})
	for i := range t.opt.Keys {
		if k := key(i); before.Get(k) != after.Get(k) {
			g.RingChangeKeys++
		}
	}
	g.RingChangeFraction = round(float64(g.RingChangeKeys)/float64(t.opt.Keys), 4)
	return g, nil
}

func unnamed(n int) []consistent.Shard { return make([]consistent.Shard, n) }

// replicaAddrs lists the replicas of an INFO replication reply.
func replicaAddrs(info string) []string {
	var out []string
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(k, "slave") || k == "slave_repl_offset" || strings.Contains(k, "_") {
			continue
		}
		f := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			if a, b, ok := strings.Cut(kv, "="); ok {
				f[a] = b
			}
		}
		if f["ip"] != "" {
			out = append(out, net.JoinHostPort(f["ip"], f["port"]))
		}
	}
	return out
}

func slicesContainsAddr(reps []map[string]string, addr string) bool {
	for _, r := range reps {
		if net.JoinHostPort(r["ip"], r["port"]) == addr {
			return true
		}
	}
	return false
}

// growCluster adds the new node as an empty master and rebalances the
// slots onto it.
func (t *target) growCluster(ctx context.Context, addr string) (*GrowResult, error) {
	seed := t.masters(ctx)[0]
	fmt.Fprintf(t.opt.Progress, "%s: adding %s as a master (add-node) and rebalancing\n", t.name, addr)
	var done, total atomic.Int64
	aopt := &admin.Options{Timeout: 10 * time.Second, WaitTimeout: 60 * time.Second, Pipeline: 100,
		Progress: func(p admin.Progress) {
			if p.Op == "rebalance" {
				done.Store(int64(p.Done))
				total.Store(int64(p.Total))
			}
		}}
	if err := admin.AddNode(ctx, addr, seed, admin.AddNodeOptions{}, aopt); err != nil {
		return nil, fmt.Errorf("compare: add-node: %w", err)
	}
	g := &GrowResult{Method: "add-node + rebalance", Completed: true}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t.opt.GrowTimeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, t.opt.GrowTimeout)
		defer cancel()
	}
	start := time.Now()
	moved, err := admin.Rebalance(rctx, seed, admin.RebalanceOptions{UseEmptyMasters: true}, aopt)
	g.SlotsMoved = moved
	if err != nil && rctx.Err() != nil && ctx.Err() == nil {
		// Time-boxed: say how far it got, and close the slot left open.
		g.Completed = false
		g.SlotsMoved = int(done.Load())
		g.SlotsTotal = int(total.Load())
		if g.SlotsMoved > 0 {
			g.ProjectedSeconds = round(time.Since(start).Seconds()*float64(g.SlotsTotal)/float64(g.SlotsMoved), 1)
		}
		fmt.Fprintf(t.opt.Progress, "%s: rebalance stopped after --grow-timeout %s: %d of %d slots moved (the whole would take about %.0fs); fixing the open slot\n",
			t.name, t.opt.GrowTimeout, g.SlotsMoved, g.SlotsTotal, g.ProjectedSeconds)
		if _, err := admin.Fix(ctx, seed, &admin.Options{Timeout: 10 * time.Second, WaitTimeout: 60 * time.Second, Pipeline: 100}); err != nil {
			return nil, fmt.Errorf("compare: fix after the time-boxed rebalance: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("compare: rebalance: %w", err)
	} else {
		g.SlotsTotal = moved
	}
	err = waitUntil(ctx, 30*time.Second, func() string {
		if err := t.cl.RefreshNow(ctx); err != nil {
			return err.Error()
		}
		for _, s := range t.cl.Shards() {
			if s.Master == addr {
				return ""
			}
		}
		return "the client does not route to the new master yet"
	})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return g, nil
}

// waitUntil polls cond every 50ms until it returns "" or timeout passes.
func waitUntil(ctx context.Context, timeout time.Duration, cond func() string) error {
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New(msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
