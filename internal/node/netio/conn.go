// Package netio is shardnode's raw socket I/O: reads and writes of client
// TCP connections with raw system calls, the kernel's receive timestamp of
// every read, and the Sequencer that orders commands across connections by
// those timestamps. It knows nothing of commands or clients: the node tells
// it when a connection has run all it read (Conn.Done) and which
// connections are exempt (blocked).
package netio

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Conn reads and writes a TCP connection with raw system calls on its
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
//
// Reads come from one goroutine (the connection's owner); writes are
// serialised by the caller.
type Conn struct {
	rc syscall.RawConn
	// The functions handed to rc.Read and rc.Write are made once, with
	// their arguments and results in these fields, so a read or a write
	// allocates nothing (a closure per call escapes to the heap).
	rp     []byte
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool

	wp      []byte
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
	wtry    bool // TryWrite: a full socket ends the write

	// stamps: reads are recvmsg calls that also return the data's
	// receive time into rx (rxstamp_linux.go).
	stamps bool
	rx     rxStampState
	fd     int

	// Sequencer state (sequencer.go). seq is the sequencer the
	// connection may join; id orders connections whose input has the
	// same receive time; exempt reports, for the owner, that the
	// connection is blocked.
	seq    *Sequencer
	id     int64
	exempt func() bool
	// busy is the receive time of input read and not yet run (Done), 1
	// while a read is under way (its data may have left the socket and
	// its time is not known yet), 0 none. Written by the owner only, and
	// only while the sequencer is on.
	busy atomic.Int64
	// stalled is set while a write waits for room in the socket (the
	// peer does not read): the owner cannot run its input meanwhile.
	stalled atomic.Bool
	// writing is set, while the sequencer is on, for the length of each
	// write system call (by whichever goroutine writes): the call holds
	// the socket's lock, and input arriving meanwhile waits in the
	// socket's backlog, unseen by the poller, until the call returns.
	writing atomic.Bool
	// snapReads and snapBusy are a waiting command's look at reads and
	// busy (Sequencer.pendingLocked), guarded by the sequencer's mutex.
	snapReads, snapBusy int64

	// Read loop (ReadLoop): while the owner runs inside one rc.Read call,
	// inLoop is set and Read reads loopFd directly, returning
	// ErrWouldBlock instead of waiting; drained records that the last
	// read returned less than asked, so the socket held nothing more.
	// looping mirrors inLoop for other goroutines.
	inLoop  bool
	loopFd  uintptr
	drained bool
	looping atomic.Bool

	// Hang-up watch (hangup_linux.go): nc is the connection (for the
	// wake-up deadline), hupID and hupFd its entry in the watcher's set,
	// hungUp set once the peer shut down its side or the connection broke.
	nc     net.Conn
	hupID  uint64
	hupFd  int
	hungUp atomic.Bool

	// reads and writes count the system calls, for INFO's
	// total_reads_processed and total_writes_processed (Redis counts its
	// read and write handler calls, one system call each).
	reads, writes atomic.Int64
}

// ErrWouldBlock is Read's error, inside ReadLoop, when the socket has
// nothing to read: the step then returns to let ReadLoop wait.
var ErrWouldBlock = errors.New("netio: read would block")

// StampsSupported reports whether this platform has receive timestamps.
const StampsSupported = rxStampsSupported

// New returns a reader/writer for nc: a *Conn (raw system calls, receive
// timestamps where the platform has them, joining seq when it is on) for a
// TCP connection; nc itself for anything else.
func New(nc net.Conn, seq *Sequencer) io.ReadWriter {
	rw := NewStamps(nc, rxStampsSupported)
	if c, ok := rw.(*Conn); ok {
		c.seq = seq
	}
	return rw
}

// NewStamps is New with receive timestamps only if stamps, and no
// sequencer (the benchmark compares both).
func NewStamps(nc net.Conn, stamps bool) io.ReadWriter { return newConn(nc, stamps, true) }

// NewRaw returns a reader/writer for an outbound connection of the node's
// own (MIGRATE's to its target): raw system calls, so its reads and
// writes do not enter the scheduler's syscall state (which wakes a
// sleeping sysmon with a futex each time), and no receive timestamps or
// hang-up watch. Deadlines set on nc apply.
func NewRaw(nc net.Conn) io.ReadWriter { return newConn(nc, false, false) }

func newConn(nc net.Conn, stamps, hangups bool) io.ReadWriter {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &Conn{rc: rc, nc: nc}
	c.readFn, c.writeFn = c.read, c.write
	if w := hangupWatch(); hangups && w != nil {
		_ = rc.Control(func(fd uintptr) { w.watch(c, int(fd)) })
	}
	if stamps {
		var serr error
		if err := rc.Control(func(fd uintptr) { c.fd, serr = int(fd), enableRxStamps(fd) }); err == nil && serr == nil {
			c.stamps = true
		}
	}
	return c
}

// RxTime is the kernel's receive time (unix ns) of the data the last read
// returned, or 0 when unknown.
func (c *Conn) RxTime() int64 {
	if !c.stamps {
		return 0
	}
	return c.rx.ns
}

// Reads and Writes return the number of read and write system calls made.
func (c *Conn) Reads() int64 { return c.reads.Load() }

// Writes returns the number of write system calls made.
func (c *Conn) Writes() int64 { return c.writes.Load() }

// InLoop reports whether the owner runs inside ReadLoop's step.
func (c *Conn) InLoop() bool { return c.inLoop }

