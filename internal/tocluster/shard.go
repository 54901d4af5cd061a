package tocluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/rdb"
	"github.com/shardis/shardis/internal/resp"
)

// ShardProgress is one source shard's progress.
type ShardProgress struct {
	// Name is the shard's Sentinel master name.
	Name string `json:"name"`
	// Master is the source master's address.
	Master string `json:"master"`
	// Phase is "connecting", "copying", "streaming", "cutover", "done" or
	// "failed".
	Phase string `json:"phase"`
	// Keys is the number of keys copied from the snapshot(s).
	Keys int64 `json:"keys"`
	// TotalKeys is the source's key count when the copy started.
	TotalKeys int64 `json:"total_keys"`
	// Bytes is the number of snapshot bytes read.
	Bytes int64 `json:"bytes"`
	// Commands is the number of stream commands applied.
	Commands int64 `json:"commands"`
	// Offset is the replication offset applied (sent to the cluster).
	Offset int64 `json:"offset"`
	// Lag is the source's master_repl_offset minus Offset, in bytes (-1
	// before the stream starts and while the link is down).
	Lag int64 `json:"lag"`
	// PartialResyncs and FullResyncs count reconnections to a source
	// master (after a failover or a lost link): partial when the master
	// continued the stream, full when the shard was copied again.
	PartialResyncs int64 `json:"partial_resyncs"`
	FullResyncs    int64 `json:"full_resyncs"`
	// ApplyErrors counts error replies from the cluster; FirstError is the
	// first of them.
	ApplyErrors int64  `json:"apply_errors"`
	FirstError  string `json:"first_error,omitempty"`
	// CopyTime is how long the last snapshot took, from its first byte to
	// the cluster's answer to its last RESTORE.
	CopyTime time.Duration `json:"copy_ns"`
	// Err is why the shard stopped, "" while it runs.
	Err string `json:"error,omitempty"`
}

// shard is one source shard's replica link and its application to the
// cluster.
type shard struct {
	name string
	m    *Migration
	log  *slog.Logger

	t   *targets
	ann *announcer

	// tracked holds every key the tool copied or saw written for this
	// shard: FLUSHALL on the source deletes exactly these on the cluster.
	// Only the shard's goroutine touches it.
	tracked map[string]struct{}

	// master is the source master address the link uses.
	mu     sync.Mutex
	master string
	phase  string
	err    error

	replid string // only the shard goroutine
	offset atomic.Int64
	// streaming is set once the first snapshot is loaded.
	streaming atomic.Bool
	// copying is set once the first snapshot starts.
	copying atomic.Bool
	// srcOffset is the source's master_repl_offset, polled.
	srcOffset atomic.Int64

	keys, total, bytes, cmds, partial, full atomic.Int64
	copyNs                                  atomic.Int64
	// aliveAt is when the link last delivered stream data (unix ns): a
	// lost link is retried for ReconnectTimeout from then.
	aliveAt atomic.Int64

	cur atomic.Pointer[link]
}

func (s *shard) setPhase(p string) {
	s.mu.Lock()
	s.phase = p
	s.mu.Unlock()
}

func (s *shard) masterAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.master
}

func (s *shard) progress() ShardProgress {
	s.mu.Lock()
	p := ShardProgress{Name: s.name, Master: s.master, Phase: s.phase}
	if s.err != nil {
		p.Err = s.err.Error()
	}
	s.mu.Unlock()
	p.Keys, p.TotalKeys, p.Bytes, p.Commands = s.keys.Load(), s.total.Load(), s.bytes.Load(), s.cmds.Load()
	p.Offset = s.offset.Load()
	p.Lag = -1
	if s.streaming.Load() && s.cur.Load() != nil { // no lag while the link is down
		p.Lag = max(s.srcOffset.Load()-p.Offset, 0)
	}
	p.PartialResyncs, p.FullResyncs = s.partial.Load(), s.full.Load()
	p.CopyTime = time.Duration(s.copyNs.Load())
	if s.t != nil {
		p.ApplyErrors, p.FirstError = s.t.failures()
	}
	return p
}

// errRefused wraps the errors that no reconnection can fix.
var errRefused = errors.New("tocluster: cannot migrate")

