package repl

// What the master side reports: INFO replication's fields, ROLE, WAIT.

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// InfoArgs are the values INFO's master fields need besides the master's
// own state.
type InfoArgs struct {
	Now time.Time
	// Settings are the directives (min-replicas-to-write and its lag,
	// repl-backlog-size, min-replicas-ack-timeout).
	Settings MasterSettings
	// BacklogSize is repl-backlog-size as configured (INFO shows it, not
	// the ring's floored size).
	BacklogSize int64
	// AckNeed is min-replicas-ack.
	AckNeed int
	// FailoverState is master_failover_state.
	FailoverState string
}

// InfoLocked renders INFO replication's fields from connected_slaves on
// (the role and a replica's link fields come before, from the server).
func (m *Master) InfoLocked(b *strings.Builder, a InfoArgs) {
	fmt.Fprintf(b, "connected_slaves:%d\r\n", len(m.replicas))
	if n := a.Settings.MinReplicasToWrite; n > 0 && !m.linked {
		fmt.Fprintf(b, "min_slaves_good_slaves:%d\r\n", m.GoodReplicasLocked(a.Now, a.Settings.MinReplicasMaxLag))
	}
	if n := a.AckNeed; n > 0 && !m.linked {
		// Fields redis-server lacks: our Sentinel reads them for its
		// election rule (internal/sentinel, docs/ARCHITECTURE.md
		// "Acknowledged writes").
		m.SyncAckNeedLocked(n)
		fmt.Fprintf(b, "min_replicas_ack:%d\r\nmin_replicas_ack_timeout:%d\r\nmin_replicas_ack_eligible:%d\r\nmin_replicas_acked_offset:%d\r\nmin_replicas_ack_timeouts:%d\r\nmin_replicas_ack_restart_refused:%d\r\n",
			n, a.Settings.AckTimeout, m.ack.Eligible(), m.ack.Acked(), m.ackTimeouts.Load(), boolInt(m.guardRefused))
		// The Sentinel fence (fence.go): our Sentinel waits for the lease
		// before it reads the replicas' offsets.
		fmt.Fprintf(b, "min_replicas_ack_sentinels:%d\r\nmin_replicas_ack_sentinel_lease:%d\r\nmin_replicas_ack_fenced:%d\r\n",
			m.fence.Sentinels(), SentinelLease.Milliseconds(), boolInt(m.fencedLocked(a.Now)))
	}
	for i, ri := range m.replicas {
		lag := int64(0)
		if !ri.AckTime.IsZero() {
			lag = int64(a.Now.Sub(ri.AckTime).Seconds())
		}
		fmt.Fprintf(b, "slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d\r\n", i, ri.IP(), ri.hello.Port, ri.State, ri.AckOffset, lag)
	}
	fmt.Fprintf(b, "master_failover_state:%s\r\n", a.FailoverState)
	fmt.Fprintf(b, "master_replid:%s\r\nmaster_replid2:%s\r\n", m.replid, m.replid2)
	fmt.Fprintf(b, "master_repl_offset:%d\r\nsecond_repl_offset:%d\r\n", m.offset, m.secondOffset)
	active, first := 0, int64(0)
	if m.backlog != nil {
		active = 1
		first = m.offset - int64(m.backlog.Histlen()) + 1
	}
	fmt.Fprintf(b, "repl_backlog_active:%d\r\nrepl_backlog_size:%d\r\nrepl_backlog_first_byte_offset:%d\r\nrepl_backlog_histlen:%d\r\n",
		active, a.BacklogSize, first, m.backlog.Histlen())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// AppendRoleLocked appends a master's ROLE reply: "master", the offset,
// and each online replica's ip, port and acknowledged offset.
func (m *Master) AppendRoleLocked(b []byte) []byte {
	online := m.OnlineLocked()
	b = resp.AppendArrayLen(b, 3)
	b = resp.AppendBulkString(b, "master")
	b = resp.AppendInt(b, m.offset)
	b = resp.AppendArrayLen(b, len(online))
	for _, ri := range online {
		b = resp.AppendArrayLen(b, 3)
		b = resp.AppendBulkString(b, ri.IP())
		b = resp.AppendBulkInt(b, int64(ri.hello.Port))
		b = resp.AppendBulkInt(b, ri.AckOffset)
	}
	return b
}

// Waiter is a client blocked in WAIT.
type Waiter interface {
	// Done is closed when the client goes away.
	Done() <-chan struct{}
	// Closed reports whether the client was closed.
	Closed() bool
	// Park tells the server the client blocks (its input is not waited
	// for), Unpark that it runs again.
	Park()
	Unpark()
}

// WaitAcked returns how many online replicas acknowledged the offset as of
// the call, waiting (when block) until want of them did, the client left,
// or timeout passed (0: no timeout). REPLCONF GETACK asks them at once.
func (m *Master) WaitAcked(want int64, timeout time.Duration, block bool, w Waiter) int {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	n, _ := m.waitAcks(func(acked, _ int) bool { return int64(acked) >= want || !block }, deadline, w)
	return n
}

// WaitAll waits, at most d, until every online replica acknowledged the
// offset as of the call (true, or there is none).
func (m *Master) WaitAll(d time.Duration) bool {
	_, behind := m.waitAcks(func(_, behind int) bool { return behind == 0 }, time.Now().Add(d), nil)
	return behind == 0
}

// waitAcks waits until enough reports true of the online replicas that
// acknowledged the offset as of the call and of those behind it, or the
// deadline (if not zero) passed, or w left; it asks the replicas with
// GETACK when they are not enough at once.
func (m *Master) waitAcks(enough func(acked, behind int) bool, deadline time.Time, w Waiter) (acked, behind int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	target := m.offset
	count := func() (int, int) {
		a, b := 0, 0
		for _, ri := range m.replicas {
			if ri.State != ReplicaOnline {
				continue
			}
			if ri.AckOffset >= target {
				a++
			} else {
				b++
			}
		}
		return a, b
	}
	if acked, behind = count(); enough(acked, behind) {
		return acked, behind
	}
	// Ask every replica for an ACK now.
	m.FeedLocked(getAckCmd)
	stop := make(chan struct{})
	defer close(stop)
	var done <-chan struct{}
	if w != nil {
		done = w.Done()
		w.Park()
		defer w.Unpark()
	}
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
		case <-done:
		case <-stop:
			return
		}
		m.mu.Lock()
		m.ackCond.Broadcast()
		m.mu.Unlock()
	}()
	for {
		acked, behind = count()
		if enough(acked, behind) || (w != nil && w.Closed()) || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			return acked, behind
		}
		m.ackCond.Wait()
	}
}

