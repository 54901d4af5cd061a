package tocluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The points Options.PauseAt can stop at.
const (
	// PauseCopy: while a shard copies its snapshot (the first shard past
	// half its keys).
	PauseCopy = "copy"
	// PausePaused: in the cut-over, the notice written and writes paused
	// on every source master, nothing fenced.
	PausePaused = "paused"
	// PauseFenced: in the cut-over, every source node fenced and the
	// cluster level, just before the commit point.
	PauseFenced = "fenced"
	// PauseCommitted: just after the commit point, the sources still
	// paused.
	PauseCommitted = "committed"
)

// AbortPrefix starts the commit key's value when a cut-over was aborted
// without its tool: AbortPrefix+<id>, set NX like the commit itself, so
// that one of the two wins and the other fails (see Recover).
const AbortPrefix = "abort:"

// ClientName is the CLIENT SETNAME of every connection a migration opens
// to a source or cluster node. A guardian waits until no connection of
// that name is left on any node before it settles a killed tool's
// cut-over: a node frees a client only after it ran the commands the
// client sent, so no request of the dead tool can still land after the
// guardian's.
func ClientName(id string) string { return "shardis-tocluster-" + id }

// recoverName names the connections of Recover, Watch and FinishCutover.
const recoverName = "shardis-tocluster-recover"

// Recovered is what Recover found and did.
type Recovered struct {
	// Committed is the id of a committed migration whose fences were
	// finished (every source node fenced, the masters unpaused).
	Committed string
	// Aborted is the id of an uncommitted cut-over that was rolled back:
	// the commit key marked AbortPrefix+id, the fences lifted from the
	// notice's saved settings, the masters unpaused, the notices deleted.
	Aborted string
	// Unfenced is the number of source nodes whose fence was lifted.
	Unfenced int
	// Skipped are the source replicas that could not be reached.
	Skipped []string
}

// String describes the outcome in one line.
func (r Recovered) String() string {
	var s string
	switch {
	case r.Committed != "":
		s = "committed " + r.Committed + "; sources fenced"
	case r.Aborted != "":
		s = fmt.Sprintf("aborted %s; lifted the fence of %d source nodes; the sources serve", r.Aborted, r.Unfenced)
	default:
		s = "nothing to settle"
	}
	if len(r.Skipped) > 0 {
		s += "; unreachable: " + strings.Join(r.Skipped, ",")
	}
	return s
}

// Recover settles what an interrupted cut-over left, whatever the point
// its tool stopped at. If the cluster holds a commit, every source node
// is fenced and every master unpaused. Otherwise, if a source carries the
// notice or the fence, the cut-over is aborted for good (the commit key
// set to AbortPrefix+id with NX: a commit still in flight either landed
// first, and the commit's side is finished instead, or now fails), the
// fences are lifted, the masters unpaused and the notices deleted: the
// sources serve as before. Recover is what a rerun does first, what
// --cutover-only does for a tool that is gone, and what the guardian
// (Watch) does when its tool dies.
func Recover(ctx context.Context, o Options) (Recovered, error) {
	opt := o.defaulted()
	m := newMigration(opt, recoverName)
	defer m.closeSentinels()
	slots, err := readSlotMap(ctx, opt.To, m.auth(), opt.DialTimeout)
	if err != nil {
		return Recovered{}, err
	}
	m.slots = slots
	return m.recover(ctx, "")
}

func (m *Migration) commitValue(ctx context.Context) (string, *redis.Client, error) {
	c := m.client(m.slots.owner[slotOf(CommitKey)])
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := c.Get(qctx, CommitKey).Result()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	if err != nil {
		c.Close()
		return "", nil, fmt.Errorf("tocluster: read the commit key: %w", err)
	}
	return v, c, nil
}

// recover is Recover. With only set, it settles only the cut-over of
// that migration id (a guardian never touches a later run's cut-over).
func (m *Migration) recover(ctx context.Context, only string) (Recovered, error) {
	v, cc, err := m.commitValue(ctx)
	if err != nil {
		return Recovered{}, err
	}
	defer cc.Close()
	if v != "" && !strings.HasPrefix(v, AbortPrefix) {
		return Recovered{Committed: v}, m.finishCommitted(ctx)
	}
	// Any notice or fence on the sources is an interrupted cut-over.
	id, fenced := "", false
	var skipped []string
	err = m.forEachSourceNode(ctx, &skipped, func(master, node string, c *redis.Client) error {
		if node == master {
			nv, err := c.Get(ctx, NoticeKey).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if n, err := ParseNotice(nv); err == nil && id == "" {
				id = n.ID
			} else if nv != "" && id == "" {
				id = "unknown"
			}
		}
		cur, err := fenceOf(ctx, c)
		if err != nil {
			return err
		}
		if cur[0] == FenceReplicas {
			fenced = true
		}
		return nil
	})
	if err != nil {
		return Recovered{}, err
	}
	if id == "" && !fenced || only != "" && id != only {
		return Recovered{Skipped: skipped}, nil
	}
	if id == "" {
		id = "unknown"
	}
	if v == "" {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		won, err := cc.SetNX(qctx, CommitKey, AbortPrefix+id, 0).Result()
		cancel()
		if err != nil {
			return Recovered{}, fmt.Errorf("tocluster: mark the cut-over %s aborted on the cluster: %w", id, err)
		}
		if !won {
			if v, _, err := m.commitValue(ctx); err != nil {
				return Recovered{}, err
			} else if !strings.HasPrefix(v, AbortPrefix) {
				return Recovered{Committed: v}, m.finishCommitted(ctx)
			}
		}
	}
	n, err := m.rollback(ctx, &skipped)
	rec := Recovered{Aborted: id, Unfenced: n, Skipped: skipped}
	if err != nil {
		return rec, err
	}
	m.log.Info("tocluster: rolled back an interrupted cut-over", "id", id, "unfenced", n)
	return rec, nil
}

