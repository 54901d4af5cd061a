package node

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/clock"
	"github.com/shardis/shardis/internal/testutil"
)

// testServer is a node started on 127.0.0.1:0 for one test.
type testServer struct {
	srv  *Server
	addr string
}

// startServer starts a node with the given directives (name, value pairs)
// and stops it when the test ends.
func startServer(t testing.TB, directives ...string) *testServer {
	t.Helper()
	return startServerWith(t, nil, directives...)
}

// startManual starts a node on a manual clock (reading a fixed start
// time) and returns the clock: the test advances it instead of sleeping.
func startManual(t testing.TB, directives ...string) (*testServer, *clock.Manual) {
	t.Helper()
	m := clock.NewManual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ts := startServerWith(t, []Option{WithClock(m)}, directives...)
	// Run arms the cron's tickers: only then does an advance step it.
	testutil.WaitFor(t, 10*time.Second, "the cron to arm its ticker", func() bool { return m.Pending() > 0 })
	return ts, m
}

// startServerWith is startServer with New's options.
func startServerWith(t testing.TB, opts []Option, directives ...string) *testServer {
	t.Helper()
	cfg := NewConfig()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cfg.Set("port", "0"))
	must(cfg.Set("bind", "127.0.0.1"))
	must(cfg.Set("save", ""))
	must(cfg.Set("repl-diskless-sync-delay", "0")) // as Redis's test suite: no 5 s wait per full sync
	must(cfg.Set("dir", t.TempDir()))
	for i := 0; i+1 < len(directives); i += 2 {
		must(cfg.Set(directives[i], directives[i+1]))
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), opts...)
	must(err)
	must(srv.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server did not stop")
		}
	})
	return &testServer{srv: srv, addr: srv.Addr().String()}
}

// client returns a go-redis client (RESP2 unless proto says otherwise).
func (ts *testServer) client(t testing.TB, proto ...int) *redis.Client {
	t.Helper()
	p := 2
	if len(proto) > 0 {
		p = proto[0]
	}
	rc := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: p, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// rawConn is a plain TCP connection for byte-level assertions.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func (ts *testServer) raw(t testing.TB) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := r.nc.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// readLine reads one CRLF-terminated line (without CRLF).
func (r *rawConn) readLine() string {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read: %v (got %q)", err, line)
	}
	if len(line) >= 2 {
		line = line[:len(line)-2]
	}
	return line
}

// expect sends req and checks the next line of the reply.
func (r *rawConn) expect(req, want string) {
	r.t.Helper()
	r.send(req)
	if got := r.readLine(); got != want {
		r.t.Fatalf("%q: got %q, want %q", req, got, want)
	}
}

// ctx returns a context bounded for one test step.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// ctxFor is ctx with the deadline d, for tests whose whole run (big
// values, several nodes, redis-cli) shares one context: d only bounds a
// hang, so it is generous enough for a loaded 2-core machine.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// keyEvents subscribes to db 0's keyevent notifications (the server must
// run with notify-keyspace-events set) and returns next, which reads the
// next n notifications as "event key", failing the test when they do not
// come within ctx(t)'s time.
func (ts *testServer) keyEvents(t testing.TB) (next func(n int) []string) {
	t.Helper()
	c := ctx(t)
	sub := ts.client(t).PSubscribe(c, "__keyevent@0__:*")
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(c); err != nil {
		t.Fatal(err)
	}
	return func(n int) []string {
		t.Helper()
		out := make([]string, 0, n)
		for len(out) < n {
			m, err := sub.ReceiveMessage(c)
			if err != nil {
				t.Fatalf("after events %v: %v", out, err)
			}
			out = append(out, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
		}
		return out
	}
}

// expectKeyEvents reads len(want) notifications with next and compares
// them, in order, with want ("event key").
func expectKeyEvents(t testing.TB, next func(n int) []string, want ...string) {
	t.Helper()
	if got := next(len(want)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events:\n got  %s\n want %s", strings.Join(got, ","), strings.Join(want, ","))
	}
}

// propagated records what a server propagates to its replicas and the AOF,
// one line per command ("SET k v"), from capturePropagation on.
type propagated struct {
	mu    sync.Mutex
	lines []string
}

// capturePropagation starts recording ts's propagated commands.
func (ts *testServer) capturePropagation() *propagated {
	p := &propagated{}
	ts.srv.AddPropagator(propagatorFunc(func(db int, cmds [][][]byte) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, cmd := range cmds {
			parts := make([]string, len(cmd))
			for i, a := range cmd {
				parts[i] = string(a)
			}
			p.lines = append(p.lines, strings.Join(parts, " "))
		}
	}))
	return p
}

// expect fails the test unless the commands propagated so far are want, in
// order (the writes are done: propagation happens before the reply).
func (p *propagated) expect(t testing.TB, want ...string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.Join(p.lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("propagated:\n%s\nwant:\n%s", strings.Join(p.lines, "\n"), strings.Join(want, "\n"))
	}
}
