// Command slotmigload drives scripts/bench-slotmig.sh: whole-slot
// migration (CLUSTER MIGRATION IMPORT) under load, and with the source or
// the target killed at a random point.
//
// Each run starts 3 shardnode masters (no replicas, so no failover;
// appendonly yes, appendfsync always), loads -keys counters, starts
// -writers go-redis ClusterClient writers that INCR random counters, and
// has the third master import -slots slots from the first. With -kill
// source|target the node is killed (SIGKILL) at a random moment of the
// migration and restarted from its AOF and nodes.conf. At the end it
// checks that every node binds every slot to the same single owner, that
// every counter holds at least its acknowledged increments (over counts
// those above acknowledged plus failed ones: the client's own retries of
// an INCR cut by a kill), and that no client saw ASK or TRYAGAIN. It prints one line per run:
//
//	run=1 kill=none result=ok keys=54931 migrate_ms=812 keys_per_s=67651 server_pause_ms=9 client_max_incr_ms=14 ask=0 tryagain=0 lost=0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

type node struct {
	port int
	dir  string
	cmd  *exec.Cmd
	rc   *redis.Client
}

var (
	bin      = flag.String("bin", "shardnode", "shardnode binary")
	base     = flag.Int("base", 21100, "first client port (bus ports are +10000)")
	nkeys    = flag.Int("keys", 100000, "counters loaded before the migration")
	nwriters = flag.Int("writers", 16, "concurrent writers")
	nslots   = flag.Int("slots", 3000, "slots moved (from slot 0 on)")
	kill     = flag.String("kill", "none", "none, source or target")
	runs     = flag.Int("runs", 1, "runs")
	workDir  = flag.String("dir", "", "work directory (default: a new temporary one)")
	killIn   = flag.String("kill-in", "", "kill when the victim's task reaches this state (handoff: the write pause) instead of at a random moment")
	seed     = flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (kill moments)")
	window   = flag.Duration("kill-window", 400*time.Millisecond, "a random kill falls within this time after IMPORT (about the migration's time)")
)

