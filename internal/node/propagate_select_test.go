package node

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// TestPropagatedSelectInsideBlocks checks that scripts and MULTI/EXEC
// blocks that SELECT other databases replicate each write into its own
// database, and leave the stream in the caller's database for what
// follows (Redis's "Lua scripts using SELECT are replicated correctly").
func TestPropagatedSelectInsideBlocks(t *testing.T) {
	master, replica, _, _ := linkedPair(t)
	c := ctx(t)
	m9 := redis.NewClient(&redis.Options{Addr: master.addr, DB: 9, MaxRetries: -1})
	defer m9.Close()
	script := `redis.call("set","foo1","bar1")
redis.call("select","10")
redis.call("incr","x")
redis.call("select","11")
redis.call("incr","z")`
	for range 2 {
		if err := m9.Eval(c, script, nil).Err(); err != redis.Nil {
			t.Fatalf("EVAL: %v", err)
		}
	}
	if _, err := m9.TxPipelined(c, func(p redis.Pipeliner) error {
		p.Set(c, "beforeselect", "9", 0)
		p.Do(c, "SELECT", "12")
		p.Incr(c, "y")
		return nil
	}); err != nil {
		t.Fatalf("MULTI/EXEC: %v", err)
	}
	// The SELECT inside MULTI moved m9's pooled connection to db 12: a
	// fresh client writes the marker.
	m9b := redis.NewClient(&redis.Options{Addr: master.addr, DB: 9, MaxRetries: -1})
	defer m9b.Close()
	if err := m9b.Set(c, "marker", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb := func(db int) *redis.Client {
		r := redis.NewClient(&redis.Options{Addr: replica.addr, DB: db, MaxRetries: -1})
		t.Cleanup(func() { r.Close() })
		return r
	}
	r9 := rdb(9)
	testutil.WaitFor(t, 5*time.Second, "the marker on the replica's db 9", func() bool { return r9.Get(c, "marker").Val() == "1" })
	want := map[int]map[string]string{
		9:  {"foo1": "bar1", "beforeselect": "9", "marker": "1"},
		10: {"x": "2"},
		11: {"z": "2"},
		12: {"y": "1"},
	}
	for db, kv := range want {
		r := rdb(db)
		if n := r.DBSize(c).Val(); n != int64(len(kv)) {
			t.Errorf("replica db %d holds %d keys, want %d", db, n, len(kv))
		}
		for k, v := range kv {
			if got := r.Get(c, k).Val(); got != v {
				t.Errorf("replica db %d: %s = %q, want %q", db, k, got, v)
			}
		}
	}
}
