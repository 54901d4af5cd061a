package runner

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
)

// confFile writes nodes.conf and its journal (see journalSuffix). It keeps
// the files open between saves, so a save without fsync is two writes
// (and a truncation when the text got shorter), not opens, stats and
// closes. The caller serialises its methods (Runner.fileMu).
type confFile struct {
	path string
	// f is nodes.conf's current inode, open for writing, or nil (not
	// opened yet, or a save failed); size is its length.
	f    *os.File
	size int64
	buf  []byte
	// j holds the journal's slot files, open for writing, or nil (not
	// opened yet, removed, or a save failed); jsize their lengths.
	j     [journalSlots]*os.File
	jsize [journalSlots]int64
	jbuf  []byte
	// jloaded is set once loadJournal has read the journal; seq is then
	// the highest seq written or found, synced the slot holding the
	// newest fdatasynced record (-1: none yet), syncing the slot whose
	// record a durable save is fdatasyncing outside the caller's lock
	// (-1: none; see beginDurable), and legacy is set while slot 0 holds
	// an old-format record that no synced record replaced.
	jloaded bool
	seq     uint64
	synced  int
	syncing int
	legacy  bool
	// syncs counts the journal's fdatasyncs (Stats.Syncs).
	syncs atomic.Int64
	// syncHook, when set, runs before every fdatasync of the journal; an
	// error it returns fails that sync. A test-only seam: tests set it
	// (under Runner.fileMu) to hold a durable save in the middle of its
	// sync, or to fail it.
	syncHook func() error
}

// syncJournal fdatasyncs the journal's slot file j, through syncHook.
func (c *confFile) syncJournal(j *os.File) error {
	return pendingSync{f: j, hook: c.syncHook, n: &c.syncs}.sync()
}

