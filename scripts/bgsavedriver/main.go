// Command bgsavedriver drives the saves of scripts/bench-bgsave.sh over
// one connection: BGSAVE, then INFO persistence every 20 ms until the save
// is over, again and again while the process given by -while-pid runs (or
// one save with -while-pid 0), sampling the server's RSS (with its child
// processes', for redis-server's fork) from /proc. It prints
//
//	saves mean_save_ms peak_rss_kb
//
// With -poll it starts no save and only sends the same INFO every 20 ms,
// so that a baseline benchmark runs next to the same driver.
//
// It replaced a python3 driver on 2026-11-30: on the 2 cores the server
// and redis-benchmark share, the interpreter waking 50 times a second took
// shardnode's p99 from ~1.0 ms to ~2.1-2.3 ms with no save at all, where
// redis-cli polling at the same rate left it at ~1.0 ms.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/scripts/internal/benchconn"
)

// rssKB is the RSS of pid and its children.
func rssKB(pid int) int64 {
	pids := []string{strconv.Itoa(pid)}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		pids = append(pids, strings.Fields(string(b))...)
	}
	var total int64
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + p + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += n
			}
		}
	}
	return total
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	server := flag.Int("server-pid", 0, "the server's pid, for its RSS")
	bench := flag.Int("while-pid", 0, "drive saves until this process exits (0: one save)")
	poll := flag.Bool("poll", false, "start no save: only poll INFO persistence")
	flag.Parse()
	if err := run(*addr, *server, *bench, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "bgsavedriver:", err)
		os.Exit(1)
	}
}

func run(addr string, server, bench int, poll bool) error {
	c, err := benchconn.Dial(addr)
	if err != nil {
		return err
	}
	const tick = 20 * time.Millisecond
	peak := rssKB(server)
	saving := func() (bool, error) {
		v, err := c.Do("INFO", "persistence")
		if err != nil {
			return false, err
		}
		return strings.Contains(v.Str, "rdb_bgsave_in_progress:1"), nil
	}
	if poll {
		for bench != 0 && benchconn.Alive(bench) {
			if _, err := saving(); err != nil {
				return err
			}
			peak = max(peak, rssKB(server))
			time.Sleep(tick)
		}
		fmt.Println(0, 0, peak)
		return nil
	}
	saves := 0
	var total time.Duration
	for {
		t0 := time.Now()
		for {
			v, err := c.Do("BGSAVE")
			if err == nil {
				break
			}
			if !v.IsError() {
				return err
			}
			time.Sleep(tick) // one still running
		}
		for {
			time.Sleep(tick)
			busy, err := saving()
			if err != nil {
				return err
			}
			peak = max(peak, rssKB(server))
			if !busy {
				break
			}
		}
		running := bench != 0 && benchconn.Alive(bench)
		if bench == 0 || running {
			saves++
			total += time.Since(t0)
		}
		if !running {
			break
		}
	}
	fmt.Println(saves, total.Milliseconds()/int64(max(saves, 1)), peak)
	return nil
}
