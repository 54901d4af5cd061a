package node

import (
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// TestRedsync runs go-redsync/redsync, unmodified, against shardnode: its
// unlock and extend are Lua scripts (GET + compare + DEL / PEXPIRE).
func TestRedsync(t *testing.T) {
	ts := startServer(t)
	rc := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 16})
	t.Cleanup(func() { rc.Close() })
	rs := redsync.New(goredis.NewPool(rc))
	c := ctx(t)
	// redsync gives each request expiry × timeout factor (0.05 by
	// default: 100 ms for a 2 s lock), which a loaded CI machine can
	// exceed; the factor only bounds a hang here.
	slow := redsync.WithTimeoutFactor(0.5)

	t.Run("lock extend unlock", func(t *testing.T) {
		m := rs.NewMutex("lock:a", redsync.WithExpiry(2*time.Second), redsync.WithTries(1), slow)
		if err := m.LockContext(c); err != nil {
			t.Fatalf("lock: %v", err)
		}
		other := rs.NewMutex("lock:a", redsync.WithTries(1), slow)
		if err := other.LockContext(c); err == nil {
			t.Fatal("a second holder got the lock")
		}
		before, _ := rc.PTTL(c, "lock:a").Result()
		rc.PExpire(c, "lock:a", 500*time.Millisecond)
		if ok, err := m.ExtendContext(c); !ok || err != nil {
			t.Fatalf("extend: %v %v", ok, err)
		}
		if after, _ := rc.PTTL(c, "lock:a").Result(); after < time.Second || before <= 0 {
			t.Fatalf("extend left a TTL of %v", after)
		}
		if ok, err := other.UnlockContext(c); ok || err == nil {
			t.Fatalf("a non-holder unlocked: %v %v", ok, err)
		}
		if ok, err := m.UnlockContext(c); !ok || err != nil {
			t.Fatalf("unlock: %v %v", ok, err)
		}
		if n, _ := rc.Exists(c, "lock:a").Result(); n != 0 {
			t.Fatal("the lock key is still there after unlock")
		}
	})

	t.Run("contention between 8 goroutines", func(t *testing.T) {
		const workers, rounds = 8, 25
		var wg sync.WaitGroup
		var mu sync.Mutex
		inside, maxInside, total := 0, 0, 0
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < rounds; i++ {
					m := rs.NewMutex("lock:counter", redsync.WithExpiry(5*time.Second), redsync.WithTries(1000), redsync.WithRetryDelay(time.Millisecond), slow)
					if err := m.LockContext(c); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					inside++
					maxInside = max(maxInside, inside)
					mu.Unlock()
					// A read-modify-write that only the lock makes safe.
					v, _ := rc.Get(c, "counter").Int()
					rc.Set(c, "counter", v+1, 0)
					mu.Lock()
					inside--
					total++
					mu.Unlock()
					if ok, err := m.UnlockContext(c); !ok || err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if v, _ := rc.Get(c, "counter").Int(); v != workers*rounds || maxInside != 1 {
			t.Fatalf("counter %d (want %d), at most %d holders at once", v, workers*rounds, maxInside)
		}
	})
}

// TestRedisRate runs go-redis/redis_rate, unmodified, against shardnode:
// its GCRA limiter is one Lua script (allow_n, allow_at_most).
func TestRedisRate(t *testing.T) {
	// The limiter reads the server's TIME: on a manual clock no token is
	// earned between the calls, however slow the machine.
	ts, _ := startManual(t)
	rc := ts.client(t)
	c := ctx(t)
	l := redis_rate.NewLimiter(rc)
	limit := redis_rate.PerSecond(10)

	// remaining is (now - allow_at) / emission_interval in floats: 9 or,
	// at some clock values, 8.99999... truncated to 8, on redis-server too.
	near := func(got, want int) bool { return got == want || got == want-1 }
	res, err := l.Allow(c, "rate:a", limit)
	if err != nil || res.Allowed != 1 || !near(res.Remaining, 9) || res.RetryAfter != -1 {
		t.Fatalf("first Allow: %+v %v", res, err)
	}
	res, err = l.AllowN(c, "rate:a", limit, 2)
	if err != nil || res.Allowed != 2 || !near(res.Remaining, 7) {
		t.Fatalf("AllowN 2: %+v %v", res, err)
	}
	res, err = l.AllowN(c, "rate:a", limit, 100)
	if err != nil || res.Allowed != 0 || res.Remaining != 0 || res.RetryAfter <= 0 {
		t.Fatalf("AllowN over the burst: %+v %v", res, err)
	}
	res, err = l.AllowAtMost(c, "rate:a", limit, 100)
	if err != nil || !near(res.Allowed, 7) || res.Remaining != 0 {
		t.Fatalf("AllowAtMost: %+v %v", res, err)
	}
	res, err = l.Allow(c, "rate:a", limit)
	if err != nil || res.Allowed != 0 || res.RetryAfter <= 0 || res.RetryAfter > 200*time.Millisecond {
		t.Fatalf("Allow when exhausted: %+v %v", res, err)
	}
	if err := l.Reset(c, "rate:a"); err != nil {
		t.Fatal(err)
	}
	res, err = l.Allow(c, "rate:a", limit)
	if err != nil || res.Allowed != 1 || !near(res.Remaining, 9) {
		t.Fatalf("Allow after Reset: %+v %v", res, err)
	}
	// AllowN 0 reads the state without consuming.
	res, err = l.AllowN(c, "rate:a", limit, 0)
	if err != nil || res.Allowed != 0 || !near(res.Remaining, 9) {
		t.Fatalf("AllowN 0: %+v %v", res, err)
	}
}
