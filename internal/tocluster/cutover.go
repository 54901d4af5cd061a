package tocluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/consistent"
)

// FenceReplicas is the min-replicas-to-write value of a fenced source: a
// count no deployment reaches, so every write is refused with
// "NOREPLICAS Not enough good replicas to write." (redis-server and
// shardnode alike, including writes released from the cut-over's pause,
// which are checked again when they run).
const FenceReplicas = "2147483647"

func slotOf(key string) int { return consistent.KeySlot(key) }

// sourceNodes returns a shard master's address and its replicas' (from
// its INFO replication), without the tool's own announcers.
func (m *Migration) sourceNodes(ctx context.Context, master string) ([]string, error) {
	c := m.client(master)
	defer c.Close()
	info, err := infoFields(ctx, c, "replication")
	if err != nil {
		return nil, fmt.Errorf("tocluster: source %s: %w", master, err)
	}
	own := map[string]bool{}
	for _, s := range m.shards {
		own[strconv.Itoa(s.ann.port())] = true
	}
	nodes := []string{master}
	for k, v := range info {
		if !strings.HasPrefix(k, "slave") || strings.HasPrefix(k, "slave_") {
			continue
		}
		f := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			if a, b, ok := strings.Cut(kv, "="); ok {
				f[a] = b
			}
		}
		if f["ip"] == "" || f["port"] == "" || own[f["port"]] {
			continue
		}
		nodes = append(nodes, net.JoinHostPort(f["ip"], f["port"]))
	}
	return nodes, nil
}

// fenceOf reads a node's min-replicas settings.
func fenceOf(ctx context.Context, c *redis.Client) ([2]string, error) {
	v, err := c.ConfigGet(ctx, "min-replicas-*").Result()
	if err != nil {
		return [2]string{}, err
	}
	return [2]string{v["min-replicas-to-write"], v["min-replicas-max-lag"]}, nil
}

// fence makes a node refuse every write (see FenceReplicas), and persists
// it in the node's config file where it has one.
func fence(ctx context.Context, c *redis.Client, old [2]string) error {
	lag := old[1]
	if lag == "" || lag == "0" {
		lag = "10" // 0 would disable the check
	}
	if err := c.ConfigSet(ctx, "min-replicas-max-lag", lag).Err(); err != nil {
		return err
	}
	if err := c.ConfigSet(ctx, "min-replicas-to-write", FenceReplicas).Err(); err != nil {
		return err
	}
	_ = c.Do(ctx, "CONFIG", "REWRITE").Err() // no config file: the fence holds until a restart
	return nil
}

func unfence(ctx context.Context, c *redis.Client, old [2]string) error {
	to, lag := old[0], old[1]
	if to == "" || to == FenceReplicas {
		to = "0"
	}
	if lag == "" {
		lag = "10"
	}
	if err := c.ConfigSet(ctx, "min-replicas-to-write", to).Err(); err != nil {
		return err
	}
	if err := c.ConfigSet(ctx, "min-replicas-max-lag", lag).Err(); err != nil {
		return err
	}
	_ = c.Do(ctx, "CONFIG", "REWRITE").Err()
	return nil
}

