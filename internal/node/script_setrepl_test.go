package node

import (
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// TestScriptSetReplTargets checks redis.set_repl's targets: an effect
// made under REPL_NONE goes nowhere, under REPL_AOF to the AOF only, and
// under REPL_ALL everywhere (Redis's "Test selective replication of
// certain Redis commands from Lua"): the replica gets a and d, and an
// AOF reload keeps a, c and d.
func TestScriptSetReplTargets(t *testing.T) {
	_, _, mc, rc := linkedPair(t)
	c := ctx(t)
	if err := mc.ConfigSet(c, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the AOF rewrite to finish", func() bool {
		info := mc.Info(c, "persistence").Val()
		return containsLine(info, "aof_enabled:1") && containsLine(info, "aof_rewrite_in_progress:0") &&
			containsLine(info, "aof_rewrite_scheduled:0")
	})
	script := `redis.call('set','a','1')
redis.set_repl(redis.REPL_NONE)
redis.call('set','b','2')
redis.set_repl(redis.REPL_AOF)
redis.call('set','c','3')
redis.set_repl(redis.REPL_ALL)
redis.call('set','d','4')`
	if err := mc.Eval(c, script, nil).Err(); err != nil && err.Error() != "redis: nil" {
		t.Fatalf("EVAL: %v", err)
	}
	if err := mc.Set(c, "marker", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the marker on the replica", func() bool { return rc.Get(c, "marker").Val() == "1" })
	if got := rc.MGet(c, "a", "b", "c", "d").Val(); !equalVals(got, []any{"1", nil, nil, "4"}) {
		t.Errorf("replica a b c d = %v, want [1 <nil> <nil> 4]", got)
	}
	if got := mc.MGet(c, "a", "b", "c", "d").Val(); !equalVals(got, []any{"1", "2", "3", "4"}) {
		t.Errorf("master a b c d = %v, want [1 2 3 4]", got)
	}
	if err := mc.Do(c, "DEBUG", "LOADAOF").Err(); err != nil {
		t.Fatal(err)
	}
	if got := mc.MGet(c, "a", "b", "c", "d").Val(); !equalVals(got, []any{"1", nil, "3", "4"}) {
		t.Errorf("after DEBUG LOADAOF a b c d = %v, want [1 <nil> 3 4]", got)
	}
}

func equalVals(got, want []any) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
