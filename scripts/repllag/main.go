// Command repllag samples replication lag for scripts/bench-replication.sh:
// over one open connection to the master and one to the replica it reads
// INFO replication from the master, the replica, then the master again,
// and prints one sample a line,
//
//	lag_bytes master_offset_spread_bytes elapsed_ms
//
// where lag is the mean of the two master_repl_offset readings minus the
// replica's slave_repl_offset (the master keeps writing while the replica
// is asked; the mean is the master's offset at about the moment of the
// replica's reading) and the spread is how much the master's offset moved
// between its two readings (the uncertainty of that sample). Sampling
// stops when the process given by -while-pid exits. It treats both servers
// alike: the same commands, the same fields, the same connections.
//
// With -probe it measures the lag in time instead, as a client sees it:
// each sample writes SET repllag:probe <n> to the master and, once the
// master has acknowledged it, reads GET repllag:probe from the replica
// back to back until it returns n, and prints
//
//	lag_microseconds polls last_get_microseconds elapsed_ms
//
// (acknowledgement to first read that sees the write; the resolution is
// one GET round trip to the replica, tens of microseconds; last_get is the
// round trip of the GET that saw it, so a sample whose lag is mostly that
// round trip is a slow reply, not a late write). Unlike the
// byte lag it does not depend on when a server reads its offset for INFO
// relative to when it answers (Redis answers at the end of an event-loop
// pass, shardnode at once), nor on how long INFO waits on a busy master.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/shardis/shardis/scripts/internal/benchconn"
)

func main() {
	master := flag.String("master", "127.0.0.1:6379", "master address")
	replica := flag.String("replica", "127.0.0.1:6380", "replica address")
	interval := flag.Duration("interval", 20*time.Millisecond, "pause between samples")
	pid := flag.Int("while-pid", 0, "sample until this process exits")
	probe := flag.Bool("probe", false, "measure the lag in time with a probe key")
	flag.Parse()
	f := run
	if *probe {
		f = runProbe
	}
	if err := f(*master, *replica, *interval, *pid); err != nil {
		fmt.Fprintln(os.Stderr, "repllag:", err)
		os.Exit(1)
	}
}

// sampleLoop connects to the master and the replica and prints the line
// one returns for each sample (n counts from 1), every interval, until the
// process pid exits (one sample when pid is 0).
func sampleLoop(master, replica string, interval time.Duration, pid int, one func(m, s *benchconn.Conn, n int) (string, error)) error {
	m, err := benchconn.Dial(master)
	if err != nil {
		return err
	}
	s, err := benchconn.Dial(replica)
	if err != nil {
		return err
	}
	start := time.Now()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for n := 1; pid == 0 || benchconn.Alive(pid); n++ {
		line, err := one(m, s, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %d\n", line, time.Since(start).Milliseconds())
		if pid == 0 {
			break
		}
		time.Sleep(interval)
	}
	return nil
}

// run samples the lag in bytes.
func run(master, replica string, interval time.Duration, pid int) error {
	return sampleLoop(master, replica, interval, pid, func(m, s *benchconn.Conn, _ int) (string, error) {
		mo1, err := m.InfoField("replication", "master_repl_offset")
		if err != nil {
			return "", err
		}
		so, err := s.InfoField("replication", "slave_repl_offset")
		if err != nil {
			return "", err
		}
		mo2, err := m.InfoField("replication", "master_repl_offset")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d %d", (mo1+mo2)/2-so, mo2-mo1), nil
	})
}

// runProbe samples the time from a write's acknowledgement by the master
// to its first sight on the replica.
func runProbe(master, replica string, interval time.Duration, pid int) error {
	return sampleLoop(master, replica, interval, pid, func(m, s *benchconn.Conn, n int) (string, error) {
		want := strconv.Itoa(n)
		if _, err := m.Do("SET", "repllag:probe", want); err != nil {
			return "", err
		}
		acked := time.Now()
		polls := 0
		var last time.Duration
		for {
			t := time.Now()
			v, err := s.Do("GET", "repllag:probe")
			last = time.Since(t)
			if err != nil {
				return "", err
			}
			polls++
			if v.Str == want {
				break
			}
			if time.Since(acked) > 10*time.Second {
				return "", fmt.Errorf("repllag: probe %d not on the replica after 10 s", n)
			}
		}
		return fmt.Sprintf("%d %d %d", time.Since(acked).Microseconds(), polls, last.Microseconds()), nil
	})
}
