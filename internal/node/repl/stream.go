package repl

// The replica's application of its master's command stream: the offset
// bookkeeping (a command counts once it ran, a transaction once its EXEC
// ran), the ACKs, the forwarding to the node's own backlog and replicas,
// and the batching of already-read commands. Running a command is the
// server's (Applier).

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// Request is one request of the master's stream: its arguments and raw
// bytes (pointing into the applier's read buffer, valid until its next
// Fill), the applier's command for it, and whether it may join a batch of
// requests whose keys are prefetched before they run.
type Request struct {
	Args  [][]byte
	Raw   []byte
	Cmd   any
	Batch bool
}

// Applier runs the master's stream on the server (its master client). Its
// methods are called from the stream's goroutine only.
type Applier interface {
	// Next parses the next request already read; resp.ErrIncomplete when
	// none is complete.
	Next() (Request, error)
	// Buffered reports whether bytes past the last request were read.
	Buffered() bool
	// Fill reads more of the stream, waiting at most until deadline.
	Fill(deadline time.Time) error
	// Prefetch warms the keys of a batch about to run.
	Prefetch(reqs []Request)
	// Run executes one request and reports whether a transaction (MULTI)
	// is open after it. It returns ErrMasterClientClosed, running nothing,
	// once the master client was closed (CLIENT KILL, or the link
	// failing): a command left in the read buffer then must not count in
	// the offset, because it never ran, and the partial resync asks for
	// it again.
	Run(req Request) (inMulti bool, err error)
}

// Feed is where the applied stream goes: the node's own history (its
// backlog and replicas; Master implements it).
type Feed interface {
	// FeedFromMaster appends bytes applied from the master.
	FeedFromMaster(b []byte)
	// Offset is the applied offset.
	Offset() int64
}

// ErrMasterClientClosed ends the stream when its client was closed.
var ErrMasterClientClosed = errors.New("repl: stream: master client closed")

// ackStreamWindow is how long after a GETACK the replica acknowledges every
// applied batch.
const ackStreamWindow = time.Second

// maxBatch bounds the requests parsed ahead of execution.
const maxBatch = 32

// streamState is the stream's state on the link. It is owned by the
// stream's goroutine.
type streamState struct {
	// txn holds the raw stream of a transaction (MULTI and the commands
	// queued after it) until its EXEC or DISCARD: the offset counts a
	// transaction only once it ran, as Redis's reploff stays put while
	// the master client is in MULTI. A link cut mid-transaction discards
	// the queued commands, and the partial resync asks for the
	// transaction again from its MULTI.
	txn []byte
	// askedAt is when the master last sent REPLCONF GETACK and ackedOff
	// the offset of the last ACK the stream sent: for a second after a
	// GETACK the replica acknowledges every batch it applied, so a master
	// with min-replicas-ack waits one round trip, not one GETACK round,
	// for most writes.
	askedAt  time.Time
	ackedOff int64
	// reqs and args are a batch's requests and their arguments, reused.
	reqs []Request
	args [][]byte
}

// RunStream applies the master's stream with a until it fails, feeding
// each command to f after it ran. timeout is repl-timeout: a master
// silent for that long is gone. The caller set the link connected.
func (l *Link) RunStream(a Applier, f Feed, timeout time.Duration) error {
	st := &l.stream
	st.txn = st.txn[:0]
	l.SendAck(f.Offset())
	for {
		l.h.WaitUnfrozen() // DEBUG SLEEP: the stream waits too
		req, err := a.Next()
		if err == resp.ErrIncomplete {
			now := time.Now()
			if now.Sub(st.askedAt) < ackStreamWindow {
				l.ackApplied(f)
			}
			if err := a.Fill(now.Add(timeout)); err != nil {
				return fmt.Errorf("repl: stream: %w", err)
			}
			l.Touch()
			continue
		}
		if err != nil {
			return fmt.Errorf("repl: stream: %w", err)
		}
		if req.Batch && a.Buffered() {
			err = l.applyBatch(a, f, req)
		} else {
			err = l.apply(a, f, req)
		}
		if err != nil {
			return err
		}
	}
}

