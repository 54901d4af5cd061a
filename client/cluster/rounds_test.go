package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFailoverRounds measures failover reaction (the must-show 2):
// per round a fresh 3 x (master + replica) cluster, node timeout 1000 ms,
// 16 goroutines per client writing to keys on every master, kill -9 of a
// master, and the time from the kill to the first successful write to
// its slots, for this client and a plain go-redis ClusterClient in the
// same run (which starts first alternates), against the time the cluster
// itself reports the new master. The nodes run with
// cluster-require-full-coverage no, and writes to the other masters'
// slots must not fail. It runs only with CLUSTER_FAILOVER_ROUNDS=n (it takes about
// a minute per round: go-redis waits for its 60 s state reload).
func TestFailoverRounds(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("CLUSTER_FAILOVER_ROUNDS"))
	if rounds == 0 {
		t.Skip("set CLUSTER_FAILOVER_ROUNDS=5 to measure")
	}
	type sample struct{ cluster, mine, plain time.Duration }
	var samples []sample
	for round := range rounds {
		t.Run(fmt.Sprintf("round%d", round+1), func(t *testing.T) {
			// Without full coverage required, the other masters keep
			// serving while the failed one's slots are down (with it, every
			// node answers CLUSTERDOWN from the FAIL to the promotion).
			nodes := startCluster(t, 3, 1, "--cluster-require-full-coverage", "no")
			ctx := context.Background()
			mine := newClient(t, nodes, Options{})
			plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}})
			victimKeys := keysInRange(fmt.Sprintf("r%d:v:", round), 16, 0, 5460)
			otherKeys := keysInRange(fmt.Sprintf("r%d:o:", round), 16, 5461, SlotCount-1)
			victim := masterOf(t, nodes, Slot(victimKeys[0]))
			witness := masterOf(t, nodes, 16383).Client()
			clients := []struct {
				name string
				c    redis.Cmdable
			}{{"client/cluster", mine}, {"go-redis", plain}}
			if round%2 == 1 {
				slices.Reverse(clients)
			}
			var killedAt atomic.Int64
			firstOK := map[string]*atomic.Int64{"client/cluster": {}, "go-redis": {}}
			otherErrs := map[string]*atomic.Int64{"client/cluster": {}, "go-redis": {}}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for _, cl := range clients {
				for g := range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; ; i++ {
							select {
							case <-stop:
								return
							default:
							}
							vctx, cancel := context.WithTimeout(ctx, time.Second)
							verr := cl.c.Set(vctx, victimKeys[g], i, 0).Err()
							cancel()
							octx, cancel2 := context.WithTimeout(ctx, time.Second)
							oerr := cl.c.Set(octx, otherKeys[g], i, 0).Err()
							cancel2()
							k := killedAt.Load()
							if k == 0 {
								continue
							}
							if oerr != nil {
								otherErrs[cl.name].Add(1)
							}
							if verr == nil && firstOK[cl.name].Load() == 0 {
								firstOK[cl.name].CompareAndSwap(0, time.Now().UnixNano()-k)
							}
							if verr != nil {
								time.Sleep(2 * time.Millisecond)
							}
						}
					}()
				}
			}
			time.Sleep(300 * time.Millisecond) // writers warm up before the kill
			killed := time.Now()
			victim.Kill()
			killedAt.Store(killed.UnixNano())
			var clusterKnew time.Duration
			for time.Since(killed) < 70*time.Second && (clusterKnew == 0 || firstOK["go-redis"].Load() == 0 || firstOK["client/cluster"].Load() == 0) {
				if clusterKnew == 0 {
					if slots, err := witness.ClusterSlots(ctx).Result(); err == nil {
						for _, r := range slots {
							if r.Start == 0 && r.Nodes[0].Addr != victim.Addr {
								clusterKnew = time.Since(killed)
							}
						}
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			close(stop)
			wg.Wait()
			plain.Close()
			s := sample{cluster: clusterKnew, mine: time.Duration(firstOK["client/cluster"].Load()), plain: time.Duration(firstOK["go-redis"].Load())}
			samples = append(samples, s)
			t.Logf("round %d (%s first): cluster %v, client/cluster %v (+%v), go-redis %v; errors on other slots: client/cluster %d, go-redis %d",
				round+1, clients[0].name, s.cluster, s.mine, s.mine-s.cluster, s.plain,
				otherErrs["client/cluster"].Load(), otherErrs["go-redis"].Load())
			if s.mine == 0 {
				t.Errorf("round %d: client/cluster never wrote to the failed master's slots", round+1)
			}
			if n := otherErrs["client/cluster"].Load(); n != 0 {
				t.Errorf("round %d: client/cluster had %d errors on other masters' slots", round+1, n)
			}
		})
	}
	for i, s := range samples {
		t.Logf("summary round %d: cluster %v, client/cluster %v, go-redis %v", i+1, s.cluster, s.mine, s.plain)
	}
}
