package compare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster"
)

// bucketWidth is the resolution of the failover timeline.
const bucketWidth = 100 * time.Millisecond

// FailoverResult is what the kill -9 of one master showed.
type FailoverResult struct {
	// Killed is the master's address; Shard names its shard (a Sentinel
	// master name, or the cluster slot ranges' owner).
	Killed string `json:"killed"`
	// BlackoutS is the time from the kill to the first acknowledged write
	// on a key of the killed master (its blackout).
	BlackoutS float64 `json:"blackout_s"`
	// OthersBlackoutS is the longest time without an acknowledged write on
	// the other masters' keys, from the kill to the end of the phase.
	OthersBlackoutS float64 `json:"others_blackout_s"`
	// Recovered is false when the killed master's keys never came back
	// within the phase (BlackoutS is then the phase's length).
	Recovered bool `json:"recovered"`
	// AckedWrites counts the unique writes acknowledged during the phase;
	// LostAcked those not readable (or with another value) at the end;
	// Unverified those whose read failed.
	AckedWrites int64 `json:"acked_writes"`
	LostAcked   int64 `json:"lost_acked_writes"`
	Unverified  int64 `json:"unverified"`
	// Errors counts the writes that failed, on the killed master's keys
	// and on the others'.
	ErrorsKilled int64 `json:"errors_killed_keys"`
	ErrorsOthers int64 `json:"errors_other_keys"`
	// Timeline counts acknowledged and failed writes per 100ms, from 1s
	// before the kill (t = 0 is the kill).
	Timeline []Bucket `json:"timeline"`
}

// Bucket is 100ms of the failover timeline.
type Bucket struct {
	// T is the bucket's start, in seconds from the kill.
	T float64 `json:"t"`
	// OK and Err count the writes that completed in the bucket, on the
	// killed master's keys (Killed) and on the others (Others).
	KilledOK  int64 `json:"killed_ok"`
	KilledErr int64 `json:"killed_err"`
	OthersOK  int64 `json:"others_ok"`
	OthersErr int64 `json:"others_err"`
}

// victim picks the master to kill: the first one with a replica; it
// returns its address and whether a key is on it.
func (t *target) victim(ctx context.Context) (string, func(string) bool, error) {
	if t.pool != nil {
		for _, s := range t.pool.Stats() {
			c := nodeClient(s.Addr)
			info, err := c.Info(ctx, "replication").Result()
			c.Close()
			if err == nil && infoField(info, "connected_slaves") != "0" {
				name := s.Name
				return s.Addr, func(k string) bool { return t.pool.ShardFor(k) == name }, nil
			}
		}
		return "", nil, errors.New("compare: no master with a replica to kill")
	}
	if err := t.cl.RefreshNow(ctx); err != nil {
		return "", nil, fmt.Errorf("compare: %w", err)
	}
	for _, s := range t.cl.Shards() {
		if len(s.Replicas) == 0 {
			continue
		}
		var mine [cluster.SlotCount]bool
		for slot := range cluster.SlotCount {
			mine[slot] = t.cl.SlotMaster(slot) == s.Master
		}
		return s.Master, func(k string) bool { return mine[cluster.Slot(k)] }, nil
	}
	return "", nil, errors.New("compare: no master with a replica to kill")
}

