package node

import (
	"net"
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/node/repl"
)

// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]
func cmdFailover(c *Client, args [][]byte) {
	s := c.srv
	a, e := repl.ParseFailover(args)
	switch {
	case e != "":
	case a.Abort:
		e = s.failover.Abort()
	default:
		r := s.repl
		r.mu.Lock()
		if r.link != nil {
			r.mu.Unlock()
			c.addError(repl.ErrFailoverOnReplica)
			return
		}
		online := r.OnlineForFailoverLocked()
		r.mu.Unlock()
		var host string
		var port int
		if host, port, e = s.failover.Start(time.Now(), a, online); e != "" {
			break
		}
		s.pause.Set(s.now().Add(24*time.Hour), false)
		s.drainWrites(5 * time.Second)
		s.log.Info("FAILOVER requested", "target", net.JoinHostPort(host, strconv.Itoa(port)))
		go s.failover.Run(r.Master, failoverHost{s})
	}
	if e != "" {
		c.addError(e)
		return
	}
	c.addOK()
}

// failoverHost is the server as FAILOVER's runner sees it.
type failoverHost struct{ s *Server }

func (h failoverHost) Handover(host string, port int, done chan error) {
	h.s.repl.becomeReplicaFailover(host, port, done)
}
func (h failoverHost) TakeBack() { h.s.repl.becomeMaster() }
func (h failoverHost) Resume()   { h.s.pause.Unpause() }

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
	if !p.On() {
		return false
	}
	return p.Holds(c.hasFlag(clientReplica|clientMaster), cmd.flags&(flagWrite|flagMayReplicate) != 0)
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
