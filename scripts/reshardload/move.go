package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/scripts/internal/benchconn"
)

// A timedMove moves slots 0..N-1 with the command sequence of redis-cli 7.0's
// clusterManagerMoveSlot (SETSLOT IMPORTING on the target, MIGRATING on
// the source, GETKEYSINSLOT + MIGRATE ... KEYS until the slot is empty,
// SETSLOT NODE on the target, the source and every other master), one
// command at a time on one connection per node as redis-cli does, and
// times every command from the client's side: the wall time per step
// that the -run reshard's total is made of.
type timedMove struct {
	src, dst   master
	others     []master
	pipeline   int
	conns      map[string]*benchconn.Conn
	lat        map[string][]time.Duration
	movedKeys  int
	totalSlots int
	// pids are the masters' process ids when STEP_CPU=1: each command
	// then also adds the CPU time and the times run on a CPU (both from
	// /proc/<pid>/task/*/schedstat) of the three servers to its step.
	pids []int
	cpu  map[string]time.Duration
	runs map[string]int64
}

type master struct{ id, addr string }

// moveSteps is the order the per-command figures are printed in.
var moveSteps = []string{"importing", "migrating", "getkeys", "migrate", "getkeys_empty", "node_target", "node_source", "node_other"}

// newTimedMove finds the master owning slot 0 (the source) and the
// master with the next lowest slot (the target, the second master of a
// cluster made by redis-cli --cluster create) from CLUSTER NODES at addr.
func newTimedMove(addr string, pipeline int) (*timedMove, error) {
	c, err := benchconn.Dial(addr)
	if err != nil {
		return nil, err
	}
	v, err := c.Do("CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	t := &timedMove{pipeline: pipeline, conns: map[string]*benchconn.Conn{}, lat: map[string][]time.Duration{}}
	type owner struct {
		m   master
		low int
	}
	var ms []owner
	for _, line := range strings.Split(strings.TrimSpace(v.Str), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") {
			continue
		}
		low := 16384
		for _, r := range f[8:] {
			lo, _, _ := strings.Cut(r, "-")
			if a, err := strconv.Atoi(lo); err == nil {
				low = min(low, a)
			}
		}
		ms = append(ms, owner{master{id: f[0], addr: strings.SplitN(strings.SplitN(f[1], "@", 2)[0], ",", 2)[0]}, low})
	}
	slices.SortFunc(ms, func(a, b owner) int { return a.low - b.low })
	if len(ms) < 2 || ms[0].low != 0 {
		return nil, errors.New("no two masters with slots, or slot 0 has no master")
	}
	t.src, t.dst = ms[0].m, ms[1].m
	for _, o := range ms[2:] {
		t.others = append(t.others, o.m)
	}
	for _, m := range append([]master{t.src, t.dst}, t.others...) {
		nc, err := benchconn.Dial(m.addr)
		if err != nil {
			return nil, err
		}
		t.conns[m.addr] = nc
		if os.Getenv("STEP_CPU") == "1" {
			v, err := nc.Do("INFO", "server")
			if err != nil {
				return nil, err
			}
			_, after, _ := strings.Cut(v.Str, "process_id:")
			pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]))
			if err != nil {
				return nil, fmt.Errorf("no process_id in INFO of %s", m.addr)
			}
			t.pids = append(t.pids, pid)
		}
	}
	t.cpu, t.runs = map[string]time.Duration{}, map[string]int64{}
	return t, nil
}

// schedstat sums the CPU time and the times run on a CPU of the threads
// of t.pids.
func (t *timedMove) schedstat() (cpu time.Duration, runs int64) {
	for _, pid := range t.pids {
		dir := fmt.Sprintf("/proc/%d/task", pid)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) == 3 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				n, _ := strconv.ParseInt(f[2], 10, 64)
				cpu += time.Duration(ns)
				runs += n
			}
		}
	}
	return cpu, runs
}

func (t *timedMove) do(step string, m master, args ...string) (resp []string, err error) {
	var cpu0 time.Duration
	var runs0 int64
	if t.pids != nil {
		cpu0, runs0 = t.schedstat()
	}
	start := time.Now()
	v, err := t.conns[m.addr].Do(args...)
	t.lat[step] = append(t.lat[step], time.Since(start))
	if t.pids != nil {
		cpu1, runs1 := t.schedstat()
		t.cpu[step] += cpu1 - cpu0
		t.runs[step] += runs1 - runs0
	}
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", strings.Join(args[:min(len(args), 4)], " "), m.addr, err)
	}
	for _, e := range v.Elems {
		resp = append(resp, e.Str)
	}
	return resp, nil
}

