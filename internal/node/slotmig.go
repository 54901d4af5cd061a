package node

// Whole-slot (atomic) migration, Redis 8.4's CLUSTER MIGRATION: the node
// that runs IMPORT (the target) connects to the slots' owner (the source),
// which sends a point-in-time copy of the slots' keys followed by the
// stream of writes to those slots; the target applies both as a replica
// would, makes sure its own replicas have them, asks the source to pause
// writes to the slots, applies the last ones and claims the slots with
// one config epoch bump. docs/ARCHITECTURE.md, "Whole-slot migration",
// states the guarantee and what a kill of either side does at each step.
//
// This file holds what both sides share: the task table (STATUS), the
// source's write gate and its stream tap, and the trim that deletes a
// slot's keys with a propagated DEL per key. slotmig_source.go and
// slotmig_target.go are the two tasks.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// Task operations and states, as STATUS shows them.
const (
	migOpImport  = "import"
	migOpMigrate = "migrate"

	migConnecting = "connecting"    // target: dialling the source
	migSyncing    = "syncing"       // the snapshot of the slots' keys is being sent
	migStreaming  = "streaming"     // snapshot done; the live writes follow
	migHandoff    = "handoff"       // source writes paused; the flip is under way
	migCompleted  = "completed"     // the target owns the slots
	migFailed     = "failed"        // rolled back: the source owns and serves the slots
	migCanceled   = "canceled"      // CANCEL, rolled back as failed
	migKeepTasks  = 32              // finished tasks kept for STATUS ALL
	migQueueLimit = 512 << 20       // source: unsent stream bytes that fail the task
	migQueueSoft  = 8 << 20         // source: the snapshot waits while more is unsent
	migDialWait   = 2 * time.Second // connect and handshake timeout
)

// migTask is one migration, on either side.
type migTask struct {
	id     string
	op     string // migOpImport on the target, migOpMigrate on the source
	ranges [][2]int
	slots  []int
	source string // node ids
	dest   string

	mu      sync.Mutex
	state   string
	lastErr string
	retries int
	created time.Time
	started time.Time
	ended   time.Time
	pauseMs int64 // the write pause, measured on the source (or reported to the target)
	// keys counts the keys of the snapshot sent (source) or restored
	// (target); cmds the live writes streamed.
	keys, cmds atomic.Int64
	// claimed (target) is set once the slots are claimed; aborted once
	// the task gave up. Both under mu: the claim checks aborted and sets
	// claimed in one hold, so an abort and a claim never both happen.
	claimed, aborted bool
	epoch            uint64 // the claim's config epoch
	// done is closed when the task's goroutine has finished, rollback
	// included.
	done chan struct{}
	// cancel is closed by CANCEL (or a QUERY that aborts the task).
	cancel     chan struct{}
	cancelOnce sync.Once
	// src is the source side's running state (nil on the target).
	src *migSource
}

func newMigTask(op string, ranges [][2]int, source, dest string) *migTask {
	t := &migTask{op: op, ranges: ranges, source: source, dest: dest, state: migConnecting,
		created: time.Now(), done: make(chan struct{}), cancel: make(chan struct{})}
	for _, r := range ranges {
		for s := r[0]; s <= r[1]; s++ {
			t.slots = append(t.slots, s)
		}
	}
	return t
}

func (t *migTask) setState(st string) {
	t.mu.Lock()
	t.state = st
	if st == migSyncing && t.started.IsZero() {
		t.started = time.Now()
	}
	if st == migCompleted || st == migFailed || st == migCanceled {
		t.ended = time.Now()
	}
	t.mu.Unlock()
}

func (t *migTask) getState() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

func (t *migTask) fail(err error) {
	t.mu.Lock()
	if t.lastErr == "" && err != nil {
		t.lastErr = err.Error()
	}
	t.mu.Unlock()
}

func (t *migTask) requestCancel() { t.cancelOnce.Do(func() { close(t.cancel) }) }

func (t *migTask) finished() bool {
	switch t.getState() {
	case migCompleted, migFailed, migCanceled:
		return true
	}
	return false
}

