package repl

// The master's answers to a replica: REPLCONF, and PSYNC (or SYNC) with
// either a partial resync from the backlog or a full one with an RDB
// snapshot taken at exactly the announced offset.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/value"
)

// ReplConf applies one REPLCONF option a replica (or a client about to
// become one) sent on conn, whose announcements so far are hello. It
// returns the error to reply, if any, and whether the request gets no
// reply at all (an ACK, a GETACK, or a priority repeated on a live link:
// those arrive on the link that carries the stream).
func (m *Master) ReplConf(conn ReplicaConn, hello *Hello, opt string, val []byte) (errText string, noReply bool) {
	switch strings.ToLower(opt) {
	case "listening-port":
		n, ok := value.ParseInt(val)
		if !ok {
			return ErrNotInt, false
		}
		hello.Port = int(n)
	case "ip-address":
		hello.IP = string(val)
	case "capa":
		switch strings.ToLower(string(val)) {
		case "eof":
			hello.CapaEOF = true
		case "psync2":
			hello.CapaPSync2 = true
		}
	case "ack", "fack":
		if n, ok := value.ParseInt(val); ok {
			m.recvAck(conn, n)
		}
		return "", true
	case "getack":
		// Only a master sends GETACK; handled by the replica link.
		return "", true
	case "replica-priority":
		// A shardnode replica announces whether it can be promoted
		// (ackwait.go); sent again on a live link, it gets no reply.
		n, ok := value.ParseInt(val)
		if !ok {
			return ErrNotInt, false
		}
		hello.Prio, hello.PrioKnown = int(n), true
		m.mu.Lock()
		ri := m.replicaOf(conn.ID())
		if ri != nil {
			ri.hello.Prio, ri.hello.PrioKnown = hello.Prio, true
			m.ack.SetEligible(ri.conn.ID(), ri.hello.Eligible())
			m.releaseAcksLocked()
		}
		m.mu.Unlock()
		return "", ri != nil
	case "rdb-only", "rdb-filter-only":
	default:
		return "ERR Unrecognized REPLCONF option: " + opt, false
	}
	return "", false
}

// ErrNotInt is Redis's reply to an argument that is not an integer.
const ErrNotInt = "ERR value is not an integer or out of range"

// recvAck records a replica's REPLCONF ACK of offset n.
func (m *Master) recvAck(conn ReplicaConn, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ri := m.replicaOf(conn.ID())
	if ri == nil {
		return
	}
	if ri.waitAck {
		ri.waitAck = false
		buf := ri.buf
		ri.buf = nil
		conn.Push(buf)
	}
	if n > ri.AckOffset {
		ri.AckOffset = n
	}
	ri.AckTime = time.Now()
	m.ackCond.Broadcast()
	if ri.State == ReplicaOnline && m.ack.Ack(conn.ID(), n) && len(m.ackWaiters) > 0 {
		m.releaseAcksLocked()
	}
}

// CatchUp waits, at most d, until this replica applied the stream up to
// off (PSYNC ... FAILOVER: the old master's last bytes may still be in
// flight when it hands over).
func (m *Master) CatchUp(off int64, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		m.mu.Lock()
		caught := m.offset+1 >= off
		m.mu.Unlock()
		if caught {
			return
		}
	}
}

// Sync answers a replica's synchronisation request (PSYNC replid off, or
// the old SYNC when psync is false: a full sync with no +FULLRESYNC line).
// It returns the error to reply, or "" when the connection became a
// replica (or was dropped) and gets no reply. ackNeed is min-replicas-ack.
func (m *Master) Sync(conn ReplicaConn, hello Hello, replid string, off int64, psync bool, ackNeed int) string {
	m.mu.Lock()
	if m.host.LinkDown() {
		m.mu.Unlock()
		return "NOMASTERLINK Can't SYNC while not connected with my master"
	}
	name := hello.Name()
	m.log.Info("Replica " + name + " asks for synchronization")
	if psync && m.backlog != nil && (replid == m.replid || (replid == m.replid2 && off <= m.secondOffset)) {
		if data, ok := m.backlog.From(off, m.offset); ok {
			ri := &Replica{conn: conn, hello: hello, State: ReplicaOnline, AckTime: time.Now(), AckOffset: off - 1}
			m.replicas = append(m.replicas, ri)
			m.joinAckLocked(ri)
			m.syncPartialOK++
			conn.Attach()
			reply := "+CONTINUE\r\n"
			if hello.CapaPSync2 {
				reply = "+CONTINUE " + m.replid + "\r\n"
			}
			conn.Flush()
			_ = conn.WriteRaw(append([]byte(reply), data...))
			m.mu.Unlock()
			m.log.Info(fmt.Sprintf("Partial resynchronization request from %s accepted. Sending %d bytes of backlog starting from offset %d.", name, len(data), off))
			return ""
		}
		m.log.Info(fmt.Sprintf("Unable to partial resync with replica %s for lack of backlog (Replica request was: %d).", name, off))
	} else if psync && replid != "?" {
		if replid != m.replid && replid != m.replid2 {
			m.log.Info(fmt.Sprintf("Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '%s', my replication IDs are '%s' and '%s')", replid, m.replid, m.replid2))
		} else {
			m.log.Info(fmt.Sprintf("Partial resynchronization not accepted: Requested offset for second ID was %d, but I can reply up to %d", off, m.secondOffset))
		}
	}
	if psync && replid != "?" && m.guardRefuseLocked(replid, off, ackNeed) {
		m.syncPartialErr++
		m.mu.Unlock()
		return "NOMASTERLINK restarted master with min-replicas-ack: the replica's history is ahead of mine or unknown to me, not resynchronizing it (REPLICAOF NO ONE here lifts this)"
	}
	if psync && replid != "?" {
		m.syncPartialErr++
	}
	if !psync || replid == "?" {
		m.log.Info("Full resync requested by replica " + name)
	}
	m.syncFull++
	m.CreateBacklogLocked()
	st := m.host.MasterSettings()
	if !st.CanSnapshot {
		m.mu.Unlock()
		return "ERR full resynchronization is not available: no RDB writer"
	}
	// The replica is listed (wait_bgsave) from now on; the writes it
	// buffers before the snapshot are dropped when the snapshot is taken.
	ri := &Replica{conn: conn, hello: hello, State: ReplicaWaitBgsave}
	m.replicas = append(m.replicas, ri)
	conn.Attach()
	m.host.ReplicaListed()
	m.mu.Unlock()
	m.fullSync(ri, st, psync)
	return ""
}

