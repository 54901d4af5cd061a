package netio

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// WatchHangup watches conn for the peer closing it, without consuming
// input (a MSG_PEEK on the socket): hup is closed when the peer is gone.
// raw, if not nil, is conn's Conn, whose own hang-up watch may end the
// wait first. stop ends the watch and must be called before conn is read
// again. A conn that is no socket is never watched (hup nil).
func WatchHangup(conn net.Conn, raw *Conn) (hup <-chan struct{}, stop func()) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, func() {}
	}
	h := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var buf [1]byte
		gone := false
		err := rc.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err == syscall.EAGAIN || err == syscall.EINTR {
				return false
			}
			gone = err != nil || n == 0
			return true
		})
		// The hang-up watch may end this wait with its wake-up deadline
		// before the peek sees the EOF.
		gone = gone || (raw != nil && raw.HungUp())
		if gone || (err != nil && !errors.Is(err, os.ErrDeadlineExceeded)) {
			close(h)
		}
	}()
	return h, func() {
		_ = conn.SetReadDeadline(time.Unix(1, 0))
		<-finished
		_ = conn.SetReadDeadline(time.Time{})
	}
}
