// Command traceprobe attributes the slow probe GETs of scripts/reshardload
// (-slow-log) to what each server did meanwhile, from the Go execution
// traces scripts/bench-reshard.sh takes with TRACE=<dir>.
//
//	traceprobe -slow big-shardnode.slow 127.0.0.1:19000=big-shardnode-19000.trace ...
//
// For each slow GET (client-side start and end, wall clock) on a node, the
// probe connection's goroutine on that node (the goroutine woken from
// network waits most often) is followed through [start, end], which is
// split into: unseen (the request's goroutine still waits on the network:
// the data may be in the socket while no thread polls it, or the request
// is still on the wire), runnable (woken, waiting for a P), running,
// syscall, blocked (by reason) and after (the reply written, the client
// not yet done). For the unseen and runnable parts it adds up what the
// node's Ps ran meanwhile, labelled by the goroutine's leaf function and its first two frames
// of the shardis module where it stopped running, and how the goroutine
// was woken (by a P's scheduler or by sysmon's network poll). It also
// gives stop-the-world time overlapping the GETs. The wall clock is
// mapped to trace time with the trace's clock snapshot.
//
// It is a separate module (golang.org/x/exp/trace) so that the shardis
// module does not depend on it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// span is a goroutine's state from t0 to t1.
type span struct {
	t0, t1 trace.Time
	state  trace.GoState
	reason string // why it waits (GoWaiting)
	label  string // where it stopped (GoRunning), or the wait's stack
	proc   trace.ProcID
	bySys  bool // woken with no P (sysmon's or another M's network poll)
}

// node is one trace's parsed timeline.
type node struct {
	spans   map[trace.GoID][]span
	stw     [][2]trace.Time
	mark    [][2]trace.Time // GC concurrent mark phases
	wallOff int64           // trace ns = wall ns - wallOff
	probe   trace.GoID
	// wakeAt lists, per goroutine, when it was woken from a network wait.
	wakeAt map[trace.GoID][]trace.Time
}

const modPrefix = "github.com/shardis/shardis/"

func label(st trace.Stack) string {
	var out []string
	var first string
	for f := range st.Frames() {
		if first == "" {
			first = f.Func
		}
		if strings.HasPrefix(f.Func, modPrefix) {
			out = append(out, strings.TrimPrefix(f.Func, modPrefix))
			if len(out) == 2 {
				break
			}
		}
	}
	if len(out) == 0 || strings.HasPrefix(first, modPrefix) {
		return strings.Join(append([]string{first}, out...), " < ")[len(first)+min(len(out), 1)*3:]
	}
	return first + " < " + strings.Join(out, " < ")
}

