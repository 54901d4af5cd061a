package node

import (
	"math"
	"sync/atomic"
)

// Acknowledgements after the stream.
//
// Redis writes the replication stream and the clients' replies in the
// same pass of its event loop, so the acknowledgement of a write never
// leaves long before the write is on its way to the replicas. shardnode's
// replies leave as each client finishes, the stream when a stream write
// runs (writeStreamsNow, at most every streamEagerGap, or the replica's
// writer goroutine): tens of microseconds later, or milliseconds when the
// operating system deschedules the master in between. Measured with the
// probe of scripts/repllag on a saturated 2-core machine (2026-12-01
// 04:55 UTC, 2,294 probes): in about a fifth of the probes slower than
// 4 ms the master wrote the probe's stream 2–9 ms after its reply. Such an
// acknowledged write is also lost if the master dies in that window.
//
// So the replies of a batch that propagated a write are held until every
// online replica's stream was written through the replication offset the
// batch reached (a write attempted: what the socket did not take waits in
// the replica's output buffer, as in Redis), and the stream write that
// gets there writes them. The client's goroutine does not wait: its later
// output is appended to what is held, in order. A held client's pushed
// output (pub/sub) also waits for the release.

// ackState is the replication side: fed is the offset of the stream last
// pushed to online replicas, sent the offset every one of them has had a
// write attempted through; holders are the clients holding replies.
type ackState struct {
	fed     atomic.Int64
	sent    atomic.Int64
	holders []*Client // guarded by holdMu
	spare   []*Client
	nHold   atomic.Int32
}

// holdReplies holds c.out (the batch's replies) when the batch propagated
// a write that the replicas' stream has not been written through yet, or
// when earlier replies are held; it reports whether it took them.
func (c *Client) holdReplies() bool {
	r := c.srv.repl
	propagated := c.propagated
	c.propagated = false
	if r == nil {
		return false
	}
	if !c.holding.Load() {
		if !propagated || len(c.out) == 0 {
			return false
		}
		mark := r.ack.fed.Load()
		if r.ack.sent.Load() >= mark || c.hasFlag(clientPubSub|clientMonitor|clientReplica|clientMaster) {
			return false
		}
		c.pmu.Lock()
		if len(c.pending) > 0 || c.flushing {
			c.pmu.Unlock()
			return false // pushed output is being written: keep its order
		}
		c.heldOut = append(c.heldOut[:0], c.out...)
		c.holdMark = mark
		c.holding.Store(true)
		c.pmu.Unlock()
		c.out = c.out[:0]
		r.holdMu.Lock()
		r.ack.holders = append(r.ack.holders, c)
		r.ack.nHold.Add(1)
		r.holdMu.Unlock()
		// A stream write that got there between the check and the
		// enqueue found no holder to release.
		if r.ack.sent.Load() >= mark {
			r.releaseHeld()
		}
		return true
	}
	c.pmu.Lock()
	if !c.holding.Load() {
		c.pmu.Unlock()
		return false
	}
	c.heldOut = append(c.heldOut, c.out...)
	if propagated {
		c.holdMark = max(c.holdMark, r.ack.fed.Load())
	}
	c.pmu.Unlock()
	c.out = c.out[:0]
	return true
}

// streamAttempted records that replica c's stream had a write attempted
// through offset end.
func (c *Client) streamAttempted(end int64) {
	if end > c.streamSent.Load() {
		c.streamSent.Store(end)
	}
}

// streamWritten recomputes how far every online replica's stream was
// written and releases the replies that waited for it.
func (r *replication) streamWritten() {
	low := int64(math.MaxInt64)
	if l := r.streamTo.Load(); l != nil {
		for _, c := range *l {
			if !c.closed.Load() {
				low = min(low, c.streamSent.Load())
			}
		}
	}
	if low == math.MaxInt64 {
		low = r.ack.fed.Load() // no replica left: nothing to wait for
	}
	for {
		cur := r.ack.sent.Load()
		if low <= cur || r.ack.sent.CompareAndSwap(cur, low) {
			break
		}
	}
	if r.ack.nHold.Load() > 0 {
		r.releaseHeld()
	}
}

// releaseHeld writes the held replies whose stream was written.
func (r *replication) releaseHeld() {
	sent := r.ack.sent.Load()
	r.holdMu.Lock()
	list := r.ack.holders
	r.ack.holders, r.ack.spare = r.ack.spare[:0], nil // releasers may overlap
	r.ack.nHold.Store(0)
	r.holdMu.Unlock()
	var keep []*Client
	for _, c := range list {
		if !c.releaseHeld(sent) {
			keep = append(keep, c)
		}
	}
	clear(list)
	r.holdMu.Lock()
	if r.ack.spare == nil {
		r.ack.spare = list[:0]
	}
	if len(keep) > 0 {
		r.ack.holders = append(r.ack.holders, keep...)
		r.ack.nHold.Add(int32(len(keep)))
	}
	r.holdMu.Unlock()
	// Marks are stream offsets: one that sent passed while the list was
	// out is released by the next stream write; sent only grows, so a
	// client kept here waits for a write that is already due (its bytes
	// were pushed, which starts the replica's writer).
}

// releaseHeld writes c's held replies if the stream got to their mark; it
// reports false when they must wait longer.
func (c *Client) releaseHeld(sent int64) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for {
		c.pmu.Lock()
		if !c.holding.Load() {
			c.pmu.Unlock()
			return true
		}
		if c.holdMark > sent && !c.closed.Load() {
			c.pmu.Unlock()
			return false
		}
		buf := c.heldOut
		c.heldOut = nil
		if len(buf) == 0 || c.closed.Load() {
			c.heldOut = buf[:0]
			c.holding.Store(false)
			if len(c.pending) > 0 && !c.flushing {
				c.flushing = true
				go c.flushPending()
			}
			c.pmu.Unlock()
			return true
		}
		c.pmu.Unlock()
		var n int
		var err error
		if c.raw != nil {
			n, err = c.raw.tryWrite(buf)
		} else {
			n, err = c.io.Write(buf)
		}
		c.srv.stats.netOutput.Add(int64(n))
		if err != nil {
			c.pmu.Lock()
			c.holding.Store(false)
			c.pmu.Unlock()
			go c.close()
			return true
		}
		c.pmu.Lock()
		if n < len(buf) {
			// Socket full: the rest, and whatever was appended
			// meanwhile, go to the pushed output's writer.
			rest := append(buf[n:len(buf):len(buf)], c.heldOut...)
			c.pending = append(rest, c.pending...)
			c.heldOut = nil
			c.holding.Store(false)
			if !c.flushing {
				c.flushing = true
				go c.flushPending()
			}
			c.pmu.Unlock()
			return true
		}
		if c.heldOut == nil {
			c.heldOut = buf[:0]
		} else if cap(buf) <= 64*1024 {
			// Appended meanwhile: write that next, keep buf's memory.
			buf = append(buf[:0], c.heldOut...)
			c.heldOut = buf
		}
		c.pmu.Unlock()
	}
}