// Looping reports, for any goroutine, whether the owner is inside ReadLoop
// (Close then waits for the loop to return).
func (c *Conn) Looping() bool { return c.looping.Load() }

// Drained reports whether the last read returned less than it asked for:
// the socket held nothing more.
func (c *Conn) Drained() bool { return c.drained }

// HungUp reports whether the peer has shut down its sending side (or the
// connection broke), as the hang-up watch saw it (hangup_linux.go). Once
// it is true the owner must read to the EOF rather than wait, and a read
// deadline in the past may have been set to wake it: an error that ends a
// wait then calls for ClearWake and another read.
func (c *Conn) HungUp() bool { return c.hungUp.Load() }

// ClearWake removes the read deadline the hang-up watch set to wake the
// owner, so that it can read what is left, then the EOF. The owner's own
// deadlines (idle timeout) are set again before its next wait.
func (c *Conn) ClearWake() { _ = c.nc.SetReadDeadline(time.Time{}) }

// Release takes the connection out of the hang-up watch; call it before
// closing the connection.
func (c *Conn) Release() {
	if w := hangupWatch(); w != nil {
		w.unwatch(c)
	}
}

// ReadLoop calls step from inside one RawConn.Read call, as an event loop
// serves a readable socket: Reads in step read the socket directly and
// return ErrWouldBlock when it is empty; when step returns true (it must
// wait for input) ReadLoop waits in the netpoller and calls it again. It
// returns when step returns false, or with the error that ended the wait.
func (c *Conn) ReadLoop(step func() (wait bool)) error {
	c.looping.Store(true)
	err := c.rc.Read(func(fd uintptr) bool {
		c.inLoop, c.loopFd = true, fd
		wait := step()
		c.inLoop = false
		return !wait
	})
	c.inLoop, c.drained = false, false // a new call reads first
	c.looping.Store(false)
	return err
}

func (c *Conn) read(fd uintptr) bool {
	p := c.rp
	if len(p) > maxRead {
		p = p[:maxRead]
	}
	for {
		var r0 uintptr
		var e syscall.Errno
		if c.stamps {
			// While the sequencer is on, the connection is busy from
			// before its data leaves the socket until it ran it (Done):
			// a sequenced command looking at it sees the one or the
			// other (sequencer.go). The read is counted after the
			// busy mark, so a look that saw neither sees the count move.
			track := c.seq != nil && c.seq.on.Load() && c.busy.Load() == 0
			if track {
				c.busy.Store(1)
			}
			c.reads.Add(1)
			r0, e = c.rx.recvStamped(fd, p)
			if track {
				if e == 0 && r0 > 0 {
					c.busy.Store(c.rx.ns)
				} else {
					c.busy.Store(0)
				}
				c.seq.notify()
			}
		} else {
			c.reads.Add(1)
			r0, _, e = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		}
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait in the netpoller
		}
		c.rn, c.rerrno = int(r0), e
		return true
	}
}

// maxRead bounds what one read system call asks for. The reads are raw
// system calls (no scheduler hand-off, not preemptible), so a read into a
// big buffer (a 50 MB bulk read into its own buffer) that finds megabytes
// queued would hold the P for the whole copy and its page faults; at 256
// KiB a read holds it for tens of microseconds, and the reader returns
// to Go code, where it can be preempted, between reads.
const maxRead = 256 << 10

// Read reads into p (at most maxRead bytes per call).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rp, c.rn, c.rerrno = p, 0, 0
	var err error
	if c.inLoop {
		if !c.read(c.loopFd) {
			c.rp = nil
			return 0, ErrWouldBlock
		}
	} else {
		err = c.rc.Read(c.readFn)
	}
	n, errno := c.rn, c.rerrno
	c.drained = n < min(len(p), maxRead)
	c.rp = nil
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

func (c *Conn) write(fd uintptr) bool {
	p := c.wp
	for c.wn < len(p) {
		c.writes.Add(1)
		// While the sequencer is on, the call is marked (writing): the
		// socket is locked for its length (sequencer.go).
		track := c.seq != nil && c.seq.on.Load()
		if track {
			c.writing.Store(true)
		}
		r0, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[c.wn])), uintptr(len(p)-c.wn))
		if track {
			c.writing.Store(false)
			c.seq.notify()
		}
		switch e {
		case 0:
			c.wn += int(r0)
		case syscall.EINTR:
		case syscall.EAGAIN:
			// Socket buffer full: wait in the netpoller, or return
			// the short count (TryWrite).
			if !c.wtry && !c.stalled.Load() {
				c.stalled.Store(true)
				if c.seq != nil {
					c.seq.notify() // sequenced commands stop waiting for it
				}
			}
			return c.wtry
		default:
			c.werrno = e
			return true
		}
	}
	return true
}

// TryWrite writes what the socket takes now, without waiting for room:
// n may be short of len(p) (socket buffer full). Writes are serialised by
// the caller, as for Write.
func (c *Conn) TryWrite(p []byte) (int, error) {
	c.wtry = true
	n, err := c.Write(p)
	c.wtry = false
	return n, err
}

// Write writes all of p, waiting for room in the netpoller.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.wp, c.wn, c.werrno = p, 0, 0
	err := c.rc.Write(c.writeFn)
	if c.stalled.Load() {
		c.stalled.Store(false)
	}
	n, errno := c.wn, c.werrno
	c.wp = nil
	if err != nil {
		return n, err
	}
	if errno != 0 {
		return n, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", errno)}
	}
	return n, nil
}
