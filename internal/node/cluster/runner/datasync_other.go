//go:build !linux

package runner

import "os"

// datasync flushes f (fsync where fdatasync is not available).
func datasync(f *os.File) error { return f.Sync() }

// writeAt writes b at off in f.
func writeAt(f *os.File, b []byte, off int64) error {
	_, err := f.WriteAt(b, off)
	return err
}