// rangesText renders the ranges as "0-1000 2000-3000".
func rangesText(ranges [][2]int) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = strconv.Itoa(r[0]) + "-" + strconv.Itoa(r[1])
	}
	return strings.Join(parts, " ")
}

func rangeArgs(ranges [][2]int) []string {
	out := make([]string, 0, 2*len(ranges))
	for _, r := range ranges {
		out = append(out, strconv.Itoa(r[0]), strconv.Itoa(r[1]))
	}
	return out
}

func newMigID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// slotMigrations is the node's task table, and the source side's gate.
type slotMigrations struct {
	srv *Server

	mu    sync.Mutex
	tasks []*migTask // oldest first; at most one unfinished

	// gate is the running source task's write gate (nil: none); the
	// dispatcher and the tap read it without a lock.
	gate      atomic.Pointer[migGate]
	tapOnce   sync.Once
	routeWake chan struct{} // a routing change, for a paused source

	trimRunning                             atomic.Int64
	trimStarted, trimCompleted, trimCancels atomic.Int64
}

func newSlotMigrations(s *Server) *slotMigrations {
	return &slotMigrations{srv: s, routeWake: make(chan struct{}, 1)}
}

// routeChanged is called by the cluster loop when the routing changed.
func (sm *slotMigrations) routeChanged() {
	select {
	case sm.routeWake <- struct{}{}:
	default:
	}
}

// active returns the unfinished task, if any.
func (sm *slotMigrations) active() *migTask {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for _, t := range sm.tasks {
		if !t.finished() {
			return t
		}
	}
	return nil
}

// add registers t unless another task is unfinished.
func (sm *slotMigrations) add(t *migTask) error {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for _, o := range sm.tasks {
		if !o.finished() {
			return fmt.Errorf("ERR There is already an active slot migration task %s", o.id)
		}
	}
	sm.tasks = append(sm.tasks, t)
	if len(sm.tasks) > migKeepTasks {
		sm.tasks = append([]*migTask(nil), sm.tasks[len(sm.tasks)-migKeepTasks:]...)
	}
	return nil
}

func (sm *slotMigrations) find(id string) *migTask {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for i := len(sm.tasks) - 1; i >= 0; i-- {
		if sm.tasks[i].id == id {
			return sm.tasks[i]
		}
	}
	return nil
}

func (sm *slotMigrations) list() []*migTask {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return append([]*migTask(nil), sm.tasks...)
}

// skipDeleteKeys drops from slots (a Ready's DeleteKeys) those a source
// task trims itself, with DELs in the replication stream, so the source's
// replicas and AOF lose the keys too.
func (sm *slotMigrations) skipDeleteKeys(slots []int) []int {
	g := sm.gate.Load()
	if g == nil || g.done.Load() {
		return slots
	}
	out := slots[:0:0]
	for _, s := range slots {
		if !g.in[s] {
			out = append(out, s)
		}
	}
	return out
}

// infoFields renders the INFO cluster section's migration fields, with
// the names Redis 8.4 gives them in CLUSTER INFO.
func (sm *slotMigrations) infoFields(b *strings.Builder) {
	n := 0
	if sm.active() != nil {
		n = 1
	}
	fmt.Fprintf(b, "cluster_slot_migration_active_tasks:%d\r\n", n)
	fmt.Fprintf(b, "cluster_slot_migration_active_trim_running:%d\r\n", sm.trimRunning.Load())
	fmt.Fprintf(b, "cluster_slot_migration_stats_active_trim_started:%d\r\n", sm.trimStarted.Load())
	fmt.Fprintf(b, "cluster_slot_migration_stats_active_trim_completed:%d\r\n", sm.trimCompleted.Load())
	fmt.Fprintf(b, "cluster_slot_migration_stats_active_trim_cancelled:%d\r\n", sm.trimCancels.Load())
}

// ---- the source's write gate ---------------------------------------------

