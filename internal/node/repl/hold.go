package repl

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Hold stops a replica from applying and acknowledging one master's
// stream: the cluster's freeze of a replica whose master is FAIL
// (docs/ARCHITECTURE.md, "Acknowledged writes"). It names the held master
// by the address its link dials ("host:port"); a link to any other master
// is not held, so a replica reconfigured to a new master replicates from
// it at once while the link to the old one stays held until it is
// stopped.
//
// The guarantee: *once Set(addr) has returned, a link to addr sends no
// REPLCONF ACK with an offset read after that, starts running no request
// of the stream and opens no new connection, until Set names another
// address*. An ACK whose offset was read before carries at most the
// offset the node reads after Set returned (offsets only grow); a request
// that had started runs to its end (the stream checks before each one).
// Set never waits: the cluster machine calls it under its lock. A nil
// *Hold holds nothing.
type Hold struct {
	// addr is the held master's address; nil: none.
	addr atomic.Pointer[string]
	mu   sync.Mutex
	// changed is closed (and replaced) at every change of addr.
	changed chan struct{}
}

// Set holds the links to addr ("host:port"), or none with "". Setting the
// address already held does nothing.
func (h *Hold) Set(addr string) {
	if cur := h.addr.Load(); cur == nil && addr == "" || cur != nil && *cur == addr {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if addr == "" {
		h.addr.Store(nil)
	} else {
		h.addr.Store(&addr)
	}
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

// HeldFor reports whether the links to addr are held.
func (h *Hold) HeldFor(addr string) bool {
	if h == nil {
		return false
	}
	p := h.addr.Load()
	return p != nil && *p == addr
}

// Held returns the held address, "" when none.
func (h *Hold) Held() string {
	if h == nil {
		return ""
	}
	if p := h.addr.Load(); p != nil {
		return *p
	}
	return ""
}

// wait returns a channel closed at the next change, or nil when addr is
// not held.
func (h *Hold) wait(addr string) <-chan struct{} {
	if !h.HeldFor(addr) {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.HeldFor(addr) {
		return nil
	}
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.changed
}

// errLinkStopped ends a held stream whose link was stopped.
var errLinkStopped = errors.New("repl: link stopped")

// HoldHost is implemented by a ReplicaHost whose node can hold its
// master's stream (cluster mode).
type HoldHost interface {
	// ReplHold returns the node's hold.
	ReplHold() *Hold
}

// waitRelease returns once the link's master is not held, or
// errLinkStopped when the link is stopped meanwhile.
func (l *Link) waitRelease() error {
	for {
		ch := l.hold.wait(l.addr)
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-l.quit:
			return errLinkStopped
		}
	}
}
