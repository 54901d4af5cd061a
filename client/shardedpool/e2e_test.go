package shardedpool

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// realDeployment is shards x (redis-server master + replica) and three
// redis-sentinels with shrunken timeouts.
type realDeployment struct {
	names     []string
	masters   []*testutil.Process
	replicas  []*testutil.Process
	sentinels []*testutil.Process
}

func startRealDeployment(t *testing.T, shards int) *realDeployment {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test with real processes")
	}
	testutil.Binary(t, "redis-server")
	testutil.Binary(t, "redis-sentinel")
	d := &realDeployment{}
	var conf strings.Builder
	for i := range shards {
		name := fmt.Sprintf("e2e%d", i)
		m := testutil.StartRedis(t)
		r := testutil.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(m.Port))
		d.names = append(d.names, name)
		d.masters = append(d.masters, m)
		d.replicas = append(d.replicas, r)
		fmt.Fprintf(&conf, "sentinel monitor %s 127.0.0.1 %d 2\n", name, m.Port)
		fmt.Fprintf(&conf, "sentinel down-after-milliseconds %s 1000\n", name)
		fmt.Fprintf(&conf, "sentinel failover-timeout %s 3000\n", name)
	}
	ctx := context.Background()
	for i, m := range d.masters {
		c := redis.NewClient(&redis.Options{Addr: m.Addr})
		testutil.WaitFor(t, 10*time.Second, "replica of shard "+strconv.Itoa(i), func() bool {
			info, _ := c.Info(ctx, "replication").Result()
			return strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
		})
		c.Close()
	}
	for range 3 {
		d.sentinels = append(d.sentinels, testutil.StartSentinel(t, conf.String()))
	}
	// Sentinels find each other through hello messages every 2 s.
	for _, s := range d.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
		for _, n := range d.names {
			testutil.WaitFor(t, 15*time.Second, "sentinel discovery", func() bool {
				m, err := sc.Master(ctx, n).Result()
				return err == nil && m["num-other-sentinels"] == "2" && m["num-slaves"] == "1"
			})
		}
		sc.Close()
	}
	return d
}

func (d *realDeployment) sentinelAddrs() []string {
	var a []string
	for _, s := range d.sentinels {
		a = append(a, s.Addr)
	}
	return a
}

// writeLoad is 16 goroutines writing through the pool, recording every
// failed write per shard.
type writeLoad struct {
	p      *Pool
	mu     sync.Mutex
	errs   map[string][]failedWrite // shard -> failed writes
	ok     map[string]int
	lastOK map[string]time.Time
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	writes atomic.Int64
}

// failedWrite is when a failed write started (before it picked the
// shard's master) and when its error came back.
type failedWrite struct{ start, end time.Time }

func startLoad(p *Pool) *writeLoad {
	l := &writeLoad{p: p, errs: map[string][]failedWrite{}, ok: map[string]int{}, lastOK: map[string]time.Time{}, stop: make(chan struct{})}
	for g := range 16 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				k := fmt.Sprintf("load:%d:%d", g, i%200)
				// The deadline only bounds a hang: a write to a killed
				// master fails at once (connection refused or reset).
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				start := time.Now()
				err := p.Set(ctx, k, i, 0).Err()
				cancel()
				now := time.Now()
				shard := p.ShardFor(k)
				l.mu.Lock()
				if err != nil {
					l.errs[shard] = append(l.errs[shard], failedWrite{start, now})
				} else {
					l.ok[shard]++
					l.lastOK[shard] = now
				}
				l.mu.Unlock()
				l.writes.Add(1)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	return l
}

func (l *writeLoad) halt() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// errorsSince returns the number of writes of shard that failed after
// t, and when the last one failed.
func (l *writeLoad) errorsSince(shard string, t time.Time) (n int, last time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs[shard] {
		if e.end.After(t) {
			n++
			last = e.end
		}
	}
	return n, last
}

// failedStartedAfter returns the number of writes of shard that started
// after t and failed.
func (l *writeLoad) failedStartedAfter(shard string, t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.errs[shard] {
		if e.start.After(t) {
			n++
		}
	}
	return n
}

func (l *writeLoad) okSince(shard string, t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastOK[shard].After(t)
}

// switchTimes subscribes to one Sentinel and records when it published
// +switch-master for each master.
func switchTimes(t *testing.T, addr string) func(name string) (time.Time, bool) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	ps := sc.Subscribe(context.Background(), "+switch-master")
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]time.Time{}
	go func() {
		for m := range ps.Channel() {
			f := strings.Fields(m.Payload)
			if len(f) == 5 {
				mu.Lock()
				seen[f[0]] = time.Now()
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { ps.Close(); sc.Close() })
	return func(name string) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		ts, ok := seen[name]
		return ts, ok
	}
}

