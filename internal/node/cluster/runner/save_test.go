package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// TestSaveInPlace: a shorter text replaces a longer file exactly, through
// the padded write (which leaves only blank lines after the text, which
// LoadNodesConf skips) and the truncation, and a longer one after it; a
// missing file is an error (the atomic path then creates it); after an
// atomic save the in-place saves write the renamed file, not the inode it
// replaced.
func TestSaveInPlace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	c := &confFile{path: p}
	if err := c.saveInPlace("x"); err == nil {
		t.Fatal("saveInPlace created a missing file")
	}
	long := strings.Repeat("old line\n", 20)
	if err := os.WriteFile(p, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(want string) {
		t.Helper()
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("file holds %q, want %q", got, want)
		}
	}
	for _, text := range []string{"a b c\nvars currentEpoch 1\n", strings.Repeat("longer line\n", 30), "short\n"} {
		if err := c.saveInPlace(text); err != nil {
			t.Fatal(err)
		}
		check(text)
	}
	if err := c.saveAtomic("atomic text\n"); err != nil {
		t.Fatal(err)
	}
	check("atomic text\n")
	if err := c.saveInPlace("after\n"); err != nil {
		t.Fatal(err)
	}
	check("after\n")
	c.close()
}

// TestDoReturnsAfterSave: a Do whose change asks for a save returns only
// once nodes.conf holds that change, also when many goroutines change the
// machine at once and their saves coalesce (a later text covers an
// earlier change, and the file never goes back to an older text).
func TestDoReturnsAfterSave(t *testing.T) {
	b := startBusNode(t, t.TempDir(), 7)
	const workers, each = 8, 20
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			for i := 0; i < each; i++ {
				slot := strconv.Itoa(2 * (w*each + i)) // never adjacent: one field each
				var err error
				if derr := b.r.Do(func(m *cluster.Machine, now time.Time) { err = m.AddSlots(now, slot) }); derr != nil {
					err = derr
				}
				if err == nil {
					err = confHasSlot(b.conf, slot)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// confHasSlot reports an error unless the myself line of the nodes.conf
// at path lists slot.
func confHasSlot(path, slot string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "myself") {
			continue
		}
		for _, s := range f[8:] {
			if s == slot {
				return nil
			}
		}
		return fmt.Errorf("nodes.conf's myself line lacks slot %s after its Do returned: %q", slot, line)
	}
	return fmt.Errorf("no myself line in %q", text)
}

// TestHoldKeepsPacketsUntilRelease: while a hold is taken, no packet of
// any batch is queued (the Do's PUBLISH, and the ticks' PINGs), and the
// peer receives none of them; on release they go out and the peer gets
// the PUBLISH. Do's own hold ends when it returns, so without Hold the
// PUBLISH is queued at once.
func TestHoldKeepsPacketsUntilRelease(t *testing.T) {
	dir := t.TempDir()
	a, b := startBusNode(t, dir, 11), startBusNode(t, dir, 12)
	meetPair(t, a, b)
	published := func(n *busNode) string {
		var s string
		n.r.Do(func(m *cluster.Machine, _ time.Time) { s = m.Info(0) })
		for _, line := range strings.Split(s, "\r\n") {
			if strings.HasPrefix(line, "cluster_stats_messages_publish_received:") {
				return strings.TrimPrefix(line, "cluster_stats_messages_publish_received:")
			}
		}
		return "0"
	}
	release := a.r.Hold()
	sent := a.r.Stats().PacketsSent
	a.do(t, func(m *cluster.Machine, now time.Time) error {
		m.Publish(now, []byte("ch"), []byte("held"))
		return nil
	})
	// The hold is observed through the runner's own state: the Do's
	// packet is in held, not sent, and the peer has not counted it.
	a.r.mu.Lock()
	nHeld := len(a.r.held)
	a.r.mu.Unlock()
	if got := a.r.Stats().PacketsSent; got != sent || nHeld == 0 {
		t.Fatalf("during the hold: %d packets sent (before %d), %d held", got, sent, nHeld)
	}
	if got := published(b); got != "0" {
		t.Fatalf("peer received %s PUBLISH during the hold", got)
	}
	release()
	release() // a second call does nothing
	waitFor(t, 5*time.Second, "the held PUBLISH to arrive", func() bool { return published(b) == "1" })
	a.r.mu.Lock()
	holds, nHeld := a.r.holds, len(a.r.held)
	a.r.mu.Unlock()
	if holds != 0 || nHeld != 0 {
		t.Fatalf("after release: holds %d, held %d", holds, nHeld)
	}
	// Without a hold, a Do's packets are queued before it returns.
	sent = a.r.Stats().PacketsSent
	a.do(t, func(m *cluster.Machine, now time.Time) error {
		m.Publish(now, []byte("ch"), []byte("free"))
		return nil
	})
	if got := a.r.Stats().PacketsSent; got <= sent {
		t.Fatalf("Do returned with its PUBLISH not queued: sent %d, before %d", got, sent)
	}
	waitFor(t, 5*time.Second, "the second PUBLISH to arrive", func() bool { return published(b) == "2" })
}

// syncGate is a confFile.syncHook that holds every fdatasync of the
// journal until open is closed (once), and fails them while fail is set.
type syncGate struct {
	entered  chan struct{} // one value per sync that reached the hook
	open     chan struct{}
	once     sync.Once
	released atomic.Bool // set by the test just before it opens the gate
	calls    atomic.Int64
	fail     atomic.Bool
}

func (g *syncGate) hook() error {
	g.calls.Add(1)
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
	if g.fail.Load() {
		return errors.New("injected sync failure")
	}
	return nil
}

// release marks the gate released, then opens it.
func (g *syncGate) release() {
	g.once.Do(func() {
		g.released.Store(true)
		close(g.open)
	})
}

// waitEntered waits for a sync to reach the gate.
func (g *syncGate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no fdatasync reached the gate in 10 s")
	}
}

