package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	a.do(t, func(m *cluster.Machine, now time.Time) error {
		return m.Meet(now, "127.0.0.1", strconv.Itoa(b.port), strconv.Itoa(b.cport))
	})
	for _, n := range []*busNode{a, b} {
		waitFor(t, 20*time.Second, "2 nodes settled", func() bool { return settled(n.nodes(t), 2) })
	}
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
