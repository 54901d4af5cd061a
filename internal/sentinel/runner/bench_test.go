package runner_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFailoverBench compares time to +switch-master and to the first
// successful write through go-redis FailoverClient after kill -9 of the
// master, our Sentinel vs redis-sentinel, alternating. It runs only when
// SHARDIS_SENTINEL_BENCH is set to the number of rounds per kind (see
// scripts/bench-sentinel-failover.sh).
func TestFailoverBench(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SHARDIS_SENTINEL_BENCH"))
	if rounds <= 0 {
		t.Skip("set SHARDIS_SENTINEL_BENCH=<rounds> to run the failover benchmark")
	}
	needE2E(t, "redis-sentinel")
	res := map[string][2][]time.Duration{}
	for i := 0; i < rounds; i++ {
		for _, kind := range []string{"shardis", "redis-sentinel"} {
			var sw, wr time.Duration
			t.Run(fmt.Sprintf("%s-%d", kind, i), func(t *testing.T) { sw, wr = failoverRound(t, kind) })
			r := res[kind]
			r[0], r[1] = append(r[0], sw), append(r[1], wr)
			res[kind] = r
			t.Logf("round %d %-14s +switch-master %4d ms, first write %4d ms", i, kind, sw.Milliseconds(), wr.Milliseconds())
		}
	}
	fmt.Printf("| sentinel | rounds | median kill -9 -> +switch-master | median kill -9 -> first write |\n|---|---|---|---|\n")
	for _, kind := range []string{"shardis", "redis-sentinel"} {
		fmt.Printf("| %s | %d | %d ms | %d ms |\n", kind, rounds, median(res[kind][0]).Milliseconds(), median(res[kind][1]).Milliseconds())
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// failoverRound builds master + 2 replicas watched by 3 Sentinels of the
// given kind (down-after 1000 ms), kills the master and measures.
func failoverRound(t *testing.T, kind string) (toSwitch, toWrite time.Duration) {
	master := startRedis(t, 0)
	startRedis(t, master.port)
	startRedis(t, master.port)
	var ports []int
	var addrs []string
	for i := 0; i < 3; i++ {
		var p *proc
		if kind == "shardis" {
			p, _ = startOurSentinel(t, master.port)
		} else {
			p = startRedisSentinel(t, master.port)
		}
		ports = append(ports, p.port)
		addrs = append(addrs, addrOf(p.port))
	}
	waitGroupFormed(t, ports, 2)
	ctx := context.Background()
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: addrs,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
		MaxRetries: -1, PoolSize: 2})
	defer fc.Close()
	if err := fc.Set(ctx, "k", "0", 0).Err(); err != nil {
		t.Fatal(err)
	}
	switched := make(chan time.Time, 3)
	for _, p := range ports {
		ch := subscribeSwitch(t, p)
		go func() {
			if _, ok := <-ch; ok {
				switched <- time.Now()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	killed := time.Now()
	master.kill()
	wrote := make(chan time.Time, 1)
	go func() {
		for time.Since(killed) < 30*time.Second {
			if fc.Set(ctx, "k", "1", 0).Err() == nil {
				wrote <- time.Now()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	select {
	case at := <-switched:
		toSwitch = at.Sub(killed)
	case <-time.After(30 * time.Second):
		t.Fatal("no +switch-master")
	}
	select {
	case at := <-wrote:
		toWrite = at.Sub(killed)
	case <-time.After(30 * time.Second):
		t.Fatal("no successful write")
	}
	return toSwitch, toWrite
}
