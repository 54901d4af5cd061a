package netio

import (
	"net"
	"syscall"
)

// FD returns the connection's file descriptor (CLIENT LIST's fd=), or -1
// for a connection that has none.
func FD(nc net.Conn) int {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	_ = rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}
