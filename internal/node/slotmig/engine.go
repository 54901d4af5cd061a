package slotmig

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shardis/shardis/internal/resp"
)

// Engine is a node's whole-slot migrations: its task table, the running
// source task's write gate and the stream tap.
type Engine struct {
	h   Host
	log *slog.Logger

	mu    sync.Mutex
	tasks []*Task // oldest first; at most one unfinished

	// gate is the running source task's write gate (nil: none); the
	// dispatcher and the tap read it without a lock.
	gate      atomic.Pointer[Gate]
	tapOnce   sync.Once
	routeWake chan struct{} // a routing change, for a paused source

	trimRunning                             atomic.Int64
	trimStarted, trimCompleted, trimCancels atomic.Int64
}

// New returns the engine of a node.
func New(h Host, log *slog.Logger) *Engine {
	return &Engine{h: h, log: log, routeWake: make(chan struct{}, 1)}
}

// Gate returns the running source task's write gate, nil if none.
func (e *Engine) Gate() *Gate { return e.gate.Load() }

// RouteChanged is called by the cluster loop when the routing changed.
func (e *Engine) RouteChanged() {
	select {
	case e.routeWake <- struct{}{}:
	default:
	}
}

// Active returns the unfinished task, if any.
func (e *Engine) Active() *Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.tasks {
		if !t.Finished() {
			return t
		}
	}
	return nil
}

// add registers t unless another task is unfinished.
func (e *Engine) add(t *Task) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, o := range e.tasks {
		if !o.Finished() {
			return fmt.Errorf("ERR There is already an active slot migration task %s", o.id)
		}
	}
	e.tasks = append(e.tasks, t)
	if len(e.tasks) > keepTasks {
		e.tasks = append([]*Task(nil), e.tasks[len(e.tasks)-keepTasks:]...)
	}
	return nil
}

// Find returns the task with id, nil if none.
func (e *Engine) Find(id string) *Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.tasks) - 1; i >= 0; i-- {
		if e.tasks[i].id == id {
			return e.tasks[i]
		}
	}
	return nil
}

// List returns the tasks kept, oldest first.
func (e *Engine) List() []*Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Task(nil), e.tasks...)
}

// SkipDeleteKeys drops from slots (a cluster Ready's DeleteKeys) those a
// source task trims itself, with DELs in the replication stream, so the
// source's replicas and AOF lose the keys too.
func (e *Engine) SkipDeleteKeys(slots []int) []int {
	g := e.gate.Load()
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

// InfoFields renders the INFO cluster section's migration fields, with
// the names Redis 8.4 gives them in CLUSTER INFO.
func (e *Engine) InfoFields(b *strings.Builder) {
	n := 0
	if e.Active() != nil {
		n = 1
	}
	fmt.Fprintf(b, "cluster_slot_migration_active_tasks:%d\r\n", n)
	fmt.Fprintf(b, "cluster_slot_migration_active_trim_running:%d\r\n", e.trimRunning.Load())
	fmt.Fprintf(b, "cluster_slot_migration_stats_active_trim_started:%d\r\n", e.trimStarted.Load())
	fmt.Fprintf(b, "cluster_slot_migration_stats_active_trim_completed:%d\r\n", e.trimCompleted.Load())
	fmt.Fprintf(b, "cluster_slot_migration_stats_active_trim_cancelled:%d\r\n", e.trimCancels.Load())
}

// trim deletes the slots' keys (Dataset.TrimSlots), counted in INFO.
func (e *Engine) trim(slots []int) int {
	e.trimRunning.Add(1)
	e.trimStarted.Add(1)
	defer e.trimRunning.Add(-1)
	n := e.h.TrimSlots(slots)
	e.trimCompleted.Add(1)
	return n
}

func (e *Engine) addTap() { e.tapOnce.Do(func() { e.h.AddTap(e) }) }

// Propagate implements Tap for the source task: the writes to the slots
// whose snapshot was taken go to the target, in the order the keyspace
// applied them (it is called with the written keys' locks held, and a
// slot's snapshot is taken under the same lock, so each write is in the
// snapshot or in the stream, never both, never neither).
func (e *Engine) Propagate(db int, cmds [][][]byte) {
	g := e.gate.Load()
	if g == nil || db != 0 || g.done.Load() {
		return
	}
	slot := -1
	for _, cmd := range cmds {
		if eqFold(cmd[0], "flushall") || eqFold(cmd[0], "flushdb") {
			g.task.src.fail(fmt.Errorf("slotmig: %s on the source", strings.ToLower(string(cmd[0]))))
			return
		}
		if sl := e.h.CommandSlot(cmd); sl >= 0 {
			slot = sl
			break
		}
	}
	if slot < 0 || !g.in[slot] || !g.live[slot].Load() {
		return
	}
	var b []byte
	if len(cmds) > 1 {
		b = resp.AppendCommand(b, []byte("MULTI"))
	}
	for _, cmd := range cmds {
		if len(cmds) > 1 && (eqFold(cmd[0], "multi") || eqFold(cmd[0], "exec")) {
			continue
		}
		b = resp.AppendCommand(b, cmd...)
	}
	if len(cmds) > 1 {
		b = resp.AppendCommand(b, []byte("EXEC"))
	}
	g.task.cmds.Add(1)
	g.task.src.out.push(b)
}

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// appendAuth appends AUTH [user] password.
func appendAuth(b []byte, user, pw string) []byte {
	if user != "" {
		return resp.AppendCommand(b, []byte("AUTH"), []byte(user), []byte(pw))
	}
	return resp.AppendCommand(b, []byte("AUTH"), []byte(pw))
}
