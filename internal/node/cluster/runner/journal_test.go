package runner

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// readSlot returns the record in the journal's slot i of nodes.conf at p.
func readSlot(t *testing.T, p string, i int) journalRecord {
	t.Helper()
	b, err := os.ReadFile(slotPath(p, i))
	if err != nil {
		t.Fatalf("journal slot %d: %v", i, err)
	}
	return parseJournalRecord(b)
}

// appendLegacyRecord appends an old-format journal record of text
// (state 'P' or 'A'), as the previous binary wrote it.
func appendLegacyRecord(b []byte, state byte, text string) []byte {
	b = append(b, legacyMagic...)
	b = append(b, state, ' ')
	b = appendZeroPadded(b, uint64(len(text)), 10, 10)
	b = append(b, ' ')
	b = appendZeroPadded(b, uint64(crc32Castagnoli(text)), 16, 8)
	b = append(b, '\n')
	return append(b, text...)
}

func crc32Castagnoli(s string) uint32 { return crc32.Checksum([]byte(s), castagnoli) }

// TestSaveDurable: an fsynced save rewrites nodes.conf in place (same
// inode, no temporary file left) to exactly the text, shorter or longer;
// its journal record, with the next seq, goes to the slot that did not
// hold the previous record, which keeps the previous text whole (the
// two slots alternate); a start loads the newest record.
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
	prev, prevSlot := "first\n", c.synced
	if r := readSlot(t, p, prevSlot); !r.ok || r.text != prev {
		t.Fatalf("slot %d after the first save: %+v", prevSlot, r)
	}
	texts := []string{strings.Repeat("a longer line\n", 400), "short\n", "medium text\n", strings.Repeat("x", 9000) + "\n"}
	for n, text := range texts {
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
		if c.synced != 1-prevSlot {
			t.Fatalf("save %d went to slot %d; the previous record is in slot %d", n, c.synced, prevSlot)
		}
		cur, old := readSlot(t, p, c.synced), readSlot(t, p, prevSlot)
		if !cur.ok || cur.text != text || cur.seq != uint64(n+2) {
			t.Fatalf("new record: ok %v seq %d text %.20q; want seq %d, %.20q", cur.ok, cur.seq, cur.text, n+2, text)
		}
		if !old.ok || old.text != prev || old.seq != uint64(n+1) {
			t.Fatalf("other slot: ok %v seq %d text %.20q; want the previous save's record, seq %d", old.ok, old.seq, old.text, n+1)
		}
		if got, fb, err := readConfig(p); err != nil || got != text || fb != "" {
			t.Fatalf("readConfig = %.20q, %q, %v; want the newest record, no fallback", got, fb, err)
		}
		prev, prevSlot = text, c.synced
	}
	st1, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(st0, st1) {
		t.Fatal("an fsynced save replaced nodes.conf's inode; it must rewrite it in place")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("directory holds %d entries, want nodes.conf and its journal's two files: %v", len(ents), ents)
	}
	c.close()
}

// TestSaveInPlaceJournal: a save without fsync also writes its record,
// into the slot that is not the synced one, and leaves the synced slot
// alone; a durable save after it writes that same unsynced slot (whose
// record is then the newest and synced).
func TestSaveInPlaceJournal(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	c := &confFile{path: p}
	if err := c.saveDurable("durable\n"); err != nil {
		t.Fatal(err)
	}
	s := c.synced
	for _, text := range []string{"plain 1\n", "plain 2, longer\n", "p3\n"} {
		if err := c.saveInPlace(text); err != nil {
			t.Fatal(err)
		}
		if c.synced != s {
			t.Fatalf("a save without fsync moved the synced slot %d -> %d", s, c.synced)
		}
		if r := readSlot(t, p, s); !r.ok || r.text != "durable\n" {
			t.Fatalf("synced slot after a plain save: %+v", r)
		}
		if r := readSlot(t, p, 1-s); !r.ok || r.text != text {
			t.Fatalf("other slot after a plain save of %q: %+v", text, r)
		}
		if got, _, err := readConfig(p); err != nil || got != text {
			t.Fatalf("readConfig = %q, %v; want %q", got, err, text)
		}
	}
	if err := c.saveDurable("durable 2\n"); err != nil {
		t.Fatal(err)
	}
	if c.synced != 1-s {
		t.Fatalf("durable save went to slot %d, want %d (not the last synced one)", c.synced, 1-s)
	}
	c.close()
}

