package netio

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// timerFD is a non-blocking Linux timerfd (CLOCK_MONOTONIC) registered
// with the runtime's netpoller through os.NewFile.
type timerFD struct {
	f  *os.File
	rc syscall.RawConn
}

// Linux's timerfd_create flags (TFD_NONBLOCK = O_NONBLOCK, TFD_CLOEXEC =
// O_CLOEXEC) and CLOCK_MONOTONIC.
const (
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
	clockMonotonic = 1
)

func newTimerFD(period time.Duration) (*timerFD, error) {
	if period <= 0 {
		return nil, errors.New("netio: beat period must be positive")
	}
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil, fmt.Errorf("netio: timerfd_create: %w", errno)
	}
	ts := [2]syscall.Timespec{ // it_interval, it_value
		syscall.NsecToTimespec(int64(period)),
		syscall.NsecToTimespec(int64(period)),
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0); errno != 0 {
		syscall.Close(int(fd))
		return nil, fmt.Errorf("netio: timerfd_settime: %w", errno)
	}
	// A non-blocking descriptor: os.NewFile registers it with the
	// netpoller, so a read that would block parks the goroutine.
	f := os.NewFile(fd, "beat")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("netio: beat: %w", err)
	}
	return &timerFD{f: f, rc: rc}, nil
}

// wait reads the expiration count, waiting in the poller while there is
// none; false once the file is closed. The read is a raw system call:
// the ordinary syscall path would wake sysmon from its sleep at every
// beat (entersyscall does when every P is idle).
func (t *timerFD) wait() bool {
	var buf [8]byte
	var errno syscall.Errno
	err := t.rc.Read(func(fd uintptr) bool {
		for {
			_, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), 8)
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	return err == nil && errno == 0
}

func (t *timerFD) close() { t.f.Close() }