// finishCommitted is the end of a committed cut-over: every source node
// fenced, every master unpaused, the markers deleted.
func (m *Migration) finishCommitted(ctx context.Context) error {
	var skipped []string
	err := m.forEachSourceNode(ctx, &skipped, func(master, node string, c *redis.Client) error {
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
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		m.log.Warn("tocluster: unreachable source replicas not fenced", "nodes", skipped)
	}
	m.cleanMarkers(ctx)
	return nil
}

// rollback lifts every fence (from the notice's saved settings),
// unpauses every master and deletes the notices.
func (m *Migration) rollback(ctx context.Context, skipped *[]string) (int, error) {
	n := 0
	notices := map[string]Notice{}
	err := m.forEachSourceNode(ctx, skipped, func(master, node string, c *redis.Client) error {
		if node == master {
			nv, _ := c.Get(ctx, NoticeKey).Result()
			if nt, err := ParseNotice(nv); err == nil {
				notices[master] = nt
			}
		}
		cur, err := fenceOf(ctx, c)
		if err != nil {
			return err
		}
		if cur[0] == FenceReplicas {
			old := [2]string{"0", cur[1]}
			if o, ok := notices[master].Fence[node]; ok {
				old = o
			}
			if err := unfence(ctx, c, old); err != nil {
				return err
			}
			n++
		}
		if node == master {
			if err := c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
				return err
			}
			if err := c.Del(ctx, NoticeKey).Err(); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// forEachSourceNode calls fn with a client of every node of every source
// shard, each master first. A replica that cannot be reached is added to
// skipped instead (it takes no writes while it is down; a replica that
// comes back follows its master and is settled by the next run).
func (m *Migration) forEachSourceNode(ctx context.Context, skipped *[]string, fn func(master, node string, c *redis.Client) error) error {
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
			var op *net.OpError
			if err != nil && n != addr && errors.As(err, &op) && op.Op == "dial" {
				*skipped = append(*skipped, n)
				continue
			}
			if err != nil {
				return fmt.Errorf("tocluster: %s: %w", n, err)
			}
		}
	}
	return nil
}

// connected reports whether a client named name is connected to any of
// addrs (CLIENT LIST).
func (m *Migration) connected(ctx context.Context, addrs []string, name string) (bool, error) {
	for _, a := range addrs {
		c := m.client(a)
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		list, err := c.ClientList(qctx).Result()
		cancel()
		c.Close()
		if err != nil {
			return false, fmt.Errorf("tocluster: CLIENT LIST on %s: %w", a, err)
		}
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(" "+strings.TrimSpace(line)+" ", " name="+name+" ") {
				return true, nil
			}
		}
	}
	return false, nil
}

// waitGone waits (up to limit) until no connection named name is left on
// the source nodes and the cluster masters: a tool that died has no
// request left in flight once its connections are gone.
func (m *Migration) waitGone(ctx context.Context, name string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var addrs []string
		var skipped []string
		err := m.forEachSourceNode(ctx, &skipped, func(_, node string, _ *redis.Client) error {
			addrs = append(addrs, node)
			return nil
		})
		if err == nil {
			addrs = append(addrs, m.slots.masters...)
			var alive bool
			if alive, err = m.connected(ctx, addrs, name); err == nil && !alive {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("its connections are still open")
			}
			return fmt.Errorf("tocluster: after %v: %w", limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Watch is a cut-over's guardian, run in a process of its own that
// outlives the tool (`migrate-to-cluster --guardian`, started through
// Options.Guard). It reads lines from in: "done" means the tool ended
// its cut-over cleanly, and Watch returns; "recover" (the tool asks for
// a repair) or the end of in (the tool died: the pipe's only writer is
// gone) makes it settle the cut-over with Recover, after waiting until
// the dead tool's connections are gone from every node (see ClientName).
// o.ID is the tool's migration id.
func Watch(ctx context.Context, o Options, in io.Reader) (string, error) {
	opt := o.defaulted()
	sc := bufio.NewScanner(in)
	dead := true
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "done" {
			return "the tool ended its cut-over", nil
		}
		if line == "recover" {
			dead = false
			break
		}
	}
	m := newMigration(opt, recoverName)
	defer m.closeSentinels()
	slots, err := readSlotMap(ctx, opt.To, m.auth(), opt.DialTimeout)
	if err != nil {
		return "", err
	}
	m.slots = slots
	if dead {
		m.log.Info("tocluster: guardian: the tool is gone; waiting for its connections to close", "id", opt.ID)
		if err := m.waitGone(ctx, ClientName(opt.ID), opt.CutoverTimeout+5*time.Second); err != nil {
			m.log.Warn("tocluster: guardian: settling anyway", "err", err)
		}
	}
	rec, err := m.recover(ctx, opt.ID)
	return rec.String(), err
}