// installGate waits until the node's start-up saves are durable, then
// puts a closed gate in front of its journal's fdatasyncs (opened at the
// end of the test, before the runner is closed).
func installGate(t *testing.T, b *busNode) *syncGate {
	t.Helper()
	waitFor(t, 10*time.Second, "start-up saves durable", func() bool {
		return b.r.durableGen.Load() >= b.r.durWant.Load() && b.r.writtenGen.Load() >= b.r.saveGen.Load()
	})
	g := &syncGate{entered: make(chan struct{}, 64), open: make(chan struct{})}
	b.r.fileMu.Lock()
	b.r.conf.syncHook = g.hook
	b.r.fileMu.Unlock()
	t.Cleanup(g.release)
	return g
}

// heldFor returns how many packets are held for a durable save that is
// not durable yet.
func heldFor(r *Runner) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.held {
		if h.need > r.durableGen.Load() {
			n++
		}
	}
	return n
}

// publishedTo returns cluster_stats_messages_publish_received of n.
func publishedTo(n *busNode) string {
	var s string
	n.r.Do(func(m *cluster.Machine, _ time.Time) { s = m.Info(0) })
	for _, line := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cluster_stats_messages_publish_received:"); ok {
			return v
		}
	}
	return "0"
}

// TestDurableSaveHoldsPacketsNotTheLock: a loop batch that asks for a
// durable save and sends a PUBLISH has the PUBLISH held while the save's
// fdatasync is in progress; meanwhile a Do takes the machine's lock and
// runs its step (the lock is not held across the disk), but returns only
// after that durable save is done, since its step ran while it was
// pending (a read-only step: its reply shows the state being saved).
// When the sync returns, the PUBLISH goes out.
func TestDurableSaveHoldsPacketsNotTheLock(t *testing.T) {
	dir := t.TempDir()
	a, b := startBusNode(t, dir, 31), startBusNode(t, dir, 32)
	meetPair(t, a, b)
	g := installGate(t, a)
	a.r.Post(func(m *cluster.Machine, now time.Time) {
		m.SaveConfig()
		m.Publish(now, []byte("ch"), []byte("after the sync"))
	})
	g.waitEntered(t)
	if n := heldFor(a.r); n == 0 {
		t.Fatal("the PUBLISH of a batch with a pending durable save was not held")
	}
	if got := publishedTo(b); got != "0" {
		t.Fatalf("peer received %s PUBLISH before the durable save was done", got)
	}
	pending := a.r.durWant.Load()

	stepped := make(chan struct{})
	type doResult struct {
		releasedAtReturn bool
		durable          uint64
	}
	returned := make(chan doResult, 1)
	go func() {
		a.r.Do(func(m *cluster.Machine, now time.Time) {
			_ = m.Nodes(false) // CLUSTER NODES: no save of its own
			close(stepped)
		})
		returned <- doResult{g.released.Load(), a.r.durableGen.Load()}
	}()
	select {
	case <-stepped: // its step ran while the sync is held in the gate
	case <-time.After(10 * time.Second):
		t.Fatal("a Do's step did not run while a durable save was syncing: the lock is held across the disk")
	}
	if got := g.calls.Load(); got != 1 {
		t.Fatalf("%d syncs reached the gate, want 1 (held there)", got)
	}
	g.release()
	res := <-returned
	if !res.releasedAtReturn || res.durable < pending {
		t.Fatalf("Do returned before the durable save pending at its step was done (released %v, durable gen %d, pending %d)",
			res.releasedAtReturn, res.durable, pending)
	}
	waitFor(t, 5*time.Second, "the held PUBLISH to arrive", func() bool { return publishedTo(b) == "1" })
	if n := heldFor(a.r); n != 0 {
		t.Fatalf("%d packets still held after the save was durable", n)
	}
}

