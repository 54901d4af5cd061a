package runner

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// datasync flushes f's data and the metadata needed to read it back
// (fdatasync: not the modification time, which an in-place rewrite would
// otherwise make a journal commit).
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// writeAt writes b at off in f with a raw pwrite: a nodes.conf save is a
// page-cache write of a few kB, and os.File.WriteAt's system call enters
// the scheduler's syscall state, which wakes sysmon when it sleeps (a
// futex wake per save: 8 % of a source node's CPU during a reshard, where
// every SETSLOT saves). The fdatasync stays a blocking call.
func writeAt(f *os.File, b []byte, off int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	cerr := rc.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			n, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
			switch {
			case e == syscall.EINTR:
				continue
			case e != 0:
				werr = e
				return true
			case n == 0:
				werr = io.ErrShortWrite
				return true
			}
			b, off = b[n:], off+int64(n)
		}
		return true
	})
	if cerr != nil {
		return cerr
	}
	if werr != nil {
		return &os.PathError{Op: "write", Path: f.Name(), Err: werr}
	}
	return nil
}