// cutover switches the deployment to the cluster (doc.go, "The
// cut-over"). It returns how long writes were paused.
func (m *Migration) cutover(ctx context.Context) (time.Duration, error) {
	opt := m.opt
	type src struct {
		s      *shard
		master *redis.Client
		nodes  map[string]*redis.Client
		old    map[string][2]string
	}
	var srcs []*src
	defer func() {
		for _, x := range srcs {
			for _, c := range x.nodes {
				c.Close()
			}
		}
	}()
	notice := Notice{ID: opt.ID, Seeds: m.slots.masters, Fence: map[string][2]string{}}
	for _, s := range m.shards {
		addr := s.masterAddr()
		nodes, err := m.sourceNodes(ctx, addr)
		if err != nil {
			return 0, err
		}
		x := &src{s: s, nodes: map[string]*redis.Client{}, old: map[string][2]string{}}
		for _, n := range nodes {
			c := m.client(n)
			x.nodes[n] = c
			old, err := fenceOf(ctx, c)
			if err != nil {
				srcs = append(srcs, x)
				return 0, fmt.Errorf("tocluster: CONFIG GET on %s: %w", n, err)
			}
			x.old[n] = old
			notice.Fence[n] = old
		}
		x.master = x.nodes[addr]
		srcs = append(srcs, x)
	}
	// The notice is written before the pause (a paused source would hold
	// the SET): it only says where to look; CommitKey decides.
	nv := encodeNotice(notice)
	for _, x := range srcs {
		if err := x.master.Set(ctx, NoticeKey, nv, 0).Err(); err != nil {
			return 0, fmt.Errorf("tocluster: notice on %s: %w", x.s.masterAddr(), err)
		}
	}

	cctx, cancel := context.WithTimeout(ctx, opt.CutoverTimeout)
	defer cancel()
	bg := context.WithoutCancel(ctx)
	fenced := false
	unpause := func() {
		for _, x := range srcs {
			uctx, c := context.WithTimeout(bg, 2*time.Second)
			_ = x.master.Do(uctx, "CLIENT", "UNPAUSE").Err()
			c()
		}
	}
	abort := func(err error) (time.Duration, error) {
		if fenced {
			for _, x := range srcs {
				for n, c := range x.nodes {
					uctx, cl := context.WithTimeout(bg, 2*time.Second)
					if uerr := unfence(uctx, c, x.old[n]); uerr != nil {
						m.log.Error("tocluster: cannot lift the fence", "node", n, "err", uerr)
					}
					cl()
				}
			}
		}
		unpause()
		for _, x := range srcs {
			uctx, c := context.WithTimeout(bg, 2*time.Second)
			_ = x.master.Del(uctx, NoticeKey).Err()
			c()
		}
		return 0, fmt.Errorf("tocluster: cut-over aborted, the sources serve as before: %w", err)
	}

	pausedAt := time.Now()
	ms := strconv.FormatInt(opt.CutoverTimeout.Milliseconds(), 10)
	for _, x := range srcs {
		if err := x.master.Do(cctx, "CLIENT", "PAUSE", ms, "WRITE").Err(); err != nil {
			return abort(fmt.Errorf("CLIENT PAUSE on %s: %w", x.s.masterAddr(), err))
		}
	}
	levelAll := func() error {
		for _, x := range srcs {
			info, err := infoFields(cctx, x.master, "replication")
			if err != nil {
				return err
			}
			off, err := strconv.ParseInt(info["master_repl_offset"], 10, 64)
			if err != nil {
				return fmt.Errorf("%s: no master_repl_offset", x.s.masterAddr())
			}
			if err := x.s.level(cctx, off); err != nil {
				return err
			}
		}
		return nil
	}
	if err := levelAll(); err != nil {
		return abort(err)
	}
	fenced = true
	// Every node at once: CONFIG REWRITE syncs a file on each.
	var fwg sync.WaitGroup
	total := 0
	for _, x := range srcs {
		total += len(x.nodes)
	}
	ferrs := make(chan error, total)
	for _, x := range srcs {
		for n, c := range x.nodes {
			fwg.Add(1)
			go func() {
				defer fwg.Done()
				if err := fence(cctx, c, x.old[n]); err != nil {
					ferrs <- fmt.Errorf("fence %s: %w", n, err)
				}
			}()
		}
	}
	fwg.Wait()
	close(ferrs)
	if err := <-ferrs; err != nil {
		return abort(err)
	}
	// A write that ran after the pause expired and before the fence is in
	// the offsets read now: level again.
	if err := levelAll(); err != nil {
		return abort(err)
	}
	for _, s := range m.shards {
		if n, first := s.t.failures(); n > 0 {
			return abort(fmt.Errorf("shard %s: the cluster refused %d commands (first: %s)", s.name, n, first))
		}
	}
	// The commit point.
	cc := m.client(m.slots.owner[slotOf(CommitKey)])
	defer cc.Close()
	if err := cc.Set(cctx, CommitKey, opt.ID, 0).Err(); err != nil {
		// The SET may have run with its reply lost: read it back before
		// lifting the fence, and keep the fence when that is unknown (no
		// side takes writes rather than two; --cutover-only decides).
		rctx, rc := context.WithTimeout(bg, 2*time.Second)
		v, rerr := cc.Get(rctx, CommitKey).Result()
		rc()
		switch {
		case rerr == nil && v == opt.ID:
			m.log.Warn("tocluster: the commit's reply was lost, the commit key is there", "err", err)
		case rerr != nil && !errors.Is(rerr, redis.Nil):
			unpause()
			return 0, fmt.Errorf("tocluster: commit on the cluster: %w; its outcome is unknown (%v): the sources stay fenced, run --cutover-only", err, rerr)
		default:
			return abort(fmt.Errorf("commit on the cluster: %w", err))
		}
	}
	m.setPhase("committed")
	m.log.Info("tocluster: committed", "id", opt.ID)
	unpause()
	pause := time.Since(pausedAt)
	// Clean-up after the commit point; failures only leave marker keys.
	for _, k := range []string{AttemptKey, RequestKey} {
		c := m.client(m.slots.owner[slotOf(k)])
		_ = c.Del(bg, k).Err()
		c.Close()
	}
	return pause, nil
}

