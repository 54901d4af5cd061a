package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// splitSlots returns the distinct slots of a split command's keys.
func splitSlots(args []interface{}, step int) []int {
	var keys []string
	for p := 1; p < len(args); p += step {
		keys = append(keys, argString(args[p]))
	}
	return slotsOf(keys)
}

// part is one slot's share of a split command.
type part struct {
	pos []int // argument positions of the slot's keys in the original
	cmd redis.Cmder
}

// splitParts cuts MGET, MSET, DEL, EXISTS, UNLINK or TOUCH into one
// command per slot, in the order the slots first appear.
func splitParts(ctx context.Context, name string, args []interface{}, step int) []*part {
	bySlot := map[int]*part{}
	var parts []*part
	for p := 1; p+step-1 < len(args); p += step {
		s := Slot(argString(args[p]))
		pt, ok := bySlot[s]
		if !ok {
			pt = &part{}
			bySlot[s] = pt
			parts = append(parts, pt)
		}
		pt.pos = append(pt.pos, p)
	}
	for _, pt := range parts {
		sub := make([]interface{}, 1, 1+len(pt.pos)*step)
		sub[0] = args[0]
		for _, at := range pt.pos {
			sub = append(sub, args[at:at+step]...)
		}
		switch name {
		case "mget":
			pt.cmd = redis.NewSliceCmd(ctx, sub...)
		case "mset":
			pt.cmd = redis.NewStatusCmd(ctx, sub...)
		default:
			pt.cmd = redis.NewIntCmd(ctx, sub...)
		}
	}
	return parts
}

// merge sets cmd's reply from its parts' replies: MGET's values back in
// key order, MSET's OK, the others' counts summed. A split MSET is not
// atomic across slots.
func merge(cmd redis.Cmder, name string, args []interface{}, step int, parts []*part) error {
	for _, pt := range parts {
		if err := pt.cmd.Err(); err != nil {
			return fmt.Errorf("cluster: %s: %w", strings.ToUpper(name), err)
		}
	}
	var val interface{}
	switch name {
	case "mget":
		vals := make([]interface{}, (len(args)-1)/step)
		for _, pt := range parts {
			got := pt.cmd.(*redis.SliceCmd).Val()
			for n, at := range pt.pos {
				if n < len(got) {
					vals[at-1] = got[n]
				}
			}
		}
		val = vals
	case "mset":
		val = "OK"
	default:
		var sum int64
		for _, pt := range parts {
			sum += pt.cmd.(*redis.IntCmd).Val()
		}
		val = sum
	}
	switch c := cmd.(type) {
	case *redis.SliceCmd:
		c.SetVal(val.([]interface{}))
	case *redis.StatusCmd:
		c.SetVal(val.(string))
	case *redis.IntCmd:
		c.SetVal(val.(int64))
	case *redis.Cmd:
		c.SetVal(val)
	default:
		return fmt.Errorf("cluster: %s: cannot merge replies into %T", strings.ToUpper(name), cmd)
	}
	return nil
}

// processSplit runs a split command as one pipeline of per-slot commands,
// which go-redis sends to every node concurrently (MOVED and ASK handled
// per command), and merges the replies.
func (c *Client) processSplit(ctx context.Context, cmd redis.Cmder, name string, args []interface{}, step int) error {
	if (len(args)-1)%step != 0 {
		return fmt.Errorf("cluster: %s: wrong number of arguments", strings.ToUpper(name))
	}
	parts := splitParts(ctx, name, args, step)
	pipe := c.ClusterClient.Pipeline()
	for _, pt := range parts {
		_ = pipe.Process(ctx, pt.cmd)
	}
	_, _ = pipe.Exec(ctx)
	return merge(cmd, name, args, step, c.retryTryAgain(ctx, name, args, step, parts))
}

// retryTryAgain re-runs, one key per command, the parts that failed with
// TRYAGAIN (a multi-key command on a slot whose keys are half migrated:
// single-key commands follow ASK instead). During a migration a split
// MSET's keys of one slot are then not set atomically.
func (c *Client) retryTryAgain(ctx context.Context, name string, args []interface{}, step int, parts []*part) []*part {
	var out, again []*part
	for _, pt := range parts {
		if err := pt.cmd.Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
			out = append(out, pt)
			continue
		}
		for _, at := range pt.pos {
			single := splitParts(ctx, name, append([]interface{}{args[0]}, args[at:at+step]...), step)[0]
			single.pos = []int{at}
			again = append(again, single)
		}
	}
	if len(again) == 0 {
		return parts
	}
	pipe := c.ClusterClient.Pipeline()
	for _, pt := range again {
		_ = pipe.Process(ctx, pt.cmd)
	}
	_, _ = pipe.Exec(ctx)
	return append(out, again...)
}

// processPipeline sends a pipeline through go-redis (grouped per node,
// order kept per node) after expanding each cross-slot split command into
// its parts and refusing other cross-slot commands (only those fail;
// the rest of the pipeline runs).
func (c *Client) processPipeline(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
	type expanded struct {
		cmd   redis.Cmder
		name  string
		step  int
		parts []*part
	}
	var splits []expanded
	send := make([]redis.Cmder, 0, len(cmds))
	for _, cmd := range cmds {
		name, args := cmd.Name(), cmd.Args()
		step, split := splitStep[name]
		switch {
		case split && (len(args)-1)%step == 0 && len(splitSlots(args, step)) > 1:
			parts := splitParts(ctx, name, args, step)
			splits = append(splits, expanded{cmd: cmd, name: name, step: step, parts: parts})
			for _, pt := range parts {
				send = append(send, pt.cmd)
			}
		case !split && len(slotsOf(commandKeys(name, args))) > 1:
			cmd.SetErr(crossSlot(name))
		default:
			send = append(send, cmd)
		}
	}
	if len(send) > 0 {
		// Errors land on the commands; the pipeline's error is the first
		// of the caller's commands', below (a split part's error is its
		// command's).
		_ = next(ctx, send)
	}
	for _, e := range splits {
		parts := c.retryTryAgain(ctx, e.name, e.cmd.Args(), e.step, e.parts)
		if merr := merge(e.cmd, e.name, e.cmd.Args(), e.step, parts); merr != nil {
			e.cmd.SetErr(merr)
		}
	}
	for _, cmd := range cmds {
		if cerr := cmd.Err(); cerr != nil {
			return cerr
		}
	}
	return nil
}
