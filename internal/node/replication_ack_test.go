package node

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// ackPair starts a master with min-replicas-ack 1 and a shardnode replica
// of it with the given directives, and waits until the master counts the
// replica.
func ackPair(t *testing.T, replicaDirs ...string) (master, replica *testServer, mc, rc *redis.Client) {
	t.Helper()
	master = startServer(t, "min-replicas-ack", "1", "min-replicas-ack-timeout", "300")
	replica = startServer(t, append([]string{"enable-debug-command", "yes"}, replicaDirs...)...)
	mc, rc = master.client(t), replica.client(t)
	h, p := hostPort(master.addr)
	if err := rc.Do(ctx(t), "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, rc)
	testutil.WaitFor(t, 10*time.Second, "replica online on the master", func() bool {
		return replInfoField(t, mc, "connected_slaves") == "1" && strings.Contains(replInfoField(t, mc, "slave0"), "state=online")
	})
	return master, replica, mc, rc
}

func TestMinReplicasAck(t *testing.T) {
	t.Run("ReplyAfterReplicaApplied", func(t *testing.T) {
		_, _, mc, rc := ackPair(t)
		c := ctx(t)
		for i := 0; i < 50; i++ {
			k := "k" + string(rune('a'+i%26)) + time.Duration(i).String()
			if err := mc.Set(c, k, i, 0).Err(); err != nil {
				t.Fatalf("SET %s: %v", k, err)
			}
			// The reply left after the replica acknowledged, which it
			// does once it applied the write.
			if v, err := rc.Get(c, k).Int(); err != nil || v != i {
				t.Fatalf("replica GET %s right after the reply = %v, %v; want %d", k, v, err, i)
			}
		}
		// A pipeline, a transaction and a script: every reply is acked.
		cmds, err := mc.Pipelined(c, func(p redis.Pipeliner) error {
			for i := 0; i < 16; i++ {
				p.Incr(c, "pipe")
			}
			return nil
		})
		if err != nil || len(cmds) != 16 {
			t.Fatalf("pipeline: %v", err)
		}
		if v, _ := rc.Get(c, "pipe").Int(); v != 16 {
			t.Fatalf("replica pipe = %d after the pipeline's replies, want 16", v)
		}
		if _, err := mc.TxPipelined(c, func(p redis.Pipeliner) error {
			p.Set(c, "tx1", "a", 0)
			p.Set(c, "tx2", "b", 0)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if v := rc.Get(c, "tx2").Val(); v != "b" {
			t.Fatalf("replica tx2 = %q after EXEC's reply", v)
		}
		if err := mc.Eval(c, "return redis.call('SET', KEYS[1], ARGV[1])", []string{"ev"}, "x").Err(); err != nil {
			t.Fatal(err)
		}
		if v := rc.Get(c, "ev").Val(); v != "x" {
			t.Fatalf("replica ev = %q after EVAL's reply", v)
		}
		if got := replInfoField(t, mc, "min_replicas_ack_eligible"); got != "1" {
			t.Fatalf("min_replicas_ack_eligible = %q, want 1", got)
		}
		// WAIT keeps working.
		if n, err := mc.Do(c, "WAIT", "1", "1000").Int(); err != nil || n != 1 {
			t.Fatalf("WAIT = %d, %v", n, err)
		}
	})
	t.Run("NoReplicaRefusedBeforeRunning", func(t *testing.T) {
		m := startServer(t, "min-replicas-ack", "1")
		mc := m.client(t)
		c := ctx(t)
		err := mc.Set(c, "k", "v", 0).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
			t.Fatalf("SET with no replica: %v, want NOREPLICAS", err)
		}
		if n := mc.Exists(c, "k").Val(); n != 0 {
			t.Fatal("a refused write ran")
		}
		mc.ConfigSet(c, "min-replicas-ack", "0")
		if err := mc.Set(c, "k", "v", 0).Err(); err != nil {
			t.Fatalf("min-replicas-ack 0: %v", err)
		}
	})
	t.Run("TimeoutGivesUnacked", func(t *testing.T) {
		master, _, mc, rc := ackPair(t)
		c := ctx(t)
		mc.Set(c, "before", "1", 0)
		// The replica stops applying (and acknowledging) for a while.
		slept := make(chan error, 1)
		go func() { slept <- rc.Do(c, "DEBUG", "SLEEP", "1.5").Err() }()
		testutil.WaitFor(t, 5*time.Second, "replica frozen", func() bool { return replica0Frozen(rc) })
		// No retry by the client library: go-redis does not retry
		// UNACKED, so the write runs once.
		one := redis.NewClient(&redis.Options{Addr: master.addr, MaxRetries: 5})
		defer one.Close()
		callsBefore := setCalls(t, mc)
		cmds, _ := one.Pipelined(c, func(p redis.Pipeliner) error {
			p.Set(c, "w1", "a", 0)
			p.Get(c, "before")
			p.Set(c, "w2", "b", 0)
			return nil
		})
		want := "UNACKED write applied on the master but acknowledged by 0 of 1 required replicas; its outcome is unknown"
		if err := cmds[0].Err(); err == nil || err.Error() != want {
			t.Fatalf("SET w1 = %v, want %q", err, want)
		}
		if v, err := cmds[1].(*redis.StringCmd).Result(); err != nil || v != "1" {
			t.Fatalf("GET between the writes = %q, %v: a read's reply stays", v, err)
		}
		if err := cmds[2].Err(); err == nil || !strings.HasPrefix(err.Error(), "UNACKED ") {
			t.Fatalf("SET w2 = %v, want UNACKED", err)
		}
		if got := setCalls(t, mc) - callsBefore; got != 2 {
			t.Fatalf("SET ran %d times, want 2 (no retry)", got)
		}
		// Applied on the master.
		if mc.Get(c, "w1").Val() != "a" || mc.Get(c, "w2").Val() != "b" {
			t.Fatal("unacked writes are not on the master")
		}
		if err := <-slept; err != nil {
			t.Fatal(err)
		}
		if got := replInfoField(t, mc, "min_replicas_ack_timeouts"); got != "1" {
			t.Fatalf("min_replicas_ack_timeouts = %q, want 1", got)
		}
		// The replica is back: writes are acknowledged again.
		if err := mc.Set(c, "after", "1", 0).Err(); err != nil {
			t.Fatalf("after the replica woke: %v", err)
		}
	})
	t.Run("IneligibleReplicaDoesNotCount", func(t *testing.T) {
		_, _, mc, rc := ackPair(t, "replica-priority", "0")
		c := ctx(t)
		if got := replInfoField(t, mc, "min_replicas_ack_eligible"); got != "0" {
			t.Fatalf("min_replicas_ack_eligible = %q with a priority-0 replica, want 0", got)
		}
		if err := mc.Set(c, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
			t.Fatalf("SET with only an ineligible replica: %v, want NOREPLICAS", err)
		}
		// CONFIG SET on the replica is announced on the live link.
		if err := rc.ConfigSet(c, "replica-priority", "10").Err(); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 5*time.Second, "replica eligible", func() bool {
			return replInfoField(t, mc, "min_replicas_ack_eligible") == "1"
		})
		if err := mc.Set(c, "k", "v", 0).Err(); err != nil {
			t.Fatalf("SET with an eligible replica: %v", err)
		}
		if v := rc.Get(c, "k").Val(); v != "v" {
			t.Fatalf("replica k = %q after the reply", v)
		}
	})
	t.Run("RedisServerReplica", func(t *testing.T) {
		testutil.Binary(t, "redis-server")
		m := startServer(t, "min-replicas-ack", "1", "min-replicas-ack-timeout", "2000")
		mc := m.client(t)
		_, p := hostPort(m.addr)
		rr := testutil.StartRedis(t, "--replicaof", "127.0.0.1 "+p)
		rc := redis.NewClient(&redis.Options{Addr: rr.Addr, DisableIdentity: true})
		defer rc.Close()
		waitLinkUp(t, rc)
		c := ctx(t)
		testutil.WaitFor(t, 10*time.Second, "redis-server replica counted", func() bool {
			return replInfoField(t, mc, "min_replicas_ack_eligible") == "1"
		})
		for i := 0; i < 20; i++ {
			if err := mc.Set(c, "r", i, 0).Err(); err != nil {
				t.Fatalf("SET %d with a redis-server replica: %v", i, err)
			}
			if v, err := rc.Get(c, "r").Int(); v != i {
				t.Fatalf("redis-server replica r = %d (%v) after reply %d", v, err, i)
			}
		}
	})
}

// replica0Frozen reports whether a DEBUG SLEEP holds the server: a PING
// with a short timeout does not come back.
func replica0Frozen(rc *redis.Client) bool {
	o := *rc.Options()
	o.ReadTimeout, o.MaxRetries = 50*time.Millisecond, -1
	p := redis.NewClient(&o)
	defer p.Close()
	return p.Ping(context.Background()).Err() != nil
}

// setCalls is INFO commandstats' calls of SET.
func setCalls(t *testing.T, rc *redis.Client) int {
	t.Helper()
	info := rc.Info(ctx(t), "commandstats").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
			n := 0
			for _, ch := range v {
				if ch < '0' || ch > '9' {
					break
				}
				n = n*10 + int(ch-'0')
			}
			return n
		}
	}
	return 0
}

