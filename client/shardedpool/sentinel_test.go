package shardedpool

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// countLines counts the lines that contain every one of subs.
func (s *syncBuffer) countLines(subs ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, line := range strings.Split(s.b.String(), "\n") {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(line, sub)
		}
		if all {
			n++
		}
	}
	return n
}

// fakeDeployment is shards x (master + replica) fake Redis servers and
// three fake Sentinels that agree on the masters at epoch 0.
type fakeDeployment struct {
	masters, replicas []*fakeServer
	sentinels         []*fakeServer
	names             []string
	logs              *syncBuffer
	switches          atomic.Int64
	pool              *Pool
}

func newFakeDeployment(t *testing.T, shards int) *fakeDeployment {
	t.Helper()
	d := &fakeDeployment{logs: &syncBuffer{}}
	for i := range shards {
		d.names = append(d.names, fmt.Sprintf("m%d", i))
		d.masters = append(d.masters, newFake(t))
		r := newFake(t)
		r.setRole("slave")
		d.replicas = append(d.replicas, r)
	}
	for range 3 {
		s := newFake(t)
		for i, n := range d.names {
			s.setMaster(n, d.masters[i].addr, 0)
		}
		d.sentinels = append(d.sentinels, s)
	}
	var addrs []string
	for _, s := range d.sentinels {
		addrs = append(addrs, s.addr)
	}
	p, err := New(context.Background(), &Options{
		MasterNames:          d.names,
		SentinelAddrs:        addrs,
		SentinelTimeout:      200 * time.Millisecond,
		SentinelPingInterval: 100 * time.Millisecond,
		RecheckInterval:      -1,
		SwitchGracePeriod:    50 * time.Millisecond,
		OnSwitch:             func(SwitchEvent) { d.switches.Add(1) },
		Logger:               slog.New(slog.NewTextHandler(d.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	d.pool = p
	// Wait until every Sentinel has our subscription.
	testutil.WaitFor(t, 5*time.Second, "subscriptions", func() bool {
		for _, s := range d.sentinels {
			if s.subscribers() == 0 {
				return false
			}
		}
		return true
	})
	return d
}

func (d *fakeDeployment) addr(shard int) string { return d.pool.shards[shard].conn().addr }

// waitIdle waits until every shard's worker has finished every recheck
// requested so far: after that, nothing already received can switch a
// shard any more.
func (d *fakeDeployment) waitIdle(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, "shard workers idle", func() bool {
		for _, s := range d.pool.shards {
			if !s.idle() {
				return false
			}
		}
		return true
	})
}

// failover promotes shard's replica on every Sentinel in setOn, at epoch.
func (d *fakeDeployment) promote(shard int, epoch int64, setOn ...*fakeServer) {
	d.replicas[shard].setRole("master")
	for _, s := range setOn {
		s.setMaster(d.names[shard], d.replicas[shard].addr, epoch)
	}
}

func (d *fakeDeployment) switchMsg(shard int) string {
	oh, op := splitHP(d.masters[shard].addr)
	nh, np := splitHP(d.replicas[shard].addr)
	return fmt.Sprintf("%s %s %s %s %s", d.names[shard], oh, op, nh, np)
}

func splitHP(a string) (string, string) {
	i := strings.LastIndexByte(a, ':')
	return a[:i], a[i+1:]
}

func TestStartupResolvesEveryMaster(t *testing.T) {
	d := newFakeDeployment(t, 3)
	for i := range d.names {
		if got := d.addr(i); got != d.masters[i].addr {
			t.Fatalf("shard %d at %s, want %s", i, got, d.masters[i].addr)
		}
	}
	// Routing reaches the fake master of the key's shard.
	ctx := context.Background()
	for i := range 30 {
		k := fmt.Sprintf("key%d", i)
		got, err := d.pool.Get(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := d.masters[d.pool.shardOf(k).idx].addr; got != want {
			t.Fatalf("GET %s answered by %s, want %s", k, got, want)
		}
	}
}

func TestStartupWaitsForAMaster(t *testing.T) {
	s := newFake(t)
	r := newFake(t)
	r.setRole("slave") // the Sentinel points at a replica: not confirmed
	s.setMaster("m", r.addr, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := New(ctx, &Options{MasterNames: []string{"m"}, SentinelAddrs: []string{s.addr}, Logger: quietLogger()})
	if err == nil {
		t.Fatal("New succeeded against a replica")
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("New took %v; it must stop when ctx ends", time.Since(start))
	}
	// Once the server becomes master, start-up succeeds.
	r.setRole("master")
	p, err := New(context.Background(), &Options{MasterNames: []string{"m"}, SentinelAddrs: []string{s.addr}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}

func TestDuplicateEventsSwitchOnce(t *testing.T) {
	d := newFakeDeployment(t, 2)
	untouched := d.pool.shards[1].conn().client
	d.promote(0, 1, d.sentinels...)
	for range 3 {
		for _, s := range d.sentinels {
			s.publish(d.switchMsg(0))
		}
	}
	testutil.WaitFor(t, 3*time.Second, "switch of m0", func() bool { return d.addr(0) == d.replicas[0].addr })
	// One more copy from each Sentinel: once these are seen as duplicates,
	// every earlier copy (same connections, in order) was handled too.
	for _, s := range d.sentinels {
		s.publish(d.switchMsg(0))
	}
	testutil.WaitFor(t, 3*time.Second, "duplicates to be seen", func() bool {
		return d.pool.counts.duplicates.Load() >= 3
	})
	d.waitIdle(t) // a coalesced recheck may still be running
	if n := d.switches.Load(); n != 1 {
		t.Fatalf("%d switches, want exactly 1", n)
	}
	st := d.pool.Stats()
	if st[0].Switches != 1 || st[0].LastSwitch.IsZero() || st[0].Epoch != 1 {
		t.Fatalf("stats %+v", st[0])
	}
	if st[1].Switches != 0 || d.pool.shards[1].conn().client != untouched {
		t.Fatal("the other shard's client was replaced")
	}
}

func TestReconnectAfterMissedEvent(t *testing.T) {
	d := newFakeDeployment(t, 2)
	total := func() (n int) {
		for _, s := range d.sentinels {
			n += s.subscribeCount()
		}
		return n
	}
	d.waitIdle(t) // the start-up rechecks are over: only the reconnect can switch
	before := total()
	// The failover happens while the pool is disconnected: no event.
	for _, s := range d.sentinels {
		s.dropConns()
	}
	d.promote(1, 1, d.sentinels...)
	testutil.WaitFor(t, 5*time.Second, "switch after reconnect", func() bool { return d.addr(1) == d.replicas[1].addr })
	if total() <= before {
		t.Fatal("the pool did not resubscribe")
	}
	if d.addr(0) != d.masters[0].addr {
		t.Fatal("shard 0 moved")
	}
}

func TestStaleSentinelNeverGoesBackwards(t *testing.T) {
	d := newFakeDeployment(t, 1)
	d.promote(0, 5, d.sentinels...)
	for _, s := range d.sentinels {
		s.publish(d.switchMsg(0))
	}
	testutil.WaitFor(t, 3*time.Second, "switch", func() bool { return d.addr(0) == d.replicas[0].addr })

	// The old master restarts and still believes it is master; one
	// Sentinel restarts with the old view and announces it; the two
	// up-to-date Sentinels hang.
	d.masters[0].setRole("master")
	stale := d.sentinels[0]
	stale.setMaster("m0", d.masters[0].addr, 4)
	d.sentinels[1].setSilent(true)
	d.sentinels[2].setSilent(true)
	oh, op := splitHP(d.replicas[0].addr)
	nh, np := splitHP(d.masters[0].addr)
	subscribed := d.pool.counts.subscribed.Load()
	stale.publish(fmt.Sprintf("m0 %s %s %s %s", oh, op, nh, np))
	stale.dropConns() // and a reconnect triggers a full re-query
	testutil.WaitFor(t, 3*time.Second, "stale master seen after the reconnect", func() bool {
		return d.pool.counts.stale.Load() >= 1 && d.pool.counts.subscribed.Load() > subscribed
	})
	d.waitIdle(t) // the rechecks of the message and of the reconnect are over
	if got := d.addr(0); got != d.replicas[0].addr {
		t.Fatalf("pool went back to %s", got)
	}
	if n := d.switches.Load(); n != 1 {
		t.Fatalf("%d switches, want 1", n)
	}
}

func TestMalformedMessagesIgnored(t *testing.T) {
	d := newFakeDeployment(t, 2)
	s := d.sentinels[0]
	subs := s.subscribeCount()
	requested := d.pool.shards[0].requested.Load() + d.pool.shards[1].requested.Load()
	for _, payload := range []string{
		"",
		"m0",
		"m0 1.2.3.4 10 5.6.7.8",
		"m0 1.2.3.4 ten 5.6.7.8 20",
		"m0 1.2.3.4 10 5.6.7.8 99999",
		"m0 1.2.3.4 10 5.6.7.8 20 extra",
		strings.Repeat("x", 10000),
	} {
		s.publish(payload)
	}
	// Frames that are valid RESP but not +switch-master messages.
	s.publishRaw(string(appendArray(nil, "message")))
	s.publishRaw(":42\r\n")
	s.publishRaw("*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n:7\r\n")
	testutil.WaitFor(t, 3*time.Second, "malformed messages seen", func() bool {
		return d.pool.counts.malformed.Load() == 8
	})
	if d.switches.Load() != 0 {
		t.Fatal("a malformed message caused a switch")
	}
	if got := d.pool.shards[0].requested.Load() + d.pool.shards[1].requested.Load(); got != requested {
		t.Fatalf("malformed messages requested %d rechecks", got-requested)
	}
	// The listener is still running on the same subscription.
	d.promote(0, 1, d.sentinels...)
	s.publish(d.switchMsg(0))
	testutil.WaitFor(t, 3*time.Second, "switch after malformed messages", func() bool { return d.addr(0) == d.replicas[0].addr })
	if got := s.subscribeCount(); got != subs {
		t.Fatalf("subscription was re-established (%d -> %d); malformed payloads must not break it", subs, got)
	}
}

func TestTwoShardsSwitchTogether(t *testing.T) {
	d := newFakeDeployment(t, 3)
	d.promote(0, 1, d.sentinels...)
	d.promote(2, 2, d.sentinels...)
	for _, s := range d.sentinels {
		s.publish(d.switchMsg(0))
		s.publish(d.switchMsg(2))
	}
	testutil.WaitFor(t, 3*time.Second, "both switches", func() bool {
		return d.addr(0) == d.replicas[0].addr && d.addr(2) == d.replicas[2].addr
	})
	if d.addr(1) != d.masters[1].addr || d.switches.Load() != 2 {
		t.Fatalf("shard 1 at %s, %d switches", d.addr(1), d.switches.Load())
	}
}

func TestSwitchWaitsForRoleMaster(t *testing.T) {
	d := newFakeDeployment(t, 1)
	for _, s := range d.sentinels {
		s.setMaster("m0", d.replicas[0].addr, 1)
	}
	// The Sentinels already name the replica but it is not promoted yet.
	for _, s := range d.sentinels {
		s.publish(d.switchMsg(0))
	}
	testutil.WaitFor(t, 3*time.Second, "unconfirmed candidate", func() bool {
		return d.pool.counts.unconfirmed.Load() >= 1
	})
	if d.addr(0) != d.masters[0].addr {
		t.Fatal("switched to a server whose ROLE is slave")
	}
	d.replicas[0].setRole("master")
	testutil.WaitFor(t, 3*time.Second, "switch once ROLE says master", func() bool { return d.addr(0) == d.replicas[0].addr })
}

func TestMinoritySentinelWithoutEpochIgnored(t *testing.T) {
	// pickMaster: highest epoch wins, then the majority.
	best, votes, ok := pickMaster([]sentinelAnswer{
		{addr: "a:1", epoch: 3}, {addr: "b:1", epoch: 2}, {addr: "b:1", epoch: 2},
	})
	if !ok || best.addr != "a:1" || votes != 1 {
		t.Fatalf("got %v %d", best, votes)
	}
	best, votes, _ = pickMaster([]sentinelAnswer{
		{addr: "a:1", epoch: -1}, {addr: "b:1", epoch: -1}, {addr: "b:1", epoch: -1},
	})
	if best.addr != "b:1" || votes != 2 {
		t.Fatalf("got %v %d", best, votes)
	}
	if _, _, ok := pickMaster(nil); ok {
		t.Fatal("no answers must not pick")
	}
}
