package node

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
