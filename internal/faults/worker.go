package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
	"github.com/shardis/shardis/client/shardedpool"
)

// MasterName is the Sentinel master name of the Sentinel deployment.
const MasterName = "m"

// SetKeys are the keys of the set workload and RegisterKeys those of the
// register workload. In a cluster they spread over every master.
var (
	SetKeys      = keyList("jset:", 8)
	RegisterKeys = keyList("reg:", 4)
)

func keyList(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// ClientConfig says how a worker reaches the deployment.
type ClientConfig struct {
	// Sentinels are the Sentinel addresses (Sentinel deployment); Seeds
	// the cluster seed addresses (Cluster deployment). Exactly one is set.
	Sentinels, Seeds []string
	// Timeout bounds each request (dial, read, write). Default 1s.
	Timeout time.Duration
}

// Client is what the workloads need of either client library.
type Client interface {
	redis.Cmdable
	Close() error
}

// Dial builds the project's client for the deployment: client/shardedpool
// with one shard behind the Sentinels, or client/cluster. Neither retries
// on its own (an INCR retried after a timeout could run twice).
func Dial(ctx context.Context, cc ClientConfig) (Client, error) {
	t := cc.Timeout
	if t == 0 {
		t = time.Second
	}
	if len(cc.Sentinels) > 0 {
		return shardedpool.New(ctx, &shardedpool.Options{
			SentinelAddrs: cc.Sentinels, MasterNames: []string{MasterName},
			MaxRetries: -1, DialTimeout: t, ReadTimeout: t, WriteTimeout: t,
			RecheckInterval: time.Second,
		})
	}
	return cluster.New(ctx, &cluster.Options{
		Addrs: cc.Seeds, MaxRedirects: -1, DialTimeout: t, ReadTimeout: t, WriteTimeout: t,
		RefreshInterval: time.Second,
	})
}

// WorkerConfig configures one client worker process.
type WorkerConfig struct {
	ClientConfig
	// ID names the worker in its operations' Proc.
	ID string
	// SetProcs and RegisterProcs are the goroutines of each workload.
	SetProcs, RegisterProcs int
	// Interval is the pause between two operations of one goroutine.
	Interval time.Duration
	// Duration is how long the workload runs.
	Duration time.Duration
}

// RunWorker runs the set and register workloads and writes every
// operation as a JSON line to w. Elements of the set workload are unique
// across workers as long as IDs are (the worker's index is taken from
// seed).
func RunWorker(ctx context.Context, wc WorkerConfig, seed int64, w io.Writer) error {
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	var c Client
	var err error
	for c == nil && dctx.Err() == nil {
		if c, err = Dial(dctx, wc.ClientConfig); err != nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	cancel()
	if c == nil {
		return fmt.Errorf("faults: worker %s: dial: %w", wc.ID, err)
	}
	defer c.Close()
	bw := bufio.NewWriter(w)
	var mu sync.Mutex
	var werr error
	record := func(op Op) {
		b, _ := json.Marshal(op)
		mu.Lock()
		defer mu.Unlock()
		if _, err := bw.Write(append(b, '\n')); err != nil && werr == nil {
			werr = err
		}
	}
	end := time.Now().Add(wc.Duration)
	var wg sync.WaitGroup
	for g := 0; g < wc.SetProcs; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc := fmt.Sprintf("%s/s%d", wc.ID, g)
			base := seed*1_000_000_000 + int64(g)*10_000_000
			for i := int64(0); time.Now().Before(end) && i < 10_000_000; i++ {
				key := SetKeys[int(i)%len(SetKeys)]
				op := Op{Proc: proc, F: "sadd", Key: key, Value: base + i, Call: time.Now().UnixNano()}
				err := c.SAdd(ctx, key, op.Value).Err()
				op.Return = time.Now().UnixNano()
				setOutcome(&op, err)
				record(op)
				time.Sleep(wc.Interval)
			}
		}()
	}
	for g := 0; g < wc.RegisterProcs; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc := fmt.Sprintf("%s/r%d", wc.ID, g)
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			for i := 0; time.Now().Before(end) && i < 10_000_000; i++ {
				key := RegisterKeys[rng.IntN(len(RegisterKeys))]
				op := Op{Proc: proc, Key: key, Call: time.Now().UnixNano()}
				var err error
				switch r := rng.IntN(4); {
				case r < 2:
					op.F = "get"
					var v int64
					v, err = c.Get(ctx, key).Int64()
					if errors.Is(err, redis.Nil) {
						v, err = 0, nil
					}
					op.Out = v
				case r == 2:
					op.F = "set"
					op.Value = seed*1_000_000 + int64(g)*100_000 + int64(i)
					err = c.Set(ctx, key, op.Value, 0).Err()
				default:
					op.F = "incr"
					op.Out, err = c.Incr(ctx, key).Result()
				}
				op.Return = time.Now().UnixNano()
				setOutcome(&op, err)
				record(op)
				time.Sleep(wc.Interval * 4)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("faults: worker %s: write history: %w", wc.ID, err)
	}
	return werr
}

func setOutcome(op *Op, err error) {
	op.Outcome = Classify(err)
	if err != nil {
		op.Err = err.Error()
	}
}

// ReadFinal reads every set of the set workload through the project's
// client, retrying for up to limit until one read of each succeeds.
func ReadFinal(ctx context.Context, cc ClientConfig, limit time.Duration) (map[string][]int64, error) {
	deadline := time.Now().Add(limit)
	var lastErr error
	for time.Now().Before(deadline) {
		c, err := Dial(ctx, cc)
		if err != nil {
			lastErr = err
			time.Sleep(300 * time.Millisecond)
			continue
		}
		out := map[string][]int64{}
		for _, k := range SetKeys {
			var ms []string
			for time.Now().Before(deadline) {
				if ms, err = c.SMembers(ctx, k).Result(); err == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				break
			}
			vs := make([]int64, 0, len(ms))
			for _, m := range ms {
				v, perr := strconv.ParseInt(m, 10, 64)
				if perr != nil {
					err = fmt.Errorf("faults: member %q of %s: %w", m, k, perr)
					break
				}
				vs = append(vs, v)
			}
			out[k] = vs
		}
		c.Close()
		if err == nil {
			return out, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("faults: final read: %w", lastErr)
}
