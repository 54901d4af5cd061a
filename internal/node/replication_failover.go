package node

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/node/repl"
)

// coordinatedFailover is a FAILOVER in progress: repl.Failover's machine,
// and the channel that wakes its runner on ABORT.
type coordinatedFailover struct {
	mu    sync.Mutex
	m     repl.Failover
	abort chan struct{}
}

func (f *coordinatedFailover) getState() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.State()
}

// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]
func cmdFailover(c *Client, args [][]byte) {
	s := c.srv
	a, e := repl.ParseFailover(args)
	if e != "" {
		c.addError(e)
		return
	}
	fo := &s.failover
	if a.Abort {
		fo.mu.Lock()
		e = fo.m.Abort()
		if e == "" {
			close(fo.abort)
			fo.abort = nil
		}
		fo.mu.Unlock()
		if e != "" {
			c.addError(e)
			return
		}
		c.addOK()
		return
	}
	r := s.repl
	r.mu.Lock()
	if r.link != nil {
		r.mu.Unlock()
		c.addError(repl.ErrFailoverOnReplica)
		return
	}
	online := r.OnlineForFailoverLocked()
	r.mu.Unlock()
	fo.mu.Lock()
	if e = fo.m.Start(time.Now(), a, online); e != "" {
		fo.mu.Unlock()
		c.addError(e)
		return
	}
	fo.abort = make(chan struct{})
	abortC := fo.abort
	host, port := fo.m.Target()
	fo.mu.Unlock()
	s.pause.set(time.Now().Add(24*time.Hour), false)
	s.drainWrites(5 * time.Second)
	s.log.Info("FAILOVER requested", "target", net.JoinHostPort(host, strconv.Itoa(port)))
	go s.runFailover(abortC)
	c.addOK()
}

// runFailover drives a FAILOVER: it ticks the machine every 20 ms until the target acknowledged our offset (or the timeout
// with FORCE), then promotes it and follows it.
func (s *Server) runFailover(abortC chan struct{}) {
	fo := &s.failover
	r := s.repl
	end := func(reason string) {
		fo.mu.Lock()
		fo.m.End()
		fo.mu.Unlock()
		s.pause.unpause()
		if reason != "" {
			s.log.Warn("FAILOVER aborted", "reason", reason)
		}
	}
	for {
		r.mu.Lock()
		fo.mu.Lock()
		st := fo.m.Tick(time.Now(), r.OnlineForFailoverLocked(), r.OffsetLocked())
		host, port := fo.m.Target()
		fo.mu.Unlock()
		if st.GetAck {
			r.FeedGetAckLocked()
		}
		r.mu.Unlock()
		if st.End {
			end(st.Reason)
			return
		}
		if st.Promote {
			if st.Forced {
				s.log.Info(fmt.Sprintf("FAILOVER to %s:%d time out exceeded, failing over.", host, port))
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
	fo.mu.Lock()
	fo.m.Promoting()
	host, port := fo.m.Target()
	fo.mu.Unlock()
	// As Redis: become a replica of the target at once (never two
	// masters) and send it PSYNC ... FAILOVER, which makes it promote
	// itself before it answers; if it refuses, take the master role back.
	done := make(chan error, 1)
	r.becomeReplicaFailover(host, port, done)
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		err = errors.New("timeout")
	}
	if err != nil {
		r.becomeMaster()
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