// FinishCutover is --cutover-only. If the cluster holds a committed
// migration, it makes sure every source node is fenced and unpaused (an
// interrupted cut-over's end). Otherwise, if a migration streams into the
// cluster, it asks it to cut over and waits (up to wait) for the commit.
// Otherwise, sources left fenced by a tool killed before its commit
// point are unfenced from the notice's saved settings, and an error says
// to rerun the migration.
func FinishCutover(ctx context.Context, o Options, wait time.Duration) (string, error) {
	opt := o.defaulted()
	m := &Migration{opt: opt, log: opt.Logger, start: time.Now()}
	for _, a := range opt.Sentinels {
		m.sentinels = append(m.sentinels, redis.NewSentinelClient(&redis.Options{Addr: a, Password: opt.SentinelPassword,
			DisableIdentity: true, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second}))
	}
	defer func() {
		for _, sc := range m.sentinels {
			sc.Close()
		}
	}()
	slots, err := readSlotMap(ctx, opt.To, m.auth(), opt.DialTimeout)
	if err != nil {
		return "", err
	}
	m.slots = slots
	getErr := func(key string) (string, error) {
		c := m.client(slots.owner[slotOf(key)])
		defer c.Close()
		v, err := c.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		return v, err
	}
	get := func(key string) string {
		v, _ := getErr(key)
		return v
	}
	id, err := getErr(CommitKey)
	if err != nil {
		return "", fmt.Errorf("tocluster: read the commit key: %w", err)
	}
	if id != "" {
		return "committed " + id + "; sources fenced", m.ensureFenced(ctx)
	}
	attempt, err := getErr(AttemptKey)
	if err != nil {
		return "", fmt.Errorf("tocluster: read the attempt key: %w", err)
	}
	if attempt != "" {
		c := m.client(slots.owner[slotOf(RequestKey)])
		err := c.Set(ctx, RequestKey, "cutover", 0).Err()
		c.Close()
		if err != nil {
			return "", fmt.Errorf("tocluster: request the cut-over: %w", err)
		}
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			if id := get(CommitKey); id != "" {
				return "committed " + id, nil
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	// A fence without a commit is lifted only once its tool cannot commit
	// any more: a live tool commits or lifts its fence within its
	// CutoverTimeout.
	if fenced, err := m.anyFenced(ctx); err != nil {
		return "", err
	} else if fenced {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(opt.CutoverTimeout + 2*time.Second):
		}
		id, err := getErr(CommitKey)
		if err != nil {
			return "", fmt.Errorf("tocluster: read the commit key: %w", err)
		}
		if id != "" {
			return "committed " + id + "; sources fenced", m.ensureFenced(ctx)
		}
	}
	rolled, err := m.rollbackFences(ctx)
	if err != nil {
		return "", err
	}
	if rolled > 0 {
		return "", fmt.Errorf("tocluster: no commit on the cluster: lifted the fence of %d source nodes left by an interrupted cut-over; the sources serve; rerun the migration", rolled)
	}
	return "", errors.New("tocluster: no migration is streaming into the cluster and none was committed; run migrate-to-cluster")
}

// forEachSourceNode calls fn with a client of every node of every source
// shard.
func (m *Migration) forEachSourceNode(ctx context.Context, fn func(master, node string, c *redis.Client) error) error {
	for _, name := range m.opt.Masters {
		addr, err := m.resolve(ctx, name)
		if err != nil {
			return err
		}
		nodes, err := m.sourceNodes(ctx, addr)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			c := m.client(n)
			err := fn(addr, n, c)
			c.Close()
			if err != nil {
				return fmt.Errorf("tocluster: %s: %w", n, err)
			}
		}
	}
	return nil
}

func (m *Migration) ensureFenced(ctx context.Context) error {
	return m.forEachSourceNode(ctx, func(master, node string, c *redis.Client) error {
		old, err := fenceOf(ctx, c)
		if err != nil {
			return err
		}
		if old[0] != FenceReplicas {
			if err := fence(ctx, c, old); err != nil {
				return err
			}
		}
		if node == master {
			return c.Do(ctx, "CLIENT", "UNPAUSE").Err()
		}
		return nil
	})
}

// anyFenced reports whether a source node carries the fence.
func (m *Migration) anyFenced(ctx context.Context) (bool, error) {
	found := false
	err := m.forEachSourceNode(ctx, func(_, _ string, c *redis.Client) error {
		cur, err := fenceOf(ctx, c)
		if err == nil && cur[0] == FenceReplicas {
			found = true
		}
		return err
	})
	return found, err
}

func (m *Migration) rollbackFences(ctx context.Context) (int, error) {
	n := 0
	err := m.forEachSourceNode(ctx, func(master, node string, c *redis.Client) error {
		cur, err := fenceOf(ctx, c)
		if err != nil || cur[0] != FenceReplicas {
			return err
		}
		mc := m.client(master)
		v, _ := mc.Get(ctx, NoticeKey).Result()
		mc.Close()
		old := [2]string{"0", cur[1]}
		if nt, err := ParseNotice(v); err == nil {
			if o, ok := nt.Fence[node]; ok {
				old = o
			}
		}
		n++
		return unfence(ctx, c, old)
	})
	return n, err
}
