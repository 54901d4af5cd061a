package shardedpool

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shardis/shardis/internal/resp"
)

// fakeServer is a tiny in-process RESP2 server for unit tests: a fake
// Redis (ROLE, GET) or a fake Sentinel (SENTINEL MASTER, SUBSCRIBE). It
// reads requests with internal/resp.
type fakeServer struct {
	t    *testing.T
	ln   net.Listener
	addr string

	mu    sync.Mutex
	conns map[net.Conn]bool
	subs  map[net.Conn]*sync.Mutex // +switch-master subscribers and their write locks
	// fake Redis state
	role string // "master" or "slave"
	// fake Sentinel state
	masters    map[string]fakeMaster
	subscribes int // SUBSCRIBE commands received
	silent     bool
}

type fakeMaster struct {
	addr  string
	epoch int64
}

func newFake(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{t: t, ln: ln, addr: ln.Addr().String(), conns: map[net.Conn]bool{},
		subs: map[net.Conn]*sync.Mutex{}, role: "master", masters: map[string]fakeMaster{}}
	go f.serve()
	t.Cleanup(f.close)
	return f
}

func (f *fakeServer) close() {
	f.ln.Close()
	f.dropConns()
}

func (f *fakeServer) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[c] = true
		f.mu.Unlock()
		go f.handle(c)
	}
}

// dropConns closes every client connection (the listener stays open).
func (f *fakeServer) dropConns() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
	clear(f.subs)
}

func (f *fakeServer) setRole(role string) {
	f.mu.Lock()
	f.role = role
	f.mu.Unlock()
}

// setSilent makes the server stop answering queries (a hung Sentinel).
func (f *fakeServer) setSilent(v bool) {
	f.mu.Lock()
	f.silent = v
	f.mu.Unlock()
}

func (f *fakeServer) setMaster(name, addr string, epoch int64) {
	f.mu.Lock()
	f.masters[name] = fakeMaster{addr, epoch}
	f.mu.Unlock()
}

func (f *fakeServer) subscribeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subscribes
}

func (f *fakeServer) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// publish sends a raw frame to every subscriber.
func (f *fakeServer) publishRaw(frame string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c, wmu := range f.subs {
		wmu.Lock()
		c.Write([]byte(frame))
		wmu.Unlock()
	}
}

// publish sends a +switch-master message with payload to every subscriber.
func (f *fakeServer) publish(payload string) {
	f.publishRaw(string(appendArray(nil, "message", "+switch-master", payload)))
}

func appendArray(b []byte, items ...string) []byte { return resp.AppendCommandStrings(b, items...) }

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

func (f *fakeServer) handle(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	wmu := &sync.Mutex{}
	write := func(s string) {
		wmu.Lock()
		c.Write([]byte(s))
		wmu.Unlock()
	}
	for {
		v, err := resp.ReadValue(r)
		if err != nil {
			return
		}
		if v.Type != '*' || len(v.Elems) == 0 {
			write("-ERR Protocol error\r\n")
			return
		}
		args := make([]string, len(v.Elems))
		for i, x := range v.Elems {
			args[i] = x.Str
		}
		cmd := strings.ToLower(args[0])
		f.mu.Lock()
		silent, role := f.silent, f.role
		_, subscribed := f.subs[c]
		f.mu.Unlock()
		if silent {
			continue
		}
		switch {
		case cmd == "ping" && subscribed:
			write(string(appendArray(nil, "pong", "")))
		case cmd == "ping":
			write("+PONG\r\n")
		case cmd == "role":
			write("*1\r\n" + bulk(role))
		case cmd == "get" && len(args) == 2:
			write(bulk(f.addr)) // a fake Redis answers every GET with its own address
		case cmd == "subscribe":
			f.mu.Lock()
			f.subs[c] = wmu
			f.subscribes++
			f.mu.Unlock()
			write("*3\r\n" + bulk("subscribe") + bulk(args[1]) + ":1\r\n")
		case cmd == "sentinel" && len(args) == 3:
			f.mu.Lock()
			m, known := f.masters[args[2]]
			f.mu.Unlock()
			if !known {
				write("-ERR No such master with that name\r\n")
				continue
			}
			host, port, _ := net.SplitHostPort(m.addr)
			switch strings.ToLower(args[1]) {
			case "master":
				write(string(appendArray(nil, "name", args[2], "ip", host, "port", port,
					"flags", "master", "config-epoch", strconv.FormatInt(m.epoch, 10))))
			case "get-master-addr-by-name":
				write(string(appendArray(nil, host, port)))
			default:
				write("-ERR unknown sentinel subcommand\r\n")
			}
		default:
			write(fmt.Sprintf("-ERR unknown command '%s'\r\n", args[0]))
		}
	}
}