// TestReadConfigAfterCrash: what a start loads from files as a crash
// leaves them, by the rule in readConfig's doc.
func TestReadConfigAfterCrash(t *testing.T) {
	old, next := "old text\nvars currentEpoch 1 lastVoteEpoch 0\n", "new text\nvars currentEpoch 2 lastVoteEpoch 0\n"
	r1, r2 := string(appendJournalRecord(nil, 7, old)), string(appendJournalRecord(nil, 8, next))
	torn := "new text\nvars curr" + strings.Repeat("\n", 5) // a torn in-place write
	flip := func(s string, i int) string { b := []byte(s); b[i] ^= 0x20; return string(b) }
	legP, legA := string(appendLegacyRecord(nil, 'P', next)), string(appendLegacyRecord(nil, 'A', old))
	cases := []struct {
		name               string
		conf, slot0, slot1 string // "-": file missing
		want, fallback     string
	}{
		{"newest record torn: the other", old, r1, r2[:len(r2)-7], old, ""},
		{"newest record torn in its header", old, r1, r2[:30], old, ""},
		{"newest record corrupt text", old, r1, strings.Replace(r2, "new", "NEW", 1), old, ""},
		{"newest record corrupt seq", old, r1, flip(r2, len(journalMagic)+19), old, ""},
		{"older record's seq corrupt to a higher one", old, strings.Replace(r1, "0000007 ", "0000009 ", 1), r2, next, ""},
		{"newest record mixed with the older one", old, r2[:journalHeader] + r1[journalHeader:], r1, old, ""},
		{"both valid, newest in slot 1", old, r1, r2, next, ""},
		{"both valid, newest in slot 0", old, r2, r1, next, ""},
		{"newest valid, nodes.conf not written", old, r1, r2, next, ""},
		{"newest valid, nodes.conf torn", torn, r1, r2, next, ""},
		{"newest valid, nodes.conf does not parse", "garbage", r2, "-", next, ""},
		{"one slot only", old, "-", r2, next, ""},
		{"both torn, no legacy: nodes.conf", old, r1[:20], r2[:40], old, ""},
		{"padding after the record", old, r2 + strings.Repeat("\n", 300) + "junk", r1, next, ""},
		{"no journal", old, "-", "-", old, ""},
		{"journal without nodes.conf: a new node", "-", r1, r2, "", ""},
		{"empty nodes.conf: a new node", "", r1, r2, "", ""},
		{"legacy pending: its text", torn, legP, "-", next, ""},
		{"legacy applied: nodes.conf, the record as fallback", torn, legA, "-", torn, old},
		{"legacy applied, same as nodes.conf", old, legA, "-", old, ""},
		{"legacy torn: nodes.conf", old, legP[:len(legP)-3], "-", old, ""},
		{"legacy beside a new record: the new one", old, legP, r1, old, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "nodes.conf")
			for f, content := range map[string]string{p: tc.conf, slotPath(p, 0): tc.slot0, slotPath(p, 1): tc.slot1} {
				if content == "-" {
					continue
				}
				if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
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

// TestJournalCrashImages runs a random sequence of saves, durable and
// not, of texts that grow and shrink across page boundaries, and after
// each one builds the files a crash can leave and checks what a start
// loads:
//   - a process crash (every write reached the page cache; nodes.conf
//     as written, as before the save, or torn between the two): the
//     last save's text;
//   - a power loss (each slot holding any content written to it since
//     the last durable save that wrote it, or the newest such content
//     torn at a byte over the one before, or with a byte flipped;
//     nodes.conf any of the above): the last durable save's text or a
//     later save's, exactly.
func TestJournalCrashImages(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	img := filepath.Join(t.TempDir(), "nodes.conf")
	c := &confFile{path: p}
	rng := rand.New(rand.NewPCG(23, 2))
	read := func(f string) []byte {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil
		}
		return b
	}
	// hist[i]: slot i's contents written since it was last synced, the
	// synced content first (nil: the file did not exist).
	var hist [2][][]byte
	hist[0], hist[1] = [][]byte{nil}, [][]byte{nil}
	var texts []string
	lastDurable := -1
	var conf []byte
	load := func(confImg, s0, s1 []byte) string {
		t.Helper()
		for f, b := range map[string][]byte{img: confImg, slotPath(img, 0): s0, slotPath(img, 1): s1} {
			os.Remove(f)
			if b != nil {
				if err := os.WriteFile(f, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		text, _, err := readConfig(img)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	tornOver := func(newer, older []byte, at int) []byte {
		b := append([]byte(nil), newer[:at]...)
		if at < len(older) {
			b = append(b, older[at:]...)
		}
		return b
	}
	for step := 0; step < 60; step++ {
		text := fmt.Sprintf("save %d\n%s\nvars currentEpoch %d lastVoteEpoch 0\n", step, strings.Repeat("slots ", rng.IntN(1500)), step)
		durable := rng.IntN(3) == 0
		before := [2][]byte{read(slotPath(p, 0)), read(slotPath(p, 1))}
		prevConf := conf
		var err error
		if durable {
			err = c.saveDurable(text)
		} else if err = c.saveInPlace(text); err != nil && prevConf == nil {
			err = c.saveAtomic(text) // the first save: no file yet, as flushConfig does
			durable = true
		}
		if err != nil {
			t.Fatal(err)
		}
		conf = read(p)
		after := [2][]byte{read(slotPath(p, 0)), read(slotPath(p, 1))}
		// The model of the disk, from what the save is, not from
		// confFile's state: a durable save's writes are synced.
		for i := range after {
			if bytes.Equal(before[i], after[i]) {
				continue
			}
			if durable {
				hist[i] = [][]byte{after[i]}
			} else {
				hist[i] = append(hist[i], after[i])
			}
		}
		texts = append(texts, text)
		if durable {
			lastDurable = step
		}
		confs := [][]byte{conf}
		if prevConf != nil {
			confs = append(confs, prevConf, tornOver(conf, prevConf, len(conf)/2))
		}
		for _, ci := range confs {
			if got := load(ci, after[0], after[1]); got != text {
				t.Fatalf("step %d, process crash: loaded %.30q, want the last save %.30q", step, got, text)
			}
		}
		// Power loss: each slot's possible contents.
		var images [2][][]byte
		for i := range images {
			images[i] = append(images[i], hist[i]...)
			if n := len(hist[i]); n >= 2 && hist[i][n-1] != nil {
				newest, older := hist[i][n-1], hist[i][n-2]
				for _, at := range []int{0, 1, journalHeader - 1, journalHeader + 1, len(newest) / 2, len(newest) - 1} {
					if at < len(newest) {
						images[i] = append(images[i], tornOver(newest, older, at))
					}
				}
				f := append([]byte(nil), newest...)
				f[journalHeader+rng.IntN(len(f)-journalHeader)] ^= 1
				images[i] = append(images[i], f)
			}
		}
		for _, s0 := range images[0] {
			for _, s1 := range images[1] {
				for _, ci := range confs {
					got := load(ci, s0, s1)
					k := -1
					for j := len(texts) - 1; j >= 0; j-- {
						if texts[j] == got {
							k = j
							break
						}
					}
					if k < lastDurable {
						t.Fatalf("step %d, power loss: loaded %.30q (save %d), want save %d or later", step, got, k, lastDurable)
					}
				}
			}
		}
	}
	c.close()
}

// TestSaveInPlaceAfterFailedDurable: after an fsynced save stopped
// between its record's write and its sync (the record whole in the
// unsynced slot), a plain save writes a newer record over it, and the
// next start loads the plain save's text.
func TestSaveInPlaceAfterFailedDurable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	c := &confFile{path: p}
	for _, text := range []string{"zero\n", "one\n"} { // the first creates nodes.conf
		if err := c.saveDurable(text); err != nil {
			t.Fatal(err)
		}
	}
	// The state a failed sync leaves: the record written, seq used, the
	// files closed.
	s := c.synced
	c.seq++
	if err := os.WriteFile(slotPath(p, 1-s), appendJournalRecord(nil, c.seq, "two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.close()
	if err := c.saveInPlace("three\n"); err != nil {
		t.Fatal(err)
	}
	if text, _, err := readConfig(p); err != nil || text != "three\n" {
		t.Fatalf("readConfig = %q, %v; want the last save's text", text, err)
	}
	if r := readSlot(t, p, s); !r.ok || r.text != "one\n" {
		t.Fatalf("the synced slot was written: %+v", r)
	}
	c.close()
}

// TestSaveAtClose: the save at shutdown leaves nodes.conf alone (the
// journal removed), which the next start loads; the first save after
// that start, even one without fsync, writes a synced record, so
// nodes.conf's in-place rewrite is covered from then on.
func TestSaveAtClose(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "nodes.conf")
	c := &confFile{path: p}
	for _, text := range []string{"zero\n", "one\n", "two\n"} {
		if err := c.saveDurable(text); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.saveAtClose("closing\n"); err != nil {
		t.Fatal(err)
	}
	c.close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "nodes.conf" {
		t.Fatalf("after the save at close the directory holds %v, want nodes.conf alone", ents)
	}
	if text, _, err := readConfig(p); err != nil || text != "closing\n" {
		t.Fatalf("readConfig = %q, %v; want the text saved at close", text, err)
	}
	c = &confFile{path: p} // the next start
	if err := c.saveInPlace("after restart\n"); err != nil {
		t.Fatal(err)
	}
	if c.synced != 0 {
		t.Fatalf("first save after a start without journal: synced slot %d, want 0 (synced)", c.synced)
	}
	if r := readSlot(t, p, 0); !r.ok || r.text != "after restart\n" {
		t.Fatalf("slot 0: %+v", r)
	}
	c.close()
}

// TestJournalLegacyUpgrade: a node whose journal is in the old format
// (a pending record, nodes.conf torn) starts with the record's text; its
// first save goes to slot 1, synced, leaving the old record alone, and
// from then on the new records win.
func TestJournalLegacyUpgrade(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	text := "legacy text\nvars currentEpoch 3 lastVoteEpoch 0\n"
	leg := appendLegacyRecord(nil, 'P', text)
	if err := os.WriteFile(p, []byte(text[:9]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(slotPath(p, 0), leg, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := readConfig(p); err != nil || got != text {
		t.Fatalf("readConfig = %q, %v; want the old pending record's text", got, err)
	}
	c := &confFile{path: p}
	if err := c.saveInPlace("upgraded\n"); err != nil {
		t.Fatal(err)
	}
	if c.synced != 1 {
		t.Fatalf("first save after the upgrade: synced slot %d, want 1", c.synced)
	}
	if b, _ := os.ReadFile(slotPath(p, 0)); !bytes.Equal(b, leg) {
		t.Fatalf("the old record was written over: %q", b)
	}
	if got, _, err := readConfig(p); err != nil || got != "upgraded\n" {
		t.Fatalf("readConfig = %q, %v; want the new record's text", got, err)
	}
	if err := c.saveDurable("second\n"); err != nil {
		t.Fatal(err)
	}
	if r := readSlot(t, p, 0); c.synced != 0 || !r.ok || r.text != "second\n" {
		t.Fatalf("second save: synced %d, slot 0 %+v", c.synced, r)
	}
	c.close()
}

// TestLoadJournalSyncsNewest: a start that finds records makes the next
// save write the slot that does not hold the newest one, continuing its
// seq.
func TestLoadJournalSyncsNewest(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, rec := range [][]byte{appendJournalRecord(nil, 41, "b\n"), appendJournalRecord(nil, 40, "a\n")} {
		if err := os.WriteFile(slotPath(p, i), rec, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &confFile{path: p}
	if err := c.saveInPlace("c\n"); err != nil {
		t.Fatal(err)
	}
	if r := readSlot(t, p, 1); !r.ok || r.seq != 42 || r.text != "c\n" {
		t.Fatalf("slot 1 after the first save: %+v, want seq 42", r)
	}
	if r := readSlot(t, p, 0); !r.ok || r.seq != 41 {
		t.Fatalf("slot 0 (the newest at start) was written: %+v", r)
	}
	c.close()
}

// snapshotJournal returns the journal's two files of nodes.conf at p.
func snapshotJournal(t *testing.T, p string) [2][]byte {
	t.Helper()
	var s [2][]byte
	for i := range s {
		b, err := os.ReadFile(slotPath(p, i))
		if err != nil {
			t.Fatalf("journal slot %d after an fsynced save: %v", i, err)
		}
		s[i] = b
	}
	return s
}

// restartAndCheck starts a runner on a's config file and checks it loaded
// id, epoch and owns want slots.
func restartAndCheck(t *testing.T, a *busNode, id string, epoch uint64, want int) {
	t.Helper()
	cfg := cluster.DefaultConfig()
	cfg.Port, cfg.CPort, cfg.IP = a.port, a.cport, "127.0.0.1"
	m, err := cluster.New(cfg, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(m, Options{ListenAddrs: []string{"127.0.0.1:" + strconv.Itoa(a.cport)}, ConfigFile: a.conf})
	if err != nil {
		t.Fatalf("restart: %v", err)
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
	if gotID != id || gotEpoch != epoch || owned != want {
		t.Fatalf("after restart: id %s epoch %d, %d slots; want %s, %d, %d", gotID, gotEpoch, owned, id, epoch, want)
	}
}

// TestRestartFromJournal: a node that crashed after an fsynced save, its
// nodes.conf torn (the kept prefix of the text, as a crash in the middle
// of the in-place write leaves it), restarts from the journal with the
// saved id, epochs and slots.
func TestRestartFromJournal(t *testing.T) {
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
	j := snapshotJournal(t, a.conf)
	text, _, err := readConfig(a.conf)
	if err != nil {
		t.Fatal(err)
	}
	a.r.Close()
	if _, err := os.Stat(slotPath(a.conf, 0)); err == nil {
		t.Fatal("the journal is still there after a clean close")
	}
	// The crash: the journal as the save left it, nodes.conf cut.
	for i, b := range j {
		if err := os.WriteFile(slotPath(a.conf, i), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(a.conf, []byte(text[:len(text)/2]), 0o644); err != nil {
		t.Fatal(err)
	}
	restartAndCheck(t, a, id, epoch, 50)
}

// TestRestartFromLegacyJournal: a node upgraded from the old journal
// format, which crashed with its record pending and nodes.conf torn,
// restarts with the record's id, epochs and slots.
func TestRestartFromLegacyJournal(t *testing.T) {
	a := startBusNode(t, t.TempDir(), 22)
	a.do(t, func(m *cluster.Machine, now time.Time) error { return m.AddSlotsRange(now, "100", "119") })
	var id string
	var epoch uint64
	var text string
	a.do(t, func(m *cluster.Machine, now time.Time) error {
		m.BumpEpoch(now)
		id, epoch, text = m.MyID(), m.CurrentEpoch(), m.RenderNodesConf()
		return nil
	})
	a.r.Close()
	if err := os.WriteFile(slotPath(a.conf, 0), appendLegacyRecord(nil, 'P', text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.conf, []byte(text[:len(text)/3]), 0o644); err != nil {
		t.Fatal(err)
	}
	restartAndCheck(t, a, id, epoch, 20)
}

// TestJournalCrashImagesDuringSync is TestJournalCrashImages with the
// durable saves split as the runner makes them (beginDurable, the
// fdatasync outside the lock, endDurable) and saves without fsync written
// during the sync, as a CLUSTER command's own save then is. After every
// write it checks what a start loads: after a process crash the last
// save's text; after a power loss, for every content each slot may hold
// (what was written to it since its last completed sync, the newest torn
// over the one before or with a byte flipped), the last completed
// durable save's text or a later save's. A slot written while its record
// syncs would show here as a torn record that no sync covered.
func TestJournalCrashImagesDuringSync(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	c := &confFile{path: p}
	rng := rand.New(rand.NewPCG(29, 5))
	read := func(f string) []byte {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil
		}
		return b
	}
	readSlots := func() (s [journalSlots][]byte) {
		for i := range s {
			s[i] = read(slotPath(p, i))
		}
		return s
	}
	// hist[i]: slot i's contents written since its last completed sync,
	// the synced content first (nil: no file).
	var hist [journalSlots][][]byte
	for i := range hist {
		hist[i] = [][]byte{nil}
	}
	var texts []string
	lastDurable := -1
	cur := readSlots()
	// observe records the writes since the last look in the model.
	observe := func() {
		now := readSlots()
		for i := range now {
			if !bytes.Equal(now[i], cur[i]) {
				hist[i] = append(hist[i], now[i])
			}
		}
		cur = now
	}
	tornOver := func(newer, older []byte, at int) []byte {
		b := append([]byte(nil), newer[:at]...)
		if at < len(older) {
			b = append(b, older[at:]...)
		}
		return b
	}
	check := func(step int, what string) {
		t.Helper()
		text, _, err := readConfig(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := texts[len(texts)-1]; text != want {
			t.Fatalf("step %d (%s), process crash: loaded %.30q, want the last save %.30q", step, what, text, want)
		}
		var images [journalSlots][][]byte
		for i := range images {
			images[i] = append(images[i], hist[i]...)
			if n := len(hist[i]); n >= 2 && hist[i][n-1] != nil {
				newest, older := hist[i][n-1], hist[i][n-2]
				for _, at := range []int{1, journalHeader + 1, len(newest) / 2, len(newest) - 1} {
					if at < len(newest) {
						images[i] = append(images[i], tornOver(newest, older, at))
					}
				}
				f := append([]byte(nil), newest...)
				f[journalHeader+rng.IntN(len(f)-journalHeader)] ^= 1
				images[i] = append(images[i], f)
			}
		}
		var recs [journalSlots][]journalRecord
		for i := range images {
			for _, b := range images[i] {
				recs[i] = append(recs[i], parseJournalRecord(b))
			}
		}
		for _, r0 := range recs[0] {
			for _, r1 := range recs[1] {
				for _, r2 := range recs[2] {
					js := journalState{rec: [journalSlots]journalRecord{r0, r1, r2}}
					n := js.newest()
					if n < 0 {
						t.Fatalf("step %d (%s), power loss: no valid record", step, what)
					}
					k := slices.Index(texts, js.rec[n].text)
					if k < lastDurable {
						t.Fatalf("step %d (%s), power loss: loaded save %d, want save %d or later", step, what, k, lastDurable)
					}
				}
			}
		}
	}
	textOf := func(step, sub int) string {
		return fmt.Sprintf("save %d.%d\n%s\nvars currentEpoch %d lastVoteEpoch 0\n", step, sub, strings.Repeat("slots ", rng.IntN(1500)), step)
	}
	first := textOf(0, 0)
	if err := c.saveAtomic(first); err != nil {
		t.Fatal(err)
	}
	texts, lastDurable = append(texts, first), 0
	observe()
	for i := range hist { // saveAtomic's record is synced
		hist[i] = [][]byte{cur[i]}
	}
	check(0, "first save")
	plain := func(step, sub int) {
		text := textOf(step, sub)
		if err := c.saveInPlace(text); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, text)
		observe()
		check(step, "plain")
	}
	for step := 1; step < 50; step++ {
		switch rng.IntN(3) {
		case 0:
			plain(step, 0)
		case 1: // durable, with 0-3 plain saves during its sync
			text := textOf(step, 0)
			d, err := c.beginDurable(text)
			if err != nil || d.done {
				t.Fatalf("beginDurable: %v, done %v", err, d.done)
			}
			texts = append(texts, text)
			observe()
			atBegin := cur[d.slot]
			check(step, "durable begun")
			for k := rng.IntN(4); k > 0; k-- {
				plain(step, k)
			}
			if err := c.endDurable(d, d.sync()); err != nil {
				t.Fatal(err)
			}
			observe()
			// The sync covered what the slot held when it began, and
			// nothing written to the slot after (if anything was).
			after := hist[d.slot]
			i := len(after) - 1
			for i > 0 && !bytes.Equal(after[i], atBegin) {
				i--
			}
			hist[d.slot] = append([][]byte{atBegin}, after[i+1:]...)
			lastDurable = slices.Index(texts, text)
			check(step, "durable ended")
		case 2: // durable in one call
			text := textOf(step, 0)
			before := readSlots()
			if err := c.saveDurable(text); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, text)
			now := readSlots()
			for i := range now {
				if !bytes.Equal(now[i], before[i]) {
					hist[i] = [][]byte{now[i]}
				}
			}
			cur = now
			lastDurable = len(texts) - 1
			check(step, "durable")
		}
	}
	if c.syncing >= 0 {
		t.Fatal("a sync left pending")
	}
	used := 0
	for i := range cur {
		if cur[i] != nil {
			used++
		}
	}
	if used != journalSlots {
		t.Fatalf("%d journal slots used, want %d (a plain save during a sync takes the third)", used, journalSlots)
	}
	c.close()
}
