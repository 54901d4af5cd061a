package netio

import (
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Hang-ups that arrive with the last request.
//
// The Go netpoller waits edge-triggered: one wake-up for what arrived
// while the connection's goroutine was not waiting. When a client sends a
// request and shuts down its side at once, the data and the FIN can arrive
// before the goroutine wakes: its read returns the request (a short read:
// Drained), it answers, and it waits for a wake-up that never comes, as
// the FIN is already in the socket. Reading until EAGAIN after every short
// read would see it, at the price of a system call per request.
//
// Instead one process-wide epoll set, level-triggered on EPOLLRDHUP with
// EPOLLONESHOT, holds every connection: it fires once, when the peer shut
// down its sending side or the connection broke, and a goroutine waiting
// on it marks the connection (Conn.HungUp) and wakes its owner by a read
// deadline in the past. The owner, for its part, checks the mark after it
// set its own deadline and before it waits (the node's read loop). Either
// the owner sees the mark and reads to the EOF, or the mark comes later
// and the deadline wakes the owner's wait, so the hang-up is never missed.
// The cost is two epoll_ctl calls per connection, none per request.

type hangupWatcher struct {
	epfd int
	mu   sync.Mutex
	byID map[uint64]*Conn
	next uint64
}

var (
	hangupOnce sync.Once
	hangups    *hangupWatcher
)

func hangupWatch() *hangupWatcher {
	hangupOnce.Do(func() {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return // no watcher: hang-ups are seen as before, at the next read
		}
		hangups = &hangupWatcher{epfd: fd, byID: map[uint64]*Conn{}}
		go hangups.run()
	})
	return hangups
}

// watch adds c (its socket fd) to the set.
func (w *hangupWatcher) watch(c *Conn, fd int) {
	w.mu.Lock()
	w.next++
	id := w.next
	w.byID[id] = c
	w.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLONESHOT}
	setEventID(&ev, id)
	if err := syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		w.mu.Lock()
		delete(w.byID, id)
		w.mu.Unlock()
		return
	}
	c.hupID, c.hupFd = id, fd
}

// unwatch removes c from the set; it must run before the socket closes.
func (w *hangupWatcher) unwatch(c *Conn) {
	if c.hupID == 0 {
		return
	}
	_ = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, c.hupFd, nil)
	w.mu.Lock()
	delete(w.byID, c.hupID)
	w.mu.Unlock()
	c.hupID = 0
}

func (w *hangupWatcher) run() {
	evs := make([]syscall.EpollEvent, 64)
	for {
		n, err := syscall.EpollWait(w.epfd, evs, -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			return
		}
		for _, ev := range evs[:n] {
			w.mu.Lock()
			c := w.byID[eventID(&ev)]
			w.mu.Unlock()
			if c != nil {
				c.hungUp.Store(true)
				if c.nc != nil {
					_ = c.nc.SetReadDeadline(time.Unix(1, 0)) // wakes a waiting owner
				}
			}
		}
	}
}

// setEventID stores id in the event's 64-bit data (the Fd and Pad fields
// of syscall.EpollEvent on linux).
func setEventID(ev *syscall.EpollEvent, id uint64) {
	*(*uint64)(unsafe.Pointer(&ev.Fd)) = id
}

// eventID reads the id setEventID stored.
func eventID(ev *syscall.EpollEvent) uint64 {
	return *(*uint64)(unsafe.Pointer(&ev.Fd))
}
