package slotmig

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
)

// TestTrackerAppliedPrefix: the applied length is the end of the last
// chunk such that it and every chunk handed over before it are done.
func TestTrackerAppliedPrefix(t *testing.T) {
	tr := newTracker()
	a, b, c := tr.add(10), tr.add(10), tr.add(25)
	steps := []struct {
		done int64
		want int64
	}{{b, 0}, {c, 0}, {a, 25}}
	for _, s := range steps {
		tr.done(s.done)
		if got := tr.appliedLen(); got != s.want {
			t.Fatalf("after done(%d): applied %d, want %d", s.done, got, s.want)
		}
	}
	tr.advance(40) // nothing pending
	if got := tr.appliedLen(); got != 40 {
		t.Fatalf("advance: applied %d, want 40", got)
	}
	d := tr.add(50)
	tr.advance(60) // pending: no effect
	if got := tr.appliedLen(); got != 40 {
		t.Fatalf("advance with a chunk pending: applied %d, want 40", got)
	}
	tr.done(d)
	tr.wait()
	if got := tr.appliedLen(); got != 50 {
		t.Fatalf("applied %d, want 50", got)
	}
}

// recorder is an Applier that records, per slot (args[1]), the values
// (args[2]) in the order it applied them, and checks it is never run by
// two goroutines at once.
type recorder struct {
	mu   *sync.Mutex
	seen map[string][]int
	busy bool
	txn  bool
	t    *testing.T
}

func (r *recorder) Apply(args [][]byte) string {
	if r.busy {
		r.t.Error("an applier ran on two goroutines at once")
	}
	r.busy = true
	defer func() { r.busy = false }()
	switch string(args[0]) {
	case "MULTI":
		r.txn = true
		return ""
	case "EXEC":
		r.txn = false
		return ""
	}
	v, _ := strconv.Atoi(string(args[2]))
	r.mu.Lock()
	r.seen[string(args[1])] = append(r.seen[string(args[1])], v)
	r.mu.Unlock()
	return ""
}

func (r *recorder) InTransaction() bool { return r.txn }

// TestLanesKeepSlotOrder: commands of one slot are applied in the order
// they were put, whichever lane runs them and however chunks are cut,
// batched or not; sync returns once everything is applied.
func TestLanesKeepSlotOrder(t *testing.T) {
	for _, batching := range []bool{false, true} {
		var mu sync.Mutex
		seen := map[string][]int{}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		ln := newLanes(log, func() bool { return batching }, newTask(OpImport, [][2]int{{0, 15}}, "a", "b"),
			func() Applier { return &recorder{mu: &mu, seen: seen, t: t} }, 3)
		const perSlot = 700 // more than a chunk's commands
		end := int64(0)
		for i := 0; i < perSlot; i++ {
			for slot := 0; slot < 16; slot++ {
				end++
				if ln.put(slot, [][][]byte{{[]byte("SET"), []byte(strconv.Itoa(slot)), []byte(strconv.Itoa(i))}}, 0, 1) || i%97 == 0 {
					ln.flush(end)
				}
			}
		}
		ln.sync(end)
		if got := ln.tr.appliedLen(); got != end {
			t.Fatalf("batching=%v: applied %d after sync, want %d", batching, got, end)
		}
		ln.close(false)
		for slot := 0; slot < 16; slot++ {
			vs := seen[strconv.Itoa(slot)]
			if len(vs) != perSlot {
				t.Fatalf("batching=%v: slot %d: %d commands applied, want %d", batching, slot, len(vs), perSlot)
			}
			for i, v := range vs {
				if v != i {
					t.Fatalf("batching=%v: slot %d: command %d applied as the %dth", batching, slot, v, i)
				}
			}
		}
		if w := ln.t.cmds.Load(); w != 16*perSlot {
			t.Fatalf("batching=%v: writes counted %d, want %d", batching, w, 16*perSlot)
		}
	}
}