// migGate holds writes to the slots a source task is moving. Outside the
// pause a write passes after counting itself in inflight; during it a
// write waits on wake. pause sets paused and then waits for inflight to
// drain: a write either counted itself before paused was set (and the
// pause waits for it) or sees paused and waits (sequentially consistent
// atomics), so once the pause is in force no write to the slots runs.
type migGate struct {
	task   *migTask
	in     [cluster.NumSlots]bool        // the task's slots; fixed
	live   [cluster.NumSlots]atomic.Bool // slots whose snapshot was taken: the tap forwards their writes
	paused atomic.Bool
	// done is set once the slots belong to the target: the gate stays
	// installed, every write meeting it re-checks the routing.
	done     atomic.Bool
	inflight atomic.Int64
	mu       sync.Mutex
	wake     chan struct{} // closed when the pause is lifted
}

func newMigGate(t *migTask) *migGate {
	g := &migGate{task: t, wake: make(chan struct{})}
	for _, s := range t.slots {
		g.in[s] = true
	}
	return g
}

func (g *migGate) pause() {
	g.mu.Lock()
	g.wake = make(chan struct{})
	g.paused.Store(true)
	g.mu.Unlock()
}

func (g *migGate) unpause() {
	g.mu.Lock()
	if g.paused.Load() {
		g.paused.Store(false)
		close(g.wake)
	}
	g.mu.Unlock()
}

func (g *migGate) waitCh() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wake
}

// drain waits until no write to the slots is running, for at most d.
func (g *migGate) drain(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for g.inflight.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Microsecond)
	}
	return true
}

// slotmigEnter is the dispatcher's check for writes to slots a source
// task is moving (after the cluster redirect check): it returns the
// function to call once the command has run, or, when the command waited
// for a pause and the slots changed owner meanwhile, the redirect to
// reply instead. Commands queued in MULTI are checked at their EXEC.
func (c *Client) slotmigEnter(cmd *command, args [][]byte) (done func(), msg string) {
	sm := c.srv.cluster.mig
	g := sm.gate.Load()
	if g == nil {
		return nil, ""
	}
	isExec := cmd.fullName() == "exec"
	if c.hasFlag(clientMulti) && !isExec {
		return nil, ""
	}
	slot := c.writeSlot(cmd, args, isExec)
	if slot < 0 || !g.in[slot] {
		return nil, ""
	}
	for {
		if g.done.Load() {
			return nil, c.clusterRedirect(cmd, args)
		}
		g.inflight.Add(1)
		if !g.paused.Load() {
			return func() { g.inflight.Add(-1) }, ""
		}
		g.inflight.Add(-1)
		select {
		case <-g.waitCh():
		case <-c.done:
			return nil, ""
		}
		if msg := c.clusterRedirect(cmd, args); msg != "" {
			return nil, msg
		}
		if g = sm.gate.Load(); g == nil || !g.in[slot] {
			return nil, ""
		}
	}
}

// writeSlot returns the slot a write command (or an EXEC with a write
// queued) works on, -1 for a read or a command without keys. Keys of one
// command are in one slot (the redirect check refused CROSSSLOT).
func (c *Client) writeSlot(cmd *command, args [][]byte, isExec bool) int {
	if !isExec {
		if cmd.flags&flagWrite == 0 {
			return -1
		}
		return cmdSlot(cmd, args)
	}
	slot, write := -1, false
	for _, q := range c.multi {
		qc := c.srv.table.lookup(q[0])
		if qc == nil {
			continue
		}
		if qc.subs != nil && len(q) >= 2 {
			if sub := qc.subs[lowerASCII(q[1])]; sub != nil {
				qc = sub
			}
		}
		if qc.flags&flagWrite != 0 {
			write = true
		}
		if s := cmdSlot(qc, q); s >= 0 {
			slot = s
		}
	}
	if !write {
		return -1
	}
	return slot
}

// cmdSlot is the slot of cmd's first key, -1 without keys.
func cmdSlot(cmd *command, args [][]byte) int {
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				return keySlot(string(args[p]))
			}
		}
		return -1
	}
	if cmd.first <= 0 || cmd.first >= len(args) {
		return -1
	}
	return keySlot(string(args[cmd.first]))
}

