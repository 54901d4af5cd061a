package netio

import (
	"net"
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
// process, and returns once the kernel stamps arriving TCP segments. The
// kernel stamps packets only while some socket wants stamps, and turns
// stamping on only some time after the first socket asks (from a work
// queue); data that arrives in between has no receive time, and the
// Sequencer cannot order it. So the first connection's set-up confirms
// stamping with a loopback probe (a byte sent to itself until one comes
// back stamped, at most stampProbeRounds rounds of a millisecond), and
// the keeper stays open so stamping never turns off again. When the probe
// cannot confirm (no loopback), reads of unstamped data fall back to the
// read's own time, the weaker order recvStamped documents.
func keepStampsOn() {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	// fd stays open on purpose.
	stampsConfirmed = probeStamps()
}

// stampsConfirmed records that the probe saw a stamped segment.
var stampsConfirmed bool

// stampProbeRounds bounds the probe: the work queue that turns stamping
// on runs within microseconds on an idle machine, milliseconds on a
// loaded one.
const stampProbeRounds = 2000

// probeStamps sends one byte at a time over a loopback TCP connection
// until one is received with a timestamp.
func probeStamps() bool {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false
	}
	defer ln.Close()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return false
	}
	defer cl.Close()
	sv, err := ln.Accept()
	if err != nil {
		return false
	}
	defer sv.Close()
	raw, err := sv.(*net.TCPConn).SyscallConn()
	if err != nil {
		return false
	}
	var sfd uintptr
	_ = raw.Control(func(fd uintptr) { sfd = fd })
	if syscall.SetsockoptInt(int(sfd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) != nil {
		return false
	}
	var st rxStampState
	var b [1]byte
	for range stampProbeRounds {
		if _, err := cl.Write(b[:]); err != nil {
			return false
		}
		stamped := false
		rerr := raw.Read(func(fd uintptr) bool {
			st.prepare(&b[0], 1)
			n, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&st.msg)), syscall.MSG_DONTWAIT)
			st.iov.Base = nil
			if e == syscall.EAGAIN {
				return false
			}
			if e == 0 && n > 0 {
				st.ns = 0
				st.parse(int(st.msg.Controllen))
				stamped = st.ns != 0
			}
			return true
		})
		if rerr != nil {
			return false
		}
		if stamped {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
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
