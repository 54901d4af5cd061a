package persist

import (
	"io"
	"os"
)

// autoSyncBytes is how often a snapshot or AOF rewrite file being written
// is pushed to disk (rdb-save-incremental-fsync,
// aof-rewrite-incremental-fsync), as Redis's REDIS_AUTOSYNC_BYTES.
const autoSyncBytes = 4 << 20

// autoSyncFile writes a file and, every autoSyncBytes, starts the
// write-back of the last autoSyncBytes and waits for the write-back of
// the ones before (fileRangeSync), as Redis's rioFileWrite does with
// autosync. The disk then works while the file is written, instead of
// all at the closing fsync: a background save's writer shares the
// command threads (a blocking system call holds its thread until the Go
// runtime's monitor hands the others on, up to 10 ms), so the final
// fsync of a 60 MB file could stall clients (scripts/bench-bgsave.sh).
type autoSyncFile struct {
	f       *os.File
	written int64
	synced  int64 // write-back started up to here
	err     error
}

func (a *autoSyncFile) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	n, err := a.f.Write(p)
	a.written += int64(n)
	if err != nil {
		a.err = err
		return n, err
	}
	for a.written-a.synced >= autoSyncBytes {
		if err := fileRangeSync(a.f, a.synced, autoSyncBytes, a.synced >= autoSyncBytes); err != nil {
			a.err = err
			return n, err
		}
		a.synced += autoSyncBytes
	}
	return n, nil
}

var _ io.Writer = (*autoSyncFile)(nil)
