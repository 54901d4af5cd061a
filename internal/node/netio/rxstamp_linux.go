package netio

import (
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Receive timestamps (Linux): every read of a client socket is a recvmsg
// that also returns the kernel's receive time of the data (SO_TIMESTAMPNS;
// for TCP the time of the last segment the call consumed). The Sequencer
// orders commands across connections by it, and blocking commands queue
// their waiters by it.

// rxStampsSupported reports whether this platform has receive timestamps.
const rxStampsSupported = true

// enableRxStamps asks the kernel to timestamp data received on fd.
func enableRxStamps(fd uintptr) error {
	stampsKeeper.Do(keepStampsOn)
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
}

var stampsKeeper sync.Once

// keepStampsOn holds one timestamping socket open for the life of the
// process. The kernel stamps arriving packets only while some socket
// wants stamps, and turns that on again only some time after the first
// socket asks (from a work queue): without a socket that stays, data
// arriving on new connections after the last old one closed would have
// no receive time.
func keepStampsOn() {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	// fd stays open on purpose.
}

// rxStampState is the per-connection state of timestamped reads, kept in
// Conn so a read allocates nothing.
type rxStampState struct {
	msg syscall.Msghdr
	iov syscall.Iovec
	ctl [8]uint64 // control buffer, 8-byte aligned; one timespec cmsg is 32 bytes
	ns  int64     // receive time of the last read's data, unix ns; 0 unknown
}

// recvStamped reads into p with recvmsg and records the data's receive
// time in st.ns when the kernel returned one.
func (st *rxStampState) recvStamped(fd uintptr, p []byte) (uintptr, syscall.Errno) {
	st.prepare(&p[0], len(p))
	n, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&st.msg)), 0)
	if e == 0 && n > 0 {
		st.ns = 0
		st.parse(int(st.msg.Controllen))
		if st.ns == 0 {
			// Not stamped (stamping was off when it arrived): the read's
			// own time is the next best order.
			st.ns = time.Now().UnixNano()
		}
	}
	st.iov.Base = nil // do not keep the caller's buffer alive
	return n, e
}

// prepare points the message at n bytes at p and the control buffer.
func (st *rxStampState) prepare(p *byte, n int) {
	st.iov.Base = p
	st.iov.SetLen(n)
	st.msg.Iov = &st.iov
	st.msg.Iovlen = 1
	st.msg.Control = (*byte)(unsafe.Pointer(&st.ctl[0]))
	st.msg.SetControllen(len(st.ctl) * 8)
	st.msg.Flags = 0
}

// parse finds an SCM_TIMESTAMPNS message in the first clen bytes of the
// control buffer.
func (st *rxStampState) parse(clen int) {
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&st.ctl[0])), len(st.ctl)*8)
	hdr := int(unsafe.Sizeof(syscall.Cmsghdr{}))
	for off := 0; off+hdr <= clen && off+hdr <= len(buf); {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&buf[off]))
		l := int(h.Len)
		if l < hdr || off+l > len(buf) {
			return
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && l >= hdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&buf[off+hdr]))
			st.ns = ts.Nano()
			return
		}
		off += (l + 7) &^ 7
	}
}

// peek copies the start of socket fd's unread data into p without
// consuming it, and returns its length and receive time (0, 0 when there
// is none).
func (st *rxStampState) peek(fd int, p []byte) (int, int64) {
	st.ns = 0
	st.prepare(&p[0], len(p))
	n, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&st.msg)), syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	st.iov.Base = nil
	if e != 0 || n == 0 {
		return 0, 0
	}
	st.parse(int(st.msg.Controllen))
	return int(n), st.ns
}

// poller is a level-triggered epoll set of the Sequencer's sockets,
// asked without waiting which of them have unread data.
type poller struct {
	fd  int
	evs []syscall.EpollEvent
}

func newPoller() (*poller, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &poller{fd: fd}, nil
}

func (p *poller) add(fd int) {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
	_ = syscall.EpollCtl(p.fd, syscall.EPOLL_CTL_ADD, fd, &ev)
}

// close releases the epoll set.
func (p *poller) close() {
	_ = syscall.Close(p.fd)
}

func (p *poller) remove(fd int) {
	_ = syscall.EpollCtl(p.fd, syscall.EPOLL_CTL_DEL, fd, nil)
}

// readable returns the sockets that have unread data now. The set holds
// at most n sockets, and the event buffer has room for all of them.
func (p *poller) readable(dst []int, n int) []int {
	if want := max(n, 1); len(p.evs) < want {
		p.evs = make([]syscall.EpollEvent, want+want/2)
	}
	n, err := syscall.EpollWait(p.fd, p.evs, 0)
	if err != nil {
		return dst
	}
	for _, ev := range p.evs[:n] {
		dst = append(dst, int(ev.Fd))
	}
	return dst
}
