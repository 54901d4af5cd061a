// Command reshardload drives scripts/bench-reshard.sh: it loads a cluster,
// keeps clients busy while the commands given with -run (redis-cli
// --cluster reshard, rebalance ...) move slots, then checks the data.
//
// With -counters N it sets N counters to 0 and runs -writers go-redis
// ClusterClient writers that INCR random counters (following MOVED and
// ASK) while the commands run; afterwards every counter must exist and
// hold at least the increments acknowledged to the writers (more is
// possible only for an INCR whose reply was lost, counted as an error).
// With -values N it sets N keys of -value-size bytes instead, and with
// -big N, N keys of -big-size bytes in the slots of -big-slots. -probe
// keys in the slots of -probe-slots (slots no command moves) are read one
// GET at a time while the commands run, for the latency of clients of
// unmoved slots: back to back, or -probe-rate GETs per second (a fixed
// load, the same for every server: back to back, a server that answers
// faster gets more GETs to serve while the commands run, and those GETs
// compete with the move for the machine's cores).
//
// It prints one line of key=value pairs: each command's seconds
// (run1_s ...), the keys whose slot changed owner during the first
// command (moved_keys), the writers' acknowledged increments and errors,
// lost increments and missing keys, and the probe's GET count, p50, p99
// and max in milliseconds. The exit status is 1 when a check fails.
//
// A -run of "move:N" moves slots 0..N-1 from their master to the master
// of slot N in the driver itself, with redis-cli's command sequence (see
// timedMove), and writes each command's client-side latency to stderr.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/consistent"
)

type runs []string

func (r *runs) String() string     { return strings.Join(*r, "; ") }
func (r *runs) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:7000", "a node of the cluster")
	counters := flag.Int("counters", 0, "counters to INCR while the commands run")
	writers := flag.Int("writers", 16, "INCR writers")
	values := flag.Int("values", 0, "keys of -value-size bytes to load")
	valueSize := flag.Int("value-size", 100, "size of the -values keys")
	big := flag.Int("big", 0, "big keys to load")
	bigSize := flag.Int("big-size", 50<<20, "size of the big keys")
	bigSlots := flag.String("big-slots", "0-2999", "slot range of the big keys")
	probe := flag.Int("probe", 1000, "probe keys read during the commands")
	probeSlots := flag.String("probe-slots", "3000-10922", "slot range of the probe keys")
	probeRate := flag.Int("probe-rate", 0, "probe GETs per second (0: back to back)")
	flag.StringVar(&slowLog, "slow-log", "", "file to write the probe GETs slower than -slow-ms to (node address, start and end in Unix ns), for scripts/traceprobe")
	flag.DurationVar(&slowMin, "slow-ms", time.Millisecond, "latency from which a probe GET goes to -slow-log")
	var cmds runs
	flag.Var(&cmds, "run", "shell command to run under load (repeatable, in order); \"move:N[:P]\" moves slots 0..N-1 itself, as redis-cli --cluster reshard would with pipeline P (default 10), timing each command (report on stderr)")
	flag.Parse()
	if err := run(*addr, *counters, *writers, *values, *valueSize, *big, *bigSize, *bigSlots, *probe, *probeSlots, *probeRate, cmds); err != nil {
		fmt.Fprintln(os.Stderr, "reshardload:", err)
		os.Exit(1)
	}
}

func slotRange(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || lo > hi {
		return 0, 0, fmt.Errorf("bad slot range %q", s)
	}
	return lo, hi, nil
}

// keysInSlots returns n keys "prefix:i" whose slots are in [lo, hi].
func keysInSlots(prefix string, n, lo, hi int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := prefix + ":" + strconv.Itoa(i)
		if s := consistent.KeySlot(k); s >= lo && s <= hi {
			out = append(out, k)
		}
	}
	return out
}

// owners maps each slot to its master's address.
// slowLog and slowMin are -slow-log and -slow-ms.
var (
	slowLog string
	slowMin time.Duration
)

