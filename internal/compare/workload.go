package compare

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"
)

// Latencies are recorded in microseconds, from 1µs to 60s, with three
// significant digits.
const (
	histMin    = 1
	histMax    = 60_000_000
	histDigits = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

// workload is one measured traffic shape. step runs one request (a
// command, a pipelined batch, one MGET or MSET) and returns how many
// commands it carried.
type workload struct {
	name string
	// unit says what one latency sample is.
	unit string
	step func(ctx context.Context, g *gen) (int, error)
}

// gen is one client goroutine's key and value generator.
type gen struct {
	opt *Options
	t   *target
	rng *rand.Rand
	val string
	buf []string
	kv  []any
}

func newGen(opt *Options, t *target, seed uint64) *gen {
	return &gen{opt: opt, t: t, rng: rand.New(rand.NewPCG(seed, 0x5eed)), val: value(opt.ValueSize)}
}

func value(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

// key is preloaded key i: "key:00000042".
func key(i int) string { return fmt.Sprintf("key:%08d", i) }

// perTag is the number of preloaded keys sharing one hash tag.
func perTag(opt *Options) int { return max(10, opt.MultiKeys) }

// tags is the number of hash tags preloaded.
func tags(opt *Options) int { return max(1, opt.Keys/100) }

// taggedKey is key i of tag t: "{t00042}:3". The braces make every key of
// a tag hash alike in both topologies (the pool runs with KeyTags).
func taggedKey(t, i int) string { return "{t" + strconv.Itoa(t) + "}:" + strconv.Itoa(i) }

func (g *gen) randomKey() string { return key(g.rng.IntN(g.opt.Keys)) }

// workloads run in this order; the first is the headline.
var workloads = []workload{
	{name: "getset", unit: "command", step: func(ctx context.Context, g *gen) (int, error) {
		k := g.randomKey()
		if g.rng.IntN(5) == 0 {
			return 1, g.t.c.Set(ctx, k, g.val, 0).Err()
		}
		return 1, ignoreNil(g.t.c.Get(ctx, k).Err())
	}},
	{name: "pipeline", unit: "batch", step: func(ctx context.Context, g *gen) (int, error) {
		p := g.t.c.Pipeline()
		for range g.opt.Pipeline {
			k := g.randomKey()
			if g.rng.IntN(5) == 0 {
				p.Set(ctx, k, g.val, 0)
			} else {
				p.Get(ctx, k)
			}
		}
		_, err := p.Exec(ctx)
		return g.opt.Pipeline, ignoreNil(err)
	}},
	{name: "multikey", unit: "command", step: func(ctx context.Context, g *gen) (int, error) {
		g.buf = g.buf[:0]
		for range g.opt.MultiKeys {
			g.buf = append(g.buf, g.randomKey())
		}
		return 1, g.multi(ctx)
	}},
	{name: "multikey_tagged", unit: "command", step: func(ctx context.Context, g *gen) (int, error) {
		g.buf = g.buf[:0]
		tag := g.rng.IntN(tags(g.opt))
		for i := range g.opt.MultiKeys {
			g.buf = append(g.buf, taggedKey(tag, i))
		}
		return 1, g.multi(ctx)
	}},
}

// multi sends an MGET of g.buf, or (one time in five) an MSET.
func (g *gen) multi(ctx context.Context) error {
	if g.rng.IntN(5) == 0 {
		g.kv = g.kv[:0]
		for _, k := range g.buf {
			g.kv = append(g.kv, k, g.val)
		}
		return g.t.c.MSet(ctx, g.kv...).Err()
	}
	return g.t.c.MGet(ctx, g.buf...).Err()
}

func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// Figures are the throughput and latency of one workload.
type Figures struct {
	// OpsPerSec counts commands (a pipelined batch counts its commands).
	OpsPerSec float64 `json:"ops_per_sec"`
	// P50Ms, P99Ms, P999Ms and MaxMs are latency percentiles of one
	// request (LatencyOf: a command, or a pipelined batch).
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p999_ms"`
	MaxMs     float64 `json:"max_ms"`
	LatencyOf string  `json:"latency_of"`
	// Requests and Ops count requests and commands; Errors the failed
	// requests.
	Requests int64 `json:"requests"`
	Ops      int64 `json:"ops"`
	Errors   int64 `json:"errors"`
	// Seconds is how long the workload ran.
	Seconds float64 `json:"seconds"`

	hist *hdrhistogram.Histogram
}

// runWorkload runs w for opt.Duration with opt.Clients goroutines.
func runWorkload(ctx context.Context, opt *Options, t *target, w workload) (*Figures, error) {
	var ops, reqs, errs atomic.Int64
	hists := make([]*hdrhistogram.Histogram, opt.Clients)
	var firstErr atomic.Value
	wctx, cancel := context.WithTimeout(ctx, opt.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range opt.Clients {
		hists[i] = newHist()
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newGen(opt, t, uint64(i+1)*7919)
			h := hists[i]
			for wctx.Err() == nil {
				t0 := time.Now()
				n, err := w.step(wctx, g)
				if wctx.Err() != nil {
					return // cut by the deadline: not a sample
				}
				_ = h.RecordValue(max(1, time.Since(t0).Microseconds()))
				reqs.Add(1)
				ops.Add(int64(n))
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	stop := progress(opt, func(el time.Duration) string {
		return fmt.Sprintf("%s %-16s %4.0fs/%.0fs  %9.0f ops/s  errors %d", t.name, w.name, el.Seconds(),
			opt.Duration.Seconds(), float64(ops.Load())/el.Seconds(), errs.Load())
	})
	wg.Wait()
	el := time.Since(start)
	stop()
	h := newHist()
	for _, x := range hists {
		h.Merge(x)
	}
	f := &Figures{OpsPerSec: round(float64(ops.Load())/el.Seconds(), 0), LatencyOf: w.unit,
		Requests: reqs.Load(), Ops: ops.Load(), Errors: errs.Load(), Seconds: round(el.Seconds(), 2), hist: h,
		P50Ms: ms(h.ValueAtQuantile(50)), P99Ms: ms(h.ValueAtQuantile(99)), P999Ms: ms(h.ValueAtQuantile(99.9)), MaxMs: ms(h.Max())}
	if w.unit == "batch" {
		f.LatencyOf = "batch of " + strconv.Itoa(opt.Pipeline)
	}
	msg := ""
	if e, ok := firstErr.Load().(string); ok {
		msg = "  first error: " + e
	}
	fmt.Fprintf(opt.Progress, "%s %-16s %9.0f ops/s  p50 %.3fms  p99 %.3fms  p99.9 %.3fms  errors %d%s\n",
		t.name, w.name, f.OpsPerSec, f.P50Ms, f.P99Ms, f.P999Ms, f.Errors, msg)
	return f, nil
}

// ms converts microseconds to milliseconds, rounded to 1µs.
func ms(us int64) float64 { return round(float64(us)/1000, 3) }

// progress shows line() every second until the returned stop is called:
// rewritten in place on a terminal, one line every 5s otherwise.
func progress(opt *Options, line func(elapsed time.Duration) string) (stop func()) {
	tty := false
	if f, ok := opt.Progress.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprint(opt.Progress, "\r\033[K")
				}
				return
			case <-tick.C:
				n++
				if tty {
					fmt.Fprintf(opt.Progress, "\r\033[K%s", line(time.Since(start)))
				} else if n%5 == 0 {
					fmt.Fprintln(opt.Progress, line(time.Since(start)))
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// preload writes every key the workloads read, pipelined, from
// opt.Clients goroutines.
func preload(ctx context.Context, opt *Options, t *target) error {
	total := opt.Keys + tags(opt)*perTag(opt)
	keyAt := func(i int) string {
		if i < opt.Keys {
			return key(i)
		}
		i -= opt.Keys
		return taggedKey(i/perTag(opt), i%perTag(opt))
	}
	val := value(opt.ValueSize)
	var next atomic.Int64
	const batch = 200
	errc := make(chan error, opt.Clients)
	for range opt.Clients {
		go func() {
			for {
				lo := int(next.Add(batch)) - batch
				if lo >= total {
					errc <- nil
					return
				}
				p := t.c.Pipeline()
				for i := lo; i < min(lo+batch, total); i++ {
					p.Set(ctx, keyAt(i), val, 0)
				}
				if _, err := p.Exec(ctx); err != nil {
					errc <- fmt.Errorf("compare: preload: %w", err)
					return
				}
			}
		}()
	}
	var err error
	for range opt.Clients {
		err = errors.Join(err, <-errc)
	}
	return err
}
