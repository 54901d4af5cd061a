package shardedpool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/multikey"
)

// routerHook turns the pool's router client into a dispatcher: it never
// dials; every command and pipeline is sent to the shard clients.
type routerHook struct{ p *Pool }

var errRouterDial = errors.New("shardedpool: internal error: the router client dialled")

func (h routerHook) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) { return nil, errRouterDial }
}

func (h routerHook) ProcessHook(redis.ProcessHook) redis.ProcessHook { return h.p.process }

func (h routerHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return h.p.processPipeline
}

// splitCommands are split per shard and their replies merged. The value
// is the number of arguments per key (MSET takes key value pairs).
var splitCommands = multikey.Steps

// process runs one command on the shard(s) of its keys.
func (p *Pool) process(ctx context.Context, cmd redis.Cmder) error {
	if p.closed.Load() {
		return ErrClosed
	}
	name := cmd.Name()
	args := cmd.Args()
	if step, ok := splitCommands[name]; ok {
		return p.processSplit(ctx, cmd, name, args, step)
	}
	if name == "ping" && len(args) == 1 {
		return p.pingAll(ctx, cmd)
	}
	i, err := p.route(name, args)
	if err != nil {
		return err
	}
	// The shard's error is returned as is, so redis.Nil and server errors
	// compare as with a plain client.
	s := p.shards[i]
	sc := s.conn()
	err = sc.client.Process(ctx, cmd)
	if !isReadOnly(err) {
		return err
	}
	if nc := p.awaitSwitch(ctx, s, sc); nc != nil {
		cmd.SetErr(nil)
		return nc.client.Process(ctx, cmd)
	}
	return err
}

// isReadOnly reports whether err is a replica's refusal of a write: the
// node the pool holds as the shard's master has become a replica, and the
// command did not run.
func isReadOnly(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "READONLY ")
}

// awaitSwitch is called when the master sc of shard s refused a write
// with READONLY. It asks the shard's worker to re-read the Sentinels and
// waits, at most ReadOnlyWait (and ctx), until the pool switches the
// shard to another address; it returns the new master, or nil when no
// switch came. A planned switch (migrate-shard's FAILOVER TO, then
// SENTINEL FAILOVER) and a failover the pool has not heard of yet both
// end in such a switch, so the write runs once, on the new master,
// instead of failing. The wait is woken by the switch itself, not polled.
func (p *Pool) awaitSwitch(ctx context.Context, s *shard, sc *shardConn) *shardConn {
	if p.opt.ReadOnlyWait <= 0 {
		return nil
	}
	p.counts.readOnlyWaits.Add(1)
	if len(p.sentinels) > 0 {
		s.requestRecheck("READONLY from " + sc.addr)
	}
	timer := time.NewTimer(p.opt.ReadOnlyWait)
	defer timer.Stop()
	for cur := sc; ; {
		select {
		case <-cur.replaced:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		case <-p.ctx.Done():
			return nil
		}
		cur = s.conn()
		if cur.addr != sc.addr {
			p.counts.readOnlyRetries.Add(1)
			return cur
		}
	}
}

// route returns the shard index of a command that must run on one shard.
func (p *Pool) route(name string, args []interface{}) (int, error) {
	if firstKeyOnly[name] {
		if len(args) < 2 {
			return 0, fmt.Errorf("shardedpool: %s: no key to route by", strings.ToUpper(name))
		}
		return p.shardIndex(argString(args[1]))
	}
	keys := commandKeys(name, args)
	if len(keys) == 0 {
		return 0, fmt.Errorf("shardedpool: %s has no key to route by; run it with ForEachShard", strings.ToUpper(name))
	}
	return p.sameShard(name, keys)
}

// sameShard returns the shard of keys, or an error wrapping ErrCrossShard
// that names the shards when they differ.
func (p *Pool) sameShard(name string, keys []string) (int, error) {
	first, err := p.shardIndex(keys[0])
	if err != nil {
		return 0, err
	}
	var other map[int][]string
	for _, k := range keys[1:] {
		i, err := p.shardIndex(k)
		if err != nil {
			return 0, err
		}
		if i != first {
			if other == nil {
				other = map[int][]string{first: {keys[0]}}
			}
			other[i] = append(other[i], k)
		}
	}
	if other == nil {
		return first, nil
	}
	idx := make([]int, 0, len(other))
	for i := range other {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	parts := make([]string, len(idx))
	for n, i := range idx {
		parts[n] = fmt.Sprintf("%s (%s)", p.shards[i].name, strings.Join(other[i], " "))
	}
	return 0, fmt.Errorf("shardedpool: %s: %w: %s", strings.ToUpper(name), ErrCrossShard, strings.Join(parts, ", "))
}

// pingAll answers PING with PONG when every shard answers.
func (p *Pool) pingAll(ctx context.Context, cmd redis.Cmder) error {
	err := p.ForEachShard(ctx, func(ctx context.Context, _ string, c *redis.Client) error {
		return c.Ping(ctx).Err()
	})
	if err != nil {
		return err
	}
	switch c := cmd.(type) {
	case *redis.StatusCmd:
		c.SetVal("PONG")
	case *redis.Cmd:
		c.SetVal("PONG")
	}
	return nil
}

// processSplit runs MGET, MSET, DEL, EXISTS, UNLINK or TOUCH: on one shard
// as is when all keys are there, otherwise split per shard (concurrently)
// and merged (internal/multikey). A split MSET is not atomic across shards.
func (p *Pool) processSplit(ctx context.Context, cmd redis.Cmder, name string, args []interface{}, step int) error {
	parts, err := multikey.Split(ctx, name, args, step, p.shardIndex)
	if errors.Is(err, multikey.ErrArity) {
		return fmt.Errorf("shardedpool: %s: %w", strings.ToUpper(name), err)
	}
	if err != nil {
		return err
	}
	if len(parts) == 1 {
		return p.shards[parts[0].Group].conn().client.Process(ctx, cmd)
	}
	var wg sync.WaitGroup
	for _, pt := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.shards[pt.Group].conn().client.Process(ctx, pt.Cmd)
		}()
	}
	wg.Wait()
	// The first failing shard in ring order names the error.
	sort.Slice(parts, func(a, b int) bool { return parts[a].Group < parts[b].Group })
	if err := multikey.Merge(cmd, name, args, step, parts); err != nil {
		var pe *multikey.PartError
		if errors.As(err, &pe) {
			return fmt.Errorf("shardedpool: %s on shard %s: %w", strings.ToUpper(name), p.shards[pe.Group].name, pe.Err)
		}
		return fmt.Errorf("shardedpool: %s: %w", strings.ToUpper(name), err)
	}
	return nil
}