// TestDurableSavesCoalesce: N durable saves requested while one sync is
// in progress are covered by one more sync, and the text it syncs holds
// every one of their changes.
func TestDurableSavesCoalesce(t *testing.T) {
	a := startBusNode(t, t.TempDir(), 33)
	g := installGate(t, a)
	syncs0 := a.r.Stats().Syncs
	a.r.Post(func(m *cluster.Machine, _ time.Time) { m.SaveConfig() })
	g.waitEntered(t)
	const n = 20
	for i := 0; i < n; i++ {
		slot := strconv.Itoa(1000 + 2*i)
		a.r.Post(func(m *cluster.Machine, now time.Time) {
			if err := m.AddSlots(now, slot); err != nil {
				t.Error(err)
			}
			m.SaveConfig()
		})
	}
	done := make(chan struct{})
	a.r.Post(func(*cluster.Machine, time.Time) { close(done) }) // posts run in order
	<-done
	want := a.r.durWant.Load()
	g.release()
	waitFor(t, 10*time.Second, "the durable saves done", func() bool { return a.r.durableGen.Load() >= want })
	if got := g.calls.Load(); got > 2 {
		t.Fatalf("%d syncs for %d durable saves requested during one sync, want at most 2", got, n)
	}
	st := a.r.Stats()
	if st.Syncs-syncs0 > 2 || st.DurableSaves < n+1 {
		t.Fatalf("stats %+v (syncs before %d)", st, syncs0)
	}
	text, _, err := readConfig(a.conf) // what a start after a crash loads
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if !strings.Contains(text, " "+strconv.Itoa(1000+2*i)) {
			t.Fatalf("the durable journal record lacks slot %d:\n%s", 1000+2*i, text)
		}
	}
}

// TestDoRepliesAfterItsDurableSave: a Do whose step asks for a durable
// save returns only after its fdatasync returned, and the record a start
// then loads holds its change.
func TestDoRepliesAfterItsDurableSave(t *testing.T) {
	a := startBusNode(t, t.TempDir(), 34)
	g := installGate(t, a)
	returned := make(chan bool, 1)
	go func() {
		a.r.Do(func(m *cluster.Machine, now time.Time) {
			m.AddSlots(now, "42")
			m.SaveConfig()
		})
		returned <- g.released.Load()
	}()
	g.waitEntered(t)
	g.release()
	if !<-returned {
		t.Fatal("Do returned before its durable save's sync did")
	}
	text, _, err := readConfig(a.conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, " 42\n") {
		t.Fatalf("the journal's newest record lacks the Do's slot:\n%s", text)
	}
}