// startStoppable is startServer with a stop function (waits for the
// server to end).
func startStoppable(t *testing.T, directives ...string) (*testServer, func()) {
	t.Helper()
	cfg := NewConfig()
	base := []string{"port", "0", "bind", "127.0.0.1", "save", "", "repl-diskless-sync-delay", "0", "dir", t.TempDir()}
	all := append(base, directives...)
	for i := 0; i+1 < len(all); i += 2 {
		if err := cfg.Set(all[i], all[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(c)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Error("server did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return &testServer{srv: srv, addr: srv.Addr().String()}, stop
}

// TestMinReplicasAckRestartedMaster: a master restarts from an RDB older
// than what its replica acknowledged. It must not resynchronize the
// replica (which would drop the acknowledged writes) nor take writes;
// REPLICAOF NO ONE on it lifts the guard.
func TestMinReplicasAckRestartedMaster(t *testing.T) {
	dir := t.TempDir()
	port := strconv.Itoa(testutil.FreePort(t))
	dirs := []string{"port", port, "dir", dir, "min-replicas-ack", "1", "min-replicas-ack-timeout", "2000"}
	master, stop := startStoppable(t, dirs...)
	replica := startServer(t)
	mc, rc := master.client(t), replica.client(t)
	c := ctx(t)
	rc.Do(c, "REPLICAOF", "127.0.0.1", port)
	waitLinkUp(t, rc)
	testutil.WaitFor(t, 10*time.Second, "replica counted", func() bool {
		return replInfoField(t, mc, "min_replicas_ack_eligible") == "1"
	})
	if err := mc.Set(c, "saved", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Save(c).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ { // acknowledged, never saved by the master
		if err := mc.Set(c, "acked"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mc.Close()
	stop()
	master2, _ := startStoppable(t, dirs...)
	mc2 := master2.client(t)
	testutil.WaitFor(t, 15*time.Second, "the replica refused", func() bool {
		return replInfoField(t, mc2, "min_replicas_ack_restart_refused") == "1"
	})
	if n := rc.Exists(c, "acked9").Val(); n != 1 {
		t.Fatal("the replica dropped an acknowledged write")
	}
	if err := mc2.Set(c, "new", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
		t.Fatalf("write on the guarded master: %v, want NOREPLICAS", err)
	}
	// The operator declares the restarted master the reference.
	if err := mc2.Do(c, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, "replica resynced", func() bool {
		return replInfoField(t, rc, "master_link_status") == "up" && rc.Exists(c, "acked9").Val() == 0
	})
	if err := mc2.Set(c, "new", "1", 0).Err(); err != nil {
		t.Fatalf("write after the guard was lifted: %v", err)
	}
}

// TestMinReplicasAckBlockedClient: a blocked BLPOP served by another
// client's push replies only once its pop is acknowledged; with the
// replica frozen it gets UNACKED.
func TestMinReplicasAckBlockedClient(t *testing.T) {
	_, _, mc, rc := ackPair(t)
	c := ctx(t)
	waiter := redis.NewClient(&redis.Options{Addr: mc.Options().Addr, MaxRetries: -1})
	defer waiter.Close()
	res := make(chan error, 1)
	go func() { res <- waiter.BLPop(c, 5*time.Second, "q").Err() }()
	testutil.WaitFor(t, 5*time.Second, "BLPOP blocked", func() bool {
		return strings.Contains(mc.Info(c, "clients").Val(), "blocked_clients:1")
	})
	slept := make(chan error, 1)
	go func() { slept <- rc.Do(c, "DEBUG", "SLEEP", "1").Err() }()
	testutil.WaitFor(t, 5*time.Second, "replica frozen", func() bool { return replica0Frozen(rc) })
	// The push itself times out too (the replica sleeps).
	_ = mc.RPush(c, "q", "x").Err()
	err := <-res
	if err == nil || !strings.HasPrefix(err.Error(), "UNACKED ") {
		t.Fatalf("BLPOP served while the replica sleeps: %v, want UNACKED", err)
	}
	<-slept
}

// TestMinReplicasAckSentinelFence: a master with min-replicas-ack whose
// Sentinels (two connections that PING and publish hellos) stop pinging
// refuses writes with NOQUORUM once the lease passed, while one of two
// pings (no majority), and serves again once both ping.
func TestMinReplicasAckSentinelFence(t *testing.T) {
	_, _, mc, _ := ackPair(t)
	c := ctx(t)
	var sents []*redis.Conn
	for i, id := range []string{strings.Repeat("a", 40), strings.Repeat("b", 40)} {
		cn := mc.Conn()
		t.Cleanup(func() { cn.Close() })
		if err := cn.Ping(c).Err(); err != nil {
			t.Fatal(err)
		}
		hello := "10.0.0.9," + strconv.Itoa(26379+i) + "," + id + ",1,mymaster,127.0.0.1,6379,1"
		if err := cn.Publish(c, "__sentinel__:hello", hello).Err(); err != nil {
			t.Fatal(err)
		}
		sents = append(sents, cn)
	}
	if got := replInfoField(t, mc, "min_replicas_ack_sentinels"); got != "2" {
		t.Fatalf("min_replicas_ack_sentinels = %q, want 2", got)
	}
	if err := mc.Set(c, "f", "1", 0).Err(); err != nil {
		t.Fatalf("SET with both Sentinels pinging: %v", err)
	}
	testutil.WaitFor(t, 10*time.Second, "the fence up after the lease without PING", func() bool {
		return replInfoField(t, mc, "min_replicas_ack_fenced") == "1"
	})
	if err := mc.Set(c, "f", "2", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM ") {
		t.Fatalf("SET while fenced: %v, want NOQUORUM", err)
	}
	// The fence is up once the older PING (the first Sentinel's) is out
	// of the lease; the second's may still be inside it for a few ms. So
	// the second pings again: the first is certainly stale.
	if err := sents[1].Ping(c).Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Set(c, "f", "3", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM ") {
		t.Fatalf("SET with 1 of 2 Sentinels pinging: %v, want NOQUORUM", err)
	}
	if err := sents[0].Ping(c).Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Set(c, "f", "4", 0).Err(); err != nil {
		t.Fatalf("SET once both pinged again: %v", err)
	}
	if v := mc.Get(c, "f").Val(); v != "4" {
		t.Fatalf("f = %q, want 4 (the refused writes did not run)", v)
	}
}
