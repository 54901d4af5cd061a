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
	// The guardian starts before anything on the sources changes; it
	// repairs what a tool killed from here on leaves (see Watch).
	release := func(bool) {}
	if opt.Guard != nil {
		r, err := opt.Guard(opt.ID)
		if err != nil {
			return 0, fmt.Errorf("tocluster: cannot start the cut-over's guardian: %w", err)
		}
		release = r
	}
	// The notice is written before the pause (a paused source would hold
	// the SET): it only says where to look; CommitKey decides.
	nv := encodeNotice(notice)
	for _, x := range srcs {
		if err := x.master.Set(ctx, NoticeKey, nv, 0).Err(); err != nil {
			release(true) // the notices already written
			return 0, fmt.Errorf("tocluster: notice on %s: %w", x.s.masterAddr(), err)
		}
	}

	cctx, cancel := context.WithTimeout(ctx, opt.CutoverTimeout)
	defer cancel()
	bg := context.WithoutCancel(ctx)
	fenced := false
	unpause := func() bool {
		ok := true
		for _, x := range srcs {
			uctx, c := context.WithTimeout(bg, 2*time.Second)
			if err := x.master.Do(uctx, "CLIENT", "UNPAUSE").Err(); err != nil {
				m.log.Error("tocluster: cannot unpause", "node", x.s.masterAddr(), "err", err)
				ok = false
			}
			c()
		}
		return ok
	}
	abort := func(err error) (time.Duration, error) {
		clean := true
		if fenced {
			for _, x := range srcs {
				for n, c := range x.nodes {
					uctx, cl := context.WithTimeout(bg, 2*time.Second)
					if uerr := unfence(uctx, c, x.old[n]); uerr != nil {
						m.log.Error("tocluster: cannot lift the fence", "node", n, "err", uerr)
						clean = false
					}
					cl()
				}
			}
		}
		if !unpause() {
			clean = false
		}
		for _, x := range srcs {
			uctx, c := context.WithTimeout(bg, 2*time.Second)
			if x.master.Del(uctx, NoticeKey).Err() != nil {
				clean = false
			}
			c()
		}
		release(!clean)
		return 0, fmt.Errorf("tocluster: cut-over aborted, the sources serve as before: %w", err)
	}

	pausedAt := time.Now()
	ms := strconv.FormatInt(opt.CutoverTimeout.Milliseconds(), 10)
	for _, x := range srcs {
		if err := x.master.Do(cctx, "CLIENT", "PAUSE", ms, "WRITE").Err(); err != nil {
			return abort(fmt.Errorf("CLIENT PAUSE on %s: %w", x.s.masterAddr(), err))
		}
	}
	m.log.Info("tocluster: sources paused", "id", opt.ID)
	if err := m.hold(ctx, PausePaused); err != nil {
		return abort(err)
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
	m.log.Info("tocluster: sources fenced, the cluster level", "id", opt.ID)
	if err := m.hold(ctx, PauseFenced); err != nil {
		return abort(err)
	}
	// The commit point.
	cc := m.client(m.slots.owner[slotOf(CommitKey)])
	defer cc.Close()
	switch outcome, err := m.commit(cctx, bg, cc); outcome {
	case commitAborted:
		return abort(err)
	case commitUnknown:
		unpause()
		release(true)
		return 0, err
	}
	m.setPhase("committed")
	m.log.Info("tocluster: committed", "id", opt.ID)
	if err := m.hold(ctx, PauseCommitted); err != nil {
		// Past the commit point nothing is rolled back: the fences hold
		// and the guardian unpauses.
		release(true)
		return 0, err
	}
	unpaused := unpause()
	pause := time.Since(pausedAt)
	m.log.Info("tocluster: sources unpaused", "id", opt.ID, "paused", pause)
	m.cleanMarkers(bg)
	release(!unpaused)
	return pause, nil
}

// cleanMarkers deletes the attempt and request keys after the commit
// point; a failure only leaves marker keys.
func (m *Migration) cleanMarkers(ctx context.Context) {
	for _, k := range []string{AttemptKey, RequestKey} {
		c := m.client(m.slots.owner[slotOf(k)])
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = c.Del(qctx, k).Err()
		cancel()
		c.Close()
	}
}