func parse(path string) (*node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := trace.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("traceprobe: %s: %w", path, err)
	}
	n := &node{spans: map[trace.GoID][]span{}, wakeAt: map[trace.GoID][]trace.Time{}}
	cur := map[trace.GoID]*span{}
	wakes := map[trace.GoID]int{}
	var stw0, mark0 trace.Time
	names := map[trace.GoID]string{} // a goroutine's label from any stack seen
	for {
		ev, err := r.ReadEvent()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			break
		}
		t := ev.Time()
		switch ev.Kind() {
		case trace.EventSync:
			if cs := ev.Sync().ClockSnapshot; cs != nil && n.wallOff == 0 {
				n.wallOff = cs.Wall.UnixNano() - int64(cs.Trace)
			}
		case trace.EventRangeBegin:
			if strings.HasPrefix(ev.Range().Name, "stop-the-world") {
				stw0 = t
			}
			if ev.Range().Name == "GC concurrent mark phase" {
				mark0 = t
			}
		case trace.EventRangeEnd:
			if strings.HasPrefix(ev.Range().Name, "stop-the-world") && stw0 != 0 {
				n.stw = append(n.stw, [2]trace.Time{stw0, t})
				stw0 = 0
			}
			if ev.Range().Name == "GC concurrent mark phase" && mark0 != 0 {
				n.mark = append(n.mark, [2]trace.Time{mark0, t})
				mark0 = 0
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			from, to := st.Goroutine()
			if l := label(st.Stack); l != "" && names[g] == "" {
				names[g] = l
			}
			if s := cur[g]; s != nil {
				s.t1 = t
				if s.state == trace.GoRunning {
					s.label = label(st.Stack)
					if s.label == "" {
						s.label = fmt.Sprintf("(no stack) g%d", g)
					}
				}
				if s.state == trace.GoWaiting && s.reason == "network" && to == trace.GoRunnable {
					wakes[g]++
					n.wakeAt[g] = append(n.wakeAt[g], t)
				}
				n.spans[g] = append(n.spans[g], *s)
			}
			_ = from
			ns := &span{t0: t, state: to, proc: ev.Proc()}
			if to == trace.GoWaiting {
				ns.reason = st.Reason
				ns.label = label(st.Stack)
			}
			if to == trace.GoRunnable {
				ns.bySys = ev.Proc() == trace.NoProc
			}
			cur[g] = ns
		}
	}
	// Spans that ended without a stack take the goroutine's name from
	// any other of its stacks.
	for g, ss := range n.spans {
		for i := range ss {
			if strings.HasPrefix(ss[i].label, "(no stack)") && names[g] != "" {
				ss[i].label = "(no stack) " + names[g]
			}
		}
	}
	best := 0
	for g, c := range wakes {
		if c > best {
			best, n.probe = c, g
		}
	}
	return n, nil
}

func overlap(a0, a1, b0, b1 trace.Time) time.Duration {
	lo, hi := max(a0, b0), min(a1, b1)
	if hi <= lo {
		return 0
	}
	return time.Duration(hi - lo)
}

// tally sums durations by name.
type tally map[string]time.Duration

func (t tally) top(k int) string {
	type kv struct {
		k string
		v time.Duration
	}
	var l []kv
	for a, b := range t {
		l = append(l, kv{a, b})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v })
	var sb strings.Builder
	for i, e := range l {
		if i == k {
			break
		}
		fmt.Fprintf(&sb, "    %9.1f ms  %s\n", float64(e.v)/1e6, e.k)
	}
	return sb.String()
}

// ran adds to out what goroutines other than g ran in [t0, t1].
func (n *node) ran(g trace.GoID, t0, t1 trace.Time, out tally) {
	for h, ss := range n.spans {
		if h == g {
			continue
		}
		i := sort.Search(len(ss), func(i int) bool { return ss[i].t1 > t0 })
		for ; i < len(ss) && ss[i].t0 < t1; i++ {
			if ss[i].state == trace.GoRunning {
				out[ss[i].label] += overlap(ss[i].t0, ss[i].t1, t0, t1)
			}
		}
	}
}

