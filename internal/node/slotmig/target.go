package slotmig

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// The target task (CLUSTER MIGRATION IMPORT): it reads the source's
// stream as a replica reads its master's, applying every command through
// the node's Applier, so the writes reach this node's replicas and AOF as
// any write does.

// StartImport is CLUSTER MIGRATION IMPORT on the target. The error is the
// reply's text.
func (e *Engine) StartImport(ranges [][2]int) (*Task, error) {
	rt := e.h.Routing()
	if rt.MyMaster >= 0 {
		return nil, errors.New("ERR Only a master can import slots")
	}
	src := int32(-1)
	for _, r := range ranges {
		for slot := r[0]; slot <= r[1]; slot++ {
			o := rt.Owner(slot)
			switch {
			case o == rt.Me:
				return nil, fmt.Errorf("ERR Slot %d is already served by this node", slot)
			case o < 0:
				return nil, fmt.Errorf("ERR Slot %d is not assigned to any node", slot)
			case src >= 0 && o != src:
				return nil, errors.New("ERR Slots are served by more than one node")
			}
			src = o
		}
	}
	t := newTask(OpImport, ranges, rt.Nodes[src].ID, rt.Nodes[rt.Me].ID)
	t.id = newID()
	if err := e.add(t); err != nil {
		return nil, err
	}
	go e.runImport(t)
	return t, nil
}

// errAborted ends an import whose abort was decided elsewhere (CANCEL,
// or the source's QUERY).
var errAborted = errors.New("slotmig: aborted")

// runImport is the target task: import, then the claim; on any failure
// before the claim, the imported keys are dropped.
func (e *Engine) runImport(t *Task) {
	defer close(t.done)
	e.log.Info("slotmig: importing slots", "id", t.id, "slots", rangesText(t.ranges), "source", t.source)
	err := e.importSlots(t)
	if err == nil {
		return
	}
	t.mu.Lock()
	claimed := t.claimed
	if !claimed {
		t.aborted = true
	}
	t.mu.Unlock()
	if claimed {
		// Only the HANDOFF message failed: the source learns the claim
		// from the bus, or asks.
		t.setState(StateCompleted)
		return
	}
	select {
	case <-t.cancel:
		t.fail(errors.New("canceled"))
		e.trimCancels.Add(1)
		n := e.trim(t.slots)
		t.setState(StateCanceled)
		e.log.Warn("slotmig: import canceled; imported keys dropped", "id", t.id, "keys", n)
	default:
		t.fail(err)
		n := e.trim(t.slots)
		t.setState(StateFailed)
		e.log.Warn("slotmig: import failed; imported keys dropped", "id", t.id, "err", err, "keys", n)
	}
}

// importSlots runs the protocol up to the claim.
func (e *Engine) importSlots(t *Task) error {
	// Keys left in the slots by an earlier import that did not complete
	// (this node restarted meanwhile) are not ours: start clean.
	e.trim(t.slots)
	addr := nodeAddr(e.h, t.source)
	if addr == "" {
		return fmt.Errorf("slotmig: source %s unknown", t.source)
	}
	nc, err := net.DialTimeout("tcp", addr, dialWait)
	if err != nil {
		return fmt.Errorf("slotmig: connect to the source: %w", err)
	}
	defer nc.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-t.cancel:
			nc.Close()
		case <-stop:
		}
	}()
	var wmu sync.Mutex
	send := func(args ...string) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = nc.SetWriteDeadline(time.Now().Add(dialWait))
		_, err := nc.Write(resp.AppendCommandStrings(nil, args...))
		return err
	}
	set := e.h.Settings()
	auth := set.MasterAuth != ""
	var hello []byte
	if auth {
		hello = appendAuth(hello, set.MasterUser, set.MasterAuth)
	}
	hello = resp.AppendCommand(hello, append([][]byte{[]byte("CLUSTER"), []byte("SYNCSLOTS"), []byte("START"), []byte(t.id), []byte(t.dest)}, rangeArgs(t.ranges)...)...)
	if _, err := nc.Write(hello); err != nil {
		return fmt.Errorf("slotmig: start: %w", err)
	}
	rd := resp.NewReader(nc, resp.ReaderOptions{MaxBulkLen: 1 << 40})
	timeout := set.ReplTimeout
	next := func() ([][]byte, error) {
		for {
			args, err := rd.Next()
			if err == resp.ErrIncomplete {
				_ = nc.SetReadDeadline(time.Now().Add(timeout))
				if err := rd.Fill(); err != nil {
					select {
					case <-t.cancel:
						return nil, errAborted
					default:
					}
					return nil, fmt.Errorf("slotmig: reading the source's stream: %w", err)
				}
				continue
			}
			if err == nil {
				rd.Recycle() // every command is copied (chunk.add) before the next Fill
			}
			return args, err
		}
	}
	if auth {
		if _, err := next(); err != nil {
			return err
		}
	}
	first, err := next()
	if err != nil {
		return err
	}
	if len(first) == 0 || !bytes.HasPrefix(first[0], []byte("+OK")) {
		return fmt.Errorf("slotmig: the source refused: %s", strings.TrimPrefix(string(bytes.Join(first, []byte(" "))), "-"))
	}
	t.setState(StateSyncing)
	ln := newLanes(e.log, e.h.Propagates, t, func() Applier { return e.h.NewApplier(nc) }, numLanes())
	// The lanes end before the task does: a rollback's trim runs after
	// the last imported write, never before it.
	claimed := false
	defer func() { ln.close(!claimed) }()
	defer func() { e.log.Info("slotmig: stream applied", "id", t.id, "bytes", rd.Consumed()) }()
	var txn [][][]byte // a transaction of the source being read, MULTI first
	txnSlot := -1
	syncing := true // RESTOREs are the snapshot's keys until SNAPSHOT-EOF
	for {
		before := rd.Consumed()
		args, err := next()
		if err != nil {
			return err
		}
		if txn == nil && len(args) >= 3 && eqFold(args[0], "cluster") && eqFold(args[1], "syncslots") {
			// Every command before a control message is applied first.
			ln.sync(rd.Consumed())
			switch {
			case eqFold(args[2], "snapshot-eof"):
				syncing = false
				if len(args) >= 4 {
					if n, err := strconv.ParseInt(string(args[3]), 10, 64); err == nil {
						if extra := t.keys.Load() - n; extra > 0 {
							t.keys.Add(-extra)
							t.cmds.Add(extra)
						}
					}
				}
				t.setState(StateStreaming)
				e.log.Info("slotmig: snapshot applied", "id", t.id, "keys", t.keys.Load())
				go func() {
					// The snapshot must be on this node's replicas
					// before the source pauses writes; then ACK the
					// applied length until the task ends.
					if !e.h.WaitReplicasAck(timeout) {
						nc.Close()
						return
					}
					tk := time.NewTicker(20 * time.Millisecond)
					defer tk.Stop()
					for {
						if send("CLUSTER", "SYNCSLOTS", "ACK", t.id, strconv.FormatInt(ln.tr.appliedLen(), 10)) != nil {
							return
						}
						select {
						case <-tk.C:
						case <-stop:
							return
						}
					}
				}()
			case eqFold(args[2], "paused"):
				t.setState(StateHandoff)
				err := e.claim(t, send, time.Now())
				claimed = err == nil
				return err
			}
			continue
		}
		var full bool
		switch {
		case txn == nil && eqFold(args[0], "multi"):
			// The source's own transaction: read whole, then applied
			// as sent on the lane of its slot.
			txn = [][][]byte{cloneArgs(args)}
			txnSlot = -1
			continue
		case txn != nil:
			if txnSlot < 0 {
				txnSlot = e.h.CommandSlot(args)
			}
			txn = append(txn, cloneArgs(args))
			if !eqFold(args[0], "exec") {
				continue
			}
			full = ln.put(txnSlot, txn, 0, 1)
			txn = nil
		default:
			slot := e.h.CommandSlot(args)
			keys, writes := int64(0), int64(1)
			if syncing && (eqFold(args[0], "set") || eqFold(args[0], "restore")) {
				// A snapshot's key, or a live SET: SNAPSHOT-EOF's count
				// sets it right.
				keys, writes = 1, 0
			}
			if slot < 0 {
				// No slot, no lane: applied alone, in order with all.
				ln.sync(before)
				ln.put(0, [][][]byte{args}, keys, writes)
				ln.sync(rd.Consumed())
				continue
			}
			full = ln.put(slot, [][][]byte{args}, keys, writes)
		}
		if full || rd.Buffered() == 0 {
			ln.flush(rd.Consumed())
		}
	}
}

