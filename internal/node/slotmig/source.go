package slotmig

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// The source task: it runs on the connection the target opened with
// CLUSTER SYNCSLOTS START. The connection carries, source to target,
// "+OK", the snapshot (per key a SET, or a RESTORE ... REPLACE ABSTTL for
// a type other than string; slot by slot),
// CLUSTER SYNCSLOTS SNAPSHOT-EOF, the live writes, and CLUSTER SYNCSLOTS
// PAUSED once writes to the slots are held; target to source, CLUSTER
// SYNCSLOTS ACK <applied-bytes> (every 20 ms once the snapshot is
// applied and on the target's replicas) and CLUSTER SYNCSLOTS HANDOFF
// <epoch>, which the source's client loop dispatches as commands with
// their replies off.

// source is a source task's running state.
type source struct {
	e *Engine
	t *Task
	c SourceConn // the target's connection
	g *Gate

	out outStream
	// acked is the stream length the target reported applied (ACK);
	// ackCh is signalled at every ACK.
	acked   atomic.Int64
	ackCh   chan struct{}
	handoff chan uint64 // HANDOFF received: the target's claim epoch

	failOnce sync.Once
	failed   chan struct{} // closed on a failure seen outside run (tap, queue limit)
}

// outStream is the stream to the target: appended to under the written
// keys' locks (the tap), so an append only copies bytes; one writer
// goroutine sends it.
type outStream struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	spare  []byte
	closed bool
	sent   int64
	pushed int64 // bytes ever pushed: the stream's length
}

func (o *outStream) push(b []byte) {
	o.mu.Lock()
	if !o.closed {
		o.buf = append(o.buf, b...)
		o.pushed += int64(len(b))
		o.cond.Broadcast()
	}
	o.mu.Unlock()
}

func (o *outStream) length() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pushed
}

func (o *outStream) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Broadcast()
	o.mu.Unlock()
}

// waitBelow waits until at most n bytes are unsent, or the stream closed.
func (o *outStream) waitBelow(n int) {
	o.mu.Lock()
	for len(o.buf) > n && !o.closed {
		o.cond.Wait()
	}
	o.mu.Unlock()
}

// writer sends the stream until it is closed or the connection fails.
func (ms *source) writer() {
	o := &ms.out
	for {
		o.mu.Lock()
		for len(o.buf) == 0 && !o.closed {
			o.cond.Wait()
		}
		if len(o.buf) == 0 {
			o.mu.Unlock()
			return
		}
		if len(o.buf) > queueLimit {
			o.mu.Unlock()
			ms.fail(errors.New("slotmig: the target reads the stream too slowly"))
			return
		}
		b := o.buf
		o.buf = o.spare[:0]
		o.mu.Unlock()
		_ = ms.c.SetWriteDeadline(time.Now().Add(ms.e.h.Settings().ReplTimeout))
		_, err := ms.c.Write(b)
		o.mu.Lock()
		o.sent += int64(len(b))
		if cap(b) <= 2*queueSoft {
			o.spare = b[:0] // two buffers in turn, not one per write
		}
		o.cond.Broadcast()
		o.mu.Unlock()
		if err != nil {
			ms.fail(fmt.Errorf("slotmig: writing to the target: %w", err))
			return
		}
	}
}

func (ms *source) fail(err error) {
	ms.failOnce.Do(func() {
		ms.t.fail(err)
		close(ms.failed)
		ms.out.close()
	})
}

// StartSource is CLUSTER SYNCSLOTS START <id> <target-id> <start> <end>
// [...] on the source: checks, then the task takes the connection c over
// (the caller turned its replies off). The error is the reply's text.
func (e *Engine) StartSource(c SourceConn, id, target string, ranges [][2]int) error {
	rt := e.h.Routing()
	if rt.MyMaster >= 0 {
		return errors.New("ERR Only a master can migrate slots")
	}
	me := rt.Nodes[rt.Me].ID
	if target == me {
		return errors.New("ERR Can't migrate slots to myself")
	}
	known := false
	for _, n := range rt.Nodes {
		if n.ID == target {
			known = true
		}
	}
	if !known {
		return fmt.Errorf("ERR Unknown node %s", target)
	}
	t := newTask(OpMigrate, ranges, me, target)
	t.id = id
	for _, slot := range t.slots {
		if rt.Owner(slot) != rt.Me {
			return fmt.Errorf("ERR I'm not the owner of hash slot %d", slot)
		}
	}
	ms := &source{e: e, t: t, c: c, ackCh: make(chan struct{}, 1), handoff: make(chan uint64, 1), failed: make(chan struct{})}
	ms.out.cond = sync.NewCond(&ms.out.mu)
	ms.g = newGate(t)
	t.src = ms
	if err := e.add(t); err != nil {
		return err
	}
	e.addTap()
	e.gate.Store(ms.g)
	t.setState(StateSyncing)
	go ms.run()
	return nil
}

