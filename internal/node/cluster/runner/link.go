package runner

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/netio"
)

// link is one bus connection: the record is guarded by the runner's
// machine lock; a reader goroutine decodes packets and feeds them to the
// machine itself; packets are written by whoever queues them when the
// socket takes them at once, else by a writer goroutine that drains out.
type link struct {
	id   cluster.LinkID
	conn net.Conn // nil while an outbound link is dialing

	mu      sync.Mutex
	out     []byte        // queued bytes not yet handed to the socket
	wake    chan struct{} // one token: out has data, or the link closes
	closed  bool
	writing bool // a batch taken from out (or a direct write) is being written
	// sent counts the bytes written (the runner's BytesSent).
	sent *atomic.Int64
	// raw is conn's raw descriptor for direct non-blocking writes (nil:
	// always through the writer).
	raw syscall.RawConn
}

func (r *Runner) newLink(id cluster.LinkID) *link {
	l := &link{id: id, wake: make(chan struct{}, 1), sent: &r.bytesSent}
	r.links[id] = l
	r.bufMu.Lock()
	r.bufs[id] = l
	r.bufMu.Unlock()
	return l
}

// dropLink forgets l and closes its connection; the reader's error that
// follows finds no record and is ignored.
func (r *Runner) dropLink(l *link) {
	if r.links[l.id] != l {
		return
	}
	delete(r.links, l.id)
	r.bufMu.Lock()
	delete(r.bufs, l.id)
	r.bufMu.Unlock()
	l.close()
}

func (l *link) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.out = nil
	c := l.conn
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	if c != nil {
		c.Close()
	}
}

// queue hands one encoded packet to the link; it reports false when
// that would take the unsent bytes past limit (> 0). While nothing is
// queued or being written, the packet goes straight to the socket with
// one non-blocking write on the caller's goroutine (an idle node's pong
// wakes no writer); what the socket does not take at once is left to the
// writer goroutine. pkt is not kept.
func (l *link) queue(pkt []byte, limit int64) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return true
	}
	if limit > 0 && int64(len(l.out)+len(pkt)) > limit {
		l.mu.Unlock()
		return false
	}
	if l.raw != nil && !l.writing && len(l.out) == 0 {
		l.writing = true
		l.mu.Unlock()
		n := l.writeNow(pkt)
		l.sent.Add(int64(n))
		l.mu.Lock()
		l.writing = false
		if n == len(pkt) || l.closed {
			l.mu.Unlock()
			return true
		}
		pkt = pkt[n:]
	}
	l.out = append(l.out, pkt...)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// writeNow writes as much of b as the socket takes without waiting
// (netio.WriteNow).
func (l *link) writeNow(b []byte) int { return netio.WriteNow(l.raw, b) }

// rawRead is read(2) on a non-blocking socket without the runtime's
// syscall bookkeeping, for the reason netio.WriteNow gives.
func rawRead(fd uintptr, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), errno
}

// rawReader reads a socket with rawRead, waiting for it in the runtime's
// poller (a parked goroutine, as net.Conn's Read) when it has no data.
type rawReader struct {
	raw syscall.RawConn
}

