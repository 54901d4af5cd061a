package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/multikey"
)

// splitSlots returns the distinct slots of a split command's keys.
func splitSlots(args []interface{}, step int) []int {
	var keys []string
	for p := 1; p < len(args); p += step {
		keys = append(keys, argString(args[p]))
	}
	return slotsOf(keys)
}

// slotGroup groups split keys by hash slot.
func slotGroup(key string) (int, error) { return Slot(key), nil }

// splitParts cuts MGET, MSET, DEL, EXISTS, UNLINK or TOUCH into one
// command per slot, in the order the slots first appear. The arguments
// must come in whole steps (the callers check).
func splitParts(ctx context.Context, name string, args []interface{}, step int) []*multikey.Part {
	parts, _ := multikey.Split(ctx, name, args, step, slotGroup)
	return parts
}

// merge sets cmd's reply from its parts' replies (multikey.Merge); a part's
// error is the command's.
func merge(cmd redis.Cmder, name string, args []interface{}, step int, parts []*multikey.Part) error {
	if err := multikey.Merge(cmd, name, args, step, parts); err != nil {
		return fmt.Errorf("cluster: %s: %w", strings.ToUpper(name), err)
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
		_ = pipe.Process(ctx, pt.Cmd)
	}
	_, _ = pipe.Exec(ctx)
	return merge(cmd, name, args, step, c.retryTryAgain(ctx, name, args, step, parts))
}

// retryTryAgain re-runs, one key per command, the parts that failed with
// TRYAGAIN (a multi-key command on a slot whose keys are half migrated:
// single-key commands follow ASK instead). During a migration a split
// MSET's keys of one slot are then not set atomically.
func (c *Client) retryTryAgain(ctx context.Context, name string, args []interface{}, step int, parts []*multikey.Part) []*multikey.Part {
	var out, again []*multikey.Part
	for _, pt := range parts {
		if err := pt.Cmd.Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
			out = append(out, pt)
			continue
		}
		for _, at := range pt.Pos {
			again = append(again, &multikey.Part{Group: pt.Group, Pos: []int{at},
				Cmd: multikey.PartCmd(ctx, name, args, step, []int{at})})
		}
	}
	if len(again) == 0 {
		return parts
	}
	pipe := c.ClusterClient.Pipeline()
	for _, pt := range again {
		_ = pipe.Process(ctx, pt.Cmd)
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
		parts []*multikey.Part
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
				send = append(send, pt.Cmd)
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