func owners(ctx context.Context, rc *redis.ClusterClient) ([16384]string, error) {
	var own [16384]string
	var err error
	_ = rc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if err != nil {
			return nil
		}
		rs, e := c.ClusterSlots(ctx).Result()
		if e != nil {
			err = e
			return nil
		}
		for _, r := range rs {
			for s := r.Start; s <= r.End; s++ {
				own[s] = r.Nodes[0].Addr
			}
		}
		return errors.New("one is enough")
	})
	return own, err
}

func load(ctx context.Context, rc *redis.ClusterClient, keys []string, val func() []byte, batch int) error {
	for i := 0; i < len(keys); i += batch {
		p := rc.Pipeline()
		for _, k := range keys[i:min(i+batch, len(keys))] {
			p.Set(ctx, k, val(), 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	return nil
}

func run(addr string, counters, writers, values, valueSize, big, bigSize int, bigSlots string, probe int, probeSlots string, probeRate int, cmds runs) error {
	ctx := context.Background()
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, MaxRedirects: 32, PoolSize: 64, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	defer rc.Close()
	var ctrKeys, valKeys, bigKeys, probeKeys []string
	for i := 0; i < counters; i++ {
		ctrKeys = append(ctrKeys, "ctr:"+strconv.Itoa(i))
	}
	if err := load(ctx, rc, ctrKeys, func() []byte { return []byte("0") }, 1000); err != nil {
		return err
	}
	val := make([]byte, valueSize)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	for i := 0; i < values; i++ {
		valKeys = append(valKeys, "val:"+strconv.Itoa(i))
	}
	if err := load(ctx, rc, valKeys, func() []byte { return val }, 1000); err != nil {
		return err
	}
	if big > 0 {
		lo, hi, err := slotRange(bigSlots)
		if err != nil {
			return err
		}
		bigKeys = keysInSlots("big", big, lo, hi)
		bv := make([]byte, bigSize)
		if _, err := rand.Read(bv); err != nil {
			return err
		}
		if err := load(ctx, rc, bigKeys, func() []byte { return bv }, 1); err != nil {
			return err
		}
	}
	if probe > 0 {
		lo, hi, err := slotRange(probeSlots)
		if err != nil {
			return err
		}
		probeKeys = keysInSlots("probe", probe, lo, hi)
		if err := load(ctx, rc, probeKeys, func() []byte { return []byte("p") }, 1000); err != nil {
			return err
		}
	}
	all := slices.Concat(ctrKeys, valKeys, bigKeys, probeKeys)
	before, err := owners(ctx, rc)
	if err != nil {
		return err
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	acked := make([]atomic.Int64, len(ctrKeys))
	var writeErrs atomic.Int64
	var firstErr atomic.Value
	if len(ctrKeys) > 0 {
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				x := uint64(w)*0x9e3779b97f4a7c15 + 1
				for {
					select {
					case <-stop:
						return
					default:
					}
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					i := int(x % uint64(len(ctrKeys)))
					if err := rc.Incr(ctx, ctrKeys[i]).Err(); err != nil {
						writeErrs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					acked[i].Add(1)
				}
			}(w)
		}
	}
	// lat is each probe GET's latency from its start; schedLat (with
	// -probe-rate) from when it was due, so a GET delayed behind a stalled
	// one counts the stall too (no coordinated omission).
	var lat, schedLat []time.Duration
	var probeErrs int
	var slow *bufio.Writer
	if slowLog != "" {
		f, err := os.Create(slowLog)
		if err != nil {
			return fmt.Errorf("slow log: %w", err)
		}
		defer f.Close()
		slow = bufio.NewWriter(f)
		defer slow.Flush()
	}
	probeDone := make(chan struct{})
	probing := atomic.Bool{}
	if len(probeKeys) > 0 {
		go func() {
			defer close(probeDone)
			// due is when the next GET is due at -probe-rate (zero: the
			// schedule starts at the next GET).
			var due, sched time.Time
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if !probing.Load() {
					due = time.Time{}
					time.Sleep(time.Millisecond)
					continue
				}
				if probeRate > 0 {
					if due.IsZero() {
						due = time.Now()
					}
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
					sched = due
					due = due.Add(time.Second / time.Duration(probeRate))
				}
				t0 := time.Now()
				key := probeKeys[n%len(probeKeys)]
				if err := rc.Get(ctx, key).Err(); err != nil {
					probeErrs++
				}
				d := time.Since(t0)
				lat = append(lat, d)
				if probeRate > 0 {
					schedLat = append(schedLat, time.Since(sched))
				}
				if slow != nil && d >= slowMin {
					fmt.Fprintf(slow, "%s %d %d\n", before[consistent.KeySlot(key)], t0.UnixNano(), t0.Add(d).UnixNano())
				}
			}
		}()
	} else {
		close(probeDone)
	}
	time.Sleep(500 * time.Millisecond) // writers at full speed first
	var out []string
	for i, c := range cmds {
		probing.Store(true)
		t0 := time.Now()
		var err error
		if n, ok := strings.CutPrefix(c, "move:"); ok {
			err = runTimedMove(addr, n)
		} else {
			cmd := exec.Command("sh", "-c", c)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			err = cmd.Run()
		}
		d := time.Since(t0)
		probing.Store(false)
		if err != nil {
			return fmt.Errorf("run %q: %w", c, err)
		}
		out = append(out, fmt.Sprintf("run%d_s=%.2f", i+1, d.Seconds()))
		if i == 0 {
			after, err := owners(ctx, rc)
			if err != nil {
				return err
			}
			moved := 0
			for _, k := range all {
				if s := consistent.KeySlot(k); before[s] != after[s] {
					moved++
				}
			}
			out = append(out, fmt.Sprintf("moved_keys=%d", moved))
		}
	}
	time.Sleep(500 * time.Millisecond) // writes after the moves
	close(stop)
	wg.Wait()
	<-probeDone

	failed := false
	var total int64
	lost, missing, extra := 0, 0, 0
	for i := 0; i < len(ctrKeys); i += 1000 {
		p := rc.Pipeline()
		var gets []*redis.StringCmd
		for _, k := range ctrKeys[i:min(i+1000, len(ctrKeys))] {
			gets = append(gets, p.Get(ctx, k))
		}
		_, _ = p.Exec(ctx)
		for j, g := range gets {
			v, err := g.Int64()
			a := acked[i+j].Load()
			total += a
			switch {
			case err != nil:
				missing++
			case v < a:
				lost++
			case v > a:
				extra++
			}
		}
	}
	// Every other key is still there.
	for i := 0; i < len(all)-len(ctrKeys); i += 1000 {
		ks := all[len(ctrKeys)+i : min(len(ctrKeys)+i+1000, len(all))]
		p := rc.Pipeline()
		var ex []*redis.IntCmd
		for _, k := range ks {
			ex = append(ex, p.Exists(ctx, k))
		}
		_, _ = p.Exec(ctx)
		for _, e := range ex {
			if e.Val() != 1 {
				missing++
			}
		}
	}
	if lost > 0 || missing > 0 {
		failed = true
	}
	out = append(out, fmt.Sprintf("acked=%d write_errors=%d lost=%d missing=%d extra=%d", total, writeErrs.Load(), lost, missing, extra))
	if e, ok := firstErr.Load().(string); ok {
		fmt.Fprintln(os.Stderr, "reshardload: first write error:", e)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) }
		out = append(out, fmt.Sprintf("probe_n=%d probe_errors=%d probe_p50_ms=%s probe_p99_ms=%s probe_max_ms=%s",
			len(lat), probeErrs, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1])))
		if len(schedLat) > 0 {
			slices.Sort(schedLat)
			out = append(out, fmt.Sprintf("probe_due_p99_ms=%s probe_due_p999_ms=%s", ms(schedLat[len(schedLat)*99/100]), ms(schedLat[len(schedLat)*999/1000])))
		}
	}
	fmt.Println(strings.Join(out, " "))
	if failed {
		return errors.New("check failed: lost or missing keys")
	}
	return nil
}
