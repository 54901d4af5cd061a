//go:build !linux

package persist

import "os"

// fileRangeSync has no ranged write-back outside Linux: it syncs the
// whole file, as Redis does without sync_file_range.
func fileRangeSync(f *os.File, off, n int64, waitPrev bool) error {
	return f.Sync()
}
