package runner

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
)

// confFile writes nodes.conf. It keeps the file open between saves, so a
// save without fsync is one write (and a truncation when the text got
// shorter), not an open, a stat, a write, a truncation and a close. The
// caller serialises its methods (Runner.fileMu).
type confFile struct {
	path string
	// f is nodes.conf's current inode, open for writing, or nil (not
	// opened yet, or a save failed); size is its length.
	f    *os.File
	size int64
	buf  []byte
	// j is the journal (path+journalSuffix), open for writing, or nil
	// (not opened yet, or a save failed).
	j    *os.File
	jbuf []byte
	// jpending is set while the journal's record may be pending (from
	// its write until it is marked applied), also after a failed save.
	jpending bool
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

// The journal makes an fsynced save crash-safe while nodes.conf itself is
// rewritten in place (saveDurable). It holds one record at offset 0:
//
//	shardis-nodes-journal <state> <length, 10 digits> <crc32c, 8 hex>\n<text>
//
// state is 'P' (pending: nodes.conf may not hold text yet) or 'A'
// (applied: nodes.conf held text when it was written). The file is
// rewritten in place and never shrinks; the header's length says where
// the record ends.
const (
	journalSuffix = ".journal"
	journalMagic  = "shardis-nodes-journal "
	// journalState is the state byte's offset.
	journalState  = len(journalMagic)
	journalHeader = len(journalMagic) + 1 + 1 + 10 + 1 + 8 + 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendJournalRecord appends the pending record of text to b.
func appendJournalRecord(b []byte, text string) []byte {
	b = append(b, journalMagic...)
	b = append(b, 'P', ' ')
	n := strconv.AppendInt(nil, int64(len(text)), 10)
	for i := len(n); i < 10; i++ {
		b = append(b, '0')
	}
	b = append(b, n...)
	b = append(b, ' ')
	c := strconv.AppendUint(nil, uint64(crc32.Checksum([]byte(text), castagnoli)), 16)
	for i := len(c); i < 8; i++ {
		b = append(b, '0')
	}
	b = append(b, c...)
	b = append(b, '\n')
	return append(b, text...)
}

// parseJournal returns the text of the journal's record and whether it is
// pending; ok is false when the record is missing, torn or corrupt.
func parseJournal(b []byte) (text string, pending, ok bool) {
	if len(b) < journalHeader || string(b[:len(journalMagic)]) != journalMagic || b[journalHeader-1] != '\n' {
		return "", false, false
	}
	h := b[journalState:journalHeader]
	if (h[0] != 'P' && h[0] != 'A') || h[1] != ' ' || h[12] != ' ' {
		return "", false, false
	}
	n, err1 := strconv.ParseUint(string(h[2:12]), 10, 31)
	c, err2 := strconv.ParseUint(string(h[13:21]), 16, 32)
	if err1 != nil || err2 != nil || uint64(len(b)-journalHeader) < n {
		return "", false, false
	}
	body := b[journalHeader : journalHeader+int(n)]
	if crc32.Checksum(body, castagnoli) != uint32(c) {
		return "", false, false
	}
	return string(body), h[0] == 'P', true
}

// readConfig returns the text a starting node loads: "" for a new node
// (no nodes.conf, or an empty one: a journal left without its nodes.conf
// is ignored), the journal's text when its record is pending (a crash
// during an fsynced save, which may have torn nodes.conf: the journal was
// fsynced before nodes.conf was touched), else nodes.conf's. fallback is
// the journal's valid text otherwise ("" when none or the same), what the
// caller loads when nodes.conf does not parse (a crash tore a save that
// was not fsynced; the journal holds the last fsynced one).
func readConfig(path string) (text, fallback string, err error) {
	conf, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(conf) == 0) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("runner: read cluster config: %w", err)
	}
	j, jerr := os.ReadFile(path + journalSuffix)
	if jerr != nil {
		return string(conf), "", nil
	}
	jt, pending, ok := parseJournal(j)
	switch {
	case ok && pending:
		return jt, "", nil
	case ok && jt != string(conf):
		return string(conf), jt, nil
	}
	return string(conf), "", nil
}

