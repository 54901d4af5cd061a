package block

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/node/clock"
)

type reg = Registry[string, string]

func noHangup() (<-chan struct{}, func()) { return nil, func() {} }

func TestArrivalOrderAndServing(t *testing.T) {
	var r reg
	a := NewWaiter(1, []string{"k", "k", "j"}, 30, false, "a")
	b := NewWaiter(2, []string{"k"}, 10, false, "b") // arrived first, registered later
	c := NewWaiter(3, []string{"k"}, 20, false, "c")
	for _, w := range []*Waiter[string, string]{a, b, c} {
		r.Register(w, func() {})
	}
	if !reflect.DeepEqual(a.Keys, []string{"k", "j"}) {
		t.Fatalf("duplicate keys kept: %v", a.Keys)
	}
	if !r.HasWaiters("k") || !r.HasWaiters("j") || r.HasWaiters("x") {
		t.Fatal("HasWaiters")
	}
	// The key holds two elements: the two oldest waiters get them, in
	// arrival order, then serving stops at the first refusal.
	left := 2
	var order []string
	serve := func(w *Waiter[string, string], key string) (bool, []string) {
		return r.Serve(w, func() (bool, []string) {
			if left == 0 {
				return false, nil
			}
			left--
			order = append(order, w.Data)
			return true, nil
		})
	}
	r.ServeReady([]string{"k", "k"}, serve)
	if !reflect.DeepEqual(order, []string{"b", "c"}) {
		t.Fatalf("served %v, want [b c]", order)
	}
	if r.Lookup(2) != nil || r.Lookup(3) != nil || r.Lookup(1) != a {
		t.Fatal("served waiters must leave the registry, the others stay")
	}
	if got := r.Wait(b, 0, clock.Real(), nil, time.Hour, noHangup); !got.Served {
		t.Fatalf("a served waiter's wait: %+v", got)
	}
	// A waiter that gave up is skipped and not served.
	a.Unblock(Error)
	if got := r.Wait(a, 0, clock.Real(), nil, time.Hour, noHangup); got.Served || got.Mode != Error {
		t.Fatalf("unblocked: %+v", got)
	}
	if r.Waiting() || len(r.All()) != 0 {
		t.Fatal("registry not empty")
	}
}

func TestEachAndChains(t *testing.T) {
	var r reg
	x := NewWaiter(1, []string{"s"}, 1, true, "x")
	y := NewWaiter(2, []string{"s"}, 2, true, "y")
	z := NewWaiter(3, []string{"d"}, 3, false, "z")
	for _, w := range []*Waiter[string, string]{x, y, z} {
		r.Register(w, func() {})
	}
	var order []string
	r.ServeReady([]string{"s"}, func(w *Waiter[string, string], key string) (bool, []string) {
		return r.Serve(w, func() (bool, []string) {
			order = append(order, w.Data+":"+key)
			switch w.Data {
			case "x":
				return false, nil // refuses: y is offered the key all the same
			case "y":
				return true, []string{"d"} // serving y made d ready
			}
			return true, nil
		})
	})
	if !reflect.DeepEqual(order, []string{"x:s", "y:s", "z:d"}) {
		t.Fatalf("order %v", order)
	}
}

func TestPending(t *testing.T) {
	var r reg
	r.MarkReady("k") // nobody waits: ignored
	if r.Pending() {
		t.Fatal("a key nobody waits on was queued")
	}
	r.Register(NewWaiter(1, []string{"0:a", "1:b"}, 1, false, ""), func() {})
	r.MarkReady("0:a")
	r.MarkReadyWhere(func(k string) bool { return k[0] == '1' })
	got := r.TakePending(nil)
	if !reflect.DeepEqual(got, []string{"0:a", "1:b"}) || r.Pending() {
		t.Fatalf("pending %v", got)
	}
}

