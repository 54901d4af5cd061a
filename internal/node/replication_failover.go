package node

import (
	"net"
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/node/script"
)

// failoverDrain bounds FAILOVER's wait for the writes in flight when its
// pause starts.
const failoverDrain = 5 * time.Second

// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]
//
// Outside MULTI the reply comes after every write accepted before the
// pause (drainWrites). Queued in MULTI, as in Redis (no no-multi flag),
// it pauses writes and replies OK at once; the transaction's later
// commands still run, and the failover starts once the EXEC and the other
// writes in flight have ended.
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
		if !c.inExec {
			s.drainWrites(failoverDrain)
		}
		s.log.Info("FAILOVER requested", "target", net.JoinHostPort(host, strconv.Itoa(port)))
		go func() {
			// Inside EXEC the transaction is itself a write in flight
			// (its commands after FAILOVER run too, as in Redis) and
			// holds the locks other writes in flight may wait for: the
			// runner, not the handler, waits for them, so every write
			// accepted before the pause is in the stream before the
			// first offset check. Outside EXEC they are already done.
			s.drainWrites(failoverDrain)
			s.failover.Run(r.Master, failoverHost{s})
		}()
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
// WRITE pause holds back (an EXEC whose queued commands write among them),
// counts the command as in flight until the caller decrements
// inflightWrites. It reports whether it counted, and whether a pause or a
// DEBUG SLEEP held the command (the caller then checks again what may have
// changed meanwhile: slot ownership, the node's role). A pause set between
// the check and the count is seen by one side or the other (sequentially
// consistent atomics), so drainWrites cannot miss a write.
func (s *Server) enterWrite(c *Client, cmd *command, args [][]byte) (inflight, held bool) {
	counted := c.writes(cmd) && !c.hasFlag(clientReplica|clientMaster)
	if s.frozen() {
		s.waitUnfrozen(c) // DEBUG SLEEP: every client waits, replicas too
		held = true
	}
	for {
		if s.pause.wait(c, cmd, args) {
			held = true
		}
		if !counted || c.closed.Load() {
			return false, held
		}
		s.inflightWrites.Add(1)
		if !s.pause.holds(c, cmd, args) {
			return true, held
		}
		s.inflightWrites.Add(-1)
	}
}

// writes reports whether cmd counts as a write in flight: a write or a
// command that may replicate (every script call, whatever it declares),
// or an EXEC that queued one. It is what a pause may hold, or more
// (pausedWrite): counting a command that is not held only makes a drain
// wait for it too.
func (c *Client) writes(cmd *command) bool {
	return cmd.flags&(flagWrite|flagMayReplicate) != 0 ||
		cmd.name == "exec" && cmd.parent == nil && c.multiFlags()&(flagWrite|flagMayReplicate) != 0
}

// pausedWrite reports whether CLIENT PAUSE WRITE holds cmd (args: its
// request): a write or a command that may replicate, but a script that
// declares its flags by the flags, writing unless no-writes (Redis's
// scriptFlagsToCmdFlags), and an EXEC by its queued commands (Redis's
// mstate.cmd_flags). Called only while a pause is on: it may look a
// script up.
func (c *Client) pausedWrite(cmd *command, args [][]byte) bool {
	if cmd.name == "exec" && cmd.parent == nil {
		for _, q := range c.multi {
			if qc := c.srv.queuedCommand(q); qc != nil && c.pausedWrite(qc, q) {
				return true
			}
		}
		return false
	}
	if cmd.flags&flagLockScript != 0 {
		if f, ok := c.declaredFlags(cmd, args); ok {
			return f&script.FlagNoWrites == 0
		}
	}
	return cmd.flags&(flagWrite|flagMayReplicate) != 0
}

// holds reports whether an active pause holds cmd back.
func (p *pauseState) holds(c *Client, cmd *command, args [][]byte) bool {
	if !p.On() {
		return false
	}
	exempt := c.hasFlag(clientReplica | clientMaster)
	return p.Holds(exempt, !exempt && c.pausedWrite(cmd, args))
}

// drainWrites waits until no write command is in flight (after a pause
// was set), at most timeout.
func (s *Server) drainWrites(timeout time.Duration) bool {
	return s.drainWritesTo(0, timeout)
}

// drainWritesTo waits until at most own write commands are in flight (the
// caller's own), at most timeout.
func (s *Server) drainWritesTo(own int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for s.inflightWrites.Load() > own {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// pauseBeforeExec starts the CLIENT PAUSE queued in c's transaction before
// EXEC takes the transaction's locks, and waits, as CLIENT PAUSE outside
// MULTI does, until the writes of other clients that passed the pause
// check before it have run (at most d). The transaction then runs as if
// the pause were its first command: no write of another client starts
// between the pause and the transaction's commands, so an INFO
// replication in it reads an offset no write already accepted will move.
// The wait happens before the locks because a write in flight may need a
// lock the transaction takes; parked, so sequenced commands do not wait
// for this client either.
//
// An EXEC that writes is itself a write in flight. It leaves the count
// while it waits for execPauseMu, the one EXEC at a time that pauses and
// drains, and enters again through the pause check under that lock: two
// such EXECs never wait for each other's writes, and the second is held
// by the first one's pause, as Redis, which runs them one after the
// other, would hold it. undo puts the pause back as it was if the
// transaction aborts; ok is false when the client was killed while held
// (its transaction never runs).
func (s *Server) pauseBeforeExec(c *Client, exec *command, d time.Duration, all bool) (undo func(), ok bool) {
	r := &c.req // EXEC's request: its in-flight count
	c.parkStart()
	defer c.parkEnd()
	if r.inflight {
		s.inflightWrites.Add(-1)
		r.inflight = false
	}
	counted := c.writes(exec) && !c.hasFlag(clientReplica|clientMaster)
	for {
		if counted {
			s.pause.wait(c, exec, nil)
		}
		if c.closed.Load() {
			return nil, false
		}
		s.execPauseMu.Lock()
		if !counted {
			break
		}
		s.inflightWrites.Add(1)
		if !s.pause.holds(c, exec, nil) {
			r.inflight = true
			break
		}
		s.inflightWrites.Add(-1)
		s.execPauseMu.Unlock()
	}
	defer s.execPauseMu.Unlock()
	undo = s.pause.SetUndoable(s.now().Add(d), all)
	var own int64
	if r.inflight {
		own = 1
	}
	s.drainWritesTo(own, d)
	return undo, true
}