func main() {
	flag.Parse()
	dir := *workDir
	if dir == "" {
		d, err := os.MkdirTemp("", "slotmig")
		if err != nil {
			fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	rng := rand.New(rand.NewPCG(*seed, 7))
	bad := 0
	for r := 1; r <= *runs; r++ {
		if err := run(r, filepath.Join(dir, fmt.Sprint(r)), rng); err != nil {
			fmt.Printf("run=%d kill=%s result=FAIL err=%q\n", r, *kill, err.Error())
			bad++
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "slotmigload:", err)
	os.Exit(2)
}

func (n *node) start() error {
	args := []string{"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-node-timeout", "5000", "--cluster-config-file", filepath.Join(n.dir, "nodes.conf"),
		"--dir", n.dir, "--save", "", "--appendonly", "yes", "--appendfsync", n.fsync(), "--loglevel", "notice",
		"--logfile", filepath.Join(n.dir, "log")}
	n.cmd = exec.Command(*bin, args...)
	if err := n.cmd.Start(); err != nil {
		return err
	}
	if n.rc == nil {
		n.rc = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", n.port), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 10 * time.Second})
	}
	for i := 0; i < 600; i++ {
		if n.rc.Ping(context.Background()).Err() == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("node %d did not start", n.port)
}

// fsync is the appendfsync a start uses: everysec for the first (the
// load), always for a restart.
func (n *node) fsync() string {
	if n.cmd == nil {
		return "everysec"
	}
	return "always"
}

func (n *node) killNow() {
	_ = n.cmd.Process.Kill()
	_, _ = n.cmd.Process.Wait()
}

func (n *node) stop() {
	if n.cmd != nil && n.cmd.Process != nil {
		n.killNow()
	}
	if n.rc != nil {
		n.rc.Close()
	}
}

func do(n *node, args ...any) (any, error) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.rc.Do(c, args...).Result()
}

func clusterOK(nodes []*node) bool {
	for _, n := range nodes {
		v, err := n.rc.ClusterInfo(context.Background()).Result()
		if err != nil || !strings.Contains(v, "cluster_state:ok") || !strings.Contains(v, "cluster_known_nodes:3") {
			return false
		}
	}
	return true
}

func waitFor1ms(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timeout")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func waitFor(d time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timeout waiting for " + what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// owners returns each node's slot-to-owner table (CLUSTER SLOTS).
func owners(n *node) ([]string, error) {
	v, err := n.rc.ClusterSlots(context.Background()).Result()
	if err != nil {
		return nil, err
	}
	out := make([]string, 16384)
	for _, r := range v {
		for s := r.Start; s <= r.End; s++ {
			if out[s] != "" {
				return nil, fmt.Errorf("slot %d listed twice", s)
			}
			out[s] = r.Nodes[0].ID
		}
	}
	return out, nil
}

// status returns a task's STATUS fields on n.
func status(n *node, id string) map[string]string {
	v, err := do(n, "cluster", "migration", "status", "id", id)
	if err != nil {
		return nil
	}
	tasks, _ := v.([]any)
	if len(tasks) == 0 {
		return nil
	}
	out := map[string]string{}
	switch f := tasks[0].(type) {
	case []any: // RESP2
		for i := 0; i+1 < len(f); i += 2 {
			out[fmt.Sprint(f[i])] = fmt.Sprint(f[i+1])
		}
	case map[any]any: // RESP3
		for k, v := range f {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	}
	return out
}

func finished(st map[string]string) bool {
	switch st["state"] {
	case "completed", "failed", "canceled":
		return true
	}
	return false
}

func run(r int, dir string, rng *rand.Rand) error {
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = &node{port: *base + i, dir: filepath.Join(dir, strconv.Itoa(i))}
		if err := os.MkdirAll(nodes[i].dir, 0o755); err != nil {
			return err
		}
		defer nodes[i].stop()
		if err := nodes[i].start(); err != nil {
			return err
		}
	}
	per := 16384 / 3
	for i, n := range nodes {
		if _, err := do(n, "cluster", "set-config-epoch", i+1); err != nil {
			return err
		}
		end := (i+1)*per - 1
		if i == 2 {
			end = 16383
		}
		if _, err := do(n, "cluster", "addslotsrange", i*per, end); err != nil {
			return err
		}
		if i > 0 {
			if _, err := do(n, "cluster", "meet", "127.0.0.1", nodes[0].port); err != nil {
				return err
			}
		}
	}
	if err := waitFor(30*time.Second, "cluster ok", func() bool { return clusterOK(nodes) }); err != nil {
		return err
	}
	var asks, tryagains atomic.Int64
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].rc.Options().Addr}, MaxRedirects: 16,
		ReadTimeout: 10 * time.Second, MaxRetries: 8, MinRetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 200 * time.Millisecond})
	defer cc.Close()
	cc.OnNewNode(func(c *redis.Client) { c.AddHook(redirectCounter{&asks, &tryagains}) })
	keys := make([]string, *nkeys)
	for i := range keys {
		keys[i] = "ctr:" + strconv.Itoa(i)
	}
	ctx := context.Background()
	for i := 0; i < len(keys); i += 1000 {
		p := cc.Pipeline()
		for _, k := range keys[i:min(i+1000, len(keys))] {
			p.Set(ctx, k, 0, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	// Loaded with appendfsync everysec (a fsync per SET would take
	// minutes), then every node fsyncs every write.
	for _, n := range nodes {
		if _, err := do(n, "config", "set", "appendfsync", "always"); err != nil {
			return err
		}
	}
	acked := make([]atomic.Int64, len(keys))
	failed := make([]atomic.Int64, len(keys))
	var maxIncr atomic.Int64 // ns
	var migrating atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < *nwriters; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lr := rand.New(rand.NewPCG(uint64(w), uint64(r)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := lr.IntN(len(keys))
				t0 := time.Now()
				c, cancel := context.WithTimeout(ctx, 15*time.Second)
				err := cc.Incr(c, keys[i]).Err()
				cancel()
				if err != nil {
					failed[i].Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if d := time.Since(t0); migrating.Load() {
					for {
						old := maxIncr.Load()
						if int64(d) <= old || maxIncr.CompareAndSwap(old, int64(d)) {
							break
						}
					}
				}
				acked[i].Add(1)
			}
		}(w)
	}
	time.Sleep(time.Second)
	src, dst := nodes[0], nodes[2]
	migrating.Store(true)
	t0 := time.Now()
	v, err := do(dst, "cluster", "migration", "import", 0, *nslots-1)
	if err != nil {
		close(stop)
		wg.Wait()
		return fmt.Errorf("import: %w", err)
	}
	id := fmt.Sprint(v)
	killed := ""
	if *kill != "none" {
		// A random moment within the usual migration time (-kill-window:
		// about 300 ms for 3000 slots of 100k keys here), or the handoff.
		victim := src
		if *kill == "target" {
			victim = dst
		}
		var st map[string]string
		if *killIn != "" {
			_ = waitFor1ms(60*time.Second, func() bool { st = status(victim, id); return st["state"] == *killIn || finished(st) })
		} else {
			time.Sleep(time.Duration(rng.Int64N(int64(*window))))
			st = status(victim, id)
		}
		killed = st["state"]
		victim.killNow()
		time.Sleep(300 * time.Millisecond)
		if err := victim.start(); err != nil {
			close(stop)
			wg.Wait()
			return err
		}
	}
	var st map[string]string
	waitErr := waitFor(60*time.Second, "the migration to end", func() bool {
		if *kill == "none" {
			st = status(dst, id)
			return finished(st)
		}
		// After a kill the restarted side has no task; wait until the
		// other side's task ended and the cluster agrees.
		other := dst
		if *kill == "target" {
			other = src
		}
		st = status(other, id)
		return (st == nil || finished(st)) && clusterOK(nodes)
	})
	elapsed := time.Since(t0)
	migrating.Store(false)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if waitErr != nil {
		return waitErr
	}
	if err := waitFor(30*time.Second, "cluster ok", func() bool { return clusterOK(nodes) }); err != nil {
		return err
	}
	// One owner per slot, the same on every node.
	var ref []string
	if err := waitFor(20*time.Second, "every node to agree on the slots", func() bool {
		ref = nil
		for _, n := range nodes {
			o, err := owners(n)
			if err != nil {
				return false
			}
			if ref == nil {
				ref = o
				continue
			}
			for s := range o {
				if o[s] != ref[s] || o[s] == "" {
					return false
				}
			}
		}
		return true
	}); err != nil {
		return err
	}
	lost, over, missing := 0, 0, 0
	for i, k := range keys {
		v, err := cc.Get(ctx, k).Int64()
		if err == redis.Nil {
			missing++
			continue
		}
		if err != nil {
			return fmt.Errorf("GET %s: %w", k, err)
		}
		if v < acked[i].Load() {
			lost++
		}
		if v > acked[i].Load()+failed[i].Load() {
			over++
		}
	}
	srcSt := status(src, id)
	moved := st["keys"]
	dstOwns := true
	dstID, _ := dst.rc.ClusterMyID(ctx).Result()
	for s := 0; s < *nslots; s++ {
		if ref[s] != dstID {
			dstOwns = false
		}
	}
	keysPerS := 0.0
	if k, err := strconv.ParseFloat(moved, 64); err == nil && elapsed > 0 {
		keysPerS = k / elapsed.Seconds()
	}
	result := "ok"
	// over (a counter above its acknowledged plus failed increments) is
	// reported, not failed: go-redis retries an INCR whose connection
	// broke (the kill), so one the server applied can be applied twice
	// and acknowledged once.
	if lost > 0 || missing > 0 || asks.Load() > 0 || tryagains.Load() > 0 {
		result = "FAIL"
	}
	fmt.Printf("run=%d kill=%s killed_in=%s result=%s state=%s target_owns=%v keys=%s migrate_ms=%d keys_per_s=%.0f server_pause_ms=%s client_max_incr_ms=%d ask=%d tryagain=%d lost=%d over=%d missing=%d\n",
		r, *kill, orDash(killed), result, st["state"], dstOwns, orDash(moved), elapsed.Milliseconds(), keysPerS,
		orDash(srcSt["write_pause_ms"]), time.Duration(maxIncr.Load()).Milliseconds(), asks.Load(), tryagains.Load(), lost, over, missing)
	if result != "ok" {
		return errors.New("checks failed")
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// redirectCounter counts ASK and TRYAGAIN replies seen by a node client.
type redirectCounter struct{ ask, tryagain *atomic.Int64 }

func (h redirectCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h redirectCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count(err)
		return err
	}
}

func (h redirectCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.count(c.Err())
		}
		return err
	}
}

func (h redirectCounter) count(err error) {
	if err == nil {
		return
	}
	switch s := err.Error(); {
	case strings.HasPrefix(s, "ASK "):
		h.ask.Add(1)
	case strings.HasPrefix(s, "TRYAGAIN"):
		h.tryagain.Add(1)
	}
}