// run copies and streams the shard until ctx ends or the shard fails for
// good. Lost links are retried against the master the Sentinels name,
// for at most ReconnectTimeout in a row.
func (s *shard) run(ctx context.Context) error {
	lastOK := s.m.now()
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := s.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errRefused) {
			return err
		}
		if at := s.aliveAt.Load(); at > lastOK.UnixNano() {
			lastOK = time.Unix(0, at)
		}
		s.log.Warn("tocluster: source link lost", "shard", s.name, "master", s.masterAddr(), "err", err)
		if s.m.now().Sub(lastOK) > s.m.opt.ReconnectTimeout {
			return fmt.Errorf("tocluster: shard %s: no usable source master for %v: %w", s.name, s.m.opt.ReconnectTimeout, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
		// A Sentinel that repointed the tool, or the Sentinels' answer.
		select {
		case h := <-s.ann.hint:
			s.setMaster(h)
		default:
			if addr, err := s.m.resolve(ctx, s.name); err == nil {
				s.setMaster(addr)
			}
		}
	}
}

func (s *shard) setMaster(addr string) {
	s.mu.Lock()
	s.master = addr
	s.mu.Unlock()
	s.ann.setMaster(addr)
}

// session is one replication connection: handshake, snapshot when the
// master sends one, then the stream until the link fails. A nil error
// means the stream ran (the link was lost later).
func (s *shard) session(ctx context.Context) error {
	s.setPhase("connecting")
	addr := s.masterAddr()
	next := s.offset.Load() + 1
	s.log.Info("tocluster: connecting to the source", "shard", s.name, "master", addr, "replid", s.replid, "next", next)
	l, err := dialSource(ctx, addr, s.m.auth(), s.ann.port(), s.replid, next, s.m.opt.DialTimeout, s.m.opt.LinkTimeout)
	if err != nil {
		return err
	}
	defer l.close()
	s.cur.Store(l)
	defer s.cur.Store(nil)
	if l.full {
		if s.copying.Swap(true) {
			s.full.Add(1) // a copy again, after a lost link or a failover
		}
		if err := s.copySnapshot(ctx, l); err != nil {
			return err
		}
	} else {
		s.partial.Add(1)
		s.log.Info("tocluster: partial resync", "shard", s.name, "master", addr, "offset", l.start)
	}
	s.replid = l.replid
	s.offset.Store(l.start)
	if err := l.ack(); err != nil {
		return fmt.Errorf("tocluster: ack to %s: %w", addr, err)
	}
	s.streaming.Store(true)
	s.setPhase("streaming")
	return s.stream(ctx, l)
}

// copySnapshot sends every key of the snapshot to its slot's master as
// RESTORE key abs-ttl payload REPLACE ABSTTL, pipelined. On a second copy
// (a full resync after a failover), keys the tool had that the new
// snapshot lacks are deleted.
func (s *shard) copySnapshot(ctx context.Context, l *link) (err error) {
	s.setPhase("copying")
	s.streaming.Store(false)
	s.log.Info("tocluster: snapshot starts", "shard", s.name, "master", l.addr)
	r, end, err := l.snapshot()
	if err != nil {
		return err
	}
	began := time.Now()
	stop := context.AfterFunc(ctx, l.close)
	defer stop()
	old := s.tracked
	s.tracked = make(map[string]struct{}, len(old))
	defer func() {
		// A copy cut short (the source failed over) keeps tracking the
		// keys of the earlier copy too: the next copy deletes those its
		// snapshot lacks.
		if err != nil {
			for k := range old {
				s.tracked[k] = struct{}{}
			}
		}
	}()
	s.keys.Store(0)
	d := rdb.NewDecoder(r)
	restore := []byte("RESTORE")
	replace, abs := []byte("REPLACE"), []byte("ABSTTL")
	var ttl []byte
	_, err = d.Parse(rdb.Handler{
		SelectDB: func(db int) error {
			if db != 0 {
				return fmt.Errorf("%w: shard %s holds keys in db %d (a cluster has only db 0)", errRefused, s.name, db)
			}
			return nil
		},
		Key: func(e *rdb.Entry) error {
			k := string(e.Key)
			if k == NoticeKey {
				return nil
			}
			s.tracked[k] = struct{}{}
			payload := rdb.Dump(e.Value, false, rdb.DefaultLimits)
			ttl = strconv.AppendInt(ttl[:0], max(e.ExpireMs, 0), 10)
			if err := s.t.forKey(e.Key).send(&op{what: "RESTORE"}, [][]byte{restore, e.Key, ttl, payload, replace, abs}); err != nil {
				return err
			}
			n := s.keys.Add(1)
			s.bytes.Store(d.Offset())
			if s.m.opt.PauseAt == PauseCopy && !s.m.held.Load() && n >= max(s.total.Load()/2, 1) {
				if err := s.t.flush(); err != nil {
					return err
				}
				return s.m.hold(ctx, PauseCopy, "shard", s.name, "master", l.addr, "keys", n)
			}
			return nil
		},
		Function: func(code []byte) error {
			return s.broadcast(ctx, [][]byte{[]byte("FUNCTION"), []byte("LOAD"), []byte("REPLACE"), code})
		},
	})
	if err != nil {
		if errors.Is(err, errRefused) {
			return err
		}
		return fmt.Errorf("tocluster: shard %s: snapshot: %w", s.name, err)
	}
	s.bytes.Store(d.Offset())
	s.log.Info("tocluster: snapshot read", "shard", s.name, "keys", s.keys.Load(), "bytes", d.Offset())
	if err := end(d.Offset()); err != nil {
		return err
	}
	s.log.Info("tocluster: snapshot ended", "shard", s.name)
	for k := range old {
		if _, ok := s.tracked[k]; !ok {
			if err := s.t.forKey([]byte(k)).send(&op{what: "DEL"}, [][]byte{[]byte("DEL"), []byte(k)}); err != nil {
				return err
			}
		}
	}
	if err := s.t.flush(); err != nil {
		return err
	}
	if err := s.t.barrier(ctx); err != nil {
		return err
	}
	s.copyNs.Store(int64(time.Since(began)))
	s.log.Info("tocluster: snapshot applied", "shard", s.name, "keys", s.keys.Load(), "in", time.Since(began))
	return nil
}