// apply runs one request and forwards it (a GETACK is answered instead).
// While the link's master is held (hold.go) it waits first, and then
// acknowledges what it had applied.
func (l *Link) apply(a Applier, f Feed, req Request) error {
	st := &l.stream
	if l.hold.HeldFor(l.addr) {
		if err := l.waitRelease(); err != nil {
			return err
		}
		l.SendAck(f.Offset())
	}
	if isGetAck(req.Args) {
		// The request counts in the offset (Redis's master sends it
		// through the stream) and the ACK carries the offset including
		// it; inside a transaction it waits with the transaction's bytes.
		if len(st.txn) > 0 {
			st.txn = append(st.txn, req.Raw...)
		} else {
			f.FeedFromMaster(req.Raw)
		}
		st.askedAt = time.Now()
		l.SendAck(f.Offset())
		return nil
	}
	inMulti, err := a.Run(req)
	switch {
	case err != nil:
		return err
	case inMulti:
		st.txn = append(st.txn, req.Raw...) // MULTI or a queued command
	case len(st.txn) > 0:
		st.txn = append(st.txn, req.Raw...) // EXEC or DISCARD
		f.FeedFromMaster(st.txn)
		st.txn = st.txn[:0]
		if cap(st.txn) > 1<<20 {
			st.txn = nil
		}
	default:
		// Raw points into the reader's buffer, which only the next read
		// reuses: feeding copies it (backlog, sub-replicas' output).
		f.FeedFromMaster(req.Raw)
	}
	return nil
}

// applyBatch runs a run of batchable requests already read, starting with
// first, after prefetching their keys, as the server does for a client's
// pipeline: the stream of a busy master is one long pipeline, and without
// it most of the replica's time went to the cache misses of each command's
// key lookup, one after another. The requests run in order, each forwarded
// after it ran, as apply does.
func (l *Link) applyBatch(a Applier, f Feed, first Request) error {
	st := &l.stream
	st.args = append(st.args[:0], first.Args...)
	first.Args = st.args[:len(first.Args):len(first.Args)]
	reqs := append(st.reqs[:0], first)
	var tail Request // a parsed request that may not join the batch
	hasTail := false
	var perr error
	for len(reqs) < maxBatch {
		next, err := a.Next()
		if err != nil {
			if err != resp.ErrIncomplete {
				perr = err
			}
			break
		}
		if !next.Batch {
			tail, hasTail = next, true
			break
		}
		start := len(st.args)
		st.args = append(st.args, next.Args...)
		next.Args = st.args[start:len(st.args):len(st.args)]
		reqs = append(reqs, next)
	}
	a.Prefetch(reqs)
	var aerr error
	for _, r := range reqs {
		if aerr = l.apply(a, f, r); aerr != nil {
			break
		}
	}
	st.reqs = reqs[:0]
	if cap(st.args) > 4096 {
		st.args = nil
	}
	switch {
	case aerr != nil:
		return aerr
	case perr != nil:
		return fmt.Errorf("repl: stream: %w", perr)
	case hasTail:
		return l.apply(a, f, tail)
	}
	return nil
}

// isGetAck reports whether a request of the stream is REPLCONF GETACK.
func isGetAck(args [][]byte) bool {
	return len(args) >= 2 && strings.EqualFold(string(args[0]), "REPLCONF") && strings.EqualFold(string(args[1]), "GETACK")
}

// ackApplied acknowledges what the stream applied since the last ACK it
// sent (the master asked recently: see askedAt).
func (l *Link) ackApplied(f Feed) {
	st := &l.stream
	if off := f.Offset(); off != st.ackedOff && len(st.txn) == 0 {
		st.ackedOff = off
		l.SendAck(off)
	}
}
