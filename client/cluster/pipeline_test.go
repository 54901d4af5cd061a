package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/clustertest"
)

// TestPipelineAcrossMoves sends pipelines over all three masters while a
// slot is half migrated (ASK for the keys already moved) and after it has
// moved behind the client's back (MOVED); every reply must be right.
//
// Meanwhile a second goroutine sends the same pipeline (GETs and an MGET
// over the three masters) without pause, so slots change state while its
// pipelines are in flight; every one of its replies must be right too.
func TestPipelineAcrossMoves(t *testing.T) {
	for _, kind := range clustertest.Kinds {
		t.Run(kind, func(t *testing.T) { testPipelineAcrossMoves(t, kind) })
	}
}

func testPipelineAcrossMoves(t *testing.T, kind string) {
	nodes := startClusterOf(t, kind, 3, 0)
	c := newClient(t, nodes, Options{RefreshInterval: -1, MinRefreshInterval: time.Hour})
	ctx := context.Background()
	// Ten keys in one slot of the first master, plus keys everywhere.
	tag := ""
	for i := 0; tag == "" || Slot(tag) > 5460; i++ {
		tag = fmt.Sprintf("{p%d}", i)
	}
	var moving []string
	for i := range 10 {
		moving = append(moving, fmt.Sprintf("%s%d", tag, i))
	}
	others := keysOnSlots("pipe:", 30)
	all := append(append([]string{}, moving...), others...)
	for _, k := range all {
		if err := c.Set(ctx, k, "v"+k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s := Slot(tag)
	from, to := masterOf(t, nodes, s), masterOf(t, nodes, 16383)
	fromID, toID := from.NodeID(t), to.NodeID(t)
	src, dst := from.Client(), to.Client()
	do := func(cl *redis.Client, args ...interface{}) {
		t.Helper()
		if err := cl.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	run := func(phase string) {
		t.Helper()
		pipe := c.Pipeline()
		gets := make([]*redis.StringCmd, len(all))
		for i, k := range all {
			gets[i] = pipe.Get(ctx, k)
		}
		mget := pipe.MGet(ctx, all...)
		incr := pipe.Incr(ctx, tag+"counter")
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("%s: pipeline: %v", phase, err)
		}
		for i, k := range all {
			if gets[i].Val() != "v"+k {
				t.Fatalf("%s: GET %s = %q %v", phase, k, gets[i].Val(), gets[i].Err())
			}
		}
		for i, v := range mget.Val() {
			if v != "v"+all[i] {
				t.Fatalf("%s: MGET[%d] = %v", phase, i, v)
			}
		}
		if incr.Err() != nil {
			t.Fatalf("%s: INCR: %v", phase, incr.Err())
		}
	}
	run("before")
	// The concurrent pipelines, until the test's moves are done.
	stop := make(chan struct{})
	bg := make(chan error, 1)
	var rounds int
	go func() {
		defer close(bg)
		for rounds = 0; rounds < 100000; rounds++ {
			select {
			case <-stop:
				return
			default:
			}
			pipe := c.Pipeline()
			gets := make([]*redis.StringCmd, len(all))
			for i, k := range all {
				gets[i] = pipe.Get(ctx, k)
			}
			mget := pipe.MGet(ctx, all...)
			if _, err := pipe.Exec(ctx); err != nil {
				bg <- fmt.Errorf("concurrent pipeline %d: %w", rounds, err)
				return
			}
			for i, k := range all {
				if gets[i].Val() != "v"+k {
					bg <- fmt.Errorf("concurrent pipeline %d: GET %s = %q %v", rounds, k, gets[i].Val(), gets[i].Err())
					return
				}
			}
			for i, v := range mget.Val() {
				if v != "v"+all[i] {
					bg <- fmt.Errorf("concurrent pipeline %d: MGET[%d] = %v", rounds, i, v)
					return
				}
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-bg; err != nil {
			t.Fatal(err)
		}
		t.Logf("%d concurrent pipelines of %d commands, all replies right", rounds, len(all)+1)
	}()
	// Half migrated: five keys on the target, five on the source.
	do(dst, "cluster", "setslot", s, "importing", fromID)
	do(src, "cluster", "setslot", s, "migrating", toID)
	args := []interface{}{"migrate", "127.0.0.1", to.Port, "", 0, 5000, "keys"}
	for _, k := range moving[:5] {
		args = append(args, k)
	}
	do(src, args...)
	run("half migrated")
	// One slot, half its keys moved: the server answers TRYAGAIN to a
	// multi-key command; the client falls back to one command per key.
	vals, err := c.MGet(ctx, moving...).Result()
	if err != nil {
		t.Fatalf("MGET of a half-migrated slot: %v", err)
	}
	for i, v := range vals {
		if v != "v"+moving[i] {
			t.Fatalf("MGET of a half-migrated slot: [%d] = %v", i, v)
		}
	}
	if n, err := c.Exists(ctx, moving...).Result(); err != nil || n != 10 {
		t.Fatalf("EXISTS of a half-migrated slot: %d %v", n, err)
	}
	// Finish the move; the client has not been told.
	clustertest.MoveSlot(t, s, from, to, nodes)
	clustertest.WaitCheck(t, nodes[0].Addr, 20*time.Second)
	run("moved")
	if got := c.SlotMaster(s); got != to.Addr {
		t.Fatalf("slot map has %s for the moved slot, want %s", got, to.Addr)
	}
	if v, _ := c.Get(ctx, tag+"counter").Int(); v != 3 {
		t.Fatalf("counter = %d, want 3 (one INCR per pipeline)", v)
	}
}
