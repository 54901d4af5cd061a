package node

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shardis/shardis/internal/node/admin"
	"github.com/shardis/shardis/internal/node/clients"
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

// pauseState is CLIENT PAUSE (clients.Pause) and DEBUG SLEEP's freeze.
type pauseState struct {
	clients.Pause
	// freeze stops everything during DEBUG SLEEP (debug_freeze.go).
	freeze freezeGate
}

// pauseWaiter is a client as a pause holds it.
type pauseWaiter struct{ c *Client }

func (w pauseWaiter) Exempt() bool          { return w.c.hasFlag(clientReplica | clientMaster) }
func (w pauseWaiter) SetBlocked(on bool)    { w.c.setFlag(clientBlocked, on) }
func (w pauseWaiter) Done() <-chan struct{} { return w.c.done }
func (w pauseWaiter) Closed() bool          { return w.c.closed.Load() }

// wait blocks c while a CLIENT PAUSE applies to cmd (args: its request)
// and reports whether it did. Replicas and the master link are never
// paused here; the master's stream is held before it reaches dispatch
// (streamApplier.hold). Whether cmd writes is decided once, outside the
// pause's lock (pausedWrite may look a script up).
func (p *pauseState) wait(c *Client, cmd *command, args [][]byte) (held bool) {
	if !p.On() {
		return false
	}
	c.clock.ok = false // waited: the command reads the clock itself
	writes := c.pausedWrite(cmd, args)
	return p.Wait(pauseWaiter{c}, func() bool { return writes })
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
