package netio

import (
	"net"
	"syscall"
	"unsafe"
)

// WriteNow writes as much of b as the socket behind rc takes without
// waiting and returns how much that was (0 on EAGAIN or an error: a
// later ordinary write meets the error). The write is write(2) without
// the runtime's syscall bookkeeping (entersyscall, which wakes the
// runtime's sysmon thread from its sleep when every P is idle and keeps
// it polling for a while): a non-blocking socket never blocks, so the P
// need not be handed off, and an idle process's few writes a second wake
// no second thread.
func WriteNow(rc syscall.RawConn, b []byte) int {
	n := 0
	_ = rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			k, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			if errno == syscall.EINTR {
				continue
			}
			if errno != 0 || int(k) <= 0 {
				break
			}
			n += int(k)
		}
		return true // never wait for the socket here
	})
	return n
}

// WriteConnNow is WriteNow on a TCP connection; for any other net.Conn it
// writes nothing and returns 0 (the caller's ordinary write sends it all).
func WriteConnNow(nc net.Conn, b []byte) int {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return 0
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	return WriteNow(rc, b)
}
