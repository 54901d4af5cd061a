package node

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/resp"
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
	if s.cfg.Bool(DirClusterEnabled) {
		c.addError("ERR REPLICAOF not allowed in cluster mode.")
		return
	}
	if eqFold(args[1], "NO") && eqFold(args[2], "ONE") {
		s.repl.liftRestartGuard()
		if s.repl.becomeMaster() {
			s.log.Info("MASTER MODE enabled (user request from '" + replicaOfRequester(c) + "')")
		}
		c.addOK()
		return
	}
	port, ok := parseInt(args[2])
	if !ok || port < 0 || port > 65535 {
		c.addError("ERR Invalid master port")
		return
	}
	host := string(args[1])
	if !s.repl.becomeReplica(host, int(port)) {
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
	r.link = nil
	r.restartGuard, r.guardRefused = false, false
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
	r.link = nil
	r.mu.Unlock()
	if old == nil {
		return false
	}
	old.stop()
	r.mu.Lock()
	r.restartGuard, r.guardRefused = false, false
	r.shiftReplIDLocked()
	r.createBacklogLocked()
	r.lastDB = -1
	r.mu.Unlock()
	r.srv.SetReplicaMode(false)
	r.forgetLocalExpires()
	_ = r.srv.cfg.Set("replicaof", "")
	return true
}

// REPLCONF option value [option value ...]
func cmdReplConf(c *Client, args [][]byte) {
	r := c.srv.repl
	if len(args)%2 == 0 {
		c.addError(errSyntax)
		return
	}
	for i := 1; i < len(args); i += 2 {
		opt, val := strings.ToLower(string(args[i])), args[i+1]
		switch opt {
		case "listening-port":
			n, ok := parseInt(val)
			if !ok {
				c.addError(errNotInt)
				return
			}
			c.replPort = int(n)
		case "ip-address":
			c.replIP = string(val)
		case "capa":
			switch strings.ToLower(string(val)) {
			case "eof":
				c.replCapaEOF = true
			case "psync2":
				c.replCapaPSync2 = true
			}
		case "ack", "fack":
			n, ok := parseInt(val)
			if !ok {
				return
			}
			r.mu.Lock()
			if ri := r.replicaOf(c); ri != nil {
				if ri.waitAck {
					ri.waitAck = false
					buf := ri.buf
					ri.buf = nil
					c.push(func(out []byte) []byte { return append(out, buf...) })
				}
				if n > ri.ackOffset {
					ri.ackOffset = n
				}
				ri.ackTime = time.Now()
				r.ackCond.Broadcast()
				if ri.state == replStateOnline {
					r.ackRecvLocked(c, n)
				}
			}
			r.mu.Unlock()
			return // no reply to ACK
		case "getack":
			// Only a master sends GETACK; handled by the replica link.
			return
		case "replica-priority":
			// A shardnode replica announces whether it can be promoted
			// (replication_ack.go); sent again on a live link, it gets no
			// reply (the link carries the stream).
			n, ok := parseInt(val)
			if !ok {
				c.addError(errNotInt)
				return
			}
			c.replPrio, c.replPrioKnown = int(n), true
			r.mu.Lock()
			live := r.replicaOf(c) != nil
			if live {
				r.ack.SetEligible(c.id, ackEligible(c))
				r.releaseAcksLocked()
			}
			r.mu.Unlock()
			if live {
				return
			}
		case "rdb-only", "rdb-filter-only":
		default:
			c.addError("ERR Unrecognized REPLCONF option: " + string(args[i]))
			return
		}
	}
	c.addOK()
}

// SYNC: the old full-sync-only protocol.
func cmdSync(c *Client, args [][]byte) { psync(c, "?", -1, false) }

// PSYNC replicationid offset
func cmdPSync(c *Client, args [][]byte) {
	off, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		c.addError(errNotInt)
		return
	}
	if len(args) > 3 {
		if !eqFold(args[3], "FAILOVER") || len(args) > 4 {
			c.addError(errSyntax)
			return
		}
		// Our master is handing over (FAILOVER): promote ourselves first.
		r := c.srv.repl
		r.mu.Lock()
		same := string(args[1]) == r.replid
		r.mu.Unlock()
		if !same {
			c.addError("ERR PSYNC FAILOVER replid must match my replid.")
			return
		}
		// Let the link apply what the old master already sent us (it
		// closes our link when it hands over) before taking over.
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			r.mu.Lock()
			caught := r.offset+1 >= off
			r.mu.Unlock()
			if caught {
				break
			}
		}
		r.becomeMaster()
	}
	psync(c, string(args[1]), off, true)
}