// Ack is CLUSTER SYNCSLOTS ACK <id> <applied> from the connection c.
func (e *Engine) Ack(id string, c SourceConn, applied int64) {
	if t := e.Find(id); t != nil && t.src != nil && t.src.c == c {
		t.src.acked.Store(applied)
		select {
		case t.src.ackCh <- struct{}{}:
		default:
		}
	}
}

// Handoff is CLUSTER SYNCSLOTS HANDOFF <id> <epoch>: the target claimed
// the slots with epoch.
func (e *Engine) Handoff(id string, epoch uint64) {
	if t := e.Find(id); t != nil && t.src != nil {
		select {
		case t.src.handoff <- epoch:
		default:
		}
	}
}

// run is the source task.
func (ms *source) run() {
	t, e := ms.t, ms.e
	defer close(t.done)
	go ms.writer()
	ms.out.push([]byte("+OK\r\n"))
	e.log.Info("slotmig: migrating slots", "id", t.id, "slots", rangesText(t.ranges), "target", t.dest)
	if err := ms.snapshot(); err != nil {
		ms.rollback(err)
		return
	}
	t.setState(StateStreaming)
	e.log.Info("slotmig: snapshot sent", "id", t.id, "keys", t.keys.Load())
	// Pause once the target reports (ACK) that what it has not applied
	// yet is short, so the pause lasts about the time to apply that
	// much. Its first ACK also says the snapshot is on its replicas.
	set := e.h.Settings()
	lagDeadline := time.NewTimer(set.ReplTimeout)
	defer lagDeadline.Stop()
	for acks := 0; acks == 0 || ms.out.length()-ms.acked.Load() > set.HandoffMaxLag; acks++ {
		select {
		case <-ms.ackCh:
		case <-lagDeadline.C:
			ms.rollback(errors.New("slotmig: the target never came within cluster-slot-migration-handoff-max-lag-bytes"))
			return
		case <-ms.failed:
			ms.rollback(nil)
			return
		case <-ms.c.Done():
			ms.rollback(errors.New("slotmig: the target closed the connection"))
			return
		case <-t.cancel:
			ms.rollback(errors.New("slotmig: canceled"))
			return
		}
	}
	t.setState(StateHandoff)
	start := time.Now()
	ms.g.pause()
	if !ms.g.drain(set.WritePauseTimeout) {
		// PAUSED was not sent: the target cannot claim.
		ms.rollback(errors.New("slotmig: writes in flight did not finish within the pause timeout"))
		return
	}
	ms.out.push(resp.AppendCommand(nil, []byte("CLUSTER"), []byte("SYNCSLOTS"), []byte("PAUSED")))
	timer := time.NewTimer(set.WritePauseTimeout - time.Since(start))
	defer timer.Stop()
	for {
		select {
		case epoch := <-ms.handoff:
			ms.finish(epoch, start)
			return
		case <-e.routeWake:
			if ms.targetOwns() {
				ms.finish(0, start)
				return
			}
			continue
		case <-timer.C:
			t.fail(errors.New("slotmig: write pause timeout"))
		case <-ms.c.Done():
		case <-ms.failed:
		case <-t.cancel:
		}
		break
	}
	// The target may or may not have claimed the slots: ask it. Writes
	// stay held until it answers, so no write is accepted here that the
	// target's copy lacks.
	ms.out.close()
	ms.c.Close()
	ms.resolve(start)
}

