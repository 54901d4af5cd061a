package cluster

import (
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/multikey"
)

// keyRange says where a multi-key command's keys are, as Redis's legacy
// key specification does: arguments first, first+step, ... up to last
// (negative counts from the end: -1 is the last argument). numKeysAt, when
// set, is the position of a numkeys argument; the keys follow it, and
// extra counts fixed keys before it (a destination key at position 1).
type keyRange struct {
	first, last, step int
	numKeysAt, extra  int
}

// multiKey lists the commands that take more than one key, so their slots
// can be compared before anything is sent. Single-key commands need no
// check: go-redis routes them by their first key. This is a small local
// table; the project's full command key table lives in internal/node and
// is not importable from a client package yet.
var multiKey = map[string]keyRange{}

func init() {
	for _, e := range []struct {
		r     keyRange
		names string
	}{
		{keyRange{first: 1, last: 2, step: 1}, "rename renamenx copy smove rpoplpush lmove blmove brpoplpush lcs geosearchstore zrangestore"},
		{keyRange{first: 1, last: -1, step: 1}, "del exists unlink touch mget watch sunion sinter sdiff sunionstore sinterstore sdiffstore pfcount pfmerge"},
		{keyRange{first: 1, last: -2, step: 1}, "blpop brpop bzpopmin bzpopmax"},
		{keyRange{first: 1, last: -1, step: 2}, "mset msetnx"},
		{keyRange{first: 2, last: -1, step: 1}, "bitop"},
		{keyRange{numKeysAt: 2}, "eval evalsha eval_ro evalsha_ro fcall fcall_ro blmpop bzmpop"},
		{keyRange{numKeysAt: 1}, "zunion zinter zdiff zintercard sintercard lmpop zmpop"},
		{keyRange{numKeysAt: 2, extra: 1}, "zunionstore zinterstore zdiffstore"},
	} {
		for _, n := range strings.Fields(e.names) {
			multiKey[n] = e.r
		}
	}
}

// splitStep lists the commands that are split per slot and reassembled,
// with the number of arguments per key.
var splitStep = multikey.Steps

// argString renders an argument as go-redis writes it on the wire.
func argString(a interface{}) string { return multikey.ArgString(a) }

// commandKeys returns the keys of a multi-key command, or nil for a
// command not in the table.
func commandKeys(name string, args []interface{}) []string {
	r, ok := multiKey[name]
	if !ok {
		return nil
	}
	var keys []string
	if r.numKeysAt > 0 {
		if r.extra > 0 && len(args) > 1 {
			keys = append(keys, argString(args[1]))
		}
		if r.numKeysAt >= len(args) {
			return keys
		}
		n, err := strconv.Atoi(argString(args[r.numKeysAt]))
		if err != nil || n < 0 {
			return keys
		}
		for i := r.numKeysAt + 1; i <= r.numKeysAt+n && i < len(args); i++ {
			keys = append(keys, argString(args[i]))
		}
		return keys
	}
	last := r.last
	if last < 0 {
		last = len(args) + last
	}
	for i := r.first; i <= last && i < len(args); i += r.step {
		keys = append(keys, argString(args[i]))
	}
	return keys
}

// Slot returns the cluster hash slot of key ({hash tag} aware).
func Slot(key string) int { return consistent.KeySlot(key) }

// slotsOf returns the distinct slots of keys, in first-seen order.
func slotsOf(keys []string) []int {
	var out []int
	for _, k := range keys {
		s := Slot(k)
		dup := false
		for _, o := range out {
			if o == s {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}