// psync answers a replica's synchronisation request: +CONTINUE with the
// backlog when the requested history is held, otherwise +FULLRESYNC with an
// RDB snapshot taken at exactly the announced offset.
func psync(c *Client, replid string, off int64, isPsync bool) {
	s := c.srv
	r := s.repl
	if c.hasFlag(clientReplica) {
		return
	}
	r.mu.Lock()
	if r.link != nil {
		st := r.link.status().state
		if st != linkConnected {
			r.mu.Unlock()
			c.addError("NOMASTERLINK Can't SYNC while not connected with my master")
			return
		}
	}
	name := replicaName(c)
	s.log.Info("Replica " + name + " asks for synchronization")
	canContinue := isPsync && r.backlog != nil && (replid == r.replid || (replid == r.replid2 && off <= r.secondOffset))
	if canContinue {
		if data, ok := r.backlogFromLocked(off); ok {
			ri := &replicaInfo{c: c, state: replStateOnline, listeningPort: c.replPort, announceIP: c.replIP, capaEOF: c.replCapaEOF, capaPSync2: c.replCapaPSync2, ackTime: time.Now(), ackOffset: off - 1}
			r.replicas = append(r.replicas, ri)
			r.ackJoinLocked(ri)
			r.syncPartialOK++
			c.setFlag(clientReplica, true)
			reply := "+CONTINUE\r\n"
			if c.replCapaPSync2 {
				reply = "+CONTINUE " + r.replid + "\r\n"
			}
			c.flush()
			_ = c.rawWrite(append([]byte(reply), data...))
			r.mu.Unlock()
			s.log.Info(fmt.Sprintf("Partial resynchronization request from %s accepted. Sending %d bytes of backlog starting from offset %d.", name, len(data), off))
			return
		}
		s.log.Info(fmt.Sprintf("Unable to partial resync with replica %s for lack of backlog (Replica request was: %d).", name, off))
	} else if isPsync && replid != "?" {
		if replid != r.replid && replid != r.replid2 {
			s.log.Info(fmt.Sprintf("Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '%s', my replication IDs are '%s' and '%s')", replid, r.replid, r.replid2))
		} else {
			s.log.Info(fmt.Sprintf("Partial resynchronization not accepted: Requested offset for second ID was %d, but I can reply up to %d", off, r.secondOffset))
		}
	}
	if isPsync && replid != "?" && r.guardRefuseLocked(replid, off) {
		r.syncPartialErr++
		r.mu.Unlock()
		c.addError("NOMASTERLINK restarted master with min-replicas-ack: the replica's history is ahead of mine or unknown to me, not resynchronizing it (REPLICAOF NO ONE here lifts this)")
		return
	}
	if isPsync && replid != "?" {
		r.syncPartialErr++
	}
	if !isPsync || replid == "?" {
		s.log.Info("Full resync requested by replica " + name)
	}
	r.syncFull++
	r.createBacklogLocked()
	if s.snapshotRDB == nil {
		r.mu.Unlock()
		c.addError("ERR full resynchronization is not available: no RDB writer")
		return
	}
	// The replica is listed (wait_bgsave) from now on; the writes it
	// buffers before the snapshot are dropped when the snapshot is taken.
	ri := &replicaInfo{c: c, state: replStateWaitBgsave, listeningPort: c.replPort, announceIP: c.replIP, capaEOF: c.replCapaEOF, capaPSync2: c.replCapaPSync2}
	r.replicas = append(r.replicas, ri)
	c.setFlag(clientReplica, true)
	s.seq.Notify() // sequence.go: a replica's input is not waited for
	diskless := c.replCapaEOF && s.cfg.Bool(DirReplDisklessSync)
	r.mu.Unlock()
	if diskless && !r.disklessDelay(c) {
		r.removeReplica(c)
		return
	}
	target := "disk"
	if diskless {
		target = "replicas sockets"
	}
	s.log.Info("Starting BGSAVE for SYNC with target: " + target)
	// Capture a point-in-time snapshot with every shard locked: every
	// later write goes to the replica's buffer.
	s.LockAll()
	r.mu.Lock()
	replidNow, offNow := r.replid, r.offset
	r.lastDB = -1
	ri.buf = nil
	r.mu.Unlock()
	write := s.snapshotRDB()
	s.UnlockAll()

	c.flush()
	// The old SYNC gets the payload with no +FULLRESYNC line.
	if isPsync {
		if err := c.rawWrite([]byte("+FULLRESYNC " + replidNow + " " + strconv.FormatInt(offNow, 10) + "\r\n")); err != nil {
			r.removeReplica(c)
			return
		}
	}
	r.mu.Lock()
	ri.state = replStateSendBulk
	r.mu.Unlock()
	var err error
	if diskless {
		err = repl.WritePayloadEOF(&connWriter{c: c}, write)
	} else {
		err = repl.WritePayload(&connWriter{c: c}, write)
	}
	if err != nil {
		if diskless {
			s.log.Warn("Diskless rdb transfer, last replica dropped, killing fork child.", "replica", name, "err", err)
		} else {
			s.log.Warn("Sending the RDB to replica "+name+" failed", "err", err)
		}
		r.removeReplica(c)
		c.close()
		return
	}
	r.mu.Lock()
	ri.state = replStateOnline
	ri.ackTime = time.Now()
	r.ackJoinLocked(ri)
	if diskless {
		ri.waitAck = true
	} else {
		buf := ri.buf
		ri.buf = nil
		c.push(func(out []byte) []byte { return append(out, buf...) })
	}
	r.mu.Unlock()
	s.log.Info("Synchronization with replica " + name + " succeeded")
}

