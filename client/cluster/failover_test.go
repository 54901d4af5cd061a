package cluster

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/clustertest"
)

// TestMasterKilled kills a master (kill -9) of a 3 x (master + replica)
// cluster and measures the time from the kill to the first successful
// write to its slots, for this client and a plain go-redis ClusterClient
// writing side by side, against the time a surviving master first
// reports the promoted replica in CLUSTER SLOTS. The client must follow
// within a second of the cluster (its refused connections ask for
// refreshes every ErrorRefreshInterval).
//
// A shardnode master is stopped in process (its sockets close at once, as
// a killed process's do).
func TestMasterKilled(t *testing.T) {
	for _, kind := range clustertest.Kinds {
		t.Run(kind, func(t *testing.T) { testMasterKilled(t, kind) })
	}
}

func testMasterKilled(t *testing.T, kind string) {
	nodes := startClusterOf(t, kind, 3, 1)
	var killedAt atomic.Int64
	c := newClient(t, nodes, Options{OnRefresh: func(ev RefreshEvent) {
		if k := killedAt.Load(); k != 0 && (ev.Changed > 0 || ev.Err != nil) {
			t.Logf("refresh at +%v (%s via %s): %d slots changed, err %v, took %v", time.Since(time.Unix(0, k)), ev.Reason, ev.Node, ev.Changed, ev.Err, ev.Duration)
		}
	}})
	plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}})
	t.Cleanup(func() { plain.Close() })
	ctx := context.Background()
	key := keysInRange("fo:", 1, 0, 5460)[0]
	victim := masterOf(t, nodes, Slot(key))
	var witness *redis.Client
	for _, n := range nodes {
		if n != victim && masterOf(t, nodes, 16383) == n {
			witness = n.Client()
		}
	}
	for _, cl := range []redis.Cmdable{c, plain} {
		if err := cl.Set(ctx, key, "before", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// ReadFrom: ReadReplicas sends the GETs to the slot's replica.
	readers := newClient(t, nodes, Options{ReadFrom: ReadReplicas})
	replicaGets := func() int64 {
		var sum int64
		for _, n := range nodes {
			cs, _ := n.Client().Info(ctx, "commandstats").Result()
			if role, _ := n.Client().Do(ctx, "role").Slice(); len(role) > 0 && role[0] == "slave" {
				if i := strings.Index(cs, "cmdstat_get:calls="); i >= 0 {
					v, _ := strconv.ParseInt(strings.SplitN(cs[i+len("cmdstat_get:calls="):], ",", 2)[0], 10, 64)
					sum += v
				}
			}
		}
		return sum
	}
	before := replicaGets()
	for range 20 {
		if v, err := readers.Get(ctx, key).Result(); err != nil || v != "before" {
			t.Fatalf("GET from a replica: %q %v", v, err)
		}
	}
	if got := replicaGets() - before; got < 20 {
		t.Fatalf("replicas served %d of 20 GETs with ReadReplicas; stats %+v shards %+v", got, readers.Stats(), readers.Shards())
	}
	var mineDone atomic.Bool
	type result struct {
		name string
		d    time.Duration
		err  error
	}
	results := make(chan result, 3)
	killed := time.Now()
	killedAt.Store(killed.UnixNano())
	victim.Kill()
	// When the cluster itself knows the new master.
	go func() {
		for time.Since(killed) < 30*time.Second {
			slots, err := witness.ClusterSlots(ctx).Result()
			if err == nil {
				for _, r := range slots {
					if r.Start <= Slot(key) && Slot(key) <= r.End && r.Nodes[0].Addr != victim.Addr {
						results <- result{"cluster", time.Since(killed), nil}
						return
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		results <- result{"cluster", 0, context.DeadlineExceeded}
	}()
	for name, cl := range map[string]redis.Cmdable{"client/cluster": c, "go-redis": plain} {
		go func() {
			deadline := killed.Add(30 * time.Second)
			var err error
			for time.Now().Before(deadline) {
				wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				err = cl.Set(wctx, key, "after", 0).Err()
				cancel()
				if err == nil {
					if name == "client/cluster" {
						mineDone.Store(true)
					}
					results <- result{name, time.Since(killed), nil}
					return
				}
				if name == "go-redis" && mineDone.Load() && time.Until(deadline) > 5*time.Second {
					// Give go-redis 5 s more than this client, not 30.
					deadline = time.Now().Add(5 * time.Second)
				}
				time.Sleep(5 * time.Millisecond)
			}
			results <- result{name, 0, err}
		}()
	}
	got := map[string]result{}
	for range 3 {
		r := <-results
		got[r.name] = r
		if r.err != nil {
			t.Logf("%s: not within the deadline: %v", r.name, r.err)
		} else {
			t.Logf("%s: %v after the kill", r.name, r.d)
		}
	}
	mine, cl := got["client/cluster"], got["cluster"]
	if cl.err != nil {
		t.Fatalf("the cluster did not fail over")
	}
	if mine.err != nil {
		t.Fatalf("client/cluster: no successful write within 30s: %v (stats %+v)", mine.err, c.Stats())
	}
	if lag := mine.d - cl.d; lag > time.Second {
		t.Fatalf("client/cluster wrote %v after the cluster knew the new master", lag)
	}
	st := c.Stats()
	if st.ConnErrors == 0 {
		t.Fatalf("no connection error recorded: %+v", st)
	}
	if c.SlotMaster(Slot(key)) == victim.Addr {
		t.Fatalf("slot map still names the killed master")
	}
	t.Logf("client/cluster %v after the cluster: %+v", mine.d-cl.d, st)
}
