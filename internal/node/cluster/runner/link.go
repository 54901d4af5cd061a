package runner

import (
	"errors"
	"io"
	"net"
	"sync"

	"github.com/shardis/shardis/internal/node/cluster"
)

// link is one bus connection: the loop owns the record, a reader
// goroutine decodes packets into events, a writer goroutine drains out.
type link struct {
	id   cluster.LinkID
	conn net.Conn // nil while an outbound link is dialing

	mu      sync.Mutex
	out     []byte        // queued bytes not yet handed to the socket
	wake    chan struct{} // one token: out has data, or the link closes
	closed  bool
	writing bool // the writer holds a batch taken from out
}

func (r *Runner) newLink(id cluster.LinkID) *link {
	l := &link{id: id, wake: make(chan struct{}, 1)}
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

// queue appends one encoded packet to the link's output; it reports false
// when that would take the unsent bytes past limit (> 0).
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
	l.out = append(l.out, pkt...)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// startIO starts the reader and writer goroutines of a connected link.
func (r *Runner) startIO(l *link) {
	if tc, ok := l.conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
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
		// Swap buffers: the loop appends to a fresh slice while this one
		// is written, and the old one is reused next time.
		batch, l.out = l.out, batch[:0]
		l.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		n, err := l.conn.Write(batch)
		r.bytesSent.Add(int64(n))
		if err != nil {
			r.broken(l, err)
			return
		}
	}
}

func (r *Runner) reader(l *link) {
	defer r.wg.Done()
	var hdr [8]byte
	buf := make([]byte, 0, cluster.HeaderLen+8*cluster.GossipLen)
	for {
		if _, err := io.ReadFull(l.conn, hdr[:]); err != nil {
			r.broken(l, err)
			return
		}
		n, err := cluster.PacketLen(hdr[:])
		if err == nil && n > r.opt.MaxPacket {
			err = errors.New("runner: bus packet longer than the limit")
		}
		if err != nil {
			r.badPkts.Add(1)
			r.log.Warn("cluster: bad bus packet, closing the link", "err", err)
			r.broken(l, err)
			return
		}
		// Grow with the data that arrives, not with what the peer
		// claims: a lying length costs at most twice what was sent.
		buf = append(buf[:0], hdr[:]...)
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
			k, err := io.ReadFull(l.conn, buf[len(buf):len(buf)+want])
			buf = buf[:len(buf)+k]
			if err != nil {
				r.broken(l, err)
				return
			}
		}
		r.bytesRecv.Add(int64(n))
		msg, err := cluster.Decode(buf)
		if msg == nil || (err != nil && !errors.Is(err, cluster.ErrUnknownType)) {
			// Redis ignores a packet that fails its length checks and
			// keeps the link.
			r.badPkts.Add(1)
			r.log.Warn("cluster: dropping invalid bus packet", "err", err)
			continue
		}
		r.pktsRecv.Add(1)
		select {
		case r.events <- event{kind: evPacket, id: l.id, msg: msg, gen: l}:
		case <-r.quit:
			return
		}
		if cap(buf) > 1<<20 {
			buf = make([]byte, 0, cluster.HeaderLen+8*cluster.GossipLen)
		}
	}
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