// open opens the existing nodes.conf for in-place saves.
func (c *confFile) open() error {
	if c.f != nil {
		return nil
	}
	f, err := os.OpenFile(c.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	c.f, c.size = f, st.Size()
	return nil
}

// The journal makes every save crash-safe while nodes.conf is rewritten
// in place without a sync. It is three files beside nodes.conf, its
// record slots: slot 0 is path+journalSuffix, slot 1 path+journalSuffix1,
// slot 2 path+journalSuffix2. Each holds at most one record at offset 0:
//
//	shardis-nodes-journal2 <seq, 20 digits> <length, 10 digits> <crc32c, 8 hex>\n<text>
//
// seq numbers the saves (each record's is one more than the record
// written before it); the checksum covers the seq and length fields and
// the text, so a record torn at any byte, or mixed from two writes, does
// not check (but for crc32c's 2^-32 chance of a collision). A slot file is rewritten in place and never shrinks (it grows
// in whole journalPage steps, so a text a few bytes longer does not change
// its size, which fdatasync would then commit as well); what follows the
// record is ignored.
//
// Every save writes its record into a slot that holds neither the newest
// fdatasynced record nor a record being fdatasynced, then nodes.conf; a
// durable save fdatasyncs its record, and its slot is then the synced
// one. So the synced slot is never written while it is the only durable
// copy of the last durable save, a record is never written while its
// sync runs (so the sync covers the record whole), and nodes.conf is
// never relied on. The third slot is what lets a save without fsync be
// written while a durable save's fdatasync runs (beginDurable): one slot
// is then synced, one syncing, and the third takes the plain save.
//
// The old format (one record in slot 0: "shardis-nodes-journal <P|A>
// <length> <crc32c>\n<text>", state P pending or A applied, written
// before nodes.conf was fsynced) is still read, so a node upgraded from
// it starts (readConfig); the first save after such a start writes slot
// 1 and is fdatasynced, and the old record is then never read again (a
// valid new record wins over it).
const (
	journalSuffix  = ".journal"
	journalSuffix1 = ".journal.1"
	journalSuffix2 = ".journal.2"
	// journalSlots is the number of record slots.
	journalSlots = 3
	journalMagic = "shardis-nodes-journal2 "
	// journalFields is the length of "<seq> <length> " after the magic.
	journalFields = 20 + 1 + 10 + 1
	journalHeader = len(journalMagic) + journalFields + 8 + 1
	// journalPage is the unit a slot file grows by.
	journalPage = 4096

	legacyMagic = "shardis-nodes-journal "
	// legacyState is the old format's state byte offset.
	legacyState  = len(legacyMagic)
	legacyHeader = len(legacyMagic) + 1 + 1 + 10 + 1 + 8 + 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// slotPath returns the path of the journal's slot i (0, 1 or 2).
func slotPath(path string, i int) string {
	switch i {
	case 0:
		return path + journalSuffix
	case 1:
		return path + journalSuffix1
	}
	return path + journalSuffix2
}

// appendZeroPadded appends v in decimal or hexadecimal, zero-padded to
// width digits.
func appendZeroPadded(b []byte, v uint64, base, width int) []byte {
	d := strconv.AppendUint(nil, v, base)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// appendJournalRecord appends the record of text with sequence seq to b.
func appendJournalRecord(b []byte, seq uint64, text string) []byte {
	start := len(b)
	b = append(b, journalMagic...)
	b = appendZeroPadded(b, seq, 10, 20)
	b = append(b, ' ')
	b = appendZeroPadded(b, uint64(len(text)), 10, 10)
	b = append(b, ' ')
	sum := crc32.Update(crc32.Checksum(b[start+len(journalMagic):], castagnoli), castagnoli, []byte(text))
	b = appendZeroPadded(b, uint64(sum), 16, 8)
	b = append(b, '\n')
	return append(b, text...)
}

// journalRecord is what one slot holds.
type journalRecord struct {
	ok   bool // a whole record that checks
	seq  uint64
	text string
}

// parseJournalRecord parses the record at the start of b; ok is false
// when it is missing, torn, corrupt or in the old format.
func parseJournalRecord(b []byte) journalRecord {
	if len(b) < journalHeader || string(b[:len(journalMagic)]) != journalMagic || b[journalHeader-1] != '\n' {
		return journalRecord{}
	}
	h := b[len(journalMagic) : journalHeader-1]
	if h[20] != ' ' || h[31] != ' ' {
		return journalRecord{}
	}
	seq, err1 := strconv.ParseUint(string(h[:20]), 10, 64)
	n, err2 := strconv.ParseUint(string(h[21:31]), 10, 31)
	c, err3 := strconv.ParseUint(string(h[32:40]), 16, 32)
	if err1 != nil || err2 != nil || err3 != nil || uint64(len(b)-journalHeader) < n {
		return journalRecord{}
	}
	body := b[journalHeader : journalHeader+int(n)]
	if crc32.Update(crc32.Checksum(h[:journalFields], castagnoli), castagnoli, body) != uint32(c) {
		return journalRecord{}
	}
	return journalRecord{ok: true, seq: seq, text: string(body)}
}

// parseLegacyJournal returns the text of an old-format record and whether
// it is pending; ok is false when the record is missing, torn or corrupt.
func parseLegacyJournal(b []byte) (text string, pending, ok bool) {
	if len(b) < legacyHeader || string(b[:len(legacyMagic)]) != legacyMagic || b[legacyHeader-1] != '\n' {
		return "", false, false
	}
	h := b[legacyState:legacyHeader]
	if (h[0] != 'P' && h[0] != 'A') || h[1] != ' ' || h[12] != ' ' {
		return "", false, false
	}
	n, err1 := strconv.ParseUint(string(h[2:12]), 10, 31)
	c, err2 := strconv.ParseUint(string(h[13:21]), 16, 32)
	if err1 != nil || err2 != nil || uint64(len(b)-legacyHeader) < n {
		return "", false, false
	}
	body := b[legacyHeader : legacyHeader+int(n)]
	if crc32.Checksum(body, castagnoli) != uint32(c) {
		return "", false, false
	}
	return string(body), h[0] == 'P', true
}

// journalState is what the journal's slots hold on disk.
type journalState struct {
	rec [journalSlots]journalRecord
	// legacy is set when slot 0 holds a valid old-format record, with
	// its text and state.
	legacy        bool
	legacyText    string
	legacyPending bool
}

// newest returns the slot of the valid record with the highest seq, or
// -1 when no slot holds a valid record.
func (js *journalState) newest() int {
	n := -1
	for i, r := range js.rec {
		if r.ok && (n < 0 || r.seq > js.rec[n].seq) {
			n = i
		}
	}
	return n
}

// readJournal reads the slots of nodes.conf's journal; a missing slot
// file holds nothing (a journal written before the third slot existed
// has two).
func readJournal(path string) (journalState, error) {
	var js journalState
	for i := range js.rec {
		b, err := os.ReadFile(slotPath(path, i))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return js, fmt.Errorf("runner: read cluster config journal: %w", err)
		}
		js.rec[i] = parseJournalRecord(b)
		if i == 0 && !js.rec[0].ok {
			js.legacyText, js.legacyPending, js.legacy = parseLegacyJournal(b)
		}
	}
	return js, nil
}

// readConfig returns the text a starting node loads, by this rule:
//
//  1. No nodes.conf, or an empty one: "" (a new node; a journal left
//     without its nodes.conf, a node reset by deleting the file, is
//     ignored, and the first save supersedes it).
//  2. Else, when a slot of the journal holds a valid new-format record:
//     the text of the one with the highest seq; nodes.conf is not read
//     for it.
//  3. Else, an old-format record in slot 0: its text when pending; when
//     applied, nodes.conf's, with the record's text as fallback (as the
//     old binary decided).
//  4. Else nodes.conf's.
//
// fallback is what the caller loads when text does not parse ("" when
// there is none).
//
// Why rule 2 loads the last durable save or a later one, whole: every
// save (durable or not) writes its record, seq one higher than the one
// before, into a slot holding neither the newest fdatasynced record nor
// one being fdatasynced (freeSlot) before it touches nodes.conf, and a
// durable save returns only after its record is fdatasynced, with no
// write to its slot during the sync. So after a crash of the process or
// the machine at any point the synced slot still holds the last durable
// save's record whole (nothing wrote that slot since its sync), and each
// other slot holds either a record that does not check (torn, mixed,
// lost: skipped) or a whole record of some save; its seq is then higher
// than the synced one's exactly when it was written after it, so the
// highest valid seq is the last durable save or a later save, never an
// older one. The checksum makes a torn record fail (crc32c over seq,
// length and text). nodes.conf cannot serve: a rewrite without sync may
// reach the disk torn, or not at all, after a power loss, and it can
// then parse and be older than the last durable save. A start also makes
// the loaded record durable before the next save may write the other
// slot (writeRecord), since a process that crashed may have left it in
// the page cache only. A clean shutdown (saveAtClose) saves nodes.conf
// atomically, then removes the journal: an operator may then edit or
// delete nodes.conf as in Redis.
//
// Rule 3 keeps the old format's guarantee: its record was fsynced before
// nodes.conf was touched and marked applied after nodes.conf was fsynced.
func readConfig(path string) (text, fallback string, err error) {
	conf, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(conf) == 0) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("runner: read cluster config: %w", err)
	}
	js, err := readJournal(path)
	if err != nil {
		return "", "", err
	}
	if n := js.newest(); n >= 0 {
		return js.rec[n].text, "", nil
	}
	switch {
	case js.legacy && js.legacyPending:
		return js.legacyText, "", nil
	case js.legacy && js.legacyText != string(conf):
		return string(conf), js.legacyText, nil
	}
	return string(conf), "", nil
}

