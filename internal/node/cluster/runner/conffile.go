package runner

import (
	"fmt"
	"os"
	"path/filepath"
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
	if c.f == nil {
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
	}
	c.buf = append(c.buf[:0], text...)
	for int64(len(c.buf)) < c.size {
		c.buf = append(c.buf, '\n')
	}
	if _, err := c.f.WriteAt(c.buf, 0); err != nil {
		c.close()
		return fmt.Errorf("runner: save cluster config: %w", err)
	}
	if int64(len(text)) < c.size {
		if err := c.f.Truncate(int64(len(text))); err != nil {
			c.close()
			return fmt.Errorf("runner: save cluster config: %w", err)
		}
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
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	c.close()
	c.f, c.size = f, int64(len(text))
	return nil
}

func (c *confFile) close() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}
