package slotmig

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Task operations and states, as STATUS shows them.
const (
	OpImport  = "import"  // the target's task
	OpMigrate = "migrate" // the source's task

	StateConnecting = "connecting" // target: dialling the source
	StateSyncing    = "syncing"    // the snapshot of the slots' keys is being sent
	StateStreaming  = "streaming"  // snapshot done; the live writes follow
	StateHandoff    = "handoff"    // source writes paused; the flip is under way
	StateCompleted  = "completed"  // the target owns the slots
	StateFailed     = "failed"     // rolled back: the source owns and serves the slots
	StateCanceled   = "canceled"   // CANCEL, rolled back as failed
)

const (
	keepTasks  = 32              // finished tasks kept for STATUS ALL
	queueLimit = 512 << 20       // source: unsent stream bytes that fail the task
	queueSoft  = 2 << 20         // source: the snapshot waits while more is unsent
	dialWait   = 2 * time.Second // connect and handshake timeout
)

// Task is one migration, on either side.
type Task struct {
	id     string
	op     string // OpImport on the target, OpMigrate on the source
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
	src *source
}

func newTask(op string, ranges [][2]int, source, dest string) *Task {
	t := &Task{op: op, ranges: ranges, source: source, dest: dest, state: StateConnecting,
		created: time.Now(), done: make(chan struct{}), cancel: make(chan struct{})}
	for _, r := range ranges {
		for s := r[0]; s <= r[1]; s++ {
			t.slots = append(t.slots, s)
		}
	}
	return t
}

// ID returns the task's id.
func (t *Task) ID() string { return t.id }

// Done is closed once the task has ended, its rollback included.
func (t *Task) Done() <-chan struct{} { return t.done }

// Cancel asks the task to roll back (CANCEL); it has no effect once the
// slots are claimed.
func (t *Task) Cancel() { t.cancelOnce.Do(func() { close(t.cancel) }) }

// Finished reports whether the task has reached a final state.
func (t *Task) Finished() bool {
	switch t.State() {
	case StateCompleted, StateFailed, StateCanceled:
		return true
	}
	return false
}

// State returns the task's state.
func (t *Task) State() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// Fields returns STATUS's field-value pairs for the task: Redis 8.4's
// fields in its order, then the progress (keys of the snapshot, live
// writes).
func (t *Task) Fields() []string {
	ms := func(tm time.Time) string {
		if tm.IsZero() {
			return "0"
		}
		return strconv.FormatInt(tm.UnixMilli(), 10)
	}
	t.mu.Lock()
	fields := []string{
		"id", t.id,
		"slots", rangesText(t.ranges),
		"source", t.source,
		"dest", t.dest,
		"operation", t.op,
		"state", t.state,
		"last_error", t.lastErr,
		"retries", strconv.Itoa(t.retries),
		"create_time", ms(t.created),
		"start_time", ms(t.started),
		"end_time", ms(t.ended),
		"write_pause_ms", strconv.FormatInt(t.pauseMs, 10),
	}
	t.mu.Unlock()
	return append(fields, "keys", strconv.FormatInt(t.keys.Load(), 10), "writes", strconv.FormatInt(t.cmds.Load(), 10))
}

func (t *Task) setState(st string) {
	t.mu.Lock()
	t.state = st
	if st == StateSyncing && t.started.IsZero() {
		t.started = time.Now()
	}
	if st == StateCompleted || st == StateFailed || st == StateCanceled {
		t.ended = time.Now()
	}
	t.mu.Unlock()
}

func (t *Task) fail(err error) {
	t.mu.Lock()
	if t.lastErr == "" && err != nil {
		t.lastErr = err.Error()
	}
	t.mu.Unlock()
}

// rangesText renders the ranges as "0-1000 2000-3000".
func rangesText(ranges [][2]int) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = strconv.Itoa(r[0]) + "-" + strconv.Itoa(r[1])
	}
	return strings.Join(parts, " ")
}

func rangeArgs(ranges [][2]int) [][]byte {
	out := make([][]byte, 0, 2*len(ranges))
	for _, r := range ranges {
		out = append(out, []byte(strconv.Itoa(r[0])), []byte(strconv.Itoa(r[1])))
	}
	return out
}

func newID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