// ---- the tap: the source's filtered write stream -------------------------

// Propagate implements Propagator for the source task: the writes to the
// slots whose snapshot was taken go to the target, in the order the
// keyspace applied them (it is called with the written keys' locks held,
// and a slot's snapshot is taken under the same lock, so each write is in
// the snapshot or in the stream, never both, never neither).
func (sm *slotMigrations) Propagate(db int, cmds [][][]byte) {
	g := sm.gate.Load()
	if g == nil || db != 0 || g.done.Load() {
		return
	}
	s := sm.srv
	slot := -1
	for _, cmd := range cmds {
		name := strings.ToLower(string(cmd[0]))
		if name == "flushall" || name == "flushdb" {
			g.task.src.fail(fmt.Errorf("slotmig: %s on the source", name))
			return
		}
		c := s.table.lookup(cmd[0])
		if c == nil {
			continue
		}
		if sl := cmdSlot(c, cmd); sl >= 0 {
			slot = sl
			break
		}
	}
	if slot < 0 || !g.in[slot] || !g.live[slot].Load() {
		return
	}
	var b []byte
	if len(cmds) > 1 {
		b = appendCommand(b, []byte("MULTI"))
	}
	for _, cmd := range cmds {
		if len(cmds) > 1 && (eqFold(cmd[0], "multi") || eqFold(cmd[0], "exec")) {
			continue
		}
		b = appendCommand(b, cmd...)
	}
	if len(cmds) > 1 {
		b = appendCommand(b, []byte("EXEC"))
	}
	g.task.cmds.Add(1)
	g.task.src.out.push(b)
}

// ---- trim ----------------------------------------------------------------

// trimSlots deletes every key of database 0 in slots, each with a DEL in
// the replication stream and the AOF, so replicas and a restart drop them
// too. It returns the number of keys deleted.
func (s *Server) trimSlots(slots []int) int {
	sm := s.cluster.mig
	sm.trimRunning.Add(1)
	sm.trimStarted.Add(1)
	defer sm.trimRunning.Add(-1)
	db := s.dbs[0]
	n := 0
	for _, slot := range slots {
		if db.CountKeysInSlot(slot) == 0 {
			continue
		}
		sh := &db.Shards[keyspace.SlotShard(slot)]
		sh.Mu.Lock()
		var keys []string
		db.ForEachInSlot(slot, func(e *keyspace.Entry) bool {
			keys = append(keys, e.Key)
			return true
		})
		del := [][]byte{[]byte("DEL")}
		for _, k := range keys {
			if db.Remove(k) != nil {
				n++
				del = append(del, []byte(k))
			}
		}
		// One DEL per slot: one AOF write and fsync, not one per key.
		if len(del) > 1 && s.hasPropagators() {
			s.propagate(0, [][][]byte{del})
		}
		sh.Mu.Unlock()
		for _, k := range keys {
			s.touchWatchedKey(0, k)
		}
	}
	sm.trimCompleted.Add(1)
	return n
}

// waitReplicasAck waits until every online replica acknowledged the
// replication offset as of the call (REPLCONF GETACK asks them at once),
// for at most d; true when they all did (or there is none).
func (s *Server) waitReplicasAck(d time.Duration) bool {
	r := s.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	target := r.offset
	behind := func() int {
		n := 0
		for _, ri := range r.replicas {
			if ri.state == replStateOnline && ri.ackOffset < target {
				n++
			}
		}
		return n
	}
	if behind() == 0 {
		return true
	}
	r.feedLocked(appendCommand(nil, []byte("REPLCONF"), []byte("GETACK"), []byte("*")))
	deadline := time.Now().Add(d)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-stop:
			return
		}
		r.mu.Lock()
		r.ackCond.Broadcast()
		r.mu.Unlock()
	}()
	for behind() > 0 {
		if !time.Now().Before(deadline) {
			return false
		}
		r.ackCond.Wait()
	}
	return true
}