// Info renders INFO replication's fields of a replica's link, role:slave
// to master_link_down_since_seconds; applied is the applied offset.
func (l *Link) Info(b *strings.Builder, now time.Time, applied int64) {
	st := l.Status()
	b.WriteString("role:slave\r\n")
	fmt.Fprintf(b, "master_host:%s\r\nmaster_port:%d\r\n", l.host, l.port)
	up := "down"
	if st.State == StateConnected {
		up = "up"
	}
	fmt.Fprintf(b, "master_link_status:%s\r\n", up)
	last := int64(-1)
	if !st.LastIO.IsZero() {
		last = int64(now.Sub(st.LastIO).Seconds())
	}
	fmt.Fprintf(b, "master_last_io_seconds_ago:%d\r\n", last)
	inSync := 0
	if st.State == StateTransfer {
		inSync = 1
	}
	fmt.Fprintf(b, "master_sync_in_progress:%d\r\n", inSync)
	fmt.Fprintf(b, "slave_read_repl_offset:%d\r\nslave_repl_offset:%d\r\n", l.ReadOffset(applied), applied)
	if inSync == 1 {
		fmt.Fprintf(b, "master_sync_total_bytes:%d\r\nmaster_sync_read_bytes:%d\r\nmaster_sync_left_bytes:%d\r\nmaster_sync_perc:0.00\r\nmaster_sync_last_io_seconds_ago:0\r\n", st.SyncTotal, st.SyncRead, st.SyncTotal-st.SyncRead)
	}
	if st.State != StateConnected {
		secs := int64(-1)
		if !st.DownSince.IsZero() {
			secs = int64(now.Sub(st.DownSince).Seconds())
		}
		fmt.Fprintf(b, "master_link_down_since_seconds:%d\r\n", secs)
	}
}

// AppendRole appends a replica's ROLE reply: "slave", the master's host and
// port, the link state, and the applied offset (-1 while not connected).
func (l *Link) AppendRole(b []byte, applied int64) []byte {
	st := l.Status()
	b = resp.AppendArrayLen(b, 5)
	b = resp.AppendBulkString(b, "slave")
	b = resp.AppendBulkString(b, l.host)
	b = resp.AppendInt(b, int64(l.port))
	b = resp.AppendBulkString(b, st.State)
	if st.State != StateConnected {
		applied = -1
	}
	return resp.AppendInt(b, applied)
}
