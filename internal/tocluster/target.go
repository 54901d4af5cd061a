package tocluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/resp"
)

// slotMap maps every hash slot to the address of the master serving it.
type slotMap struct {
	owner   [consistent.SlotCount]string
	masters []string // distinct master addresses, in CLUSTER SLOTS order
}

// readSlotMap asks addr for CLUSTER SLOTS and checks that every slot is
// served.
func readSlotMap(ctx context.Context, addr string, auth []string, timeout time.Duration) (*slotMap, error) {
	c, err := dialTarget(ctx, addr, auth, timeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	v, err := c.call(ctx, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, fmt.Errorf("tocluster: CLUSTER SLOTS on %s: %w", addr, err)
	}
	m := &slotMap{}
	seen := map[string]bool{}
	host, _, _ := net.SplitHostPort(addr)
	for _, r := range v.Elems {
		if len(r.Elems) < 3 || len(r.Elems[2].Elems) < 2 {
			return nil, fmt.Errorf("tocluster: malformed CLUSTER SLOTS entry from %s", addr)
		}
		lo, hi := int(r.Elems[0].Int), int(r.Elems[1].Int)
		ip := r.Elems[2].Elems[0].Str
		if ip == "" || ip == "?" {
			ip = host
		}
		a := net.JoinHostPort(ip, strconv.FormatInt(r.Elems[2].Elems[1].Int, 10))
		if lo < 0 || hi >= consistent.SlotCount || lo > hi {
			return nil, fmt.Errorf("tocluster: bad slot range %d-%d from %s", lo, hi, addr)
		}
		for s := lo; s <= hi; s++ {
			m.owner[s] = a
		}
		if !seen[a] {
			seen[a] = true
			m.masters = append(m.masters, a)
		}
	}
	for s, a := range m.owner {
		if a == "" {
			return nil, fmt.Errorf("tocluster: slot %d of the target cluster is not served (cluster_state not ok?)", s)
		}
	}
	return m, nil
}

// op is one request sent on a target connection. done, when set, receives
// the reply; otherwise an error reply is counted against the shard.
type op struct {
	done chan resp.Value
	what string // the command name, for error reports
}

// targetConn is a pipelined connection to one cluster master: requests are
// buffered by send and written by flush; a reader goroutine matches
// replies to requests in order (RESP replies come in request order), so
// when the reply of a request arrives every earlier request on the
// connection has been executed.
type targetConn struct {
	addr string
	nc   net.Conn

	mu      sync.Mutex // guards w and the order of pending
	w       *bufio.Writer
	pending chan *op

	// errs counts error replies to requests sent without a done channel;
	// firstErr keeps the first of them.
	errs     atomic.Int64
	firstErr atomic.Value // string
	// dead is closed when the reader stops; err says why.
	dead chan struct{}
	err  error
}

// maxInFlight bounds the requests waiting for a reply on one connection.
const maxInFlight = 1 << 14

func dialTarget(ctx context.Context, addr string, auth []string, timeout time.Duration) (*targetConn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tocluster: connect %s: %w", addr, err)
	}
	c := &targetConn{addr: addr, nc: nc, w: bufio.NewWriterSize(nc, 64<<10),
		pending: make(chan *op, maxInFlight), dead: make(chan struct{})}
	go c.readLoop()
	if len(auth) > 0 {
		if _, err := c.call(ctx, append([]string{"AUTH"}, auth...)...); err != nil {
			c.close()
			return nil, fmt.Errorf("tocluster: AUTH on %s: %w", addr, err)
		}
	}
	return c, nil
}

func (c *targetConn) readLoop() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	defer close(c.dead)
	for {
		v, err := resp.ReadValue(br)
		if err != nil {
			c.err = err
			return
		}
		o := <-c.pending
		if o.done != nil {
			o.done <- v
			continue
		}
		if v.IsError() {
			if c.errs.Add(1) == 1 {
				c.firstErr.Store(o.what + ": " + v.Str)
			}
		}
	}
}

