package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// nodeHook sits on go-redis's client for one node: it sees every reply
// before the ClusterClient acts on it, so a MOVED patches the slot map
// before go-redis rebuilds its routing state from it, and a refused or
// reset connection to a master asks for a refresh at once.
type nodeHook struct {
	c    *Client
	addr string
}

func (h nodeHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.c.connFailed(ctx, h.addr, err)
		}
		return conn, err
	}
}

func (h nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil {
			h.observe(ctx, err)
		}
		return err
	}
}

func (h nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if e := cmd.Err(); e != nil {
				h.observe(ctx, e)
			}
		}
		if err != nil {
			h.c.connFailed(ctx, h.addr, err)
		}
		return err
	}
}

func (h nodeHook) observe(ctx context.Context, err error) {
	if slot, addr, ok := parseMoved(err); ok {
		h.c.moved(slot, addr)
		return
	}
	h.c.connFailed(ctx, h.addr, err)
}

// parseMoved reads "MOVED <slot> <host:port>".
func parseMoved(err error) (int, string, bool) {
	s := err.Error()
	if !strings.HasPrefix(s, "MOVED ") {
		return 0, "", false
	}
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, "", false
	}
	slot, e := strconv.Atoi(f[1])
	if e != nil {
		return 0, "", false
	}
	return slot, f[2], true
}

// topHook sits on the ClusterClient: it splits multi-key commands per
// slot, refuses other cross-slot commands and transactions before
// anything is sent, and routes a command straight to a slot's new master
// while go-redis's state still has the old one.
type topHook struct{ c *Client }

func (h topHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h topHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.c.closed.Load() {
			return ErrClosed
		}
		name := cmd.Name()
		args := cmd.Args()
		if step, ok := splitStep[name]; ok {
			if slots := splitSlots(args, step); len(slots) > 1 {
				return h.c.processSplit(ctx, cmd, name, args, step)
			}
			if (len(args)-1)%step == 0 && len(args) > 1+step {
				// One slot, several keys: TRYAGAIN while the slot is
				// half migrated; then one command per key.
				err := next(ctx, cmd)
				if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
					return err
				}
				parts := splitParts(ctx, name, args, step)
				for _, pt := range parts {
					pt.Cmd.SetErr(err)
				}
				return merge(cmd, name, args, step, h.c.retryTryAgain(ctx, name, args, step, parts))
			}
		} else if keys := commandKeys(name, args); len(slotsOf(keys)) > 1 {
			return crossSlot(name)
		}
		if slot, ok := firstKeySlot(name, args); ok {
			if rdb := h.c.directTarget(ctx, slot); rdb != nil {
				h.c.stats.direct.Add(1)
				if err := rdb.Process(ctx, cmd); !isRedirect(err) {
					return err
				}
			}
		}
		return next(ctx, cmd)
	}
}

// isRedirect reports a MOVED or ASK reply.
func isRedirect(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.HasPrefix(m, "MOVED ") || strings.HasPrefix(m, "ASK ")
}

func crossSlot(name string) error {
	return fmt.Errorf("cluster: %s: %w", strings.ToUpper(name), ErrCrossSlot)
}

func (h topHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.c.closed.Load() {
			for _, c := range cmds {
				c.SetErr(ErrClosed)
			}
			return ErrClosed
		}
		if n := len(cmds); n >= 2 && cmds[0].Name() == "multi" && cmds[n-1].Name() == "exec" {
			return h.checkTx(ctx, cmds, next)
		}
		return h.c.processPipeline(ctx, cmds, next)
	}
}

// checkTx refuses a transaction whose keys, over all its commands, hash to
// more than one slot; nothing is sent then.
func (h topHook) checkTx(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
	slot := -1
	for _, cmd := range cmds[1 : len(cmds)-1] {
		name, args := cmd.Name(), cmd.Args()
		var keys []string
		if step, ok := splitStep[name]; ok {
			for p := 1; p < len(args); p += step {
				keys = append(keys, argString(args[p]))
			}
		} else if keys = commandKeys(name, args); keys == nil {
			if s, ok := firstKeySlot(name, args); ok {
				keys = []string{slotKeys()[s]}
			}
		}
		for _, s := range slotsOf(keys) {
			if slot == -1 {
				slot = s
			} else if s != slot {
				err := fmt.Errorf("cluster: transaction: %w", ErrCrossSlot)
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
	}
	return next(ctx, cmds)
}

// firstKeySlot returns the slot of a command's first key for the commands
// whose key position the client knows (the multi-key table, and the
// common single-key commands with the key first).
func firstKeySlot(name string, args []interface{}) (int, bool) {
	if keys := commandKeys(name, args); len(keys) > 0 {
		return Slot(keys[0]), true
	}
	if _, ok := splitStep[name]; ok && len(args) > 1 {
		return Slot(argString(args[1])), true
	}
	if keyFirst[name] && len(args) > 1 {
		return Slot(argString(args[1])), true
	}
	return 0, false
}

// keyFirst lists single-key commands whose key is the first argument.
var keyFirst = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`get set setnx setex psetex append strlen incr decr incrby decrby
		incrbyfloat getset getdel getex getrange setrange substr getbit setbit bitcount bitpos
		bitfield bitfield_ro type ttl pttl expire pexpire expireat pexpireat expiretime pexpiretime
		persist dump restore move lpush rpush lpushx rpushx lpop rpop llen lrange lindex lset lrem
		ltrim linsert lpos sadd srem smembers sismember smismember scard spop srandmember sscan
		hset hsetnx hget hmset hmget hdel hlen hstrlen hkeys hvals hgetall hexists hincrby
		hincrbyfloat hscan hrandfield zadd zincrby zrem zcard zcount zlexcount zscore zmscore zrank
		zrevrank zrange zrangebyscore zrevrangebyscore zrangebylex zrevrangebylex zrevrange
		zremrangebyrank zremrangebyscore zremrangebylex zpopmin zpopmax zscan zrandmember pfadd
		geoadd geodist geohash geopos geosearch xadd xlen xrange xrevrange xdel xtrim xack
		xclaim xautoclaim xpending xsetid sort_ro`) {
		keyFirst[n] = true
	}
}
