package runner

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// TestSaveDurable: an fsynced save rewrites nodes.conf in place (same
// inode, no temporary file left) to exactly the text, shorter or longer,
// and leaves the journal holding that text, marked applied, so a start
// loads nodes.conf.
func TestSaveDurable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "nodes.conf")
	c := &confFile{path: p}
	if err := c.saveDurable("first\n"); err != nil { // creates the file
		t.Fatal(err)
	}
	st0, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{strings.Repeat("a longer line\n", 10), "short\n"} {
		if err := c.saveDurable(text); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != text {
			t.Fatalf("nodes.conf holds %q, want %q", got, text)
		}
		j, err := os.ReadFile(p + journalSuffix)
		if err != nil {
			t.Fatal(err)
		}
		jt, pending, ok := parseJournal(j)
		if !ok || pending || jt != text {
			t.Fatalf("journal: text %q pending %v ok %v, want %q applied", jt, pending, ok, text)
		}
		if text, fb, err := readConfig(p); err != nil || text != string(got) || fb != "" {
			t.Fatalf("readConfig = %q, %q, %v; want nodes.conf's text, no fallback", text, fb, err)
		}
	}
	st1, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(st0, st1) {
		t.Fatal("an fsynced save replaced nodes.conf's inode; it must rewrite it in place")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("directory holds %d entries, want nodes.conf and its journal: %v", len(ents), ents)
	}
	c.close()
}

// TestReadConfigAfterCrash: what a start loads after a crash at each
// point of saveDurable, built as the crash would leave the files.
func TestReadConfigAfterCrash(t *testing.T) {
	old, next := "old text\nvars currentEpoch 1 lastVoteEpoch 0\n", "new text\nvars currentEpoch 2 lastVoteEpoch 0\n"
	pendingRec := string(appendJournalRecord(nil, next))
	appliedRec := pendingRec[:journalState] + "A" + pendingRec[journalState+1:]
	oldApplied := string(appendJournalRecord(nil, old))
	oldApplied = oldApplied[:journalState] + "A" + oldApplied[journalState+1:]
	torn := "new text\nvars curr" + strings.Repeat("\n", 5) // a torn in-place write
	cases := []struct {
		name           string
		conf, journal  string // "-": file missing
		want, fallback string
	}{
		{"journal record torn", old, pendingRec[:len(pendingRec)-7], old, ""},
		{"journal record corrupt", old, strings.Replace(pendingRec, "new", "NEW", 1), old, ""},
		{"journal synced, nodes.conf not written", old, pendingRec, next, ""},
		{"journal synced, nodes.conf torn", torn, pendingRec, next, ""},
		{"nodes.conf synced, not marked applied", next, pendingRec, next, ""},
		{"marked applied", next, appliedRec, next, ""},
		{"a later unsynced save torn", torn, appliedRec, torn, next},
		{"a later unsynced save whole", "newer\n", oldApplied, "newer\n", old},
		{"no journal", old, "-", old, ""},
		{"journal without nodes.conf: a new node", "-", pendingRec, "", ""},
		{"empty nodes.conf: a new node", "", pendingRec, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "nodes.conf")
			if tc.conf != "-" {
				if err := os.WriteFile(p, []byte(tc.conf), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.journal != "-" {
				if err := os.WriteFile(p+journalSuffix, []byte(tc.journal), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			text, fb, err := readConfig(p)
			if err != nil {
				t.Fatal(err)
			}
			if text != tc.want || fb != tc.fallback {
				t.Fatalf("readConfig = %q, fallback %q; want %q, fallback %q", text, fb, tc.want, tc.fallback)
			}
		})
	}
}

// TestSaveInPlaceAfterFailedDurable: after an fsynced save stopped with
// its journal record pending, a plain save goes through the journal too,
// so the next start does not load the older pending text over it.
func TestSaveInPlaceAfterFailedDurable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	c := &confFile{path: p}
	for _, text := range []string{"zero\n", "one\n"} { // the first creates nodes.conf
		if err := c.saveDurable(text); err != nil {
			t.Fatal(err)
		}
	}
	// The state a failure after the journal's write leaves.
	c.jbuf = appendJournalRecord(c.jbuf[:0], "two\n")
	if _, err := c.j.WriteAt(c.jbuf, 0); err != nil {
		t.Fatal(err)
	}
	c.jpending = true
	c.close()
	if err := c.saveInPlace("three\n"); err != nil {
		t.Fatal(err)
	}
	if text, _, err := readConfig(p); err != nil || text != "three\n" {
		t.Fatalf("readConfig = %q, %v; want the last save's text", text, err)
	}
	c.close()
}

// TestRestartFromPendingJournal: a node whose fsynced save was cut after
// its journal record was synced (nodes.conf torn: the kept prefix of the
// new text, as a crash in the middle of the in-place write leaves it)
// restarts with the saved id, epochs and slots.
func TestRestartFromPendingJournal(t *testing.T) {
	a := startBusNode(t, t.TempDir(), 21)
	a.do(t, func(m *cluster.Machine, now time.Time) error { return m.AddSlotsRange(now, "300", "349") })
	var id string
	var epoch uint64
	a.do(t, func(m *cluster.Machine, now time.Time) error {
		m.BumpEpoch(now) // an fsynced save: through the journal
		id, epoch = m.MyID(), m.CurrentEpoch()
		return nil
	})
	if epoch == 0 {
		t.Fatal("BUMPEPOCH left the current epoch at 0")
	}
	j, err := os.ReadFile(a.conf + journalSuffix)
	if err != nil {
		t.Fatalf("no journal after an fsynced save: %v", err)
	}
	text, pending, ok := parseJournal(j)
	if !ok || pending {
		t.Fatalf("journal after the save: ok %v pending %v", ok, pending)
	}
	a.r.Close()
	// The crash: the record still pending, nodes.conf cut in the middle.
	j[journalState] = 'P'
	if err := os.WriteFile(a.conf+journalSuffix, j, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.conf, []byte(text[:len(text)/2]), 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := cluster.DefaultConfig()
	cfg.Port, cfg.CPort, cfg.IP = a.port, a.cport, "127.0.0.1"
	m, err := cluster.New(cfg, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(m, Options{ListenAddrs: []string{"127.0.0.1:" + strconv.Itoa(a.cport)}, ConfigFile: a.conf})
	if err != nil {
		t.Fatalf("restart on a torn nodes.conf with a pending journal: %v", err)
	}
	defer r.Close()
	var gotID string
	var gotEpoch uint64
	var owned int
	r.Do(func(m *cluster.Machine, _ time.Time) {
		gotID, gotEpoch = m.MyID(), m.CurrentEpoch()
		for s := 0; s < cluster.NumSlots; s++ {
			if me, _ := m.SlotOwnerIsMe(s); me {
				owned++
			}
		}
	})
	if gotID != id || gotEpoch != epoch || owned != 50 {
		t.Fatalf("after restart: id %s epoch %d, %d slots; want %s, %d, 50", gotID, gotEpoch, owned, id, epoch)
	}
}