// The outcomes of the commit.
const (
	commitDone = iota
	commitAborted
	commitUnknown
)

// commit is the commit point: SET CommitKey <id> NX on the cluster. The
// key is decided once: a guardian or --cutover-only that finds the tool
// gone sets it to AbortPrefix+<id>, NX too, so the commit and the abort
// of one cut-over exclude each other on the one node owning the key,
// whatever requests are still in flight. A lost reply is settled the
// same way: an abort marker set NX now either wins (aborted) or finds
// the commit.
func (m *Migration) commit(ctx, bg context.Context, cc *redis.Client) (int, error) {
	id := m.opt.ID
	ok, err := cc.SetNX(ctx, CommitKey, id, 0).Result()
	if err == nil {
		if ok {
			return commitDone, nil
		}
		v, _ := cc.Get(ctx, CommitKey).Result()
		if v == id {
			return commitDone, nil
		}
		return commitAborted, fmt.Errorf("commit refused: the commit key holds %q (this cut-over was aborted by a guardian or --cutover-only)", v)
	}
	rctx, rc := context.WithTimeout(bg, 2*time.Second)
	defer rc()
	won, rerr := cc.SetNX(rctx, CommitKey, AbortPrefix+id, 0).Result()
	if rerr == nil {
		if !won {
			if v, _ := cc.Get(rctx, CommitKey).Result(); v == id {
				m.log.Warn("tocluster: the commit's reply was lost, the commit key is there", "err", err)
				return commitDone, nil
			}
		}
		return commitAborted, fmt.Errorf("commit on the cluster: %w", err)
	}
	// No side takes writes rather than two: the fences stay, and the
	// guardian or --cutover-only decides.
	return commitUnknown, fmt.Errorf("tocluster: commit on the cluster: %w; its outcome is unknown (%v): the sources stay fenced, run --cutover-only", err, rerr)
}

// FinishCutover is --cutover-only. If the cluster holds a committed
// migration, it makes sure every source node is fenced and unpaused (an
// interrupted cut-over's end). Otherwise, if a live migration streams
// into the cluster (its connections are there, see ClientName), it asks
// it to cut over and waits (up to wait) for the commit. Otherwise it
// settles a cut-over whose tool is gone (Recover): sources left fenced
// are unfenced from the notice's saved settings, and an error says to
// rerun the migration.
func FinishCutover(ctx context.Context, o Options, wait time.Duration) (string, error) {
	opt := o.defaulted()
	m := newMigration(opt, recoverName)
	defer m.closeSentinels()
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
	id, err := getErr(CommitKey)
	if err != nil {
		return "", fmt.Errorf("tocluster: read the commit key: %w", err)
	}
	if id != "" && !strings.HasPrefix(id, AbortPrefix) {
		return "committed " + id + "; sources fenced", m.finishCommitted(ctx)
	}
	attempt, err := getErr(AttemptKey)
	if err != nil {
		return "", fmt.Errorf("tocluster: read the attempt key: %w", err)
	}
	if attempt != "" && !strings.HasPrefix(id, AbortPrefix) {
		alive, err := m.connected(ctx, m.slots.masters, ClientName(attempt))
		if err != nil {
			return "", err
		}
		if alive {
			c := m.client(slots.owner[slotOf(RequestKey)])
			err := c.Set(ctx, RequestKey, "cutover", 0).Err()
			c.Close()
			if err != nil {
				return "", fmt.Errorf("tocluster: request the cut-over: %w", err)
			}
			deadline := time.Now().Add(wait)
			for time.Now().Before(deadline) {
				if id, _ := getErr(CommitKey); id != "" {
					if strings.HasPrefix(id, AbortPrefix) {
						break
					}
					return "committed " + id, nil
				}
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}
	rec, err := m.recover(ctx, "")
	if err != nil {
		return "", err
	}
	if rec.Committed != "" {
		return "committed " + rec.Committed + "; sources fenced", nil
	}
	if rec.Aborted != "" {
		return "", fmt.Errorf("tocluster: no commit on the cluster: lifted the fence of %d source nodes left by an interrupted cut-over; the sources serve; rerun the migration", rec.Unfenced)
	}
	return "", errors.New("tocluster: no migration is streaming into the cluster and none was committed; run migrate-to-cluster")
}
