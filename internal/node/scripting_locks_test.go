package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/keyspace"
)

// keysInShards returns two keys whose shards are different, the first in
// the higher shard.
func keysInShards(t *testing.T) (high, low string) {
	t.Helper()
	high = "lk:0"
	for i := 1; i < 1000; i++ {
		k := fmt.Sprintf("lk:%d", i)
		if keyspace.ShardOf(k) < keyspace.ShardOf(high) {
			return high, k
		}
		if keyspace.ShardOf(k) > keyspace.ShardOf(high) {
			return k, high
		}
	}
	t.Fatal("no two keys in different shards")
	return "", ""
}

// TestScriptLocksUndeclaredKeysInAnyOrder: a script takes the shard locks
// of undeclared keys as its commands meet them, here a higher shard and
// then a lower one, while another client's command that holds the lower
// shard and then needs the higher one arrives in between: an MSET of both
// keys (shards locked in order), KEYS (every shard of the database), and
// EXEC of a block writing the lower key then SCANning (the block's one
// shard, then each shard in turn). Each waits for the script at the
// scripting gate, holding no shard lock: the script ends, sees the lower
// key unchanged, and the other command runs after it. Without the gate
// each pair deadlocks.
func TestScriptLocksUndeclaredKeysInAnyOrder(t *testing.T) {
	ts := startServer(t)
	// Long timeouts: on a loaded machine the script's spin alone can take
	// seconds, and a deadlock is told by the 30 s wait below.
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := func() *redis.Client {
		cl := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: time.Minute})
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	rc := client()
	high, low := keysInShards(t)
	lib := `#!lua name=locktest
redis.register_function('spin', function(keys, args)
  redis.call('set', args[1], 'script')
  for i = 1, tonumber(args[3]) do end
  return redis.call('get', args[2])
end)`
	if err := rc.FunctionLoad(c, lib).Err(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		other func(cl *redis.Client) error
		after map[string]string
	}{
		{"MSET", func(cl *redis.Client) error { return cl.MSet(c, low, "other", high, "other").Err() },
			map[string]string{low: "other", high: "other"}},
		{"KEYS", func(cl *redis.Client) error { return cl.Keys(c, "lk:*").Err() },
			map[string]string{low: "before", high: "script"}},
		{"EXEC with SCAN", func(cl *redis.Client) error {
			_, err := cl.TxPipelined(c, func(p redis.Pipeliner) error {
				p.Set(c, low, "other", 0)
				p.Scan(c, 0, "lk:*", 1000)
				return nil
			})
			return err
		}, map[string]string{low: "other", high: "script"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc.Set(c, low, "before", 0)
			rc.Del(c, high)
			type result struct {
				v   string
				err error
			}
			script := make(chan result, 1)
			go func() {
				v, err := client().FCall(c, "spin", nil, high, low, 3000000).Text()
				script <- result{v, err}
			}()
			// Wait until the script runs (FUNCTION STATS names it).
			admin := client()
			deadline := time.Now().Add(10 * time.Second)
			for {
				st, err := admin.Do(c, "FUNCTION", "STATS").Slice()
				if err != nil {
					t.Fatal(err)
				}
				if len(st) > 1 && st[1] != nil {
					break
				}
				select {
				case r := <-script:
					t.Fatalf("the script ended before it was seen running: %v %v", r.v, r.err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the script was never seen running")
				}
			}
			other := make(chan error, 1)
			go func() { other <- tc.other(client()) }()
			tm := time.NewTimer(30 * time.Second)
			defer tm.Stop()
			select {
			case r := <-script:
				if r.err != nil || r.v != "before" {
					t.Fatalf("script returned %q, %v; want the lower key as it was before", r.v, r.err)
				}
			case <-tm.C:
				t.Fatal("the script and the other command deadlocked")
			}
			select {
			case err := <-other:
				if err != nil {
					t.Fatal(err)
				}
			case <-tm.C:
				t.Fatal("the other command never ran")
			}
			for k, want := range tc.after {
				if v := rc.Get(c, k).Val(); v != want {
					t.Fatalf("%s = %q after both, want %q", k, v, want)
				}
			}
		})
	}
}
