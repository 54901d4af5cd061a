package node

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/repl"
)

func registerReplicationCommands(t *commandTable) {
	f := flagAdmin | flagNoScript | flagStale
	t.add(&command{name: "replicaof", arity: 3, flags: f, fn: cmdReplicaOf, group: "server", since: "5.0.0"})
	t.add(&command{name: "slaveof", arity: 3, flags: f, fn: cmdReplicaOf, group: "server", since: "1.0.0"})
	t.add(&command{name: "replconf", arity: -1, flags: f | flagLoading | flagSkipMonitor | flagSkipSlowlog, fn: cmdReplConf, group: "server", since: "3.0.0"})
	t.add(&command{name: "psync", arity: -3, flags: f | flagNoMulti, fn: cmdPSync, group: "server", since: "2.8.0"})
	t.add(&command{name: "sync", arity: 1, flags: f | flagNoMulti, fn: cmdSync, group: "server", since: "1.0.0"})
	t.add(&command{name: "wait", arity: 3, flags: flagNoScript, fn: cmdWait, group: "generic", since: "3.0.0"})
	t.add(&command{name: "failover", arity: -1, flags: flagAdmin | flagNoScript | flagStale, fn: cmdFailover, group: "server", since: "6.2.0"})
	t.add(&command{name: "role", arity: 1, flags: flagNoScript | flagLoading | flagStale | flagFast, fn: cmdRole, group: "server", since: "2.8.12"})
}

// REPLICAOF host port | NO ONE
func cmdReplicaOf(c *Client, args [][]byte) {
	s := c.srv
	if s.cfg.Bool(config.DirClusterEnabled) {
		c.addError("ERR REPLICAOF not allowed in cluster mode.")
		return
	}
	host, port, noOne, e := repl.ParseReplicaOf(args)
	switch {
	case e != "":
		c.addError(e)
		return
	case noOne:
		s.repl.LiftRestartGuard()
		if s.repl.becomeMaster() {
			s.log.Info("MASTER MODE enabled (user request from '" + replicaOfRequester(c) + "')")
		}
		c.addOK()
		return
	}
	if !s.repl.becomeReplica(host, port) {
		c.addSimple("OK Already connected to specified master")
		return
	}
	s.log.Info(fmt.Sprintf("REPLICAOF %s:%d enabled (user request from '%s')", host, port, replicaOfRequester(c)))
	c.addOK()
}

// becomeReplica points this node at a master. It reports false if it
// already replicates from that address.
func (r *replication) becomeReplica(host string, port int) bool {
	return r.becomeReplicaFailover(host, port, nil)
}

// becomeReplicaFailover is becomeReplica for FAILOVER: the link's first
// PSYNC carries FAILOVER and its outcome is sent to done.
func (r *replication) becomeReplicaFailover(host string, port int, done chan error) bool {
	r.mu.Lock()
	old := r.link
	if old != nil && old.host == host && old.port == port {
		r.mu.Unlock()
		return false
	}
	r.setLinkLocked(nil)
	r.LiftRestartGuardLocked()
	r.mu.Unlock()
	wasMaster := old == nil
	if old != nil {
		old.stop()
	}
	r.srv.SetReplicaMode(true)
	if wasMaster {
		// Clients blocked on keys of a master can never be served by a
		// replica: Redis unblocks them with an error and closes them.
		r.srv.disconnectBlockedClients()
	}
	// Our own replicas stay connected, as in Redis 7: they resync (PSYNC2)
	// when our replication id changes or after our full sync.
	r.mu.Lock()
	r.startLinkLocked(host, port, done)
	r.mu.Unlock()
	_ = r.srv.cfg.Set("replicaof", host+" "+strconv.Itoa(port))
	return true
}

