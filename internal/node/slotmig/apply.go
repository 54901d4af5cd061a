package slotmig

import (
	"log/slog"
	"runtime"
	"sync"
)

// The target applies the source's stream on several lanes at once: a
// command goes to the lane of its hash slot (slot modulo the number of
// lanes), so the commands of one key, and of one slot, are applied in
// the stream's order, while keys of different lanes, independent of each
// other, are applied in parallel. The reader (target.go) parses the
// stream, copies each command into the chunk of its lane and hands the
// chunks of all lanes over together at a flush point (nothing more is
// buffered, a chunk is full, or a control message needs every command
// before it applied); the tracker turns the chunks done into the length
// of the stream applied, which is what ACK reports.

const (
	chunkCmds  = 256       // commands of a chunk, and of a MULTI/EXEC batch
	chunkBytes = 256 << 10 // bytes a chunk holds before it is handed over
	laneQueue  = 8         // chunks queued per lane before the reader waits
	maxLanes   = 8
)

// chunk is a run of one lane's commands, in stream order; it owns their
// bytes.
type chunk struct {
	seq   int64 // the tracker's sequence number
	cmds  [][][]byte
	arena []byte
	argv  [][]byte
	// keys and writes count the snapshot's RESTOREs and the live writes
	// (top-level commands) of the chunk, for STATUS.
	keys, writes int64
}

// add copies args into the chunk.
func (c *chunk) add(args [][]byte) {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	if cap(c.arena)-len(c.arena) < n {
		c.arena = make([]byte, 0, max(n, chunkBytes))
	}
	start := len(c.argv)
	for _, a := range args {
		off := len(c.arena)
		c.arena = append(c.arena, a...)
		c.argv = append(c.argv, c.arena[off:len(c.arena):len(c.arena)])
	}
	c.cmds = append(c.cmds, c.argv[start:len(c.argv):len(c.argv)])
}

func (c *chunk) size() int { return len(c.arena) }

// tracker follows the chunks handed over, in order, and the stream
// length up to which every chunk is applied.
type tracker struct {
	mu      sync.Mutex
	cond    *sync.Cond
	base    int64  // sequence number of pending[0]
	pending []pend // handed over, oldest first, up to the last done prefix
	applied int64  // stream length applied
}

type pend struct {
	end  int64 // stream length once this chunk (and every earlier one) is applied
	done bool
}

