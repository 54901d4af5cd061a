// Command cfwriter measures, for scripts/bench-cluster-failover.sh, how long
// outside cluster clients take to write again to a killed master's slots.
// Each client of -clients ("plain": a go-redis ClusterClient with default
// options; "shardis": client/cluster with default options) runs
// -goroutines writers from start-up; each writes its own key of the slot
// range -from..-to and, with -others, its own key outside it, without
// pause. A line "<kill> <dead>" on stdin gives the unix times in
// nanoseconds of the kill -9 and of the moment the killed process was
// reaped; a write that starts after <dead> can only succeed on the
// promoted replica, so a client's first such success ends its outage. It
// prints one line per client, in -clients order:
//
//	<name> <seconds from the kill to that success> <failed writes outside the range after the kill>
//
// and exits when every client has written again, or after -limit
// ("<name> timeout <errors>" for those that did not). The clients start in
// -clients order, so the bench alternates it between rounds.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
)

// writer is one measured client.
type writer struct {
	name      string
	rc        redis.UniversalClient
	firstOK   atomic.Int64 // ns from the kill to the first post-death success
	otherErrs atomic.Int64
	done      chan struct{}
	once      sync.Once
}

// keysIn returns n keys on distinct slots inside (in) or outside [from, to].
func keysIn(prefix string, n, from, to int, in bool) []string {
	var out []string
	seen := map[int]bool{}
	for i := 0; len(out) < n; i++ {
		k := prefix + strconv.Itoa(i)
		s := cluster.Slot(k)
		if (s >= from && s <= to) == in && !seen[s] {
			seen[s] = true
			out = append(out, k)
		}
	}
	return out
}

func main() {
	seed := flag.String("seed", "127.0.0.1:7000", "any node of the cluster")
	from := flag.Int("from", 5461, "first slot of the killed master")
	to := flag.Int("to", 10922, "last slot of the killed master")
	limit := flag.Duration("limit", 90*time.Second, "longest wait after the kill")
	shardis := flag.Bool("shardis", false, "shorthand for -clients shardis")
	clients := flag.String("clients", "plain", "comma-separated clients to measure, in start order: plain, shardis")
	goroutines := flag.Int("goroutines", 1, "writers per client")
	others := flag.Bool("others", false, "also write keys outside the range and count the failures")
	flag.Parse()
	if *shardis {
		*clients = "shardis"
	}
	var ws []*writer
	for _, name := range strings.Split(*clients, ",") {
		w := &writer{name: name, done: make(chan struct{})}
		switch name {
		case "shardis":
			c, err := cluster.New(context.Background(), &cluster.Options{Addrs: []string{*seed}})
			if err != nil {
				fmt.Fprintln(os.Stderr, "cfwriter:", err)
				os.Exit(1)
			}
			w.rc = c
		case "plain":
			w.rc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{*seed}})
		default:
			fmt.Fprintln(os.Stderr, "cfwriter: unknown client", name)
			os.Exit(2)
		}
		defer w.rc.Close()
		ws = append(ws, w)
	}
	var killedAt, deadAt atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range ws {
		victim := keysIn("cfwriter:"+w.name+":v:", *goroutines, *from, *to, true)
		other := keysIn("cfwriter:"+w.name+":o:", *goroutines, *from, *to, false)
		for g := range *goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now().UnixNano()
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					err := w.rc.Set(ctx, victim[g], i, 0).Err()
					cancel()
					if d := deadAt.Load(); d != 0 && start > d && err == nil {
						w.firstOK.CompareAndSwap(0, time.Now().UnixNano()-killedAt.Load())
						w.once.Do(func() { close(w.done) })
					}
					if *others {
						ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						oerr := w.rc.Set(ctx, other[g], i, 0).Err()
						cancel()
						if killedAt.Load() != 0 && oerr != nil {
							w.otherErrs.Add(1)
						}
					}
					if err != nil {
						time.Sleep(5 * time.Millisecond)
					}
				}
			}()
		}
	}
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
	deadline := time.After(*limit)
	failed := false
	for _, w := range ws {
		select {
		case <-w.done:
		case <-deadline:
			failed = true
		}
		if failed {
			break
		}
	}
	// Writers on the other masters' slots keep counting for a moment
	// after the last recovery.
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, w := range ws {
		if d := w.firstOK.Load(); d != 0 {
			fmt.Printf("%s %.3f %d\n", w.name, time.Duration(d).Seconds(), w.otherErrs.Load())
		} else {
			fmt.Printf("%s timeout %d\n", w.name, w.otherErrs.Load())
		}
	}
	if failed {
		os.Exit(1)
	}
}