// stream applies the command stream until the link fails.
func (s *shard) stream(ctx context.Context, l *link) error {
	stop := context.AfterFunc(ctx, l.close)
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				if l.ack() != nil {
					return
				}
			}
		}
	}()
	rd := resp.NewReader(l.br, resp.ReaderOptions{})
	var tx [][][]byte // commands of an open MULTI, copied
	inTx := false
	for {
		args, err := rd.Next()
		if errors.Is(err, resp.ErrIncomplete) {
			if err := s.t.flush(); err != nil {
				return err
			}
			_ = l.nc.SetReadDeadline(time.Now().Add(s.m.opt.LinkTimeout))
			if err := rd.Fill(); err != nil {
				return fmt.Errorf("tocluster: source %s: %w", l.addr, err)
			}
			s.aliveAt.Store(time.Now().UnixNano())
			continue
		}
		if err != nil {
			return fmt.Errorf("tocluster: source %s: stream: %w", l.addr, err)
		}
		rd.Recycle() // each command is encoded or copied before the next Fill
		if len(args) >= 2 && strings.EqualFold(string(args[0]), "replconf") && strings.EqualFold(string(args[1]), "getack") {
			if err := l.ack(); err != nil {
				return err
			}
		}
		kind, pos, why := Classify(args)
		switch {
		case kind == Refuse:
			return fmt.Errorf("%w: shard %s: %s", errRefused, s.name, why)
		case kind == Multi:
			inTx, tx = true, tx[:0]
		case kind == Exec:
			if err := s.applyTx(ctx, tx); err != nil {
				return err
			}
			inTx, tx = false, tx[:0]
		case inTx && kind != Ignore:
			tx = append(tx, cloneArgs(args))
		default:
			if err := s.apply(ctx, kind, pos, args); err != nil {
				return err
			}
		}
		if kind != Ignore {
			s.cmds.Add(1)
		}
		s.offset.Store(l.start + rd.Consumed())
	}
}

func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// apply applies one stream command outside a transaction.
func (s *shard) apply(ctx context.Context, kind Kind, pos []int, args [][]byte) error {
	switch kind {
	case Ignore:
		return nil
	case Single:
		s.track(args, pos)
		return s.t.forKey(args[pos[0]]).send(&op{what: string(args[0])}, args)
	case Split:
		s.track(args, pos)
		for _, part := range SplitBySlot(args) {
			if err := s.t.forKey(part[1]).send(&op{what: string(args[0])}, part); err != nil {
				return err
			}
		}
		return nil
	case Colocate:
		s.track(args, pos)
		return s.colocate(ctx, args, pos)
	case Flush:
		for k := range s.tracked {
			if err := s.t.forKey([]byte(k)).send(&op{what: "UNLINK"}, [][]byte{[]byte("UNLINK"), []byte(k)}); err != nil {
				return err
			}
		}
		clear(s.tracked)
		return nil
	case Broadcast:
		return s.broadcast(ctx, args)
	}
	return nil
}

func (s *shard) track(args [][]byte, pos []int) {
	for _, p := range pos {
		s.tracked[string(args[p])] = struct{}{}
	}
}

// broadcast sends args to every master of the cluster.
func (s *shard) broadcast(ctx context.Context, args [][]byte) error {
	for _, c := range s.t.conns {
		if err := c.send(&op{what: string(args[0])}, args); err != nil {
			return err
		}
	}
	return nil
}