func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// claim takes the slots once every write to them is applied: this
// node's replicas acknowledge them, then one epoch bump (saved and
// fsynced before it is announced) makes this node the owner, unless the
// task was aborted meanwhile. The check and the claim hold t.mu, which a
// QUERY's abort takes too.
func (e *Engine) claim(t *Task, send func(...string) error, pausedAt time.Time) error {
	set := e.h.Settings()
	if !e.h.WaitReplicasAck(set.WritePauseTimeout / 2) {
		return errors.New("slotmig: the replicas did not acknowledge the imported writes")
	}
	// The imported keys are on disk before the claim is (appendfsync
	// always has them there already; everysec would lose up to a second
	// of them to a crash right after the claim).
	if err := e.h.SyncAOF(); err != nil {
		return fmt.Errorf("slotmig: fsync: %w", err)
	}
	t.mu.Lock()
	if t.aborted {
		t.mu.Unlock()
		return errAborted
	}
	epoch, err := e.h.ClaimSlots(t.slots)
	if err != nil {
		t.mu.Unlock()
		return fmt.Errorf("slotmig: claim: %w", err)
	}
	t.claimed, t.epoch = true, epoch
	t.pauseMs = time.Since(pausedAt).Milliseconds() // PAUSED to claim: the target's part of the pause
	t.mu.Unlock()
	_ = send("CLUSTER", "SYNCSLOTS", "HANDOFF", t.id, strconv.FormatUint(epoch, 10))
	t.setState(StateCompleted)
	e.log.Info("slotmig: slots imported", "id", t.id, "slots", rangesText(t.ranges), "keys", t.keys.Load(), "writes", t.cmds.Load(), "epoch", epoch)
	return nil
}

// AnswerQuery is CLUSTER SYNCSLOTS QUERY on the target: CLAIMED <epoch>
// when the slots are this node's, else ABORTED, after which this node
// never claims them for that task (it aborts the task if it still runs,
// and drops keys it holds in the slots).
func (e *Engine) AnswerQuery(id string, slots []int) string {
	if t := e.Find(id); t != nil && t.op == OpImport {
		t.mu.Lock()
		if t.claimed {
			ep := t.epoch
			t.mu.Unlock()
			return "CLAIMED " + strconv.FormatUint(ep, 10)
		}
		t.aborted = true
		t.mu.Unlock()
		t.fail(errors.New("slotmig: the source gave up waiting"))
		t.Cancel() // the task drops the imported keys
		return "ABORTED"
	}
	rt := e.h.Routing()
	mine := true
	var notMine []int
	for _, slot := range slots {
		if rt.Owner(slot) != rt.Me {
			mine = false
			notMine = append(notMine, slot)
		}
	}
	if mine {
		return "CLAIMED " + strconv.FormatUint(e.h.ConfigEpoch(), 10)
	}
	e.trim(notMine)
	return "ABORTED"
}
