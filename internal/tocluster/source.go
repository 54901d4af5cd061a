package tocluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// link is the tool's replication connection to a source master: the
// handshake of a replica (REPLCONF listening-port, REPLCONF capa eof capa
// psync2, PSYNC), then the snapshot and the command stream.
type link struct {
	addr string
	nc   net.Conn
	br   *bufio.Reader

	// replid and start are the replication id and the offset reached
	// before the first byte of the command stream: the +FULLRESYNC offset,
	// or the offset a partial resync continued from. The offset after n
	// stream bytes is start+n, as a replica counts master_repl_offset.
	replid string
	start  int64
	// full is true when the master answered +FULLRESYNC: a snapshot
	// follows.
	full bool

	wmu sync.Mutex // serialises writes (ACKs from the ticker and GETACK answers)
}

// errNoPSync2 is returned when the master does not speak PSYNC.
var errNoPSync2 = errors.New("tocluster: the source does not support PSYNC")

// dialSource connects to a source master as a replica announcing
// listenPort, asking to continue replid at offset next (the offset of the
// first byte the tool has not applied) or, with replid "", for a full
// resynchronisation.
func dialSource(ctx context.Context, addr string, auth []string, listenPort int, replid string, next int64, timeout, linkTimeout time.Duration) (*link, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tocluster: connect to source %s: %w", addr, err)
	}
	l := &link{addr: addr, nc: nc, br: bufio.NewReaderSize(nc, 1<<20)}
	fail := func(err error) (*link, error) {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	ask := func(args ...string) (string, error) {
		if _, err := nc.Write(resp.AppendCommandStrings(nil, args...)); err != nil {
			return "", err
		}
		for {
			line, err := l.br.ReadString('\n')
			if err != nil {
				return "", err
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" { // keepalive newline
				continue
			}
			if line[0] == '-' {
				return "", fmt.Errorf("%s: %s", args[0], line[1:])
			}
			return line[1:], nil
		}
	}
	if len(auth) > 0 {
		if _, err := ask(append([]string{"AUTH"}, auth...)...); err != nil {
			return fail(fmt.Errorf("tocluster: source %s: %w", addr, err))
		}
	}
	if _, err := ask("PING"); err != nil {
		return fail(fmt.Errorf("tocluster: source %s: %w", addr, err))
	}
	if _, err := ask("REPLCONF", "listening-port", strconv.Itoa(listenPort)); err != nil {
		return fail(fmt.Errorf("tocluster: source %s: %w", addr, err))
	}
	if _, err := ask("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return fail(fmt.Errorf("tocluster: source %s: %w", addr, err))
	}
	// Never promotable: a shardnode master's min-replicas-ack must not
	// count this link (redis-server answers with an error, ignored).
	_, _ = ask("REPLCONF", "replica-priority", "0")
	id, off := "?", "-1"
	if replid != "" {
		id, off = replid, strconv.FormatInt(next, 10)
	}
	// The snapshot may take a while to start (a master sends a newline
	// every second meanwhile): the PSYNC answer gets linkTimeout.
	_ = nc.SetDeadline(time.Now().Add(linkTimeout))
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	reply, err := ask("PSYNC", id, off)
	if err != nil {
		return fail(fmt.Errorf("tocluster: source %s: %w", addr, err))
	}
	f := strings.Fields(reply)
	switch {
	case len(f) == 3 && f[0] == "FULLRESYNC":
		o, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fail(fmt.Errorf("tocluster: source %s: bad reply %q", addr, reply))
		}
		l.replid, l.start, l.full = f[1], o, true
	case len(f) >= 1 && f[0] == "CONTINUE":
		l.replid, l.start = replid, next-1
		if len(f) == 2 {
			l.replid = f[1]
		}
	default:
		return fail(fmt.Errorf("%w (%s answered %q)", errNoPSync2, addr, reply))
	}
	_ = nc.SetDeadline(time.Time{}) // the stream sets its own read deadlines
	return l, nil
}