// becomeMaster stops replicating (REPLICAOF NO ONE) and starts a new
// replication history, keeping the old one as replid2 (PSYNC2).
func (r *replication) becomeMaster() bool {
	r.mu.Lock()
	old := r.link
	r.setLinkLocked(nil)
	r.mu.Unlock()
	if old == nil {
		return false
	}
	old.stop()
	r.mu.Lock()
	r.LiftRestartGuardLocked()
	r.ShiftReplIDLocked()
	// Our replicas must learn the new id: they reconnect and continue
	// with a partial resync (Redis's replicationUnsetMaster).
	r.DisconnectReplicasLocked()
	r.CreateBacklogLocked()
	r.ForceSelectLocked()
	r.mu.Unlock()
	r.srv.SetReplicaMode(false)
	r.localExp.Reset()
	_ = r.srv.cfg.Set("replicaof", "")
	return true
}

// REPLCONF option value [option value ...]
func cmdReplConf(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.addError(errSyntax)
		return
	}
	for i := 1; i < len(args); i += 2 {
		e, noReply := c.srv.repl.ReplConf((*replicaConn)(c), &c.replHello, string(args[i]), args[i+1])
		if e != "" {
			c.addError(e)
			return
		}
		if noReply {
			return
		}
	}
	c.addOK()
}

// SYNC: the old full-sync-only protocol.
func cmdSync(c *Client, args [][]byte) { psync(c, "?", -1, false) }

// PSYNC replicationid offset [FAILOVER]
func cmdPSync(c *Client, args [][]byte) {
	a, e := repl.ParsePSync(args)
	if e != "" {
		c.addError(e)
		return
	}
	if a.Failover {
		// Our master is handing over (FAILOVER): promote ourselves first.
		r := c.srv.repl
		r.mu.Lock()
		same := a.ReplID == r.ReplIDLocked()
		r.mu.Unlock()
		if !same {
			c.addError("ERR PSYNC FAILOVER replid must match my replid.")
			return
		}
		// Let the link apply what the old master already sent us (it
		// closes our link when it hands over) before taking over.
		r.CatchUp(a.Offset, time.Second)
		r.becomeMaster()
	}
	psync(c, a.ReplID, a.Offset, true)
}

// psync answers a replica's synchronisation request (repl.Master.Sync).
func psync(c *Client, replid string, off int64, isPsync bool) {
	if c.hasFlag(clientReplica) {
		return
	}
	hello := c.replHello
	hello.Addr = c.addr
	if e := c.srv.repl.Sync((*replicaConn)(c), hello, replid, off, isPsync, int(c.srv.hot().minReplicasAck)); e != "" {
		c.addError(e)
	}
}

// WAIT numreplicas timeout
func cmdWait(c *Client, args [][]byte) {
	s := c.srv
	if s.replicaMode.Load() {
		c.addError("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	want, timeout, e := repl.ParseWait(args)
	if e != "" {
		c.addError(e)
		return
	}
	block := !c.hasFlag(clientMulti) && !c.inExec
	c.addInt(int64(s.repl.WaitAcked(want, timeout, block, (*waitClient)(c))))
}

// waitClient is a client blocked in WAIT (repl.Waiter).
type waitClient Client

func (w *waitClient) Done() <-chan struct{} { return w.done }
func (w *waitClient) Closed() bool          { return w.closed.Load() }
func (w *waitClient) Park()                 { w.srv.blockedClients.Add(1); (*Client)(w).parkStart() }
func (w *waitClient) Unpark()               { (*Client)(w).parkEnd(); w.srv.blockedClients.Add(-1) }

// ROLE
func cmdRole(c *Client, args [][]byte) {
	r := c.srv.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.replying() {
		if r.link == nil {
			c.out = r.AppendRoleLocked(c.out)
		} else {
			c.out = r.link.AppendRole(c.out, r.OffsetLocked())
		}
	}
}

// replicaOfRequester describes the client of a REPLICAOF in the log, as
// Redis's catClientInfoString does.
func replicaOfRequester(c *Client) string {
	return strings.TrimSuffix(c.infoString(c), "\n")
}