func newTracker() *tracker {
	t := &tracker{}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// add registers a chunk ending the stream at end; it returns its number.
func (t *tracker) add(end int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending = append(t.pending, pend{end: end})
	return t.base + int64(len(t.pending)-1)
}

// advance records that the stream is applied up to end with no chunk
// pending (the reader applied nothing, or everything before end is done).
func (t *tracker) advance(end int64) {
	t.mu.Lock()
	if len(t.pending) == 0 {
		t.applied = end
	}
	t.mu.Unlock()
}

func (t *tracker) done(seq int64) {
	t.mu.Lock()
	t.pending[seq-t.base].done = true
	n := 0
	for n < len(t.pending) && t.pending[n].done {
		t.applied = t.pending[n].end
		n++
	}
	if n > 0 {
		t.pending = append(t.pending[:0], t.pending[n:]...)
		t.base += int64(n)
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

// wait waits until every chunk handed over is applied.
func (t *tracker) wait() {
	t.mu.Lock()
	for len(t.pending) > 0 {
		t.cond.Wait()
	}
	t.mu.Unlock()
}

func (t *tracker) appliedLen() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied
}

// lanes are the target's appliers, one goroutine each.
type lanes struct {
	log *slog.Logger
	// batching reports whether to apply in MULTI/EXEC batches
	// (Applying.Propagates).
	batching func() bool
	t        *Task
	tr       *tracker
	in       []chan *chunk
	cur      []*chunk // the reader's chunk being filled, per lane
	wg       sync.WaitGroup
	stop     chan struct{} // closed when the task failed: queued chunks are dropped
	// free holds applied chunks for the reader to fill again: their
	// buffers are reused rather than left to the collector, whose every
	// cycle marks the whole dataset (the appliers copy what they keep).
	free chan *chunk
}

// numLanes is one lane per processor the runtime uses, within bounds.
func numLanes() int { return min(max(runtime.GOMAXPROCS(0), 1), maxLanes) }

func newLanes(log *slog.Logger, batching func() bool, t *Task, newApplier func() Applier, n int) *lanes {
	l := &lanes{log: log, batching: batching, t: t, tr: newTracker(), in: make([]chan *chunk, n), cur: make([]*chunk, n), stop: make(chan struct{}),
		free: make(chan *chunk, n*(laneQueue+2))}
	for i := range l.in {
		l.in[i] = make(chan *chunk, laneQueue)
		l.wg.Add(1)
		go l.run(l.in[i], newApplier())
	}
	return l
}

// put appends a command (or a whole transaction, cmds) to the lane of
// slot; it reports whether a flush is due.
func (l *lanes) put(slot int, cmds [][][]byte, keys, writes int64) bool {
	i := 0
	if slot > 0 {
		i = slot % len(l.in)
	}
	c := l.cur[i]
	if c == nil {
		select {
		case c = <-l.free:
		default:
			c = &chunk{}
		}
		l.cur[i] = c
	}
	for _, args := range cmds {
		c.add(args)
	}
	c.keys += keys
	c.writes += writes
	return len(c.cmds) >= chunkCmds || c.size() >= chunkBytes
}

// flush hands every lane's chunk over; end is the stream length read so
// far, which the stream is applied up to once these chunks are.
func (l *lanes) flush(end int64) {
	any := false
	for i, c := range l.cur {
		if c == nil {
			continue
		}
		any = true
		c.seq = l.tr.add(end)
		l.cur[i] = nil
		l.in[i] <- c
	}
	if !any {
		l.tr.advance(end)
	}
}

// sync hands everything over and waits until it is applied.
func (l *lanes) sync(end int64) {
	l.flush(end)
	l.tr.wait()
}

// close ends the lanes once their queues are applied (abort: dropped).
func (l *lanes) close(abort bool) {
	if abort {
		close(l.stop)
	}
	for _, ch := range l.in {
		close(ch)
	}
	l.wg.Wait()
}

// run applies one lane's chunks. With batching on (the node has an AOF
// or replicas), the commands of a chunk are applied in MULTI/EXEC
// batches: one AOF write (one fsync with appendfsync always) and one
// replication unit per batch, not per command; a transaction of the
// source runs as sent.
func (l *lanes) run(in chan *chunk, ap Applier) {
	defer l.wg.Done()
	exec := func(args [][]byte) {
		if msg := ap.Apply(args); msg != "" {
			l.log.Warn("slotmig: a command of the source's stream failed", "cmd", string(args[0]), "err", msg)
		}
	}
	multi, execCmd := [][]byte{[]byte("MULTI")}, [][]byte{[]byte("EXEC")}
	for c := range in {
		select {
		case <-l.stop:
			l.tr.done(c.seq)
			l.recycle(c)
			continue
		default:
		}
		batching := len(c.cmds) > 1 && l.batching()
		batch := 0
		for j, args := range c.cmds {
			switch {
			case eqFold(args[0], "multi"):
				if batch > 0 {
					exec(execCmd)
					batch = 0
				}
			case batch == 0 && batching && !ap.InTransaction() && j < len(c.cmds)-1:
				exec(multi)
				batch = 1
			case batch > 0:
				batch++
			}
			exec(args)
			if batch >= chunkCmds {
				exec(execCmd)
				batch = 0
			}
		}
		if batch > 0 {
			exec(execCmd)
		}
		l.t.keys.Add(c.keys)
		l.t.cmds.Add(c.writes)
		l.tr.done(c.seq)
		l.recycle(c)
	}
}

// recycle puts an applied chunk on the free list, emptied.
func (l *lanes) recycle(c *chunk) {
	if cap(c.arena) > 4*chunkBytes {
		return // a big key's: not kept
	}
	clear(c.cmds)
	clear(c.argv)
	*c = chunk{cmds: c.cmds[:0], arena: c.arena[:0], argv: c.argv[:0]}
	select {
	case l.free <- c:
	default:
	}
}
