package repl

// FAILOVER: a coordinated hand-over from this master to one of its
// replicas. Writes are paused (by the server) until the target replica has
// every write, then this node becomes the target's replica with PSYNC ...
// FAILOVER, which makes the target promote itself first, so no
// acknowledged write is lost. Failover is the pure state machine of that
// command; the server's runner ticks it and performs its steps.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/node/value"
)

// FAILOVER states (INFO replication master_failover_state).
const (
	FailoverNone       = "no-failover"
	FailoverWaitSync   = "waiting-for-sync"
	FailoverInProgress = "failover-in-progress"
)

// Redis's FAILOVER errors.
const (
	errSyntax             = "ERR syntax error"
	errFailoverTimeout    = "ERR FAILOVER timeout must be greater than 0"
	errFailoverNone       = "ERR No failover in progress."
	errFailoverForce      = "ERR FAILOVER with force option requires both a timeout and target HOST and IP."
	errFailoverNoReplicas = "ERR FAILOVER requires connected replicas."
	errFailoverNotReplica = "ERR FAILOVER target HOST and PORT is not a replica."
	errFailoverRunning    = "ERR FAILOVER already in progress."
	// ErrFailoverOnReplica is the refusal of FAILOVER on a replica.
	ErrFailoverOnReplica = "ERR FAILOVER is not valid when server is a replica."
)

// FailoverArgs is FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms].
type FailoverArgs struct {
	Host    string
	Port    int64 // -1 without TO
	Force   bool
	Abort   bool
	Timeout int64 // milliseconds, 0 without TIMEOUT
}

// ParseFailover parses FAILOVER's arguments (args[0] is the command
// name); the error is Redis's reply.
func ParseFailover(args [][]byte) (FailoverArgs, string) {
	a := FailoverArgs{Port: -1}
	for i := 1; i < len(args); i++ {
		switch {
		case eqFold(args[i], "TO") && i+2 < len(args) && a.Port < 0:
			p, ok := value.ParseInt(args[i+2])
			if !ok {
				return a, ErrNotInt
			}
			a.Host, a.Port = string(args[i+1]), p
			i += 2
		case eqFold(args[i], "FORCE") && !a.Force:
			a.Force = true
		case eqFold(args[i], "ABORT") && !a.Abort:
			a.Abort = true
		case eqFold(args[i], "TIMEOUT") && i+1 < len(args) && a.Timeout == 0:
			n, ok := value.ParseInt(args[i+1])
			if !ok || n <= 0 {
				return a, errFailoverTimeout
			}
			a.Timeout = n
			i++
		default:
			return a, errSyntax
		}
	}
	if a.Abort && (a.Force || a.Timeout != 0 || a.Port >= 0) {
		return a, errSyntax
	}
	if !a.Abort && a.Force && (a.Timeout == 0 || a.Port < 0) {
		return a, errFailoverForce
	}
	return a, ""
}

func eqFold(b []byte, s string) bool { return strings.EqualFold(string(b), s) }

// FailoverReplica is an online replica as the failover sees it.
type FailoverReplica struct {
	IP        string
	Port      int
	AckOffset int64
}

// OnlineForFailoverLocked returns the online replicas for the failover
// machine.
func (m *Master) OnlineForFailoverLocked() []FailoverReplica {
	var out []FailoverReplica
	for _, ri := range m.OnlineLocked() {
		out = append(out, FailoverReplica{IP: ri.IP(), Port: ri.hello.Port, AckOffset: ri.AckOffset})
	}
	return out
}

// Failover is the FAILOVER state machine: no I/O, no clock (times come in
// as arguments), no locking (its owner serialises the calls).
type Failover struct {
	// state is FailoverNone (also the zero value), FailoverWaitSync or
	// FailoverInProgress.
	state string
	// host and port are the target; "" and 0 while any replica will do
	// (the first to reach our offset, as Redis), until Tick picks one.
	host string
	port int
	// force promotes the target at the deadline even if it lags.
	force bool
	// deadline ends the wait for the target's sync; zero for none.
	deadline time.Time
	// aborted is set by Abort, seen by the next Tick.
	aborted bool
}

// State is master_failover_state.
func (f *Failover) State() string {
	if f.state == "" {
		return FailoverNone
	}
	return f.state
}

// Running reports whether a failover is in progress.
func (f *Failover) Running() bool { return f.State() != FailoverNone }

// Abort asks a running failover to stop (FAILOVER ABORT); the error is
// Redis's reply when none runs.
func (f *Failover) Abort() string {
	if !f.Running() {
		return errFailoverNone
	}
	f.aborted = true
	return ""
}

// Start begins a failover with a (parsed, not ABORT) among the online
// replicas at now; the error is Redis's reply. Target returns where it
// goes.
func (f *Failover) Start(now time.Time, a FailoverArgs, online []FailoverReplica) string {
	var target *FailoverReplica
	for i := range online {
		ri := &online[i]
		if a.Port >= 0 {
			if ri.IP == a.Host && int64(ri.Port) == a.Port {
				target = ri
			}
		} else if target == nil || ri.AckOffset > target.AckOffset {
			target = ri
		}
	}
	switch {
	case len(online) == 0:
		return errFailoverNoReplicas
	case target == nil:
		return errFailoverNotReplica
	case f.Running():
		return errFailoverRunning
	}
	*f = Failover{state: FailoverWaitSync, host: target.IP, port: target.Port, force: a.Force}
	if a.Port < 0 {
		// No target: the first replica to reach our offset, as Redis.
		f.host, f.port = "", 0
	}
	if a.Timeout > 0 {
		f.deadline = now.Add(time.Duration(a.Timeout) * time.Millisecond)
	}
	return ""
}

