package faults

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

var runFaults = flag.Bool("faults", false, "run the namespace scenarios (root, redis-server and redis-sentinel needed)")

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Outcome
	}{
		{nil, OK},
		{errors.New("READONLY You can't write against a read only replica."), Fail},
		{errors.New("NOREPLICAS Not enough good replicas to write."), Fail},
		{errors.New("NOQUORUM Lost contact with the majority of the Sentinels; writes are refused until they are reached again (min-replicas-ack)"), Fail},
		{errors.New("CLUSTERDOWN The cluster is down"), Fail},
		{errors.New("MOVED 3999 10.77.0.12:6379"), Fail},
		{errors.New("dial tcp 10.77.0.12:6379: connect: connection refused"), Fail},
		{errors.New("redis: connection pool timeout"), Fail},
		{errors.New("read tcp 10.77.0.20:4000->10.77.0.10:6379: i/o timeout"), Unknown},
		{io.EOF, Unknown},
		{errors.New("read tcp: connection reset by peer"), Unknown},
		{errors.New("UNACKED the write is applied on the master but not acknowledged by enough replicas"), Unknown},
	} {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

func sadd(proc, key string, v int64, r Outcome, t0, t1 int64) Op {
	return Op{Proc: proc, F: "sadd", Key: key, Value: v, Outcome: r, Call: t0, Return: t1}
}

func TestCheckSet(t *testing.T) {
	ops := []Op{
		sadd("a/0", "k", 1, OK, 0, 10),
		sadd("a/0", "k", 2, OK, 20, 30),      // lost
		sadd("a/0", "k", 3, Unknown, 40, 50), // recovered
		sadd("b/0", "k", 4, Unknown, 41, 51), // not recovered
		sadd("b/0", "k", 5, Fail, 60, 61),    // present: unexpected
		sadd("b/0", "j", 6, OK, 70, 300),
		sadd("a/0", "k", 7, OK, 100, 200),
		{Proc: "a/1", F: "get", Key: "r", Outcome: OK}, // not part of the set workload
	}
	final := map[string][]int64{"k": {1, 3, 5, 7, 99}, "j": {6}}
	r := CheckSet(ops, final, 0, 400)
	want := SetResult{Attempted: 7, Acked: 4, Lost: 1, Unknown: 2, Recovered: 1, Failed: 1, Unexpected: 2,
		// a's acknowledgements on k at 10, 30, 200: the longest gap is
		// 200..400; b's on j at 300: 0..300.
		UnavailableNs: 300, LostSample: []string{"k:2"}}
	if r.Attempted != want.Attempted || r.Acked != want.Acked || r.Lost != want.Lost || r.Unknown != want.Unknown ||
		r.Recovered != want.Recovered || r.Failed != want.Failed || r.Unexpected != want.Unexpected ||
		r.UnavailableNs != want.UnavailableNs || strings.Join(r.LostSample, ",") != "k:2" {
		t.Fatalf("CheckSet = %+v\nwant       %+v", r, want)
	}
}

func TestLongestGap(t *testing.T) {
	for _, c := range []struct {
		ts       []int64
		from, to int64
		want     int64
	}{
		{nil, 0, 100, 100},
		{[]int64{50}, 0, 100, 50},
		{[]int64{10, 20, 90}, 0, 100, 70},
		{[]int64{-5, 10, 500}, 0, 100, 90}, // times outside the window ignored
	} {
		if got := longestGap(c.ts, c.from, c.to); got != c.want {
			t.Errorf("longestGap(%v, %d, %d) = %d, want %d", c.ts, c.from, c.to, got, c.want)
		}
	}
}

func reg(proc, f, key string, v, out int64, r Outcome, t0, t1 int64) Op {
	return Op{Proc: proc, F: f, Key: key, Value: v, Out: out, Outcome: r, Call: t0, Return: t1}
}

func TestLinearizable(t *testing.T) {
	for _, c := range []struct {
		name string
		ops  []Op
		want string
	}{
		{"empty", nil, "none"},
		{"sequential", []Op{
			reg("a", "set", "x", 5, 0, OK, 0, 1),
			reg("a", "get", "x", 0, 5, OK, 2, 3),
			reg("a", "incr", "x", 0, 6, OK, 4, 5),
			reg("b", "get", "x", 0, 6, OK, 6, 7),
		}, "ok"},
		{"missing key reads 0", []Op{reg("a", "get", "x", 0, 0, OK, 0, 1), reg("a", "incr", "x", 0, 1, OK, 2, 3)}, "ok"},
		{"stale read", []Op{
			reg("a", "set", "x", 5, 0, OK, 0, 1),
			reg("b", "get", "x", 0, 0, OK, 2, 3),
		}, "illegal"},
		{"lost write", []Op{
			reg("a", "set", "x", 5, 0, OK, 0, 1),
			reg("a", "set", "x", 6, 0, OK, 2, 3),
			reg("b", "get", "x", 0, 5, OK, 4, 5),
		}, "illegal"},
		{"concurrent write may be seen either way", []Op{
			reg("a", "set", "x", 5, 0, OK, 0, 10),
			reg("b", "get", "x", 0, 0, OK, 1, 2),
			reg("b", "get", "x", 0, 5, OK, 3, 4),
		}, "ok"},
		{"unknown write applied later", []Op{
			reg("a", "set", "x", 5, 0, Unknown, 0, 1),
			reg("b", "get", "x", 0, 0, OK, 10, 11),
			reg("b", "get", "x", 0, 5, OK, 20, 21),
		}, "ok"},
		{"unknown write never applied", []Op{
			reg("a", "incr", "x", 0, 0, Unknown, 0, 1),
			reg("b", "get", "x", 0, 0, OK, 10, 11),
		}, "ok"},
		{"failed write applied", []Op{
			reg("a", "set", "x", 5, 0, Fail, 0, 1),
			reg("b", "get", "x", 0, 5, OK, 10, 11),
		}, "illegal"},
		{"incr counted twice", []Op{
			reg("a", "incr", "x", 0, 1, OK, 0, 1),
			reg("b", "incr", "x", 0, 1, OK, 2, 3),
		}, "illegal"},
		{"keys are independent", []Op{
			reg("a", "set", "x", 5, 0, OK, 0, 1),
			reg("b", "get", "y", 0, 0, OK, 2, 3),
			reg("b", "get", "x", 0, 5, OK, 4, 5),
		}, "ok"},
	} {
		if got := Linearizable(c.ops, 10*time.Second, ""); got != c.want {
			t.Errorf("%s: Linearizable = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	in := "{\"p\":\"c1/s0\",\"f\":\"sadd\",\"k\":\"jset:0\",\"v\":7,\"r\":\"ok\",\"t0\":5,\"t1\":6}\n\n" +
		"{\"p\":\"c1/r0\",\"f\":\"get\",\"k\":\"reg:0\",\"o\":3,\"r\":\"unknown\",\"e\":\"i/o timeout\",\"t0\":1,\"t1\":9}\n"
	ops, err := ReadHistory(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	m := Merge(ops[:1], ops[1:])
	if len(m) != 2 || m[0].F != "get" || m[0].Out != 3 || m[0].Outcome != Unknown || m[1].Value != 7 {
		t.Fatalf("merged = %+v", m)
	}
	if _, err := ReadHistory(strings.NewReader("{bad\n")); err == nil {
		t.Fatal("bad line accepted")
	}
}

func TestTable(t *testing.T) {
	rs := []Result{
		{Topology: "cluster", Fault: "kill9", Setting: "redis", Replicas: 1, Set: SetResult{Acked: 10, Lost: 2, Unknown: 1, UnavailableNs: 2e9}, Linearizable: "illegal"},
		{Topology: "sentinel", Fault: "kill9", Setting: "redis", Set: SetResult{Acked: 10, UnavailableNs: 1e9}, Linearizable: "ok"},
		{Topology: "sentinel", Fault: "kill9", Setting: "redis", Set: SetResult{Acked: 20, Lost: 3, UnavailableNs: 3e9}, Linearizable: "illegal"},
		{Topology: "sentinel", Fault: "kill9", Setting: "redis", Err: "boom"},
	}
	got := Table(rs)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 4 {
		t.Fatalf("table:\n%s", got)
	}
	if want := "| sentinel | kill9 | redis | 2 (+1 failed) | 3 / 30 | 0, 3 | 0 | 1.0–3.0 s | ok 1, illegal 1 |"; lines[2] != want {
		t.Errorf("row\n%s\nwant\n%s", lines[2], want)
	}
	if want := "| cluster 3×1 | kill9 | redis | 1 | 2 / 10 | 2 | 1 | 2.0–2.0 s | illegal 1 |"; lines[3] != want {
		t.Errorf("row\n%s\nwant\n%s", lines[3], want)
	}
}

// TestScenario runs one real scenario in namespaces: redis-server +
// redis-sentinel, kill -9 of the master. Only with -faults, as root.
func TestScenario(t *testing.T) {
	if !*runFaults {
		t.Skip("namespace scenarios run only with -faults")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bin := t.TempDir() + "/faults"
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/shardis/shardis/scripts/faults").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	env := Env{Self: bin, Dir: t.TempDir()}
	res := Run(context.Background(), env, Scenario{Topology: "sentinel", Fault: "kill9", Setting: Settings["redis"]}, 1, slog.Default())
	if res.Err != "" {
		t.Fatal(res.Err)
	}
	if res.Set.Acked == 0 || res.Linearizable == "none" || res.Set.UnavailableNs <= 0 {
		t.Fatalf("result %+v", res)
	}
	if left, _ := Cleanup(); len(left) > 0 {
		t.Fatalf("namespaces left: %v", left)
	}
}