// saveInPlace saves text without a sync: its journal record (writeRecord,
// no sync unless no record is synced yet), then nodes.conf rewritten in
// place (rewrite). A missing nodes.conf is an error: the caller then
// takes the atomic path, which creates it.
func (c *confFile) saveInPlace(text string) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := c.writeRecord(text, false); err != nil {
		return err
	}
	return c.rewrite(text)
}

// rewrite writes text over the open nodes.conf in one call, padded with
// newlines to the old length, then truncates it to text's length, as
// Redis 7.0's clusterSaveConfig does, so a process killed in between
// leaves a file that still parses (the blank lines are skipped on load).
// It does not sync: the journal holds the save (readConfig). (Renaming
// over an existing file makes ext4 flush the new one's data first,
// milliseconds per save; a key-by-key reshard saves on every CLUSTER
// SETSLOT.)
func (c *confFile) rewrite(text string) error {
	c.buf = append(c.buf[:0], text...)
	for int64(len(c.buf)) < c.size {
		c.buf = append(c.buf, '\n')
	}
	err := writeAt(c.f, c.buf, 0)
	if err == nil && int64(len(text)) < c.size {
		err = c.f.Truncate(int64(len(text)))
	}
	if err != nil {
		c.closeConf()
		return fmt.Errorf("runner: save cluster config: %w", err)
	}
	c.size = int64(len(text))
	return nil
}

// saveAtomic saves text durably through the journal (an fdatasynced
// record), then writes it to a temporary file in the same directory,
// fsyncs it, renames it over nodes.conf and fsyncs the directory, so
// nodes.conf itself is whole and durable too: the first save, which
// creates the file, and the one at shutdown (saveAtClose). The renamed
// file stays open for the next in-place save. The lock is on a separate
// file because the rename replaces nodes.conf's inode.
func (c *confFile) saveAtomic(text string) error {
	if err := c.writeRecord(text, true); err != nil {
		return err
	}
	dir := filepath.Dir(c.path)
	f, err := os.CreateTemp(dir, ".nodes.conf.tmp-*")
	if err != nil {
		return fmt.Errorf("runner: save cluster config: %w", err)
	}
	tmp := f.Name()
	_, err = f.WriteString(text)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("runner: save cluster config: %w", err)
	}
	_ = syncDir(dir) // the rename is done (and the journal holds text), a failed sync is not undone
	c.closeConf()
	c.f, c.size = f, int64(len(text))
	return nil
}

