package shardedpool

import (
	"github.com/shardis/shardis/internal/commands"
	"github.com/shardis/shardis/internal/multikey"
)

// The pool finds a command's keys with Redis 7.0's key specs, the table
// the node serves COMMAND INFO from (internal/commands). Only what the
// specs do not decide is the pool's own choice, below.

// firstArgRoutes lists the commands routed by their first argument
// although it is not a key: a PUBLISH reaches the subscribers of the
// shard the channel hashes to (SPUBLISH's channel is a "not_key" spec).
var firstArgRoutes = map[string]bool{"publish": true, "spublish": true}

// keylessNewer lists commands newer than Redis 7.0 that have no key;
// other commands Redis 7.0 does not know route by their first argument,
// as go-redis's own key-position fallback does.
var keylessNewer = map[string]bool{"waitaof": true}

// firstKeyOnly holds the commands whose one key is their first argument
// (GET, HSET, ...), derived once from the key specs, so that routing them
// looks at nothing else.
var firstKeyOnly = func() map[string]bool {
	m := map[string]bool{}
	for name, specs := range commands.KeySpecs {
		if len(specs) == 1 {
			ks := specs[0]
			if ks.Keyword == "" && !ks.Unknown && !ks.UnknownKeys && !ks.KeyNum && !ks.NotKey() && !ks.Incomplete() &&
				ks.Pos == 1 && ks.LastKey == 0 {
				m[name] = true
			}
		}
	}
	for name := range firstArgRoutes {
		m[name] = true
	}
	return m
}()

// commandKeys returns the keys of a call (args[0] is the command name).
func commandKeys(name string, args []interface{}) []string {
	if firstKeyOnly[name] {
		if len(args) < 2 {
			return nil
		}
		return []string{argString(args[1])}
	}
	if keylessNewer[name] {
		return nil
	}
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = argString(a)
	}
	pos, known := commands.KeyPositions(strs)
	if !known {
		if len(args) < 2 {
			return nil
		}
		return strs[1:2]
	}
	keys := make([]string, len(pos))
	for i, p := range pos {
		keys[i] = strs[p]
	}
	return keys
}

// argString renders an argument as go-redis writes it on the wire.
func argString(a interface{}) string { return multikey.ArgString(a) }
