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