// snapshot returns a reader of the RDB payload that follows +FULLRESYNC,
// and a function to call after the payload was parsed, which checks its
// end ($len: the length; $EOF:<mark>: the 40-byte mark).
func (l *link) snapshot() (io.Reader, func(consumed int64) error, error) {
	for {
		line, err := l.br.ReadString('\n')
		if err != nil {
			return nil, nil, fmt.Errorf("tocluster: source %s: reading the snapshot: %w", l.addr, err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			continue
		}
		if mark, ok := strings.CutPrefix(line, "$EOF:"); ok {
			return l.br, func(int64) error {
				var got [40]byte
				if _, err := io.ReadFull(l.br, got[:]); err != nil {
					return fmt.Errorf("tocluster: source %s: snapshot end: %w", l.addr, err)
				}
				if string(got[:]) != mark {
					return fmt.Errorf("tocluster: source %s: snapshot end mark mismatch", l.addr)
				}
				return nil
			}, nil
		}
		if n, ok := strings.CutPrefix(line, "$"); ok {
			size, err := strconv.ParseInt(n, 10, 64)
			if err != nil || size < 0 {
				return nil, nil, fmt.Errorf("tocluster: source %s: bad snapshot header %q", l.addr, line)
			}
			return l.br, func(consumed int64) error {
				if consumed != size {
					return fmt.Errorf("tocluster: source %s: snapshot of %d bytes, parsed %d", l.addr, size, consumed)
				}
				return nil
			}, nil
		}
		return nil, nil, fmt.Errorf("tocluster: source %s: unexpected %q before the snapshot", l.addr, line)
	}
}

// ack sends REPLCONF ACK. The offset announced is always 0: the master
// needs the ACKs to keep the link, but WAIT must never count the tool as
// a replica holding a write (see doc.go on min-replicas).
func (l *link) ack() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_ = l.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := l.nc.Write(resp.AppendCommandStrings(nil, "REPLCONF", "ACK", "0"))
	return err
}

func (l *link) close() { _ = l.nc.Close() }

// announcer answers, on the listening port the tool announced to the
// source, the requests Sentinels send to a replica they discover there
// (redis-sentinel and ours both connect to every replica at the address
// its master reports): PING, INFO with role:slave, slave_priority:0 and
// replica_announced:0, so that no Sentinel ever promotes the tool and
// SENTINEL REPLICAS does not list it; SUBSCRIBE and PUBLISH of the hello
// channel; and REPLICAOF (a Sentinel repointing its replicas after a
// failover), which is recorded as a hint of the new master.
type announcer struct {
	ln    net.Listener
	runID string

	mu         sync.Mutex
	masterHost string
	masterPort string
	offset     func() int64

	// hint receives "host:port" when a Sentinel sends REPLICAOF.
	hint chan string

	conns sync.WaitGroup
	open  atomic.Int64
}

func newAnnouncer(host string, offset func() int64) (*announcer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("tocluster: listen for Sentinels: %w", err)
	}
	var id [20]byte
	_, _ = rand.Read(id[:])
	a := &announcer{ln: ln, runID: hex.EncodeToString(id[:]), offset: offset, hint: make(chan string, 1)}
	go a.serve()
	return a, nil
}

func (a *announcer) port() int { return a.ln.Addr().(*net.TCPAddr).Port }

func (a *announcer) setMaster(addr string) {
	h, p, _ := net.SplitHostPort(addr)
	a.mu.Lock()
	a.masterHost, a.masterPort = h, p
	a.mu.Unlock()
}

func (a *announcer) close() { _ = a.ln.Close() }

func (a *announcer) serve() {
	for {
		nc, err := a.ln.Accept()
		if err != nil {
			return
		}
		go a.handle(nc)
	}
}

