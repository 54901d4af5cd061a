package node

import (
	"fmt"
	"testing"
)

// clusterScriptKeys returns two keys of different slots in 0-8191 and one
// in 8192-16383.
func clusterScriptKeys(t *testing.T) (a, b, remote string) {
	t.Helper()
	for i := 0; i < 10000 && (a == "" || b == "" || remote == ""); i++ {
		k := fmt.Sprintf("sk:%d", i)
		switch s := keySlot(k); {
		case s >= 8192:
			if remote == "" {
				remote = k
			}
		case a == "":
			a = k
		case b == "" && s != keySlot(a):
			b = k
		}
	}
	if a == "" || b == "" || remote == "" {
		t.Fatal("no keys for the slots")
	}
	return a, b, remote
}

// TestClusterScriptErrorsLikeRedis runs scripts touching keys of several
// slots and of slots the node does not serve on a one-node cluster that
// serves slots 0-8191, on shardnode and on redis-server, and compares
// every reply, error texts included (Redis's scriptVerifyClusterState and
// the shebang and function flags).
func TestClusterScriptErrorsLikeRedis(t *testing.T) {
	needBinary(t, "redis-server")
	a, b, remote := clusterScriptKeys(t)
	crossLib := `#!lua name=crossslot
redis.register_function('cross', function(keys, args)
  redis.call('set', args[1], 'x')
  redis.call('set', args[2], 'y')
  return 'OK'
end)
redis.register_function{function_name='cross_allowed', callback=function(keys, args)
  redis.call('set', args[1], 'x')
  redis.call('set', args[2], 'y')
  return 'OK'
end, flags={'allow-cross-slot-keys'}}`
	twoSets := "redis.call('set', ARGV[1], 'x') redis.call('set', ARGV[2], 'y') return 'OK'"
	cases := []struct {
		name string
		args []any
	}{
		{"shebang script, two slots", []any{"eval", "#!lua\n" + twoSets, 0, a, b}},
		{"compat script, two slots", []any{"eval", twoSets, 0, a, b}},
		{"allow-cross-slot-keys script, two slots", []any{"eval", "#!lua flags=allow-cross-slot-keys\n" + twoSets, 0, a, b}},
		{"shebang script, key other than the declared one", []any{"eval", "#!lua\nreturn redis.call('set', ARGV[1], 'x')", 1, a, b}},
		{"shebang script, declared key's slot", []any{"eval", "#!lua\nreturn redis.call('set', ARGV[1], 'x')", 1, a, a}},
		{"compat script, key of a slot not served", []any{"eval", "return redis.call('get', ARGV[1])", 0, remote}},
		{"shebang script, key of a slot not served", []any{"eval", "#!lua\nreturn redis.call('get', ARGV[1])", 0, remote}},
		{"pcall, key of a slot not served", []any{"eval", "local r = redis.pcall('get', ARGV[1]) return r['err']", 0, remote}},
		{"one command, two slots", []any{"eval", "return redis.call('mset', ARGV[1], 1, ARGV[2], 2)", 0, a, b}},
		{"declared keys of two slots", []any{"eval", "return 1", 2, a, b}},
		{"declared key of a slot not served", []any{"eval", "return 1", 1, remote}},
		{"no-cluster flag", []any{"eval", "#!lua flags=no-cluster\nreturn 1", 0}},
		{"function, two slots", []any{"fcall", "cross", 0, a, b}},
		{"function with allow-cross-slot-keys, two slots", []any{"fcall", "cross_allowed", 0, a, b}},
		{"function, key of a slot not served", []any{"fcall", "cross_allowed", 0, a, remote}},
	}
	run := func(n *clNode) []string {
		n.do(t, "cluster", "addslotsrange", 0, 8191)
		waitClusterOK(t, []*clNode{n})
		n.do(t, "function", "load", crossLib)
		var out []string
		for _, tc := range cases {
			v, err := n.rc.Do(ctx(t), tc.args...).Result()
			out = append(out, fmt.Sprintf("%v / %v", v, err))
		}
		return out
	}
	want := run(startRedisNode(t, "cluster-require-full-coverage", "no"))
	got := run(startShardNode(t, 0, 0, "", "cluster-require-full-coverage", "no"))
	for i, tc := range cases {
		if got[i] != want[i] {
			t.Errorf("%s:\n shardnode    %s\n redis-server %s", tc.name, got[i], want[i])
		} else {
			t.Logf("%s: %s", tc.name, got[i])
		}
	}
}