func main() {
	slow := flag.String("slow", "", "reshardload -slow-log file")
	minMs := flag.Float64("min-ms", 1, "only GETs at least this slow")
	flag.Parse()
	nodes := map[string]*node{}
	for _, a := range flag.Args() {
		addr, path, ok := strings.Cut(a, "=")
		if !ok {
			log.Fatalf("traceprobe: argument %q is not addr=trace", a)
		}
		n, err := parse(path)
		if err != nil {
			log.Fatal(err)
		}
		nodes[addr] = n
	}
	f, err := os.Open(*slow)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	type agg struct {
		n              int
		total, stw     time.Duration
		mark           time.Duration
		inMark         int
		parts          tally
		unseen, queued tally
		running        tally // where the probe's goroutine stopped running
		sysWake        int
	}
	aggs := map[string]*agg{}
	var lines [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 3 {
			lines = append(lines, fs)
		}
	}
	// The probe's goroutine on a node is the one woken from the network
	// within the most slow GETs' windows (the most woken overall can be
	// another busy connection, redis-cli's).
	for addr, n := range nodes {
		hits := map[trace.GoID]int{}
		for _, fs := range lines {
			if fs[0] != addr {
				continue
			}
			w0, _ := strconv.ParseInt(fs[1], 10, 64)
			w1, _ := strconv.ParseInt(fs[2], 10, 64)
			t0, t1 := trace.Time(w0-n.wallOff), trace.Time(w1-n.wallOff)
			for g, ws := range n.wakeAt {
				i := sort.Search(len(ws), func(i int) bool { return ws[i] >= t0 })
				if i < len(ws) && ws[i] <= t1 {
					hits[g]++
				}
			}
		}
		best := 0
		for g, c := range hits {
			if c > best {
				best, n.probe = c, g
			}
		}
	}
	for _, fs := range lines {
		n := nodes[fs[0]]
		if n == nil {
			continue
		}
		w0, _ := strconv.ParseInt(fs[1], 10, 64)
		w1, _ := strconv.ParseInt(fs[2], 10, 64)
		if float64(w1-w0)/1e6 < *minMs {
			continue
		}
		t0, t1 := trace.Time(w0-n.wallOff), trace.Time(w1-n.wallOff)
		a := aggs[fs[0]]
		if a == nil {
			a = &agg{parts: tally{}, unseen: tally{}, queued: tally{}, running: tally{}}
			aggs[fs[0]] = a
		}
		a.n++
		a.total += time.Duration(t1 - t0)
		for _, s := range n.stw {
			a.stw += overlap(s[0], s[1], t0, t1)
		}
		in := false
		for _, s := range n.mark {
			if d := overlap(s[0], s[1], t0, t1); d > 0 {
				a.mark += d
				in = true
			}
		}
		if in {
			a.inMark++
		}
		ss := n.spans[n.probe]
		i := sort.Search(len(ss), func(i int) bool { return ss[i].t1 > t0 })
		woke := false
		for ; i < len(ss) && ss[i].t0 < t1; i++ {
			s := ss[i]
			d := overlap(s.t0, s.t1, t0, t1)
			lo, hi := max(s.t0, t0), min(s.t1, t1)
			switch {
			case s.state == trace.GoWaiting && s.reason == "network" && !woke:
				a.parts["unseen"] += d
				n.ran(n.probe, lo, hi, a.unseen)
			case s.state == trace.GoWaiting && s.reason == "network":
				a.parts["after"] += d
			case s.state == trace.GoRunnable:
				woke = true
				if s.bySys {
					a.sysWake++
				}
				a.parts["runnable"] += d
				n.ran(n.probe, lo, hi, a.queued)
			case s.state == trace.GoRunning:
				woke = true
				a.parts["running"] += d
				a.running[s.label] += d
			case s.state == trace.GoSyscall:
				a.parts["syscall"] += d
			default:
				a.parts["blocked "+s.reason+" at "+s.label] += d
			}
		}
	}
	var addrs []string
	for a := range aggs {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, addr := range addrs {
		a, n := aggs[addr], nodes[addr]
		fmt.Printf("%s: %d GETs >= %.1f ms, %.1f ms in all, stop-the-world overlap %.1f ms, woken with no P %d\n",
			addr, a.n, *minMs, float64(a.total)/1e6, float64(a.stw)/1e6, a.sysWake)
		var markAll time.Duration
		for _, s := range n.mark {
			markAll += time.Duration(s[1] - s[0])
		}
		fmt.Printf("  GC mark phases: %d, %.1f ms in all; slow GETs overlapping one: %d (%.1f ms)\n",
			len(n.mark), float64(markAll)/1e6, a.inMark, float64(a.mark)/1e6)
		fmt.Print("  parts:\n", a.parts.top(12))
		fmt.Print("  ran while the request was unseen:\n", a.unseen.top(8))
		fmt.Print("  ran while the request was runnable:\n", a.queued.top(8))
		fmt.Print("  the probe's goroutine running, by where it stopped:\n", a.running.top(6))
	}
}