// saveAtClose is a node's last save, at a clean shutdown: saveAtomic,
// then the journal's files are removed (and the directory fsynced), so a
// stopped node leaves nodes.conf alone, whole and durable, the one file
// a start then reads, as Redis leaves it. A crash before the removal is
// durable leaves a journal whose newest record is text, as nodes.conf.
func (c *confFile) saveAtClose(text string) error {
	if err := c.saveAtomic(text); err != nil {
		return err
	}
	c.closeJournal()
	for i := 0; i < journalSlots; i++ {
		if err := os.Remove(slotPath(c.path, i)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("runner: remove cluster config journal: %w", err)
		}
	}
	c.jsize = [journalSlots]int64{}
	c.synced, c.syncing, c.legacy = -1, -1, false
	if err := syncDir(filepath.Dir(c.path)); err != nil {
		return fmt.Errorf("runner: remove cluster config journal: %w", err)
	}
	return nil
}

// saveDurable writes text so that it survives a crash of the process or
// the machine once it returns, with one fdatasync: its journal record is
// written and fdatasynced (writeRecord), then nodes.conf is rewritten in
// place without a sync (a crash may tear it; the journal wins, see
// readConfig). A missing nodes.conf is created by saveAtomic.
func (c *confFile) saveDurable(text string) error {
	d, err := c.beginDurable(text)
	if err != nil || d.done {
		return err
	}
	return c.endDurable(d, d.sync())
}

// pendingSync is a durable save between beginDurable and endDurable: its
// record is written into slot and waits for its fdatasync (sync), which
// the caller runs without holding what serialises confFile's methods.
// done is set when beginDurable made the save durable itself.
type pendingSync struct {
	done bool
	slot int
	f    *os.File
	hook func() error
	n    *atomic.Int64
}

// sync fdatasyncs the pending record's slot file (through the hook tests
// set), touching nothing else of confFile, so it may run while the
// caller's other saves write the other slots and nodes.conf.
func (d pendingSync) sync() error {
	if d.hook != nil {
		if err := d.hook(); err != nil {
			return err
		}
	}
	d.n.Add(1)
	return datasync(d.f)
}

// beginDurable starts a durable save of text: its record is written into
// a free slot (freeSlot), which is then the syncing slot until
// endDurable, and nodes.conf is rewritten in place without a sync. The
// caller runs the returned sync outside its lock, then endDurable with
// sync's error; saves without fsync (saveInPlace) may run in between and
// write the third slot. A missing nodes.conf, or a journal with no
// synced record yet, is saved durably here instead (saveAtomic, or the
// record synced in place): done is then set. One durable save at a time:
// the caller serialises them.
func (c *confFile) beginDurable(text string) (pendingSync, error) {
	if err := c.open(); err != nil {
		return pendingSync{done: true}, c.saveAtomic(text)
	}
	if err := c.loadJournal(); err != nil {
		return pendingSync{}, err
	}
	if c.syncing >= 0 {
		return pendingSync{}, errors.New("runner: a durable save is already syncing")
	}
	if c.synced < 0 {
		if err := c.writeRecord(text, true); err != nil {
			return pendingSync{}, err
		}
		return pendingSync{done: true}, c.rewrite(text)
	}
	i, err := c.writeRecordAt(text)
	if err != nil {
		return pendingSync{}, err
	}
	if err := c.rewrite(text); err != nil {
		return pendingSync{}, err
	}
	c.syncing = i
	return pendingSync{slot: i, f: c.j[i], hook: c.syncHook, n: &c.syncs}, nil
}

// endDurable ends the durable save d began, after its sync returned
// serr: on success its slot is the synced one.
func (c *confFile) endDurable(d pendingSync, serr error) error {
	if d.done {
		return nil
	}
	if c.syncing == d.slot {
		c.syncing = -1
	}
	if serr != nil {
		c.closeJournal()
		return fmt.Errorf("runner: save cluster config journal: %w", serr)
	}
	c.synced = d.slot
	return nil
}

