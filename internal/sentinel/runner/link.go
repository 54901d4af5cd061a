package runner

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/sentinel"
)

// helloChannel is the channel Sentinels exchange hello messages on.
const helloChannel = "__sentinel__:hello"

// request is one command sent on a link; done gets the reply.
type request struct {
	args []string
	done func(v resp.Value, err error)
}

// link is the outbound connection to one instance: a command connection
// served by one goroutine, plus (for masters and replicas) a pubsub
// connection subscribed to __sentinel__:hello.
type link struct {
	r       *Runner
	addr    sentinel.Addr
	role    sentinel.Role
	user    string
	pass    string
	reqs    chan request
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	up      bool   // command connection established
	localIP string // our address on the command connection
}

const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 5 * time.Second
)

func newLink(r *Runner, a sentinel.Action) *link {
	ctx, cancel := context.WithCancel(r.ctx)
	return &link{r: r, addr: a.Addr, role: a.Role, user: a.AuthUser, pass: a.AuthPass,
		reqs: make(chan request, 256), ctx: ctx, cancel: cancel}
}

func (l *link) isUp() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up
}

func (l *link) local() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.localIP
}

// send queues a command; it never blocks.
func (l *link) send(args []string, done func(resp.Value, error)) {
	select {
	case l.reqs <- request{args, done}:
	default:
	}
}

func (l *link) close() { l.cancel() }

// dial connects and authenticates one connection.
func (l *link) dial(kind string) (net.Conn, *bufio.Reader, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(l.ctx, "tcp", net.JoinHostPort(l.addr.IP, strconv.Itoa(l.addr.Port)))
	if err != nil {
		return nil, nil, fmt.Errorf("sentinel: connect %s: %w", l.addr, err)
	}
	br := bufio.NewReader(c)
	var cmds [][]string
	if l.pass != "" {
		if l.user != "" {
			cmds = append(cmds, []string{"AUTH", l.user, l.pass})
		} else {
			cmds = append(cmds, []string{"AUTH", l.pass})
		}
	}
	cmds = append(cmds, []string{"CLIENT", "SETNAME", "sentinel-" + l.r.myID8() + "-" + kind})
	for _, cmd := range cmds {
		if _, err := roundTrip(c, br, cmd); err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("sentinel: handshake %s: %w", l.addr, err)
		}
	}
	return c, br, nil
}

// roundTrip writes one command and reads its reply. Replies saying the
// connection is not authenticated are errors; other error replies are
// returned as values.
func roundTrip(c net.Conn, br *bufio.Reader, args []string) (resp.Value, error) {
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := c.Write(resp.AppendCommandStrings(nil, args...)); err != nil {
		return resp.Value{}, err
	}
	v, err := resp.ReadValue(br)
	if err == nil && v.IsError() && authError(v.Str) {
		err = fmt.Errorf("%s: %s", args[0], v.Str)
	}
	return v, err
}

// authError reports a reply saying the connection is not authenticated:
// the link is then dropped, so the instance shows as disconnected. A failed
// AUTH alone is not fatal (as in Redis): the connection may still work as
// the default user.
func authError(s string) bool {
	return strings.HasPrefix(s, "NOAUTH") || strings.HasPrefix(s, "NOPERM")
}

// run serves the command connection until it fails or the link closes.
func (l *link) run() {
	defer l.r.linkGone(l)
	c, br, err := l.dial("cmd")
	if err != nil {
		l.r.log.Debug("sentinel: link failed", "addr", l.addr.String(), "err", err)
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Time{}) // the handshake's deadline must not outlive it
	if ta, ok := c.LocalAddr().(*net.TCPAddr); ok {
		l.mu.Lock()
		l.localIP = ta.IP.String()
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.up = true
	l.mu.Unlock()
	l.r.step(sentinel.LinkUp{Addr: l.addr})
	if l.role != sentinel.RoleSentinel {
		go l.runPubSub()
	}
	go func() { <-l.ctx.Done(); c.Close() }()
	// A reader goroutine notices a closed connection at once (not at the
	// next command) and matches replies to requests in order.
	inflight := make(chan request, cap(l.reqs)+1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer l.cancel()
		for {
			v, err := resp.ReadValue(br)
			if err != nil {
				return
			}
			var req request
			select {
			case req = <-inflight:
			default:
				return // a reply nobody asked for: protocol out of sync
			}
			if v.IsError() && authError(v.Str) {
				return
			}
			if req.done != nil {
				req.done(v, nil)
			}
		}
	}()
	defer func() { c.Close(); <-readerDone }()
	for {
		select {
		case <-l.ctx.Done():
			return
		case req := <-l.reqs:
			select {
			case inflight <- req:
			default:
				return // too many unanswered commands: reconnect
			}
			_ = c.SetWriteDeadline(time.Now().Add(ioTimeout))
			if _, err := c.Write(resp.AppendCommandStrings(nil, req.args...)); err != nil {
				return
			}
		}
	}
}

// runPubSub keeps a subscription to __sentinel__:hello while the link lives.
func (l *link) runPubSub() {
	for l.ctx.Err() == nil {
		l.subscribeOnce()
		select {
		case <-l.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (l *link) subscribeOnce() {
	c, br, err := l.dial("pubsub")
	if err != nil {
		return
	}
	defer c.Close()
	go func() { <-l.ctx.Done(); c.Close() }()
	if _, err := c.Write(resp.AppendCommandStrings(nil, "SUBSCRIBE", helloChannel)); err != nil {
		return
	}
	for {
		_ = c.SetReadDeadline(time.Time{})
		v, err := resp.ReadValue(br)
		if err != nil {
			return
		}
		if len(v.Elems) == 3 && v.Elems[0].Str == "message" && v.Elems[1].Str == helloChannel {
			l.r.step(sentinel.HelloReceived{Payload: v.Elems[2].Str})
		}
	}
}
