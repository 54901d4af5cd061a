package node

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// nopConn is a net.Conn that is never read or written: the in-process
// benchmarks call Client.execute directly.
type nopConn struct{}

func (nopConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (nopConn) Write(b []byte) (int, error)      { return len(b), nil }
func (nopConn) Close() error                     { return nil }
func (nopConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6379} }
func (nopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000} }
func (nopConn) SetDeadline(time.Time) error      { return nil }
func (nopConn) SetReadDeadline(time.Time) error  { return nil }
func (nopConn) SetWriteDeadline(time.Time) error { return nil }

// benchExecute runs the requests made by mk through the dispatcher of one
// client, without the network: the server's CPU cost per command
// (dispatch, locks, handler, bookkeeping, reply encoding). The requests
// are built before the timer starts, so allocs/op are the server's own.
func benchExecute(b *testing.B, setup [][]string, mk func(i int) []string) {
	benchExecuteOn(b, startServer(b), setup, mk)
}

// benchExecuteOn is benchExecute on a given server.
func benchExecuteOn(b *testing.B, ts *testServer, setup [][]string, mk func(i int) []string) {
	c := newClient(ts.srv, nopConn{})
	for _, req := range setup {
		c.execute(toArgs(req))
	}
	const n = 4096
	reqs := make([][][]byte, n)
	for i := range reqs {
		reqs[i] = toArgs(mk(i))
	}
	c.out = c.out[:0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.execute(reqs[i&(n-1)])
		if len(c.out) > 32*1024 {
			c.out = c.out[:0]
		}
	}
}

func toArgs(req []string) [][]byte {
	args := make([][]byte, len(req))
	for i, a := range req {
		args[i] = []byte(a)
	}
	return args
}

func randKey(prefix string, i int) string { return fmt.Sprintf("%s%012d", prefix, (i*7919)%100000) }

// The requests mirror redis-benchmark's tests (-r 100000).
func BenchmarkExecSet(b *testing.B) {
	benchExecute(b, nil, func(i int) []string { return []string{"SET", randKey("key:", i), "xxx"} })
}

func BenchmarkExecGet(b *testing.B) {
	var setup [][]string
	for i := 0; i < 4096; i++ {
		setup = append(setup, []string{"SET", randKey("key:", i), "xxx"})
	}
	benchExecute(b, setup, func(i int) []string { return []string{"GET", randKey("key:", i)} })
}

// BenchmarkExecCluster is GET and SET on a one-node cluster that owns
// every slot: the cost of cluster mode's slot check on the hot path, to
// compare with BenchmarkExecGet/BenchmarkExecSet.
func BenchmarkExecCluster(b *testing.B) {
	for _, op := range []string{"get", "set"} {
		b.Run(op, func(b *testing.B) {
			ts := startServer(b, "cluster-enabled", "yes", "cluster-port", fmt.Sprint(testutil.FreePort(b)))
			benchExecuteOn(b, ts, [][]string{{"cluster", "addslotsrange", "0", "16383"}}, func(i int) []string {
				if op == "get" {
					return []string{"GET", randKey("key:", i)}
				}
				return []string{"SET", randKey("key:", i), "value"}
			})
		})
	}
}

func BenchmarkExecIncr(b *testing.B) {
	benchExecute(b, nil, func(i int) []string { return []string{"INCR", randKey("counter:", i)} })
}

func BenchmarkExecMset(b *testing.B) {
	benchExecute(b, nil, func(i int) []string {
		req := []string{"MSET"}
		for j := 0; j < 10; j++ {
			req = append(req, randKey("key:", i*10+j), "xxx")
		}
		return req
	})
}

func BenchmarkExecLpushLpop(b *testing.B) {
	benchExecute(b, nil, func(i int) []string {
		if i%2 == 0 {
			return []string{"LPUSH", "mylist", "xxx"}
		}
		return []string{"LPOP", "mylist"}
	})
}

func BenchmarkExecSadd(b *testing.B) {
	benchExecute(b, nil, func(i int) []string { return []string{"SADD", "myset", randKey("element:", i)} })
}

func BenchmarkExecHset(b *testing.B) {
	benchExecute(b, nil, func(i int) []string { return []string{"HSET", "myhash", randKey("element:", i), "xxx"} })
}

func BenchmarkExecZaddZpopmin(b *testing.B) {
	benchExecute(b, nil, func(i int) []string {
		if i%2 == 0 {
			return []string{"ZADD", "myzset", "0", randKey("element:", i)}
		}
		return []string{"ZPOPMIN", "myzset"}
	})
}

func BenchmarkExecLrange100(b *testing.B) {
	var setup [][]string
	for i := 0; i < 600; i++ {
		setup = append(setup, []string{"LPUSH", "mylist", "xxx"})
	}
	benchExecute(b, setup, func(i int) []string { return []string{"LRANGE", "mylist", "0", "99"} })
}

// TestPerfRedisBenchmark runs redis-benchmark against an in-process node so
// that go test's -cpuprofile/-mutexprofile see the server under the real
// load. Only with PERF_REDIS_BENCHMARK set to redis-benchmark's arguments,
// for example:
//
//	PERF_REDIS_BENCHMARK="-c 50 -n 200000 -P 16 -t get -r 100000" \
//	  go test -run TestPerfRedisBenchmark -cpuprofile cpu.out ./internal/node
func TestPerfRedisBenchmark(t *testing.T) {
	args := os.Getenv("PERF_REDIS_BENCHMARK")
	if args == "" {
		t.Skip("PERF_REDIS_BENCHMARK not set")
	}
	ts := startServer(t)
	_, port, _ := net.SplitHostPort(ts.addr)
	cmd := exec.Command("redis-benchmark", append([]string{"-p", port, "--csv"}, strings.Fields(args)...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
}

// BenchmarkExecGetLarge reads 100k keys in a random order: the keyspace
// does not fit in the CPU caches (as under redis-benchmark -r 100000).
func BenchmarkExecGetLarge(b *testing.B) {
	var setup [][]string
	for i := 0; i < 100000; i++ {
		setup = append(setup, []string{"SET", fmt.Sprintf("key:%012d", i), "xxx"})
	}
	benchExecute(b, setup, func(i int) []string { return []string{"GET", fmt.Sprintf("key:%012d", (i*7919+13)%100000)} })
}