// snapshot sends every key of the slots, one slot at a time under the
// slot's lock, and turns the slot's live stream on in the same lock
// hold: each write to the slot is in the copy or in the stream. Slots
// are independent of each other, so several workers (one per lane of
// the target, numLanes) dump them at once, each slot whole.
func (ms *source) snapshot() error {
	var next atomic.Int64
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for range numLanes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b []byte
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ms.t.slots) {
					return
				}
				var err error
				select {
				case <-ms.failed:
					return
				case <-ms.c.Done():
					err = errors.New("slotmig: the target closed the connection")
				case <-ms.t.cancel:
					err = errors.New("slotmig: canceled")
				default:
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				slot := ms.t.slots[i]
				b = ms.e.h.SnapshotSlot(slot, b[:0], func(b []byte, n int) {
					ms.g.live[slot].Store(true)
					ms.out.push(b)
					ms.t.keys.Add(int64(n))
				})
				ms.out.waitBelow(queueSoft)
				if cap(b) > 4<<20 {
					b = nil
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	ms.out.push(resp.AppendCommand(nil, []byte("CLUSTER"), []byte("SYNCSLOTS"), []byte("SNAPSHOT-EOF"), []byte(strconv.FormatInt(ms.t.keys.Load(), 10))))
	return nil
}

// targetOwns reports whether the routing binds every slot of the task to
// the target.
func (ms *source) targetOwns() bool {
	rt := ms.e.h.Routing()
	for _, slot := range ms.t.slots {
		o := rt.Owner(slot)
		if o < 0 || rt.Nodes[o].ID != ms.t.dest {
			return false
		}
	}
	return true
}

// finish completes the flip on the source: the target's claim applied
// (epoch 0: the bus applied it already), writes released (they re-check
// the routing and get MOVED), the slots' keys trimmed.
func (ms *source) finish(epoch uint64, pauseStart time.Time) {
	e, t := ms.e, ms.t
	if epoch > 0 {
		if err := e.h.YieldSlots(t.dest, epoch, t.slots); err != nil {
			e.log.Warn("slotmig: yield", "err", err)
		}
	}
	// The gate stays installed, released for good: a write that passed
	// the redirect check before the flip meets it and checks again.
	ms.g.done.Store(true)
	ms.g.unpause()
	pause := time.Since(pauseStart)
	t.mu.Lock()
	t.pauseMs = pause.Milliseconds()
	t.epoch = epoch
	t.mu.Unlock()
	ms.out.close()
	n := e.trim(t.slots)
	t.setState(StateCompleted)
	e.log.Info("slotmig: slots migrated", "id", t.id, "slots", rangesText(t.ranges), "target", t.dest, "keys", t.keys.Load(), "trimmed", n, "write_pause", pause)
}

// rollback ends the task before any pause: the source keeps the slots.
func (ms *source) rollback(err error) {
	t := ms.t
	if err != nil {
		t.fail(err)
	}
	ms.e.gate.CompareAndSwap(ms.g, nil)
	ms.g.unpause()
	ms.out.close()
	ms.c.Close()
	select {
	case <-t.cancel:
		t.setState(StateCanceled)
	default:
		t.setState(StateFailed)
	}
	ms.e.log.Warn("slotmig: migration rolled back; this node keeps the slots", "id", t.id, "err", t.lastErr)
}

// resolve asks the target, after a pause timeout or a lost connection,
// whether it claimed the slots (CLUSTER SYNCSLOTS QUERY): the target
// answers CLAIMED, or aborts the task for good and answers ABORTED. Until
// it answers, writes to the slots stay held; one question per 100 ms.
func (ms *source) resolve(pauseStart time.Time) {
	e, t := ms.e, ms.t
	for attempt := 1; ; attempt++ {
		if ms.targetOwns() {
			ms.finish(0, pauseStart)
			return
		}
		claimed, epoch, err := ms.query()
		if err == nil {
			if claimed {
				ms.finish(epoch, pauseStart)
				return
			}
			t.mu.Lock()
			t.pauseMs = time.Since(pauseStart).Milliseconds()
			t.mu.Unlock()
			ms.rollback(nil)
			return
		}
		if attempt == 1 || attempt%50 == 0 {
			e.log.Warn("slotmig: writes to the slots stay paused until the target answers", "id", t.id, "err", err)
		}
		t.mu.Lock()
		t.retries++
		t.mu.Unlock()
		select {
		case epoch := <-ms.handoff:
			ms.finish(epoch, pauseStart)
			return
		case <-e.routeWake:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// query asks the target about the task over a new connection.
func (ms *source) query() (claimed bool, epoch uint64, err error) {
	e, t := ms.e, ms.t
	addr := nodeAddr(e.h, t.dest)
	if addr == "" {
		return false, 0, fmt.Errorf("slotmig: target %s unknown", t.dest)
	}
	nc, err := net.DialTimeout("tcp", addr, dialWait)
	if err != nil {
		return false, 0, fmt.Errorf("slotmig: query: %w", err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(dialWait))
	br := bufio.NewReader(nc)
	set := e.h.Settings()
	var out []byte
	if set.MasterAuth != "" {
		out = appendAuth(out, set.MasterUser, set.MasterAuth)
	}
	out = resp.AppendCommand(out, append([][]byte{[]byte("CLUSTER"), []byte("SYNCSLOTS"), []byte("QUERY"), []byte(t.id)}, rangeArgs(t.ranges)...)...)
	if _, err := nc.Write(out); err != nil {
		return false, 0, fmt.Errorf("slotmig: query: %w", err)
	}
	if set.MasterAuth != "" {
		if v, err := resp.ReadValue(br); err != nil || v.IsError() {
			return false, 0, errors.New("slotmig: query: auth failed")
		}
	}
	v, err := resp.ReadValue(br)
	if err != nil {
		return false, 0, fmt.Errorf("slotmig: query: %w", err)
	}
	if v.IsError() {
		return false, 0, fmt.Errorf("slotmig: query: %s", v.Str)
	}
	switch word, rest, _ := strings.Cut(v.Str, " "); word {
	case "CLAIMED":
		ep, _ := strconv.ParseUint(rest, 10, 64)
		return true, ep, nil
	case "ABORTED":
		return false, 0, nil
	}
	return false, 0, fmt.Errorf("slotmig: query: unexpected answer %q", v.Str)
}

// nodeAddr returns the client address of the node id, "" if unknown.
func nodeAddr(h Host, id string) string {
	for _, n := range h.Routing().Nodes {
		if n.ID == id {
			return net.JoinHostPort(n.IP, strconv.Itoa(n.Port))
		}
	}
	return ""
}