// Target is the failover's target ("" and 0 while any replica will do).
func (f *Failover) Target() (host string, port int) { return f.host, f.port }

// FailoverStep is what the runner does after a Tick.
type FailoverStep struct {
	// GetAck: feed REPLCONF GETACK to the stream (the target lags).
	GetAck bool
	// Promote: the target has our offset (or FORCE at the deadline):
	// become its replica with PSYNC ... FAILOVER (then Promoting).
	Promote bool
	// Forced is set with Promote when the deadline forced it.
	Forced bool
	// End: the failover stopped for Reason (then End).
	End    bool
	Reason string
}

// Tick checks the target's progress: online are the online replicas,
// offset our replication offset (before a GETACK the step asks for).
// Without an End or a Promote the runner ticks again later.
func (f *Failover) Tick(now time.Time, online []FailoverReplica, offset int64) FailoverStep {
	target := int64(-1)
	var pickHost string
	var pickPort int
	for _, ri := range online {
		if f.host == "" {
			// Any replica: the most up to date one.
			if ri.AckOffset > target {
				target = ri.AckOffset
				pickHost, pickPort = ri.IP, ri.Port
			}
		} else if ri.IP == f.host && ri.Port == f.port {
			target = ri.AckOffset
		}
	}
	var st FailoverStep
	if target >= 0 && target < offset {
		st.GetAck = true
	}
	switch {
	case target < 0:
		return FailoverStep{End: true, Reason: "target replica disconnected"}
	case target >= offset:
		if f.host == "" {
			f.host, f.port = pickHost, pickPort
		}
		st.Promote = true
	case !f.deadline.IsZero() && now.After(f.deadline):
		if f.force {
			st.Promote, st.Forced = true, true
		} else {
			st.End, st.Reason = true, "timeout waiting for the target to sync"
		}
	case f.aborted:
		st.End, st.Reason = true, "FAILOVER ABORT"
	}
	return st
}

// Promoting records that the hand-over to the target started.
func (f *Failover) Promoting() { f.state = FailoverInProgress }

// End records that the failover is over (done, aborted or failed).
func (f *Failover) End() { *f = Failover{} }

// Coordinator runs the FAILOVER command: the machine behind its lock and
// the runner that performs its steps. The zero value is ready.
type Coordinator struct {
	mu sync.Mutex
	m  Failover
	// abort wakes the runner on FAILOVER ABORT.
	abort chan struct{}
}

// FailoverHost is the server as a failover's runner sees it.
type FailoverHost interface {
	// Handover makes this node a replica of host:port whose first PSYNC
	// carries FAILOVER (the target promotes itself before it answers);
	// the outcome is sent to done.
	Handover(host string, port int, done chan error)
	// TakeBack makes this node a master again (the target refused).
	TakeBack()
	// Resume ends the pause of writes the failover started with.
	Resume()
}

// State is master_failover_state.
func (c *Coordinator) State() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.State()
}

// Abort is FAILOVER ABORT; the error is Redis's reply.
func (c *Coordinator) Abort() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m.Abort(); e != "" {
		return e
	}
	close(c.abort)
	c.abort = nil
	return ""
}

// Start begins a failover with a among the online replicas at now (the
// caller pauses writes before it runs Run); the error is Redis's reply.
func (c *Coordinator) Start(now time.Time, a FailoverArgs, online []FailoverReplica) (host string, port int, err string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err = c.m.Start(now, a, online); err != "" {
		return "", 0, err
	}
	c.abort = make(chan struct{})
	host, port = c.m.Target()
	return host, port, ""
}

// Run drives the failover Start began, in its own goroutine: it ticks the
// machine every 20 ms until the target acknowledged our offset (or the
// timeout with FORCE), then hands over to the target.
func (c *Coordinator) Run(m *Master, h FailoverHost) {
	c.mu.Lock()
	abortC := c.abort
	c.mu.Unlock()
	end := func(reason string) {
		c.mu.Lock()
		c.m.End()
		c.mu.Unlock()
		h.Resume()
		if reason != "" {
			m.log.Warn("FAILOVER aborted", "reason", reason)
		}
	}
	for {
		m.mu.Lock()
		c.mu.Lock()
		st := c.m.Tick(time.Now(), m.OnlineForFailoverLocked(), m.offset)
		host, port := c.m.Target()
		c.mu.Unlock()
		if st.GetAck {
			m.FeedGetAckLocked()
		}
		m.mu.Unlock()
		if st.End {
			end(st.Reason)
			return
		}
		if st.Promote {
			if st.Forced {
				m.log.Info(fmt.Sprintf("FAILOVER to %s:%d time out exceeded, failing over.", host, port))
			}
			break
		}
		select {
		case <-abortC:
			end("FAILOVER ABORT")
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	c.mu.Lock()
	c.m.Promoting()
	host, port := c.m.Target()
	c.mu.Unlock()
	// As Redis: become a replica of the target at once (never two
	// masters) and send it PSYNC ... FAILOVER, which makes it promote
	// itself before it answers; if it refuses, take the master role back.
	done := make(chan error, 1)
	h.Handover(host, port, done)
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		err = errors.New("timeout")
	}
	if err != nil {
		h.TakeBack()
		end("the target did not take over: " + err.Error())
		return
	}
	end("")
	m.log.Info("FAILOVER done", "new-master", net.JoinHostPort(host, strconv.Itoa(port)))
}
