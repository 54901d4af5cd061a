package repl

import (
	"strings"
	"testing"
	"time"
)

func failoverArgs(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestParseFailover(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want FailoverArgs
		err  string
	}{
		{"FAILOVER", FailoverArgs{Port: -1}, ""},
		{"failover to 10.0.0.1 6380", FailoverArgs{Host: "10.0.0.1", Port: 6380}, ""},
		{"FAILOVER TO h 6380 FORCE TIMEOUT 100", FailoverArgs{Host: "h", Port: 6380, Force: true, Timeout: 100}, ""},
		{"FAILOVER TIMEOUT 5", FailoverArgs{Port: -1, Timeout: 5}, ""},
		{"FAILOVER ABORT", FailoverArgs{Port: -1, Abort: true}, ""},
		{"FAILOVER TO h x", FailoverArgs{}, ErrNotInt},
		{"FAILOVER TO h +1", FailoverArgs{}, ErrNotInt}, // string2ll: no '+'
		{"FAILOVER TIMEOUT 0", FailoverArgs{}, errFailoverTimeout},
		{"FAILOVER TIMEOUT -1", FailoverArgs{}, errFailoverTimeout},
		{"FAILOVER TO h", FailoverArgs{}, errSyntax},
		{"FAILOVER FORCE FORCE", FailoverArgs{}, errSyntax},
		{"FAILOVER TO a 1 TO b 2", FailoverArgs{}, errSyntax},
		{"FAILOVER ABORT TIMEOUT 5", FailoverArgs{}, errSyntax},
		{"FAILOVER ABORT FORCE", FailoverArgs{}, errSyntax},
		{"FAILOVER FORCE", FailoverArgs{}, errFailoverForce},
		{"FAILOVER TO h 1 FORCE", FailoverArgs{}, errFailoverForce},
		{"FAILOVER FORCE TIMEOUT 10", FailoverArgs{}, errFailoverForce},
	} {
		got, err := ParseFailover(failoverArgs(tc.in))
		if err != tc.err || (err == "" && got != tc.want) {
			t.Errorf("%q: %+v %q, want %+v %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestFailoverStart(t *testing.T) {
	now := time.Unix(1000, 0)
	two := []FailoverReplica{{"a", 1, 10}, {"b", 2, 30}}
	for _, tc := range []struct {
		name     string
		args     FailoverArgs
		online   []FailoverReplica
		err      string
		host     string
		port     int
		deadline time.Time
	}{
		{"no replica", FailoverArgs{Port: -1}, nil, errFailoverNoReplicas, "", 0, time.Time{}},
		{"unknown target", FailoverArgs{Host: "c", Port: 3}, two, errFailoverNotReplica, "", 0, time.Time{}},
		{"any replica", FailoverArgs{Port: -1, Timeout: 50}, two, "", "", 0, now.Add(50 * time.Millisecond)},
		{"target", FailoverArgs{Host: "a", Port: 1}, two, "", "a", 1, time.Time{}},
	} {
		var f Failover
		err := f.Start(now, tc.args, tc.online)
		if err != tc.err {
			t.Errorf("%s: error %q, want %q", tc.name, err, tc.err)
			continue
		}
		if err != "" {
			if f.Running() {
				t.Errorf("%s: refused, but running", tc.name)
			}
			continue
		}
		h, p := f.Target()
		if f.State() != FailoverWaitSync || h != tc.host || p != tc.port || !f.deadline.Equal(tc.deadline) {
			t.Errorf("%s: state %s target %s:%d deadline %v", tc.name, f.State(), h, p, f.deadline)
		}
		if err := f.Start(now, tc.args, tc.online); err != errFailoverRunning {
			t.Errorf("%s: second start: %q", tc.name, err)
		}
	}
}

// TestFailoverTick steps the machine through its outcomes.
func TestFailoverTick(t *testing.T) {
	now := time.Unix(1000, 0)
	start := func(a FailoverArgs, online []FailoverReplica) *Failover {
		t.Helper()
		f := &Failover{}
		if err := f.Start(now, a, online); err != "" {
			t.Fatal(err)
		}
		return f
	}
	lagging := []FailoverReplica{{"a", 1, 90}, {"b", 2, 80}}

	// The target lags: ask it, wait; once it caught up, promote it.
	f := start(FailoverArgs{Host: "b", Port: 2}, lagging)
	if st := f.Tick(now, lagging, 100); st != (FailoverStep{GetAck: true}) {
		t.Fatalf("lagging target: %+v", st)
	}
	if st := f.Tick(now, []FailoverReplica{{"a", 1, 90}, {"b", 2, 100}}, 100); st != (FailoverStep{Promote: true}) {
		t.Fatalf("caught-up target: %+v", st)
	}
	f.Promoting()
	if f.State() != FailoverInProgress {
		t.Fatalf("state %s", f.State())
	}
	f.End()
	if f.Running() || f.State() != FailoverNone {
		t.Fatalf("ended: state %s", f.State())
	}

	// Any replica: the first to reach our offset becomes the target.
	f = start(FailoverArgs{Port: -1}, lagging)
	if st := f.Tick(now, []FailoverReplica{{"a", 1, 90}, {"b", 2, 100}}, 100); !st.Promote {
		t.Fatalf("any replica caught up: %+v", st)
	}
	if h, p := f.Target(); h != "b" || p != 2 {
		t.Fatalf("picked %s:%d, want b:2", h, p)
	}

	// The target left.
	f = start(FailoverArgs{Host: "a", Port: 1}, lagging)
	if st := f.Tick(now, lagging[1:], 100); st != (FailoverStep{End: true, Reason: "target replica disconnected"}) {
		t.Fatalf("target gone: %+v", st)
	}

	// The deadline: without FORCE the failover ends, with it the target
	// is promoted anyway.
	late := now.Add(time.Second)
	f = start(FailoverArgs{Host: "a", Port: 1, Timeout: 100}, lagging)
	if st := f.Tick(now.Add(50*time.Millisecond), lagging, 100); st != (FailoverStep{GetAck: true}) {
		t.Fatalf("before the deadline: %+v", st)
	}
	if st := f.Tick(late, lagging, 100); st != (FailoverStep{GetAck: true, End: true, Reason: "timeout waiting for the target to sync"}) {
		t.Fatalf("deadline: %+v", st)
	}
	f = start(FailoverArgs{Host: "a", Port: 1, Timeout: 100, Force: true}, lagging)
	if st := f.Tick(late, lagging, 100); st != (FailoverStep{GetAck: true, Promote: true, Forced: true}) {
		t.Fatalf("forced: %+v", st)
	}

	// ABORT: seen by the next tick, after the target's progress.
	f = start(FailoverArgs{Host: "a", Port: 1}, lagging)
	if err := f.Abort(); err != "" {
		t.Fatal(err)
	}
	if st := f.Tick(now, lagging, 100); st != (FailoverStep{GetAck: true, End: true, Reason: "FAILOVER ABORT"}) {
		t.Fatalf("aborted: %+v", st)
	}
	f.End()
	if err := f.Abort(); err != errFailoverNone {
		t.Fatalf("abort with none running: %q", err)
	}
}