// send queues a request. A full in-flight window flushes first, so the
// reader can make room.
func (c *targetConn) send(o *op, args [][]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.dead:
		return c.deadErr()
	default:
	}
	if _, err := c.w.Write(resp.AppendCommand(nil, args...)); err != nil {
		return fmt.Errorf("tocluster: write to %s: %w", c.addr, err)
	}
	select {
	case c.pending <- o:
		return nil
	default:
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("tocluster: write to %s: %w", c.addr, err)
	}
	select {
	case c.pending <- o:
		return nil
	case <-c.dead:
		return c.deadErr()
	}
}

func (c *targetConn) deadErr() error {
	return fmt.Errorf("tocluster: connection to %s lost: %v", c.addr, c.err)
}

// flush writes the buffered requests.
func (c *targetConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("tocluster: write to %s: %w", c.addr, err)
	}
	return nil
}

// do sends a request after those queued and waits for its reply.
func (c *targetConn) do(ctx context.Context, args ...[]byte) (resp.Value, error) {
	o := &op{done: make(chan resp.Value, 1), what: string(args[0])}
	if err := c.send(o, args); err != nil {
		return resp.Value{}, err
	}
	if err := c.flush(); err != nil {
		return resp.Value{}, err
	}
	select {
	case v := <-o.done:
		return v, nil
	case <-c.dead:
		return resp.Value{}, c.deadErr()
	case <-ctx.Done():
		return resp.Value{}, ctx.Err()
	}
}

// call is do for string arguments; an error reply is returned as an error.
func (c *targetConn) call(ctx context.Context, args ...string) (resp.Value, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	v, err := c.do(ctx, b...)
	if err != nil {
		return v, err
	}
	if v.IsError() {
		return v, errors.New(v.Str)
	}
	return v, nil
}

// barrier returns once every request sent before it has been answered.
func (c *targetConn) barrier(ctx context.Context) error {
	_, err := c.do(ctx, []byte("PING"))
	return err
}

// failure returns the first error reply counted, if any.
func (c *targetConn) failure() (int64, string) {
	n := c.errs.Load()
	if n == 0 {
		return 0, ""
	}
	s, _ := c.firstErr.Load().(string)
	return n, s
}

func (c *targetConn) close() { _ = c.nc.Close() }

// targets are one shard's connections to the cluster masters.
type targets struct {
	slots *slotMap
	conns map[string]*targetConn
}

// openTargets connects to every master of m, each connection named name
// (CLIENT SETNAME: see ClientName).
func openTargets(ctx context.Context, m *slotMap, auth []string, timeout time.Duration, name string) (*targets, error) {
	t := &targets{slots: m, conns: map[string]*targetConn{}}
	for _, a := range m.masters {
		c, err := dialTarget(ctx, a, auth, timeout)
		if err != nil {
			t.close()
			return nil, err
		}
		t.conns[a] = c
		if _, err := c.call(ctx, "CLIENT", "SETNAME", name); err != nil {
			t.close()
			return nil, fmt.Errorf("tocluster: CLIENT SETNAME on %s: %w", a, err)
		}
	}
	return t, nil
}

func (t *targets) forSlot(slot int) *targetConn { return t.conns[t.slots.owner[slot]] }

func (t *targets) forKey(key []byte) *targetConn {
	return t.forSlot(consistent.KeySlot(string(key)))
}

func (t *targets) flush() error {
	for _, c := range t.conns {
		if err := c.flush(); err != nil {
			return err
		}
	}
	return nil
}

// barrier waits until every request sent so far on every connection has
// been answered, and reports the error replies counted.
func (t *targets) barrier(ctx context.Context) error {
	for _, c := range t.conns {
		if err := c.barrier(ctx); err != nil {
			return err
		}
	}
	return nil
}

// failures sums the error replies of every connection.
func (t *targets) failures() (int64, string) {
	var n int64
	first := ""
	for _, c := range t.conns {
		k, s := c.failure()
		n += k
		if first == "" {
			first = s
		}
	}
	return n, first
}

func (t *targets) close() {
	for _, c := range t.conns {
		c.close()
	}
}

// isMoved reports whether an error text is a cluster redirect: the target
// cluster changed its slot map under the migration.
func isMoved(s string) bool { return strings.HasPrefix(s, "MOVED ") || strings.HasPrefix(s, "ASK ") }