func (r rawReader) Read(b []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := r.raw.Read(func(fd uintptr) bool {
		for {
			n, errno = rawRead(fd, b)
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0 && len(b) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// startIO starts the reader and writer goroutines of a connected link.
func (r *Runner) startIO(l *link) {
	if tc, ok := l.conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		if raw, err := tc.SyscallConn(); err == nil {
			l.mu.Lock()
			l.raw = raw
			l.mu.Unlock()
		}
	}
	r.wg.Add(2)
	go r.writer(l)
	go r.reader(l)
}

func (r *Runner) writer(l *link) {
	defer r.wg.Done()
	var batch []byte
	for {
		<-l.wake
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		if l.writing || len(l.out) == 0 {
			// A direct write is under way; what it leaves rings again.
			l.mu.Unlock()
			continue
		}
		// Swap buffers: queue appends to a fresh slice while this one
		// is written, and the old one is reused next time.
		batch, l.out = l.out, batch[:0]
		l.writing = true
		l.mu.Unlock()
		n, err := l.conn.Write(batch)
		r.bytesSent.Add(int64(n))
		l.mu.Lock()
		l.writing = false
		more := len(l.out) > 0
		l.mu.Unlock()
		if err != nil {
			r.broken(l, err)
			return
		}
		if more {
			// Queued while this batch was written: go on.
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

// reader reads the link's packets and feeds them to the machine on its
// own goroutine: every packet already received is decoded, then all of
// them are handled under one hold of the machine's lock and their Ready
// carried out once, as Redis handles every ready event before
// beforeSleep; a packet therefore costs one goroutine wake-up, this one.
func (r *Runner) reader(l *link) {
	defer r.wg.Done()
	var src io.Reader = l.conn
	l.mu.Lock()
	if l.raw != nil {
		src = rawReader{l.raw}
	}
	l.mu.Unlock()
	br := bufio.NewReaderSize(src, readBufSize)
	var hdr [8]byte
	buf := make([]byte, 0, cluster.HeaderLen+8*cluster.GossipLen)
	var batch []*cluster.Msg
	for {
		batch = batch[:0]
		for len(batch) == 0 || packetBuffered(br) {
			msg, err := r.readPacket(l, br, &hdr, &buf)
			if err != nil {
				r.broken(l, err)
				return
			}
			if msg != nil {
				batch = append(batch, msg)
			}
			if len(batch) >= maxBatch {
				break
			}
		}
		r.mu.Lock()
		if r.closed || r.links[l.id] != l {
			r.mu.Unlock()
			return // closed by the machine or the runner meanwhile
		}
		now := r.opt.Clock()
		for _, msg := range batch {
			r.m.HandlePacket(now, l.id, msg)
		}
		r.carryOutLoop()
		r.mu.Unlock()
		// The machine keeps nothing of a packet it handled (it copies
		// what it stores): the next packets are decoded into these.
		for i, msg := range batch {
			cluster.ReleaseMsg(msg)
			batch[i] = nil
		}
		if cap(buf) > 1<<20 {
			buf = make([]byte, 0, cluster.HeaderLen+8*cluster.GossipLen)
		}
	}
}

// readBufSize is a link reader's buffer: a few full PINGs of a large
// cluster's gossip in one read.
const readBufSize = 32 << 10

// maxBatch bounds the packets handled under one hold of the lock.
const maxBatch = 64

// packetBuffered reports whether a whole packet is already in br.
func packetBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 8 {
		return false
	}
	h, err := br.Peek(8)
	if err != nil {
		return false
	}
	n, err := cluster.PacketLen(h)
	return err != nil || br.Buffered() >= n // an error is reported by readPacket
}

// readPacket reads one packet; a nil message with a nil error is a packet
// dropped as Redis drops it (bad lengths), the link kept.
func (r *Runner) readPacket(l *link, br *bufio.Reader, hdr *[8]byte, bufp *[]byte) (*cluster.Msg, error) {
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, err
	}
	n, err := cluster.PacketLen(hdr[:])
	if err == nil && n > r.opt.MaxPacket {
		err = errors.New("runner: bus packet longer than the limit")
	}
	if err != nil {
		r.badPkts.Add(1)
		r.log.Warn("cluster: bad bus packet, closing the link", "err", err)
		return nil, err
	}
	// Grow with the data that arrives, not with what the peer claims: a
	// lying length costs at most twice what was sent.
	buf := append((*bufp)[:0], hdr[:]...)
	for len(buf) < n {
		want := n - len(buf)
		if want > 1<<20 {
			want = 1 << 20
		}
		if cap(buf)-len(buf) < want {
			nb := make([]byte, len(buf), len(buf)+max(want, len(buf)))
			copy(nb, buf)
			buf = nb
		}
		k, err := io.ReadFull(br, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+k]
		if err != nil {
			*bufp = buf
			return nil, err
		}
	}
	*bufp = buf
	r.bytesRecv.Add(int64(n))
	msg, err := cluster.Decode(buf)
	if msg == nil || (err != nil && !errors.Is(err, cluster.ErrUnknownType)) {
		// Redis ignores a packet that fails its length checks and keeps
		// the link.
		r.badPkts.Add(1)
		r.log.Warn("cluster: dropping invalid bus packet", "err", err)
		return nil, nil
	}
	r.pktsRecv.Add(1)
	return msg, nil
}

// broken reports a failed link to the loop (once per link: the reader
// and the writer may both fail).
func (r *Runner) broken(l *link, err error) {
	l.mu.Lock()
	was := l.closed
	l.mu.Unlock()
	if was {
		return
	}
	l.close()
	select {
	case r.events <- event{kind: evBroken, id: l.id, err: err, gen: l}:
	case <-r.quit:
	}
}