// info is the INFO text of the tool as a replica.
func (a *announcer) info() string {
	a.mu.Lock()
	h, p := a.masterHost, a.masterPort
	a.mu.Unlock()
	off := a.offset()
	var b strings.Builder
	fmt.Fprintf(&b, "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nrun_id:%s\r\ntcp_port:%d\r\n\r\n", a.runID, a.port())
	fmt.Fprintf(&b, "# Replication\r\nrole:slave\r\nmaster_host:%s\r\nmaster_port:%s\r\nmaster_link_status:up\r\n"+
		"master_last_io_seconds_ago:0\r\nmaster_sync_in_progress:0\r\nslave_read_repl_offset:%d\r\nslave_repl_offset:%d\r\n"+
		"slave_priority:0\r\nslave_read_only:1\r\nreplica_announced:0\r\nconnected_slaves:0\r\nmaster_repl_offset:%d\r\n",
		h, p, off, off, off)
	return b.String()
}

func (a *announcer) handle(nc net.Conn) {
	defer nc.Close()
	rd := resp.NewReader(nc, resp.ReaderOptions{MaxBulkLen: 1 << 20, QueryBufferLimit: 1 << 20})
	inMulti := 0
	for {
		_ = nc.SetReadDeadline(time.Now().Add(time.Minute))
		args, err := rd.ReadCommand()
		if err != nil {
			return
		}
		var out []byte
		name := strings.ToLower(string(args[0]))
		if inMulti > 0 && name != "exec" && name != "discard" {
			inMulti++
			a.react(name, args)
			out = resp.AppendSimple(nil, "QUEUED")
		} else {
			switch name {
			case "multi":
				inMulti = 1
				out = resp.AppendOK(nil)
			case "exec":
				n := max(inMulti-1, 0)
				inMulti = 0
				out = resp.AppendArrayLen(nil, n)
				for range n {
					out = resp.AppendOK(out)
				}
			case "discard":
				inMulti = 0
				out = resp.AppendOK(nil)
			case "ping":
				out = resp.AppendSimple(nil, "PONG")
			case "info":
				out = resp.AppendBulkString(nil, a.info())
			case "role":
				a.mu.Lock()
				h, p := a.masterHost, a.masterPort
				a.mu.Unlock()
				port, _ := strconv.ParseInt(p, 10, 64)
				out = resp.AppendArrayLen(nil, 5)
				out = resp.AppendBulkString(out, "slave")
				out = resp.AppendBulkString(out, h)
				out = resp.AppendInt(out, port)
				out = resp.AppendBulkString(out, "connected")
				out = resp.AppendInt(out, a.offset())
			case "subscribe":
				for i, ch := range args[1:] {
					out = resp.AppendArrayLen(out, 3)
					out = resp.AppendBulkString(out, "subscribe")
					out = resp.AppendBulk(out, ch)
					out = resp.AppendInt(out, int64(i+1))
				}
			case "publish":
				out = resp.AppendInt(nil, 0)
			case "config":
				if len(args) >= 2 && bytes.EqualFold(args[1], []byte("get")) {
					// No settings: a Recover that lists the tool among a
					// master's replicas finds it unfenced.
					out = resp.AppendArrayLen(nil, 0)
				} else {
					out = resp.AppendOK(nil)
				}
			default:
				if a.react(name, args) {
					out = resp.AppendOK(nil)
				} else {
					out = resp.AppendError(nil, "ERR unknown command '"+string(args[0])+"'")
				}
			}
		}
		_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

// react handles the administrative commands a Sentinel sends (AUTH,
// CLIENT, CONFIG, SCRIPT KILL, REPLICAOF): it accepts them, and records a
// REPLICAOF target as a hint. It reports whether the command is one of
// them.
func (a *announcer) react(name string, args [][]byte) bool {
	switch name {
	case "auth", "client", "config", "script", "readonly", "select":
		return true
	case "replicaof", "slaveof":
		if len(args) == 3 && !bytes.EqualFold(args[1], []byte("no")) {
			select {
			case a.hint <- net.JoinHostPort(string(args[1]), string(args[2])):
			default:
			}
		}
		return true
	}
	return false
}