// saveInPlace rewrites the existing file with text as Redis 7.0's
// clusterSaveConfig does: padded with newlines to the old length and
// written at offset 0 in one call, then truncated to text's length, so a
// process killed in between leaves a file that still parses (the blank
// lines are skipped on load). (Renaming over an existing file makes ext4
// flush the new one's data first, milliseconds per save; a key-by-key
// reshard saves on every CLUSTER SETSLOT.) A missing file is an error:
// the caller then takes the atomic path, which creates it.
func (c *confFile) saveInPlace(text string) error {
	if c.jpending {
		// An fsynced save failed half way: its journal record would win
		// over this text on the next start.
		return c.saveDurable(text)
	}
	if err := c.open(); err != nil {
		return err
	}
	return c.rewrite(text, false)
}

// rewrite writes text over the open nodes.conf in one call, padded with
// newlines to the old length, fdatasyncs it when sync is set, then
// truncates it to text's length (after the sync, as Redis truncates after
// its fsync: a crash before the truncation is on disk leaves blank lines,
// skipped on load).
func (c *confFile) rewrite(text string, sync bool) error {
	c.buf = append(c.buf[:0], text...)
	for int64(len(c.buf)) < c.size {
		c.buf = append(c.buf, '\n')
	}
	_, err := c.f.WriteAt(c.buf, 0)
	if err == nil && sync {
		err = datasync(c.f)
	}
	if err == nil && int64(len(text)) < c.size {
		err = c.f.Truncate(int64(len(text)))
	}
	if err != nil {
		c.close()
		return fmt.Errorf("runner: save cluster config: %w", err)
	}
	c.size = int64(len(text))
	return nil
}

// saveAtomic writes text to a temporary file in the same directory,
// fsyncs it, renames it over nodes.conf and fsyncs the directory, so a
// crash leaves the old file or the new one, never a truncated one (an
// epoch or a vote, and the save at shutdown). The renamed file stays open
// for the next in-place save. The lock is on a separate file because the
// rename replaces nodes.conf's inode.
func (c *confFile) saveAtomic(text string) error {
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
	_ = syncDir(dir) // as before: the rename is done, a failed sync is not undone
	c.close()
	c.f, c.size = f, int64(len(text))
	return c.markApplied()
}

// saveDurable writes text so that it survives a crash of the process or
// the machine once it returns, and so that a crash at any point leaves a
// nodes.conf or a journal that holds a whole text (the old one or the new
// one, never a torn or truncated one, see readConfig), with two
// fdatasyncs of files rewritten in place: the journal's pending record of
// text is written and fdatasynced, then nodes.conf is rewritten in place
// (padded as saveInPlace does) and fdatasynced, then the record is marked
// applied (no sync: a crash that loses the mark makes the next start load
// the journal's text, which is then nodes.conf's). The old way, a
// temporary file fsynced, renamed over nodes.conf and the directory
// fsynced, cost milliseconds on ext4 (a new inode and a directory change
// to commit each time); a key-by-key reshard does one such save per slot
// on every master. A missing nodes.conf is created by saveAtomic.
func (c *confFile) saveDurable(text string) error {
	if err := c.open(); err != nil {
		return c.saveAtomic(text)
	}
	if err := c.openJournal(); err != nil {
		return err
	}
	c.jbuf = appendJournalRecord(c.jbuf[:0], text)
	c.jpending = true
	if _, err := c.j.WriteAt(c.jbuf, 0); err != nil {
		c.close()
		return fmt.Errorf("runner: save cluster config journal: %w", err)
	}
	if err := datasync(c.j); err != nil {
		c.close()
		return fmt.Errorf("runner: save cluster config journal: %w", err)
	}
	if err := c.rewrite(text, true); err != nil {
		return err
	}
	return c.markApplied()
}

// openJournal opens the journal, creating it (and making its directory
// entry durable, before any save relies on it) when missing.
func (c *confFile) openJournal() error {
	if c.j != nil {
		return nil
	}
	jp := c.path + journalSuffix
	_, statErr := os.Stat(jp)
	j, err := os.OpenFile(jp, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("runner: open cluster config journal: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(jp)); err != nil {
			j.Close()
			return fmt.Errorf("runner: open cluster config journal: %w", err)
		}
	}
	c.j = j
	return nil
}

// markApplied marks the journal's record applied: nodes.conf holds a text
// at least as new.
func (c *confFile) markApplied() error {
	if !c.jpending {
		return nil
	}
	if err := c.openJournal(); err != nil {
		return err
	}
	if _, err := c.j.WriteAt([]byte{'A'}, int64(journalState)); err != nil {
		c.close()
		return fmt.Errorf("runner: save cluster config journal: %w", err)
	}
	c.jpending = false
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

func (c *confFile) close() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	if c.j != nil {
		c.j.Close()
		c.j = nil
	}
}