// connWriter writes a replica's payload on its connection.
type connWriter struct{ c *Client }

func (w *connWriter) Write(p []byte) (int, error) {
	if err := w.c.rawWrite(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WAIT numreplicas timeout
func cmdWait(c *Client, args [][]byte) {
	s := c.srv
	if s.replicaMode.Load() {
		c.addError("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	want, ok := parseInt(args[1])
	if !ok {
		c.addError(errNotInt)
		return
	}
	ms, ok := parseInt(args[2])
	if !ok {
		c.addError("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.addError("ERR timeout is negative")
		return
	}
	r := s.repl
	r.mu.Lock()
	target := r.offset
	count := func() int {
		n := 0
		for _, ri := range r.replicas {
			if ri.state == replStateOnline && ri.ackOffset >= target {
				n++
			}
		}
		return n
	}
	n := count()
	if int64(n) >= want || c.hasFlag(clientMulti) || c.inExec {
		r.mu.Unlock()
		c.addInt(int64(n))
		return
	}
	// Ask every replica for an ACK now.
	r.feedLocked(resp.AppendCommandStrings(nil, "REPLCONF", "GETACK", "*"))
	var deadline time.Time
	if ms > 0 {
		deadline = time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// Wake the waiter at the deadline, or when the client goes away.
		var timer <-chan time.Time
		if !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-timer:
		case <-c.done:
		case <-stop:
			return
		}
		r.mu.Lock()
		r.ackCond.Broadcast()
		r.mu.Unlock()
	}()
	s.blockedClients.Add(1)
	c.parkStart() // sequence.go
	for {
		n = count()
		if int64(n) >= want || c.closed.Load() || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			break
		}
		r.ackCond.Wait()
	}
	c.parkEnd()
	s.blockedClients.Add(-1)
	r.mu.Unlock()
	c.addInt(int64(n))
}

// ROLE
func cmdRole(c *Client, args [][]byte) {
	r := c.srv.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.link == nil {
		c.addArrayLen(3)
		c.addBulkString("master")
		c.addInt(r.offset)
		var online []*replicaInfo
		for _, ri := range r.replicas {
			if ri.state == replStateOnline {
				online = append(online, ri)
			}
		}
		c.addArrayLen(len(online))
		for _, ri := range online {
			c.addArrayLen(3)
			c.addBulkString(ri.ip())
			c.addBulkString(strconv.Itoa(ri.listeningPort))
			c.addBulkString(strconv.FormatInt(ri.ackOffset, 10))
		}
		return
	}
	st := r.link.status()
	c.addArrayLen(5)
	c.addBulkString("slave")
	c.addBulkString(r.link.host)
	c.addInt(int64(r.link.port))
	c.addBulkString(st.state)
	off := r.offset
	if st.state != linkConnected {
		off = -1
	}
	c.addInt(off)
}

// replicaName is how Redis names a replica in its logs: ip:listening-port.
func replicaName(c *Client) string {
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		host = c.addr
	}
	if c.replIP != "" {
		host = c.replIP
	}
	if c.replPort == 0 {
		return c.addr
	}
	return net.JoinHostPort(host, strconv.Itoa(c.replPort))
}

// disklessDelay waits repl-diskless-sync-delay seconds before a diskless
// transfer, as Redis does to let more replicas arrive: replicas arriving
// during a window share its end; repl-diskless-sync-max-replicas waiting
// replicas end it early. A newline is sent every second so the replica
// knows the master is alive. It reports false if the replica went away.
func (r *replication) disklessDelay(c *Client) bool {
	delay := time.Duration(r.srv.cfg.Int(DirReplDisklessSyncDelay)) * time.Second
	if delay <= 0 {
		return true
	}
	r.mu.Lock()
	now := time.Now()
	if r.disklessWindowEnd.Before(now) {
		r.disklessWindowEnd = now.Add(delay)
	}
	end := r.disklessWindowEnd
	r.mu.Unlock()
	lastNL := now
	for {
		now = time.Now()
		if !now.Before(end) {
			return true
		}
		if max := r.srv.cfg.Int(DirReplDisklessSyncMaxReplicas); max > 0 {
			r.mu.Lock()
			waiting := 0
			for _, ri := range r.replicas {
				if ri.state == replStateWaitBgsave {
					waiting++
				}
			}
			r.mu.Unlock()
			if int64(waiting) >= max {
				return true
			}
		}
		if now.Sub(lastNL) >= time.Second && !r.srv.frozen() {
			if err := c.rawWrite([]byte("\n")); err != nil {
				return false
			}
			lastNL = now
		}
		select {
		case <-c.done:
			return false
		case <-time.After(min(100*time.Millisecond, end.Sub(now))):
		}
	}
}

// replicaOfRequester describes the client of a REPLICAOF in the log, as
// Redis's catClientInfoString does.
func replicaOfRequester(c *Client) string {
	return strings.TrimSuffix(c.infoString(c), "\n")
}