// runFailover writes unique keys from opt.Clients goroutines (at least
// two: one on the victim's keys, one on the others'), kills one
// master after a second, waits until its keys are written again (and a
// few seconds more), then reads every acknowledged key back.
func runFailover(ctx context.Context, opt *Options, t *target) (*FailoverResult, error) {
	addr, onVictim, err := t.victim(ctx)
	if err != nil {
		return nil, err
	}
	res := &FailoverResult{Killed: addr}
	const before = time.Second
	maxWait := 10*opt.DownAfter + 30*time.Second
	settle := 2*opt.DownAfter + 2*time.Second
	nb := int((before + maxWait + settle) / bucketWidth)
	type counters struct{ kOK, kErr, oOK, oErr atomic.Int64 }
	buckets := make([]counters, nb+1)
	start := time.Now()
	var killAt atomic.Int64 // ns since start; 0 until the kill
	// Completion times of acknowledged writes after the kill, per class.
	var mu sync.Mutex
	var killedOK, othersOK []time.Duration
	writers := max(2, opt.Clients)
	acked := make([][]string, writers)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half the writers write the victim's keys, half the others':
			// a writer stuck on the dead master cannot delay the others.
			want := w%2 == 0
			for seq := 0; wctx.Err() == nil; seq++ {
				k := "fo:" + t.name + ":" + strconv.Itoa(w) + ":" + strconv.Itoa(seq)
				if onVictim(k) != want {
					continue
				}
				sent := time.Since(start)
				rctx, rcancel := context.WithTimeout(wctx, 2*time.Second)
				err := t.c.Set(rctx, k, strconv.Itoa(seq), 0).Err()
				rcancel()
				if wctx.Err() != nil {
					return
				}
				done := time.Since(start)
				victim := onVictim(k)
				b := min(int(done/bucketWidth), nb)
				switch {
				case err == nil && victim:
					buckets[b].kOK.Add(1)
				case err == nil:
					buckets[b].oOK.Add(1)
				case victim:
					buckets[b].kErr.Add(1)
				default:
					buckets[b].oErr.Add(1)
				}
				if err != nil {
					continue
				}
				acked[w] = append(acked[w], k)
				if ka := time.Duration(killAt.Load()); ka != 0 && sent > ka {
					mu.Lock()
					if victim {
						killedOK = append(killedOK, done)
					} else {
						othersOK = append(othersOK, done)
					}
					mu.Unlock()
				}
			}
		}()
	}
	fmt.Fprintf(opt.Progress, "%s: writing unique keys; kill -9 of master %s in %s\n", t.name, addr, before)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(before):
	}
	if err := t.kill(ctx, addr); err != nil {
		cancel()
		wg.Wait()
		return nil, err
	}
	kill := time.Since(start)
	killAt.Store(int64(kill))
	stopProgress := progress(opt, func(el time.Duration) string {
		mu.Lock()
		n := len(killedOK)
		mu.Unlock()
		state := "its keys down"
		if n > 0 {
			state = "its keys back"
		}
		return fmt.Sprintf("%s failover %4.0fs after the kill: %s", t.name, el.Seconds(), state)
	})
	// Wait until the victim's keys take writes again, then settle.
	deadline := time.Now().Add(maxWait)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(killedOK)
		mu.Unlock()
		if n > 0 {
			res.Recovered = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(settle)
	cancel()
	wg.Wait()
	stopProgress()
	end := time.Since(start)

	first := end
	if len(killedOK) > 0 {
		first = minDur(killedOK)
	}
	res.BlackoutS = round((first - kill).Seconds(), 3)
	res.OthersBlackoutS = round(longestGap(othersOK, kill, end).Seconds(), 3)
	for i := 0; i <= int(end/bucketWidth) && i < len(buckets); i++ {
		b := &buckets[i]
		res.ErrorsKilled += b.kErr.Load()
		res.ErrorsOthers += b.oErr.Load()
		res.Timeline = append(res.Timeline, Bucket{T: round((time.Duration(i)*bucketWidth - kill).Seconds(), 2),
			KilledOK: b.kOK.Load(), KilledErr: b.kErr.Load(), OthersOK: b.oOK.Load(), OthersErr: b.oErr.Load()})
	}
	fmt.Fprintf(opt.Progress, "%s: blackout %.2fs on the killed master's keys, %.2fs on the others; verifying the acknowledged writes\n",
		t.name, res.BlackoutS, res.OthersBlackoutS)
	var keys []string
	for _, a := range acked {
		keys = append(keys, a...)
	}
	res.AckedWrites = int64(len(keys))
	lost, unverified, err := verify(ctx, t.c, keys)
	if err != nil {
		return nil, err
	}
	res.LostAcked, res.Unverified = lost, unverified
	fmt.Fprintf(opt.Progress, "%s: %d acknowledged writes, %d lost, %d unverified\n", t.name, res.AckedWrites, lost, unverified)
	return res, nil
}

// verify reads every key back (its value is the number after its last
// ':') and counts the missing or different ones, and those it could not
// read after three attempts.
func verify(ctx context.Context, c redis.Cmdable, keys []string) (lost, unverified int64, err error) {
	const batch = 500
	for lo := 0; lo < len(keys); lo += batch {
		part := keys[lo:min(lo+batch, len(keys))]
		var cmds []*redis.StringCmd
		for attempt := 0; attempt < 3; attempt++ {
			p := c.Pipeline()
			cmds = cmds[:0]
			for _, k := range part {
				cmds = append(cmds, p.Get(ctx, k))
			}
			_, _ = p.Exec(ctx)
			failed := false
			for _, cmd := range cmds {
				if e := cmd.Err(); e != nil && !errors.Is(e, redis.Nil) {
					failed = true
				}
			}
			if !failed {
				break
			}
			if ctx.Err() != nil {
				return 0, 0, ctx.Err()
			}
			time.Sleep(200 * time.Millisecond)
		}
		for i, cmd := range cmds {
			v, e := cmd.Result()
			switch {
			case errors.Is(e, redis.Nil):
				lost++
			case e != nil:
				unverified++
			default:
				k := part[i]
				j := len(k) - 1
				for j >= 0 && k[j] != ':' {
					j--
				}
				if v != k[j+1:] {
					lost++
				}
			}
		}
	}
	return lost, unverified, nil
}

func minDur(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds[1:] {
		m = min(m, d)
	}
	return m
}

// longestGap is the longest interval in [from, to] without a time of ts.
func longestGap(ts []time.Duration, from, to time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), ts...)
	slices.Sort(sorted)
	gap, prev := time.Duration(0), from
	for _, x := range sorted {
		if x < from {
			continue
		}
		gap = max(gap, x-prev)
		prev = x
	}
	return max(gap, to-prev)
}
