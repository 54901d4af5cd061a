package persist

import (
	"os"
	"syscall"
)

// sync_file_range flags (linux/fs.h).
const (
	syncRangeWaitBefore = 1
	syncRangeWrite      = 2
	syncRangeWaitAfter  = 4
)

// fileRangeSync starts the write-back of [off, off+n) of f and, if
// waitPrev, waits until the n bytes before it are on disk.
func fileRangeSync(f *os.File, off, n int64, waitPrev bool) error {
	fd := int(f.Fd())
	if err := syscall.SyncFileRange(fd, off, n, syncRangeWrite); err != nil {
		return os.NewSyscallError("sync_file_range", err)
	}
	if waitPrev {
		const wait = syncRangeWaitBefore | syncRangeWrite | syncRangeWaitAfter
		if err := syscall.SyncFileRange(fd, off-n, n, wait); err != nil {
			return os.NewSyscallError("sync_file_range", err)
		}
	}
	return nil
}
