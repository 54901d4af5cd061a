package shardedpool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
	"github.com/shardis/shardis/internal/tocluster"
)

// ClusterSwitchEvent describes the pool's move to a Redis Cluster after
// `shardnode migrate-to-cluster` committed its cut-over.
type ClusterSwitchEvent struct {
	// ID is the migration id.
	ID string
	// Seeds are the cluster node addresses the notice gave.
	Seeds []string
	// Reason is "poll" or "fenced" (a write refused by a fenced source).
	Reason string
	// Time is when the pool switched.
	Time time.Time
}

// clusterFollower watches for a migrate-to-cluster cut-over and holds the
// cluster client once it happened (see package tocluster, "The notice
// path"): the notice key on a source names the migration and the cluster,
// the commit key on the cluster says it is done.
type clusterFollower struct {
	p  *Pool
	cc atomic.Pointer[cluster.Client] // set once, at the switch

	mu sync.Mutex // one check at a time
	// pending is a client of the cluster a notice names, kept while its
	// migration is not committed yet so each check does not dial again.
	pending   *cluster.Client
	pendingID string

	checks atomic.Int64
}

// clusterClient returns the cluster client after a switch, or nil.
func (p *Pool) clusterClient() *cluster.Client {
	if p.follow == nil {
		return nil
	}
	return p.follow.cc.Load()
}

// ClusterClient returns the client/cluster client the pool moved to after
// a migrate-to-cluster cut-over, or nil while it still uses the shards.
func (p *Pool) ClusterClient() *cluster.Client { return p.clusterClient() }

// isFenced reports whether err is the refusal of a source fenced by the
// cut-over (min-replicas-to-write no deployment reaches).
func isFenced(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOREPLICAS ")
}

func (p *Pool) startClusterFollow() {
	if p.opt.ClusterPollInterval < 0 {
		return
	}
	p.follow = &clusterFollower{p: p}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.opt.ClusterPollInterval)
		defer t.Stop()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
			cc := p.follow.check(ctx, "poll")
			cancel()
			if cc != nil {
				return
			}
		}
	}()
}

// afterFenced is called with a command's error: when a fenced source
// refused it, it checks for the cut-over at once and returns the cluster
// client if the pool moved (the command did not run and can run there).
func (p *Pool) afterFenced(ctx context.Context, err error) *cluster.Client {
	if p.follow == nil || !isFenced(err) {
		return nil
	}
	return p.follow.check(ctx, "fenced")
}

// check looks for a committed migration and switches the pool to it.
func (f *clusterFollower) check(ctx context.Context, reason string) *cluster.Client {
	if cc := f.cc.Load(); cc != nil {
		return cc
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cc := f.cc.Load(); cc != nil {
		return cc
	}
	f.checks.Add(1)
	p := f.p
	var notice tocluster.Notice
	found := false
	for _, s := range p.shards {
		v, err := s.conn().client.Get(ctx, tocluster.NoticeKey).Result()
		if err != nil {
			continue
		}
		if n, err := tocluster.ParseNotice(v); err == nil {
			notice, found = n, true
			break
		}
	}
	if !found {
		return nil
	}
	if f.pending == nil || f.pendingID != notice.ID {
		if f.pending != nil {
			_ = f.pending.Close()
			f.pending = nil
		}
		o := &p.opt
		cc, err := cluster.New(ctx, &cluster.Options{Addrs: notice.Seeds, Username: o.Username, Password: o.Password,
			PoolSize: o.PoolSize, MinIdleConns: o.MinIdleConns, DialTimeout: o.DialTimeout,
			ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout, TLSConfig: o.TLSConfig, Logger: p.log})
		if err != nil {
			p.log.Warn("shardedpool: migration notice names an unreachable cluster", "id", notice.ID, "err", err)
			return nil
		}
		f.pending, f.pendingID = cc, notice.ID
	}
	id, err := f.pending.Get(ctx, tocluster.CommitKey).Result()
	if err != nil || id != notice.ID {
		if err != nil && !errors.Is(err, redis.Nil) {
			p.log.Warn("shardedpool: cannot read the migration's commit", "id", notice.ID, "err", err)
		}
		return nil
	}
	cc := f.pending
	f.pending = nil
	f.cc.Store(cc)
	p.log.Info("shardedpool: moved to the cluster", "id", notice.ID, "seeds", notice.Seeds, "reason", reason)
	if p.opt.OnClusterSwitch != nil {
		p.opt.OnClusterSwitch(ClusterSwitchEvent{ID: notice.ID, Seeds: notice.Seeds, Reason: reason, Time: time.Now()})
	}
	return cc
}

func (f *clusterFollower) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	if f.pending != nil {
		errs = append(errs, f.pending.Close())
	}
	if cc := f.cc.Load(); cc != nil {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// clusterPipeline runs cmds on the cluster client, in a transaction when
// tx is set.
func clusterPipeline(ctx context.Context, cc *cluster.Client, cmds []redis.Cmder, tx bool) error {
	var pipe redis.Pipeliner
	if tx {
		pipe = cc.TxPipeline()
	} else {
		pipe = cc.Pipeline()
	}
	for _, c := range cmds {
		c.SetErr(nil)
		_ = pipe.Process(ctx, c)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// retryFenced runs again on the cluster the commands of a pipeline that
// fenced sources refused, once the pool has moved.
func (p *Pool) retryFenced(ctx context.Context, cmds []redis.Cmder) {
	var refused []redis.Cmder
	var first error
	for _, c := range cmds {
		if isFenced(c.Err()) {
			refused = append(refused, c)
			if first == nil {
				first = c.Err()
			}
		}
	}
	if len(refused) == 0 {
		return
	}
	if cc := p.afterFenced(ctx, first); cc != nil {
		_ = clusterPipeline(ctx, cc, refused, false)
	}
}

// followHook is the router hook with the cluster-follow mode on top: after
// the switch every command and pipeline goes to the cluster client (which
// splits multi-key commands by slot); before it, a command refused by a
// fenced source triggers a check and, once moved, runs on the cluster.
type followHook struct{ routerHook }

func (h followHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	p := h.p
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cc := p.clusterClient(); cc != nil {
			return cc.Process(ctx, cmd)
		}
		err := p.process(ctx, cmd)
		if cc := p.afterFenced(ctx, err); cc != nil {
			cmd.SetErr(nil)
			return cc.Process(ctx, cmd)
		}
		return err
	}
}

func (h followHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	p := h.p
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := len(cmds)
		tx := n >= 2 && cmds[0].Name() == "multi" && cmds[n-1].Name() == "exec"
		if cc := p.clusterClient(); cc != nil {
			if tx {
				return clusterPipeline(ctx, cc, cmds[1:n-1], true)
			}
			return clusterPipeline(ctx, cc, cmds, false)
		}
		err := p.processPipeline(ctx, cmds)
		if err == nil {
			return nil
		}
		if tx {
			if cc := p.afterFenced(ctx, firstFenced(cmds)); cc != nil {
				return clusterPipeline(ctx, cc, cmds[1:n-1], true)
			}
			return err
		}
		p.retryFenced(ctx, cmds)
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

func firstFenced(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if isFenced(c.Err()) {
			return c.Err()
		}
	}
	return nil
}
