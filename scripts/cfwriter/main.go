// Command cfwriter measures, for scripts/bench-cluster-failover.sh, how long
// an outside go-redis ClusterClient (default options) takes to write again
// to a killed master's slots. It writes one key of the slot range
// -from..-to every 5 ms from start-up. A line "<kill> <dead>" on stdin gives
// the unix times in nanoseconds of the kill -9 and of the moment the killed
// process was reaped; a write that starts after <dead> can only succeed on
// the promoted replica, so the first such success ends the outage: it prints
// the seconds from the kill to that success and exits. It gives up after
// -limit.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
)

func main() {
	seed := flag.String("seed", "127.0.0.1:7000", "any node of the cluster")
	from := flag.Int("from", 5461, "first slot of the killed master")
	to := flag.Int("to", 10922, "last slot of the killed master")
	limit := flag.Duration("limit", 90*time.Second, "longest wait after the kill")
	shardis := flag.Bool("shardis", false, "use client/cluster (its own slot map) instead of a plain go-redis ClusterClient")
	flag.Parse()
	key := ""
	for i := 0; ; i++ {
		k := "cfwriter:" + strconv.Itoa(i)
		if s := cluster.Slot(k); s >= *from && s <= *to {
			key = k
			break
		}
	}
	var rc redis.UniversalClient
	if *shardis {
		c, err := cluster.New(context.Background(), &cluster.Options{Addrs: []string{*seed}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "cfwriter:", err)
			os.Exit(1)
		}
		rc = c
	} else {
		rc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{*seed}})
	}
	defer rc.Close()
	var killedAt, deadAt atomic.Int64
	result := make(chan time.Duration, 1)
	go func() {
		for i := 0; ; i++ {
			start := time.Now().UnixNano()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := rc.Set(ctx, key, i, 0).Err()
			cancel()
			if d := deadAt.Load(); d != 0 && start > d && err == nil {
				result <- time.Since(time.Unix(0, killedAt.Load()))
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "cfwriter: no kill time on stdin:", err)
		os.Exit(1)
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		fmt.Fprintln(os.Stderr, "cfwriter: want \"<kill-ns> <dead-ns>\" on stdin")
		os.Exit(1)
	}
	kill, err1 := strconv.ParseInt(f[0], 10, 64)
	dead, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "cfwriter: bad times:", err1, err2)
		os.Exit(1)
	}
	killedAt.Store(kill)
	deadAt.Store(dead)
	select {
	case d := <-result:
		fmt.Printf("%.3f\n", d.Seconds())
	case <-time.After(*limit):
		fmt.Println("timeout")
		os.Exit(1)
	}
}
