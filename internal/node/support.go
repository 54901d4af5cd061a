package node

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shardis/shardis/internal/node/admin"
	"github.com/shardis/shardis/internal/node/clients"
	"github.com/shardis/shardis/internal/node/clock"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/resp"
)

// ---- MONITOR -------------------------------------------------------------

type monitorHub struct {
	mu      sync.Mutex
	clients map[*Client]struct{}
	n       atomic.Int32
}

func (m *monitorHub) active() bool { return m.n.Load() > 0 }

func (m *monitorHub) add(c *Client) {
	m.mu.Lock()
	if m.clients == nil {
		m.clients = make(map[*Client]struct{})
	}
	m.clients[c] = struct{}{}
	m.n.Store(int32(len(m.clients)))
	m.mu.Unlock()
}

func (m *monitorHub) remove(c *Client) {
	m.mu.Lock()
	delete(m.clients, c)
	m.n.Store(int32(len(m.clients)))
	m.mu.Unlock()
}

// feed sends a command line to every monitor, formatted as Redis does
// (admin.MonitorLine).
func (m *monitorHub) feed(c *Client, args [][]byte) {
	source := c.addr
	if c.hasFlag(clientMaster) || c.inScript {
		source = "lua"
	}
	line := admin.MonitorLine(c.srv.now(), c.db, source, args)
	m.mu.Lock()
	for mc := range m.clients {
		mc.push(func(out []byte) []byte { return resp.AppendSimple(out, line) })
	}
	m.mu.Unlock()
}

// ---- SLOWLOG -------------------------------------------------------------

// slowlogAdd records a command that ran for dur when it passes
// slowlog-log-slower-than (admin.Slowlog).
func (s *Server) slowlogAdd(c *Client, args [][]byte, dur time.Duration) {
	th := s.hot().slowlogSlower
	if th < 0 || dur.Microseconds() < th {
		return
	}
	if c.cmd != nil && c.cmd.flags&flagSkipSlowlog != 0 {
		return
	}
	e := admin.SlowlogEntry{Time: s.now().Unix(), Duration: dur.Microseconds(), Addr: c.addr}
	c.infoMu.Lock()
	e.Name = c.name
	c.infoMu.Unlock()
	// ACL SETUSER's username and rules (passwords) are shown redacted.
	redactFrom := len(args)
	if c.cmd != nil && c.cmd.fullName() == "acl|setuser" {
		redactFrom = 2
	}
	e.Args = admin.SlowlogArgs(args, redactFrom)
	s.slowlog.Add(e, int(s.cfg.Int(config.DirSlowlogMaxLen)))
}

// ---- CLIENT PAUSE ----------------------------------------------------------

type pauseState struct {
	mu    sync.Mutex
	until time.Time
	all   bool // ALL (true) or WRITE (false)
	wake  chan struct{}
	// on is set with until and cleared when the pause ends: commands read
	// it without the lock. A write increments inflightWrites before
	// checking it and a pause sets it before draining them, so one of the
	// two always sees the other.
	on atomic.Bool
	// waiting counts the clients a pause holds (INFO blocked_clients, as
	// Redis counts its postponed clients).
	waiting atomic.Int64
	// changed, if set, is called (with mu held) after on changes.
	changed func()
	// freeze stops everything during DEBUG SLEEP (debug_freeze.go).
	freeze freezeGate
	// clk is the server's clock: a pause ends when it reaches until.
	clk clock.Clock
}

func (p *pauseState) set(until time.Time, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake == nil {
		p.wake = make(chan struct{})
	}
	// A new pause never shortens an active one of a stricter kind.
	now := p.clk.Now()
	if now.Before(p.until) && p.all && !all {
		all = true
	}
	if until.After(p.until) || !now.Before(p.until) {
		p.until = until
	}
	p.all = all
	p.on.Store(true)
	p.notify()
}

// notify calls the changed hook; p.mu is held.
func (p *pauseState) notify() {
	if p.changed != nil {
		p.changed()
	}
}

func (p *pauseState) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.until = time.Time{}
	p.on.Store(false)
	p.notify()
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

func (p *pauseState) expire(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.until.IsZero() && !now.Before(p.until) {
		p.until = time.Time{}
		p.on.Store(false)
		p.notify()
		if p.wake != nil {
			close(p.wake)
			p.wake = nil
		}
	}
}

// wait blocks c while a CLIENT PAUSE applies to cmd and reports whether it
// did. Replicas and the master link are never paused.
func (p *pauseState) wait(c *Client, cmd *command) (held bool) {
	if !p.on.Load() {
		return false
	}
	c.clock.ok = false // waited: the command reads the clock itself
	for {
		p.mu.Lock()
		if p.until.IsZero() || !p.clk.Now().Before(p.until) || c.hasFlag(clientReplica|clientMaster) {
			p.mu.Unlock()
			return held
		}
		flags := cmd.flags
		if cmd.name == "exec" {
			// EXEC is held when its queued commands write.
			flags |= c.multiFlags()
		}
		applies := p.all || flags&(flagWrite|flagMayReplicate) != 0
		if !applies {
			p.mu.Unlock()
			return held
		}
		if p.wake == nil {
			p.wake = make(chan struct{})
		}
		wake, until := p.wake, p.until
		p.mu.Unlock()
		held = true
		c.setFlag(clientBlocked, true)
		p.waiting.Add(1)
		t := p.clk.TimerAt(until)
		select {
		case <-wake:
		case <-t.C():
		case <-c.done:
		}
		t.Stop()
		p.waiting.Add(-1)
		c.setFlag(clientBlocked, false)
		if c.closed.Load() {
			return held // killed while paused: its command never runs (dispatch)
		}
	}
}

// ---- output buffer limits -------------------------------------------------

// pendingLimit tracks client-output-buffer-limit's soft limit timer
// (clients.OutputTimer).
type pendingLimit struct{ clients.OutputTimer }

// exceeded reports whether a pending output of n bytes breaks the limits
// of c's class. Called with c.pmu held.
func (l *pendingLimit) exceeded(c *Client, n int) bool {
	class := clients.ClassNormal
	switch {
	case c.hasFlag(clientReplica):
		class = clients.ClassReplica
	case c.hasFlag(clientPubSub):
		class = clients.ClassPubSub
	}
	return l.Exceeded(&c.srv.hot().outLimits[class], n, c.srv.now)
}

// clientsCron closes idle clients (timeout).
func (s *Server) clientsCron(now time.Time) {
	t := s.cfg.Int(config.DirTimeout)
	if t <= 0 {
		return
	}
	limit := now.Add(-time.Duration(t) * time.Second).UnixMilli()
	s.forEachClient(func(c *Client) {
		if c.hasFlag(clientPubSub | clientReplica | clientMaster | clientBlocked | clientMonitor) {
			return
		}
		if c.lastIO.Load() < limit {
			c.close()
		}
	})
}

// bstr views b as a string without copying; the string is only valid while
// b is unchanged, so it must never be stored.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// sbytes views s as a read-only byte slice without copying.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