// applyTx applies a transaction's commands: each slot's commands, in
// their order, in one MULTI/EXEC on the slot's master. Commands that span
// slots (Split, Colocate, Flush) are applied on their own, in order,
// after the per-slot groups queued before them.
func (s *shard) applyTx(ctx context.Context, cmds [][][]byte) error {
	var order []int
	groups := map[int][][][]byte{}
	flushGroups := func() error {
		multi, exec := [][]byte{[]byte("MULTI")}, [][]byte{[]byte("EXEC")}
		for _, slot := range order {
			c := s.t.forSlot(slot)
			g := groups[slot]
			if len(g) > 1 {
				if err := c.send(&op{what: "MULTI"}, multi); err != nil {
					return err
				}
			}
			for _, a := range g {
				if err := c.send(&op{what: string(a[0])}, a); err != nil {
					return err
				}
			}
			if len(g) > 1 {
				if err := c.send(&op{what: "EXEC"}, exec); err != nil {
					return err
				}
			}
		}
		order = order[:0]
		clear(groups)
		return nil
	}
	for _, a := range cmds {
		kind, pos, why := Classify(a)
		switch kind {
		case Refuse:
			return fmt.Errorf("%w: shard %s: %s", errRefused, s.name, why)
		case Single:
			s.track(a, pos)
			slot := consistent.KeySlot(string(a[pos[0]]))
			if _, ok := groups[slot]; !ok {
				order = append(order, slot)
			}
			groups[slot] = append(groups[slot], a)
		case Ignore, Multi, Exec:
		default:
			if err := flushGroups(); err != nil {
				return err
			}
			if err := s.apply(ctx, kind, pos, a); err != nil {
				return err
			}
		}
	}
	return flushGroups()
}

// colocate applies a command whose keys span slots by its effects (see
// Colocate).
func (s *shard) colocate(ctx context.Context, args [][]byte, pos []int) error {
	home := consistent.KeySlot(string(args[pos[0]]))
	hc := s.t.forSlot(home)
	rewritten := append([][]byte(nil), args...)
	type moved struct {
		key  []byte
		temp []byte
	}
	var temps []moved
	tempOf := map[string][]byte{}
	for _, p := range pos {
		k := args[p]
		if consistent.KeySlot(string(k)) == home {
			continue
		}
		t, ok := tempOf[string(k)]
		if !ok {
			t = []byte(TempKey(home, len(temps)))
			tempOf[string(k)] = t
			temps = append(temps, moved{key: k, temp: t})
			if err := s.copyKey(ctx, s.t.forKey(k), k, hc, t); err != nil {
				return err
			}
		}
		rewritten[p] = t
	}
	if err := hc.send(&op{what: string(args[0])}, rewritten); err != nil {
		return err
	}
	for _, m := range temps {
		if err := s.copyKey(ctx, hc, m.temp, s.t.forKey(m.key), m.key); err != nil {
			return err
		}
		if err := hc.send(&op{what: "DEL"}, [][]byte{[]byte("DEL"), m.temp}); err != nil {
			return err
		}
	}
	return nil
}

// copyKey makes key dst on conn to a copy of key src on conn from, with
// its TTL, or deletes dst when src does not exist. Both connections are
// FIFO, so the copy sees every earlier command on src and precedes every
// later one on dst.
func (s *shard) copyKey(ctx context.Context, from *targetConn, src []byte, to *targetConn, dst []byte) error {
	dump, err := from.do(ctx, []byte("DUMP"), src)
	if err != nil {
		return err
	}
	pttl, err := from.do(ctx, []byte("PTTL"), src)
	if err != nil {
		return err
	}
	if dump.IsError() || pttl.IsError() {
		return fmt.Errorf("tocluster: shard %s: DUMP %q on %s: %s%s", s.name, src, from.addr, dump.Str, pttl.Str)
	}
	if dump.Null {
		return to.send(&op{what: "DEL"}, [][]byte{[]byte("DEL"), dst})
	}
	ttl := max(pttl.Int, 0)
	return to.send(&op{what: "RESTORE"}, [][]byte{[]byte("RESTORE"), dst, strconv.AppendInt(nil, ttl, 10), []byte(dump.Str), []byte("REPLACE")})
}

// level returns once the shard has applied the stream up to offset and
// the cluster has answered every command sent, or ctx ends.
func (s *shard) level(ctx context.Context, offset int64) error {
	for s.offset.Load() < offset {
		select {
		case <-ctx.Done():
			return fmt.Errorf("tocluster: shard %s: applied offset %d, source at %d: %w", s.name, s.offset.Load(), offset, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	// The stream goroutine sends on the same connections; the barrier
	// PINGs queue after what it sent up to offset.
	return s.t.barrier(ctx)
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "127.0.0.1"
	}
	return h
}