// moveSlot moves one slot as clusterManagerMoveSlot does.
func (t *timedMove) moveSlot(slot int) error {
	s := strconv.Itoa(slot)
	if _, err := t.do("importing", t.dst, "CLUSTER", "SETSLOT", s, "IMPORTING", t.src.id); err != nil {
		return err
	}
	if _, err := t.do("migrating", t.src, "CLUSTER", "SETSLOT", s, "MIGRATING", t.dst.id); err != nil {
		return err
	}
	host, port, _ := strings.Cut(t.dst.addr, ":")
	for {
		start := time.Now()
		cpuLast, runsLast := t.cpu["getkeys"], t.runs["getkeys"]
		keys, err := t.do("getkeys", t.src, "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(t.pipeline))
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			n := len(t.lat["getkeys"])
			t.lat["getkeys_empty"] = append(t.lat["getkeys_empty"], time.Since(start))
			t.lat["getkeys"] = t.lat["getkeys"][:n-1]
			c, r := t.cpu["getkeys"], t.runs["getkeys"]
			t.cpu["getkeys"], t.runs["getkeys"] = cpuLast, runsLast
			t.cpu["getkeys_empty"] += c - cpuLast
			t.runs["getkeys_empty"] += r - runsLast
			break
		}
		args := append([]string{"MIGRATE", host, port, "", "0", "60000", "KEYS"}, keys...)
		if _, err := t.do("migrate", t.src, args...); err != nil {
			return err
		}
		t.movedKeys += len(keys)
	}
	if _, err := t.do("node_target", t.dst, "CLUSTER", "SETSLOT", s, "NODE", t.dst.id); err != nil {
		return err
	}
	if _, err := t.do("node_source", t.src, "CLUSTER", "SETSLOT", s, "NODE", t.dst.id); err != nil &&
		!strings.Contains(err.Error(), "ERR Please use SETSLOT only with masters.") {
		return err
	}
	for _, o := range t.others {
		if _, err := t.do("node_other", o, "CLUSTER", "SETSLOT", s, "NODE", t.dst.id); err != nil {
			return err
		}
	}
	t.totalSlots++
	return nil
}

// report renders, per step, its count, the client-side mean, p50, p99 and
// max in microseconds and its share of the move's wall time.
func (t *timedMove) report(total time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "move: %d slots, %d keys, %.3f s\n", t.totalSlots, t.movedKeys, total.Seconds())
	fmt.Fprintf(&b, "%-14s %7s %9s %9s %9s %9s %9s %6s", "step", "n", "mean_us", "p50_us", "p99_us", "max_us", "total_s", "share")
	if t.pids != nil {
		fmt.Fprintf(&b, " %9s %9s", "cpu_us", "oncpu")
	}
	b.WriteString("\n")
	for _, step := range moveSteps {
		l := slices.Clone(t.lat[step])
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		var sum time.Duration
		for _, d := range l {
			sum += d
		}
		us := func(d time.Duration) float64 { return float64(d) / 1e3 }
		fmt.Fprintf(&b, "%-14s %7d %9.1f %9.1f %9.1f %9.1f %9.3f %5.1f%%", step, len(l), us(sum/time.Duration(len(l))),
			us(l[len(l)/2]), us(l[len(l)*99/100]), us(l[len(l)-1]), sum.Seconds(), 100*sum.Seconds()/total.Seconds())
		if t.pids != nil {
			// Per command: the three servers' CPU time and the times
			// their threads were put on a CPU (context switches in).
			fmt.Fprintf(&b, " %9.1f %9.1f", us(t.cpu[step]/time.Duration(len(l))), float64(t.runs[step])/float64(len(l)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// runTimedMove runs "move:N[:P]" and writes its report to stderr.
func runTimedMove(addr, spec string) error {
	ns, ps, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(ns)
	if err != nil || n <= 0 || n >= 16384 {
		return fmt.Errorf("bad move %q", spec)
	}
	p := 10
	if ps != "" {
		if p, err = strconv.Atoi(ps); err != nil || p <= 0 {
			return fmt.Errorf("bad move pipeline %q", spec)
		}
	}
	t, err := newTimedMove(addr, p)
	if err != nil {
		return err
	}
	start := time.Now()
	for s := 0; s < n; s++ {
		if err := t.moveSlot(s); err != nil {
			return err
		}
	}
	fmt.Fprint(os.Stderr, t.report(time.Since(start)))
	return nil
}