func TestWaitOutcomes(t *testing.T) {
	var r reg
	w := NewWaiter(1, []string{"k"}, 1, false, "")
	r.Register(w, func() {})
	if got := r.Wait(w, 1005, clock.NewManual(time.UnixMilli(1006)), nil, time.Hour, noHangup); got != (Outcome{Mode: Timeout}) {
		t.Fatalf("timeout: %+v", got)
	}
	w = NewWaiter(1, []string{"k"}, 1, false, "")
	r.Register(w, func() {})
	w.RedirectWith("MOVED 1 127.0.0.1:1")
	if got := r.Wait(w, 0, clock.Real(), nil, time.Hour, noHangup); got.Mode != Redirect || got.Redirect != "MOVED 1 127.0.0.1:1" {
		t.Fatalf("redirect: %+v", got)
	}
	w = NewWaiter(1, []string{"k"}, 1, false, "")
	r.Register(w, func() {})
	done := make(chan struct{})
	close(done)
	if got := r.Wait(w, 0, clock.Real(), done, time.Hour, noHangup); !got.Killed {
		t.Fatalf("done: %+v", got)
	}
	w = NewWaiter(1, []string{"k"}, 1, false, "")
	r.Register(w, func() {})
	hup := make(chan struct{})
	close(hup)
	watched := false
	got := r.Wait(w, 0, clock.Real(), nil, time.Microsecond, func() (<-chan struct{}, func()) { return hup, func() { watched = true } })
	if !got.Killed || !watched {
		t.Fatalf("hang-up: %+v, watch stopped %v", got, watched)
	}
	if r.Waiting() {
		t.Fatal("waiters left")
	}
}

func TestParseTimeout(t *testing.T) {
	for _, tt := range []struct {
		sec      float64
		deadline int64
		err      string
	}{
		{0, 0, ""},
		{0.0001, 1001, ""}, // rounded up to a millisecond
		{1.5, 2500, ""},
		{-1, 0, "ERR timeout is negative"},
		{5e15, 1000 + 1<<62, ""}, // 5e18 ms: below 2^63, clamped
		// 2^63 ms and more: Redis's conversion to a long long makes
		// them LLONG_MIN (redis-server 7.0: BLPOP k 1e16, k inf).
		{1e16, 0, "ERR timeout is negative"},
		{1e300, 0, "ERR timeout is negative"},
		{math.Inf(1), 0, "ERR timeout is negative"},
	} {
		d, err := ParseTimeout(tt.sec, 1000)
		if d != tt.deadline || err != tt.err {
			t.Errorf("ParseTimeout(%v) = %d %q, want %d %q", tt.sec, d, err, tt.deadline, tt.err)
		}
	}
}

// TestWaitTimesOutOnItsClock checks that a wait with a deadline ends when
// its clock is past the deadline's millisecond (Redis's timeout < now),
// and not a millisecond before.
func TestWaitTimesOutOnItsClock(t *testing.T) {
	var r reg
	m := clock.NewManual(time.UnixMilli(1000))
	w := NewWaiter(1, []string{"k"}, 1, false, "")
	r.Register(w, func() {})
	out := make(chan Outcome, 1)
	go func() { out <- r.Wait(w, 2000, m, nil, time.Hour, noHangup) }()
	// The timer is armed before the clock moves: Pending counts it.
	for i := 0; m.Pending() == 0; i++ {
		if i == 1000 {
			t.Fatal("the wait armed no timer")
		}
		time.Sleep(time.Millisecond)
	}
	m.Advance(time.Second)
	select {
	case got := <-out:
		t.Fatalf("returned %+v at 2000 ms, deadline 2000", got)
	default:
	}
	if !r.Waiting() {
		t.Fatal("the waiter left the registry before its deadline")
	}
	m.Advance(time.Millisecond)
	select {
	case got := <-out:
		if got != (Outcome{Mode: Timeout}) {
			t.Fatalf("outcome %+v, want a timeout", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no timeout after the clock reached the deadline")
	}
	if r.Waiting() {
		t.Fatal("waiter left in the registry")
	}
}