// loadJournal learns, once per confFile, what the journal holds: the
// newest valid record's slot and seq, or an old-format record in slot
// 0. The newest record is then fdatasynced, with the directory, before
// any save writes the other slot: the start loaded it, and a process
// that crashed may have left it (or its file's entry) in the page cache
// only.
func (c *confFile) loadJournal() error {
	if c.jloaded {
		return nil
	}
	js, err := readJournal(c.path)
	if err != nil {
		return err
	}
	c.synced, c.syncing, c.legacy = -1, -1, false
	if n := js.newest(); n >= 0 {
		if err := c.openSlot(n); err != nil {
			return err
		}
		if err := c.syncJournal(c.j[n]); err != nil {
			c.closeJournal()
			return fmt.Errorf("runner: sync cluster config journal: %w", err)
		}
		if err := syncDir(filepath.Dir(c.path)); err != nil {
			return fmt.Errorf("runner: sync cluster config journal: %w", err)
		}
		c.seq, c.synced = js.rec[n].seq, n
	} else {
		c.legacy = js.legacy
	}
	c.jloaded = true
	return nil
}

// writeRecord writes text's record, with the next seq, into a free slot
// (freeSlot), and fdatasyncs it when sync is set or when no record is
// synced yet (else a rewrite of nodes.conf without sync would be covered
// by nothing). A synced record's slot becomes the synced slot.
func (c *confFile) writeRecord(text string, sync bool) error {
	if err := c.loadJournal(); err != nil {
		return err
	}
	if c.synced < 0 {
		sync = true
	}
	i, err := c.writeRecordAt(text)
	if err != nil {
		return err
	}
	if sync {
		if err := c.syncJournal(c.j[i]); err != nil {
			c.closeJournal()
			return fmt.Errorf("runner: save cluster config journal: %w", err)
		}
		c.synced = i
	}
	return nil
}

// freeSlot returns the slot a record may be written into: the lowest
// that holds neither the newest fdatasynced record nor a record being
// fdatasynced, nor, while nothing newer is synced, an old-format record
// (slot 0). Three slots leave one free in every state.
func (c *confFile) freeSlot() int {
	for i := 0; i < journalSlots; i++ {
		if i == c.synced || i == c.syncing || (i == 0 && c.synced < 0 && c.legacy) {
			continue
		}
		return i
	}
	panic("runner: no free journal slot") // unreachable: at most two slots are taken
}

// writeRecordAt writes text's record, with the next seq, into a free
// slot and returns the slot, without a sync (journal loaded).
func (c *confFile) writeRecordAt(text string) (int, error) {
	i := c.freeSlot()
	if err := c.openSlot(i); err != nil {
		return 0, err
	}
	c.seq++ // also when the write fails: a later record must be newer than a partial one
	c.jbuf = appendJournalRecord(c.jbuf[:0], c.seq, text)
	if n := int64(len(c.jbuf)); n > c.jsize[i] {
		for grown := (n + journalPage - 1) / journalPage * journalPage; int64(len(c.jbuf)) < grown; {
			c.jbuf = append(c.jbuf, '\n')
		}
	}
	if err := writeAt(c.j[i], c.jbuf, 0); err != nil {
		c.closeJournal()
		return 0, fmt.Errorf("runner: save cluster config journal: %w", err)
	}
	if n := int64(len(c.jbuf)); n > c.jsize[i] {
		c.jsize[i] = n
	}
	return i, nil
}

// openSlot opens the journal's slot i, creating its file (and making its
// directory entry durable, before any save relies on it) when missing.
func (c *confFile) openSlot(i int) error {
	if c.j[i] != nil {
		return nil
	}
	p := slotPath(c.path, i)
	j, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("runner: open cluster config journal: %w", err)
	}
	st, err := j.Stat()
	if err == nil && st.Size() == 0 {
		// New (or empty): its entry must be durable before a save relies on it.
		err = syncDir(filepath.Dir(p))
	}
	if err != nil {
		j.Close()
		return fmt.Errorf("runner: open cluster config journal: %w", err)
	}
	c.j[i], c.jsize[i] = j, st.Size()
	return nil
}

// syncDir fsyncs a directory, making the entries created in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// close closes nodes.conf and the journal's files; the journal's state
// (seq, synced slot) is kept for the next save.
func (c *confFile) close() {
	c.closeConf()
	c.closeJournal()
}

func (c *confFile) closeConf() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}

func (c *confFile) closeJournal() {
	for i, j := range c.j {
		if j != nil {
			j.Close()
			c.j[i] = nil
		}
	}
}