// processPipeline runs a pipeline: commands are grouped per shard and each
// group is sent as one pipeline, concurrently; order is kept within a
// shard. MULTI ... EXEC pipelines (TxPipeline) run on one shard.
func (p *Pool) processPipeline(ctx context.Context, cmds []redis.Cmder) error {
	if p.closed.Load() {
		for _, c := range cmds {
			c.SetErr(ErrClosed)
		}
		return ErrClosed
	}
	if n := len(cmds); n >= 2 && cmds[0].Name() == "multi" && cmds[n-1].Name() == "exec" {
		return p.processTx(ctx, cmds[1:n-1])
	}
	// Commands run in order per shard. A split command that spans shards
	// is a barrier: what is queued before it runs first, then it, then the
	// rest, so it sees the effect of earlier commands on every shard.
	groups := make(map[int][]redis.Cmder)
	flush := func() {
		var wg sync.WaitGroup
		for i, group := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := p.shards[i]
				sc := s.conn()
				runPipeline(ctx, sc.client, group)
				// Commands the old master refused as a replica did not
				// run: they run again, in their order, on the new one.
				var refused []redis.Cmder
				for _, c := range group {
					if isReadOnly(c.Err()) {
						refused = append(refused, c)
					}
				}
				if len(refused) == 0 {
					return
				}
				if nc := p.awaitSwitch(ctx, s, sc); nc != nil {
					for _, c := range refused {
						c.SetErr(nil)
					}
					runPipeline(ctx, nc.client, refused)
				}
			}()
		}
		wg.Wait()
		clear(groups)
	}
	for _, c := range cmds {
		name, args := c.Name(), c.Args()
		if step, ok := splitCommands[name]; ok {
			if i, err := p.oneShardForSplit(args, step); err == nil {
				groups[i] = append(groups[i], c)
			} else {
				flush()
				c.SetErr(p.process(ctx, c))
			}
			continue
		}
		i, err := p.route(name, args)
		if err != nil {
			c.SetErr(err)
			continue
		}
		groups[i] = append(groups[i], c)
	}
	flush()
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return err
		}
	}
	return nil
}

// runPipeline sends cmds to c as one pipeline; each command keeps its own
// reply or error.
func runPipeline(ctx context.Context, c *redis.Client, cmds []redis.Cmder) {
	pipe := c.Pipeline()
	for _, cmd := range cmds {
		_ = pipe.Process(ctx, cmd)
	}
	_, _ = pipe.Exec(ctx)
}

// oneShardForSplit returns the shard of a split command's keys, or an
// error if they span shards.
func (p *Pool) oneShardForSplit(args []interface{}, step int) (int, error) {
	if len(args) < 2 {
		return 0, errors.New("no key")
	}
	keys := make([]string, 0, len(args)/step)
	for pos := 1; pos < len(args); pos += step {
		keys = append(keys, argString(args[pos]))
	}
	return p.sameShard("", keys)
}

// processTx runs the commands of a TxPipeline in MULTI/EXEC on the one
// shard that holds all their keys.
func (p *Pool) processTx(ctx context.Context, cmds []redis.Cmder) error {
	var keys []string
	for _, c := range cmds {
		keys = append(keys, commandKeys(c.Name(), c.Args())...)
	}
	fail := func(err error) error {
		for _, c := range cmds {
			c.SetErr(err)
		}
		return err
	}
	if len(keys) == 0 {
		return fail(errors.New("shardedpool: transaction has no key to route by"))
	}
	i, err := p.sameShard("MULTI", keys)
	if err != nil {
		return fail(err)
	}
	pipe := p.shards[i].conn().client.TxPipeline()
	for _, c := range cmds {
		_ = pipe.Process(ctx, c)
	}
	_, err = pipe.Exec(ctx)
	return err
}
