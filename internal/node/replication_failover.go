package node

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// FAILOVER states (INFO replication master_failover_state).
const (
	failoverNone       = "no-failover"
	failoverWaitSync   = "waiting-for-sync"
	failoverInProgress = "failover-in-progress"
)

// coordinatedFailover is a FAILOVER in progress: writes are paused until
// the target replica has every write, then the target is promoted and this
// node becomes its replica, so no acknowledged write is lost.
type coordinatedFailover struct {
	mu       sync.Mutex
	state    string
	host     string
	port     int
	force    bool
	deadline time.Time
	abort    chan struct{}
}

func (f *coordinatedFailover) getState() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == "" {
		return failoverNone
	}
	return f.state
}

// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]
func cmdFailover(c *Client, args [][]byte) {
	s := c.srv
	r := s.repl
	var host string
	var port int64 = -1
	var timeout int64
	force, abort := false, false
	for i := 1; i < len(args); i++ {
		switch {
		case eqFold(args[i], "TO") && i+2 < len(args) && port < 0:
			host = string(args[i+1])
			p, ok := parseInt(args[i+2])
			if !ok {
				c.addError(errNotInt)
				return
			}
			port = p
			i += 2
		case eqFold(args[i], "FORCE") && !force:
			force = true
		case eqFold(args[i], "ABORT") && !abort:
			abort = true
		case eqFold(args[i], "TIMEOUT") && i+1 < len(args) && timeout == 0:
			n, ok := parseInt(args[i+1])
			if !ok || n <= 0 {
				c.addError("ERR FAILOVER timeout must be greater than 0")
				return
			}
			timeout = n
			i++
		default:
			c.addError(errSyntax)
			return
		}
	}
	fo := &s.failover
	if abort {
		if force || timeout != 0 || port >= 0 {
			c.addError(errSyntax)
			return
		}
		fo.mu.Lock()
		if fo.state == "" || fo.state == failoverNone {
			fo.mu.Unlock()
			c.addError("ERR No failover in progress.")
			return
		}
		close(fo.abort)
		fo.abort = nil
		fo.mu.Unlock()
		c.addOK()
		return
	}
	if force && (timeout == 0 || port < 0) {
		c.addError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
		return
	}
	r.mu.Lock()
	if r.link != nil {
		r.mu.Unlock()
		c.addError("ERR FAILOVER is not valid when server is a replica.")
		return
	}
	var target *replicaInfo
	online := 0
	for _, ri := range r.replicas {
		if ri.state != replStateOnline {
			continue
		}
		online++
		if port >= 0 {
			if ri.ip() == host && int64(ri.listeningPort) == port {
				target = ri
			}
		} else if target == nil || ri.ackOffset > target.ackOffset {
			target = ri
		}
	}
	r.mu.Unlock()
	if online == 0 {
		c.addError("ERR FAILOVER requires connected replicas.")
		return
	}
	if target == nil {
		c.addError("ERR FAILOVER target HOST and PORT is not a replica.")
		return
	}
	fo.mu.Lock()
	if fo.state != "" && fo.state != failoverNone {
		fo.mu.Unlock()
		c.addError("ERR FAILOVER already in progress.")
		return
	}
	fo.state = failoverWaitSync
	fo.host, fo.port, fo.force = target.ip(), target.listeningPort, force
	if port < 0 {
		// No target: the first replica to reach our offset, as Redis.
		fo.host, fo.port = "", 0
	}
	fo.deadline = time.Time{}
	if timeout > 0 {
		fo.deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	fo.abort = make(chan struct{})
	abortC := fo.abort
	fo.mu.Unlock()
	s.pause.set(time.Now().Add(24*time.Hour), false)
	s.drainWrites(5 * time.Second)
	s.log.Info("FAILOVER requested", "target", net.JoinHostPort(fo.host, strconv.Itoa(fo.port)))
	go s.runFailover(abortC)
	c.addOK()
}

// runFailover drives a FAILOVER: wait until the target acknowledged our
// offset (or the timeout with FORCE), promote it, follow it.
func (s *Server) runFailover(abortC chan struct{}) {
	fo := &s.failover
	r := s.repl
	end := func(reason string) {
		fo.mu.Lock()
		fo.state = failoverNone
		fo.mu.Unlock()
		s.pause.unpause()
		if reason != "" {
			s.log.Warn("FAILOVER aborted", "reason", reason)
		}
	}
	fo.mu.Lock()
	host, port, force, deadline := fo.host, fo.port, fo.force, fo.deadline
	fo.mu.Unlock()
	var pickHost string
	var pickPort int
	for {
		r.mu.Lock()
		target := int64(-1)
		for _, ri := range r.replicas {
			if ri.state != replStateOnline {
				continue
			}
			if host == "" {
				// Any replica: the most up to date one.
				if ri.ackOffset > target {
					target = ri.ackOffset
					pickHost, pickPort = ri.ip(), ri.listeningPort
				}
			} else if ri.ip() == host && ri.listeningPort == port {
				target = ri.ackOffset
			}
		}
		off := r.offset
		if target >= 0 && target < off {
			r.feedLocked(resp.AppendCommandStrings(nil, "REPLCONF", "GETACK", "*"))
			off = r.offset
		}
		r.mu.Unlock()
		if target < 0 {
			end("target replica disconnected")
			return
		}
		if target >= off {
			if host == "" {
				host, port = pickHost, pickPort
			}
			break
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			if force {
				s.log.Info(fmt.Sprintf("FAILOVER to %s:%d time out exceeded, failing over.", host, port))
				break
			}
			end("timeout waiting for the target to sync")
			return
		}
		select {
		case <-abortC:
			end("FAILOVER ABORT")
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	fo.mu.Lock()
	fo.state = failoverInProgress
	fo.mu.Unlock()
	// As Redis: become a replica of the target at once (never two
	// masters) and send it PSYNC ... FAILOVER, which makes it promote
	// itself before it answers; if it refuses, take the master role back.
	done := make(chan error, 1)
	s.repl.becomeReplicaFailover(host, port, done)
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		err = errors.New("timeout")
	}
	if err != nil {
		s.repl.becomeMaster()
		end("the target did not take over: " + err.Error())
		return
	}
	end("")
	s.log.Info("FAILOVER done", "new-master", net.JoinHostPort(host, strconv.Itoa(port)))
}

// enterWrite waits while CLIENT PAUSE applies to cmd and, for commands a
// WRITE pause holds back, counts the command as in flight until the caller
// decrements inflightWrites. It reports whether it counted, and whether a
// pause or a DEBUG SLEEP held the command (the caller then checks again
// what may have changed meanwhile: slot ownership, the node's role). A
// pause set between the check and the count is seen by one side or the
// other (sequentially consistent atomics), so drainWrites cannot miss a
// write.
func (s *Server) enterWrite(c *Client, cmd *command) (inflight, held bool) {
	counted := cmd.flags&(flagWrite|flagMayReplicate) != 0 && !c.hasFlag(clientReplica|clientMaster)
	if s.frozen() {
		s.waitUnfrozen(c) // DEBUG SLEEP: every client waits, replicas too
		held = true
	}
	for {
		if s.pause.wait(c, cmd) {
			held = true
		}
		if !counted || c.closed.Load() {
			return false, held
		}
		s.inflightWrites.Add(1)
		if !s.pause.holds(c, cmd) {
			return true, held
		}
		s.inflightWrites.Add(-1)
	}
}

// holds reports whether an active pause holds cmd back.
func (p *pauseState) holds(c *Client, cmd *command) bool {
	if !p.on.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until.IsZero() || !time.Now().Before(p.until) || c.hasFlag(clientReplica|clientMaster) {
		return false
	}
	return p.all || cmd.flags&(flagWrite|flagMayReplicate) != 0
}

// drainWrites waits until no write command is in flight (after a pause
// was set), at most timeout.
func (s *Server) drainWrites(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for s.inflightWrites.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}