// TestEndToEndFailover runs the scenario against real
// redis-server and redis-sentinel processes. To run it against shardis's
// own server and Sentinel:
//
//	go build -o /tmp/shardnode ./cmd/shardnode
//	go build -o /tmp/shardis-sentinel ./cmd/sentinel
//	TESTUTIL_REDIS_SERVER=/tmp/shardnode TESTUTIL_REDIS_SENTINEL=/tmp/shardis-sentinel \
//		go test -run EndToEnd -v ./client/shardedpool
func TestEndToEndFailover(t *testing.T) {
	d := startRealDeployment(t, 3)
	var switched sync.Map
	logs := &syncBuffer{}
	var logw io.Writer = logs
	if os.Getenv("SHARDEDPOOL_DEBUG") != "" {
		logw = io.MultiWriter(logs, os.Stderr)
	}
	// The timeouts only bound a hang: a killed master refuses or resets
	// connections at once, and a loaded machine can hold a live server's
	// answer for longer than a tight timeout.
	p, err := New(context.Background(), &Options{
		MasterNames:   d.names,
		SentinelAddrs: d.sentinelAddrs(),
		DialTimeout:   5 * time.Second,
		ReadTimeout:   5 * time.Second,
		WriteTimeout:  5 * time.Second,
		MaxRetries:    -1,
		OnSwitch:      func(e SwitchEvent) { switched.Store(e.Shard, e) },
		Logger:        slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The last Sentinel is killed mid-run, so watch the first one.
	published := switchTimes(t, d.sentinels[0].Addr)

	load := startLoad(p)
	defer load.halt()
	testutil.WaitFor(t, 30*time.Second, "writes to flow", func() bool { return load.writes.Load() > 500 })

	// checkSwitch waits for the pool to switch shard to its promoted
	// replica and logs how long writes failed. How quickly the pool
	// follows the Sentinels is a timing figure, measured here and not
	// asserted; what must hold (no write that started after the switch
	// fails) is checked at the end, once every write has finished.
	checkSwitch := func(shard int, kill time.Time) {
		t.Helper()
		name := d.names[shard]
		testutil.WaitFor(t, time.Minute, "switch of "+name, func() bool {
			_, ok := switched.Load(name)
			return ok && load.okSince(name, kill)
		})
		ev, _ := switched.Load(name)
		var pub time.Time
		testutil.WaitFor(t, 30*time.Second, "+switch-master of "+name, func() bool {
			var ok bool
			pub, ok = published(name)
			return ok
		})
		n, last := load.errorsSince(name, kill)
		t.Logf("%s: sentinel switch %v after kill, pool switch %v after kill, %d failed writes so far, last failed %v after kill (to %s)",
			name, pub.Sub(kill).Round(time.Millisecond), ev.(SwitchEvent).Time.Sub(kill).Round(time.Millisecond),
			n, last.Sub(kill).Round(time.Millisecond), ev.(SwitchEvent).To)
		if got := p.ShardClient(name).Options().Addr; got != d.replicas[shard].Addr {
			t.Errorf("%s: pool uses %s, want promoted replica %s", name, got, d.replicas[shard].Addr)
		}
	}

	// 1. kill -9 one master.
	start := time.Now()
	kill := time.Now()
	d.masters[0].Kill()
	checkSwitch(0, kill)
	for _, n := range d.names[1:] {
		if c, _ := load.errorsSince(n, start); c != 0 {
			t.Errorf("%s: %d writes failed while another shard failed over", n, c)
		}
	}

	// 2. Killing a Sentinel changes nothing: once the pool has seen its
	// subscription end and every shard has been re-read from the two
	// Sentinels left, no write failed and no shard moved.
	before := p.Stats()
	killS := time.Now()
	dead := d.sentinels[2].Addr
	d.sentinels[2].Kill()
	testutil.WaitFor(t, time.Minute, "the pool to see Sentinel "+dead+" gone", func() bool {
		return logs.countLines("sentinel subscription lost", "sentinel="+dead) > 0
	})
	p.recheckAll("test: a Sentinel was killed")
	testutil.WaitFor(t, time.Minute, "rechecks after the Sentinel kill", func() bool {
		for _, s := range p.shards {
			if !s.idle() {
				return false
			}
		}
		return true
	})
	for _, n := range d.names {
		if c, _ := load.errorsSince(n, killS); c != 0 {
			t.Errorf("%s: %d writes failed after a Sentinel was killed", n, c)
		}
	}
	for i, st := range p.Stats() {
		if st.Addr != before[i].Addr || st.Switches != before[i].Switches {
			t.Errorf("shard %s changed after a Sentinel was killed: %+v -> %+v", st.Name, before[i], st)
		}
	}

	// 3. Two masters killed together both recover.
	kill2 := time.Now()
	d.masters[1].Kill()
	d.masters[2].Kill()
	checkSwitch(1, kill2)
	checkSwitch(2, kill2)
	if c, _ := load.errorsSince(d.names[0], kill2); c != 0 {
		t.Errorf("%s: %d writes failed while other shards failed over", d.names[0], c)
	}
	for _, st := range p.Stats() {
		if st.Switches != 1 {
			t.Errorf("shard %s switched %d times, want 1", st.Name, st.Switches)
		}
	}
	load.halt()
	// Every write has finished: none that started after its shard's
	// switch (so ran on the promoted replica) may have failed.
	for _, name := range d.names {
		ev, _ := switched.Load(name)
		if n := load.failedStartedAfter(name, ev.(SwitchEvent).Time); n != 0 {
			t.Errorf("%s: %d writes started after the pool switched to %s and failed", name, n, ev.(SwitchEvent).To)
		}
	}
	t.Logf("%d writes in total", load.writes.Load())
}