// fullSync sends a replica listed in wait_bgsave a snapshot of the
// dataset, then the stream from the snapshot's offset.
func (m *Master) fullSync(ri *Replica, st MasterSettings, psync bool) {
	conn, name := ri.conn, ri.hello.Name()
	diskless := ri.hello.CapaEOF && st.DisklessSync
	if diskless && !m.disklessDelay(conn, st) {
		m.RemoveReplica(conn.ID())
		return
	}
	target := "disk"
	if diskless {
		target = "replicas sockets"
	}
	m.log.Info("Starting BGSAVE for SYNC with target: " + target)
	// A point-in-time snapshot with every write held back: every later
	// write goes to the replica's buffer.
	var replid string
	var off int64
	write := m.host.Snapshot(func() {
		m.mu.Lock()
		replid, off = m.replid, m.offset
		m.lastDB = -1
		ri.buf = nil
		m.mu.Unlock()
	})
	conn.Flush()
	// The old SYNC gets the payload with no +FULLRESYNC line.
	if psync {
		if err := conn.WriteRaw([]byte("+FULLRESYNC " + replid + " " + strconv.FormatInt(off, 10) + "\r\n")); err != nil {
			m.RemoveReplica(conn.ID())
			return
		}
	}
	m.mu.Lock()
	ri.State = ReplicaSendBulk
	m.mu.Unlock()
	var err error
	if diskless {
		err = WritePayloadEOF(rawWriter{conn}, write)
	} else {
		err = WritePayload(rawWriter{conn}, write)
	}
	if err != nil {
		if diskless {
			m.log.Warn("Diskless rdb transfer, last replica dropped, killing fork child.", "replica", name, "err", err)
		} else {
			m.log.Warn("Sending the RDB to replica "+name+" failed", "err", err)
		}
		m.RemoveReplica(conn.ID())
		conn.Close()
		return
	}
	m.mu.Lock()
	ri.State = ReplicaOnline
	ri.AckTime = time.Now()
	m.joinAckLocked(ri)
	if diskless {
		ri.waitAck = true
	} else {
		buf := ri.buf
		ri.buf = nil
		conn.Push(buf)
	}
	m.mu.Unlock()
	m.log.Info("Synchronization with replica " + name + " succeeded")
}

// rawWriter writes a replica's payload on its connection.
type rawWriter struct{ c ReplicaConn }

func (w rawWriter) Write(p []byte) (int, error) {
	if err := w.c.WriteRaw(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// disklessDelay waits repl-diskless-sync-delay before a diskless transfer,
// as Redis does to let more replicas arrive: replicas arriving during a
// window share its end; repl-diskless-sync-max-replicas waiting replicas
// end it early. A newline is sent every second so the replica knows the
// master is alive. It reports false if the replica went away.
func (m *Master) disklessDelay(conn ReplicaConn, st MasterSettings) bool {
	if st.DisklessDelay <= 0 {
		return true
	}
	m.mu.Lock()
	now := time.Now()
	if m.disklessWindowEnd.Before(now) {
		m.disklessWindowEnd = now.Add(st.DisklessDelay)
	}
	end := m.disklessWindowEnd
	m.mu.Unlock()
	lastNL := now
	for {
		now = time.Now()
		if !now.Before(end) {
			return true
		}
		if st.DisklessMaxReplicas > 0 {
			m.mu.Lock()
			waiting := 0
			for _, ri := range m.replicas {
				if ri.State == ReplicaWaitBgsave {
					waiting++
				}
			}
			m.mu.Unlock()
			if int64(waiting) >= st.DisklessMaxReplicas {
				return true
			}
		}
		if now.Sub(lastNL) >= time.Second && !m.host.Frozen() {
			if err := conn.WriteRaw([]byte("\n")); err != nil {
				return false
			}
			lastNL = now
		}
		select {
		case <-conn.Done():
			return false
		case <-time.After(min(100*time.Millisecond, end.Sub(now))):
		}
	}
}
