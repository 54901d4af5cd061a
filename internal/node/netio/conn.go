package node

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a TCP connection with raw system calls on its
// non-blocking socket, through the connection's RawConn (so deadlines,
// Close and waiting for readiness in the netpoller work as for net.Conn).
//
// net.Conn's Read and Write enter the scheduler's syscall state around
// each call. On a machine where a read or write of a loopback socket takes
// tens of µs (a VM), the runtime's sysmon then takes the P away from the
// thread in the call and wakes another thread for it, and keeps itself on
// its fastest tick: a futex wake, a thread switch and many nanosleeps per
// request. A read or write of a non-blocking socket never sleeps in the
// kernel (EAGAIN instead), so it does not need that state; waiting is left
// to the netpoller as before.
type rawIO struct {
	rc syscall.RawConn
	// The functions handed to rc.Read and rc.Write are made once, with
	// their arguments and results in these fields, so a read or a write
	// allocates nothing (a closure per call escapes to the heap).
	// Reads come from the client's goroutine, writes under its wmu.
	rp     []byte
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool

	wp      []byte
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
	wtry    bool // tryWrite: a full socket ends the write

	// stamps: reads are recvmsg calls that also return the data's
	// receive time into rx (conn_rxstamp_linux.go).
	stamps bool
	rx     rxStampState
	fd     int // the socket, for the arrival poller (arrival.go)
	// busy is the receive time of data read by a watched client and not
	// run yet, of a blocking command that runs and is not queued yet, or
	// of an EXEC whose commands have not run yet; 1 while such a client
	// reads; 0 none (arrival.go). busyFor holds the barriers it concerns
	// (watchBlocking, watchPubSub), stored before busy. Both are written
	// by the client's own goroutine only.
	busy    atomic.Int64
	busyFor atomic.Uint32
	// stuck: a barrier gave up waiting for this client's commands that
	// arrived at or before it (unix ns); guarded by arrivalOrder.mu.
	stuck int64
	// arr is the server's arrival state, set by the client.
	arr *arrivalOrder
	// watch holds the barriers that peek at this client's unread data:
	// watchBlocking while it may send a blocking command next (its last
	// list or sorted-set write was one, or it sent none yet),
	// watchPubSub while it is subscribed or may (un)subscribe next.
	watch atomic.Uint32

	// Read loop (Client.serveLoop): while the client's goroutine runs
	// inside one rc.Read call, inLoop is set and Read calls read on loopFd
	// directly, returning errWouldBlock instead of waiting; drained
	// records that the last read returned less than asked, so the socket
	// held nothing more. looping mirrors inLoop for other goroutines
	// (Client.close). inLoop, loopFd and drained belong to the client's
	// goroutine.
	inLoop  bool
	loopFd  uintptr
	drained bool
	looping atomic.Bool

	// reads and writes count the system calls, for INFO's
	// total_reads_processed and total_writes_processed (Redis counts its
	// read and write handler calls, one system call each).
	reads, writes atomic.Int64
}

// errWouldBlock is Read's error, inside the read loop, when the socket has
// nothing to read: the loop then returns to rc.Read to wait.
var errWouldBlock = errors.New("node: read would block")

// newRawIO returns a reader/writer for nc: raw system calls for a TCP
// connection, with receive timestamps where the platform has them; nc
// itself for anything else (tests, unix sockets in future).
func newRawIO(nc net.Conn) io.ReadWriter { return newRawIOStamps(nc, rxStampsSupported) }

// newRawIOStamps is newRawIO with receive timestamps only if stamps (the
// benchmark compares both).
func newRawIOStamps(nc net.Conn, stamps bool) io.ReadWriter {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	r := &rawIO{rc: rc}
	r.readFn, r.writeFn = r.read, r.write
	r.watch.Store(watchBlocking | watchPubSub)
	if stamps {
		var serr error
		if err := rc.Control(func(fd uintptr) { r.fd, serr = int(fd), enableRxStamps(fd) }); err == nil && serr == nil {
			r.stamps = true
		}
	}
	return r
}

// rxTime is the kernel's receive time (unix ns) of the data the last read
// returned, or 0 when unknown.
func (r *rawIO) rxTime() int64 { return r.rx.ns }

func (r *rawIO) read(fd uintptr) bool {
	p := r.rp
	for {
		var r0 uintptr
		var e syscall.Errno
		r.reads.Add(1)
		if r.stamps {
			// A client watched by a barrier that is on is busy from
			// before its data leaves the socket (1: older than
			// anything) until the command runs (arrival.go); no
			// barrier can look between the two and see neither.
			var w uint32
			if r.arr != nil {
				w = r.watch.Load() & r.arr.active.Load()
			}
			if w != 0 {
				r.busyFor.Store(w)
				r.busy.Store(1)
			}
			r0, e = r.rx.recvStamped(fd, p)
			if w != 0 {
				if e == 0 && r0 > 0 {
					r.busy.Store(r.rx.ns)
				} else {
					r.busy.Store(0)
				}
				r.arr.notify() // barriers that saw 1 look again
			}
		} else {
			r0, _, e = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		}
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait in the netpoller
		}
		r.rn, r.rerrno = int(r0), e
		return true
	}
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rp, r.rn, r.rerrno = p, 0, 0
	var err error
	if r.inLoop {
		if !r.read(r.loopFd) {
			r.rp = nil
			return 0, errWouldBlock
		}
	} else {
		err = r.rc.Read(r.readFn)
	}
	n, errno := r.rn, r.rerrno
	r.drained = n < len(p)
	r.rp = nil
	switch {
	case err != nil:
		return 0, err // deadline, closed
	case errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawIO) write(fd uintptr) bool {
	p := r.wp
	for r.wn < len(p) {
		r.writes.Add(1)
		r0, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[r.wn])), uintptr(len(p)-r.wn))
		switch e {
		case 0:
			r.wn += int(r0)
		case syscall.EINTR:
		case syscall.EAGAIN:
			// Socket buffer full: wait in the netpoller, or return
			// the short count (tryWrite).
			return r.wtry
		default:
			r.werrno = e
			return true
		}
	}
	return true
}

// tryWrite writes what the socket takes now, without waiting for room:
// n may be short of len(p) (socket buffer full). Like Write, it runs under
// the client's wmu.
func (r *rawIO) tryWrite(p []byte) (int, error) {
	r.wtry = true
	n, err := r.Write(p)
	r.wtry = false
	return n, err
}

func (r *rawIO) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.wp, r.wn, r.werrno = p, 0, 0
	err := r.rc.Write(r.writeFn)
	n, errno := r.wn, r.werrno
	r.wp = nil
	if err != nil {
		return n, err
	}
	if errno != 0 {
		return n, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", errno)}
	}
	return n, nil
}
