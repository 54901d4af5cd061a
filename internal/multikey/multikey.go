// Package multikey splits the multi-key commands that a client can run on
// several servers (MGET, MSET, DEL, EXISTS, UNLINK, TOUCH) into one command
// per group of keys, and merges the groups' replies back into the original
// command's reply. Both clients use it: client/shardedpool groups keys by
// shard of its hash ring, client/cluster by hash slot.
//
// A split command is not atomic across groups: an MSET split over two
// shards or slots may be half applied when one part fails.
package multikey

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Steps lists the commands that are split, with the number of arguments
// per key (MSET takes key value pairs).
var Steps = map[string]int{"mget": 1, "mset": 2, "del": 1, "exists": 1, "unlink": 1, "touch": 1}

// ErrArity is returned by Split for a command whose arguments do not come
// in whole steps, or that has no key.
var ErrArity = errors.New("wrong number of arguments")

// Part is one group's share of a split command.
type Part struct {
	Group int         // the group (shard index, hash slot) of its keys
	Pos   []int       // argument positions of the group's keys in the original
	Cmd   redis.Cmder // the command sent for the group
}

// Split cuts the command name/args (args[0] is the command name) into one
// command per group, in the order the groups first appear; group maps a
// key to its group and may fail (the error is returned as is).
func Split(ctx context.Context, name string, args []interface{}, step int, group func(key string) (int, error)) ([]*Part, error) {
	if len(args) < 1+step || (len(args)-1)%step != 0 {
		return nil, ErrArity
	}
	byGroup := map[int]*Part{}
	var parts []*Part
	for p := 1; p < len(args); p += step {
		g, err := group(ArgString(args[p]))
		if err != nil {
			return nil, err
		}
		pt, ok := byGroup[g]
		if !ok {
			pt = &Part{Group: g}
			byGroup[g] = pt
			parts = append(parts, pt)
		}
		pt.Pos = append(pt.Pos, p)
	}
	for _, pt := range parts {
		pt.Cmd = PartCmd(ctx, name, args, step, pt.Pos)
	}
	return parts, nil
}

// PartCmd builds the command of name that carries the keys (and, for MSET,
// values) at positions pos of args.
func PartCmd(ctx context.Context, name string, args []interface{}, step int, pos []int) redis.Cmder {
	sub := make([]interface{}, 1, 1+len(pos)*step)
	sub[0] = args[0]
	for _, at := range pos {
		sub = append(sub, args[at:at+step]...)
	}
	switch name {
	case "mget":
		return redis.NewSliceCmd(ctx, sub...)
	case "mset":
		return redis.NewStatusCmd(ctx, sub...)
	default:
		return redis.NewIntCmd(ctx, sub...)
	}
}

// Merge sets cmd's reply from its parts' replies: MGET's values back in
// key order, MSET's OK, the others' counts summed. The first part error is
// returned (wrapped in a *PartError) and cmd is left unset.
func Merge(cmd redis.Cmder, name string, args []interface{}, step int, parts []*Part) error {
	for _, pt := range parts {
		if err := pt.Cmd.Err(); err != nil {
			return &PartError{Group: pt.Group, Err: err}
		}
	}
	var val interface{}
	switch name {
	case "mget":
		vals := make([]interface{}, (len(args)-1)/step)
		for _, pt := range parts {
			got := pt.Cmd.(*redis.SliceCmd).Val()
			for n, at := range pt.Pos {
				if n < len(got) {
					vals[(at-1)/step] = got[n]
				}
			}
		}
		val = vals
	case "mset":
		val = "OK"
	default:
		var sum int64
		for _, pt := range parts {
			sum += pt.Cmd.(*redis.IntCmd).Val()
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
		return fmt.Errorf("multikey: cannot merge replies into %T", cmd)
	}
	return nil
}

// PartError is the error of one part of a split command.
type PartError struct {
	Group int
	Err   error
}

func (e *PartError) Error() string { return e.Err.Error() }

// Unwrap returns the part's error.
func (e *PartError) Unwrap() error { return e.Err }

// ArgString renders an argument as go-redis writes it on the wire.
func ArgString(a interface{}) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case nil:
		return ""
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}