// lockedBuffer is an io.Writer for a slog handler, safe across goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestFailedDurableSaveKeepsPacketsHeld: while the durable save fails,
// it is logged as an error and the PUBLISH of its batch stays held; once
// the disk works again, a later batch's retry makes it durable and the
// PUBLISH goes out.
func TestFailedDurableSaveKeepsPacketsHeld(t *testing.T) {
	dir := t.TempDir()
	var logs lockedBuffer
	a := startBusNodeWith(t, dir, 35, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	b := startBusNode(t, dir, 36)
	meetPair(t, a, b)
	g := installGate(t, a)
	g.fail.Store(true)
	g.release() // syncs pass the gate, and fail
	a.r.Post(func(m *cluster.Machine, now time.Time) {
		m.SaveConfig()
		m.Publish(now, []byte("ch"), []byte("after the sync"))
	})
	waitFor(t, 10*time.Second, "the failed save logged", func() bool {
		return strings.Contains(logs.String(), "can't update cluster config file") && g.calls.Load() >= 1
	})
	if n := heldFor(a.r); n == 0 {
		t.Fatal("a failed durable save released the packets of its state")
	}
	if got := publishedTo(b); got != "0" {
		t.Fatalf("peer received %s PUBLISH of a state whose save failed", got)
	}
	g.fail.Store(false)
	a.r.Post(func(*cluster.Machine, time.Time) {}) // a batch: the saver tries again
	waitFor(t, 10*time.Second, "the PUBLISH to arrive after the retry", func() bool { return publishedTo(b) == "1" })
	if n := heldFor(a.r); n != 0 {
		t.Fatalf("%d packets still held after the retry", n)
	}
}

// TestCloseWaitsForDurableSave: Close returns only after a durable save
// in progress is done, and the node's last text is then what a start
// loads.
func TestCloseWaitsForDurableSave(t *testing.T) {
	a := startBusNode(t, t.TempDir(), 37)
	g := installGate(t, a)
	a.r.Post(func(m *cluster.Machine, now time.Time) {
		m.AddSlots(now, "77")
		m.SaveConfig()
	})
	g.waitEntered(t)
	closed := make(chan bool, 1)
	go func() {
		a.r.Close()
		closed <- g.released.Load()
	}()
	// Close has stopped the loop and waits for the saver, held in the
	// gate: the loop's end is observable.
	select {
	case <-a.r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not stop the loop")
	}
	g.release()
	if !<-closed {
		t.Fatal("Close returned while a durable save was in its sync")
	}
	if err := confHasSlot(a.conf, "77"); err != nil {
		t.Fatal(err)
	}
}

// TestDoDoesNotWaitForLearnedSave: while a node's durable save of what it
// learned from a peer (a slot the peer claimed) is held in its
// fdatasync, a CLUSTER command whose own save needs no fsync returns
// with its change written, in nodes.conf and in the journal record a
// start loads (written into the slot neither synced nor syncing), as
// Redis's SETSLOT NODE replies after a save without fsync; the packets
// queued meanwhile stay held until the learned save is durable.
func TestDoDoesNotWaitForLearnedSave(t *testing.T) {
	dir := t.TempDir()
	a, b := startBusNode(t, dir, 35), startBusNode(t, dir, 36)
	meetPair(t, a, b)
	g := installGate(t, a)
	b.do(t, func(m *cluster.Machine, now time.Time) error { return m.AddSlots(now, "7") })
	g.waitEntered(t)
	if own, dur := a.r.durOwn.Load(), a.r.durableGen.Load(); own > dur {
		t.Fatalf("the held durable save is the node's own (own gen %d, durable %d)", own, dur)
	}
	pending := a.r.durWant.Load()
	if pending <= a.r.durableGen.Load() {
		t.Fatal("no durable save pending while its sync is held")
	}
	posted := make(chan struct{})
	a.r.Post(func(m *cluster.Machine, now time.Time) {
		m.Publish(now, []byte("ch"), []byte("after the learned save"))
		close(posted)
	})
	<-posted
	returned := make(chan error, 1)
	go func() {
		var err error
		if derr := a.r.Do(func(m *cluster.Machine, now time.Time) { err = m.AddSlots(now, "42") }); derr != nil {
			err = derr
		}
		if err == nil {
			err = confHasSlot(a.conf, "42")
		}
		returned <- err
	}()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a Do with a save of its own without fsync waited for a learned durable save's sync")
	}
	if g.released.Load() || a.r.durableGen.Load() >= pending {
		t.Fatal("the learned save became durable before the Do returned: the test proves nothing")
	}
	text, _, err := readConfig(a.conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, " 42\n") {
		t.Fatalf("the journal's newest record lacks the Do's slot:\n%s", text)
	}
	if n := heldFor(a.r); n == 0 {
		t.Fatal("no packet held for the learned save")
	}
	if got := publishedTo(b); got != "0" {
		t.Fatalf("peer received %s PUBLISH before the learned save was durable", got)
	}
	g.release()
	waitFor(t, 5*time.Second, "the held PUBLISH to arrive", func() bool { return publishedTo(b) == "1" })
	text, _, err = readConfig(a.conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, " 42\n") || !strings.Contains(text, " 7\n") {
		t.Fatalf("after the sync the journal's newest record lacks a change:\n%s", text)
	}
}

// meetPair has a meet b and waits until both know the two nodes.
func meetPair(t *testing.T, a, b *busNode) {
	t.Helper()
	a.do(t, func(m *cluster.Machine, now time.Time) error {
		return m.Meet(now, "127.0.0.1", strconv.Itoa(b.port), strconv.Itoa(b.cport))
	})
	for _, n := range []*busNode{a, b} {
		waitFor(t, 20*time.Second, "2 nodes settled", func() bool { return settled(n.nodes(t), 2) })
	}
}
