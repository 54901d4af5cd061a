package node

// Whole-slot migration's side in the node: the engine is package slotmig
// (internal/node/slotmig); this file implements its Host (the keyspace
// snapshot and trim, the replication stream, the applier, the cluster
// machine's claim and yield) and the dispatcher's check against the
// source's write gate.

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/slotmig"
	"github.com/shardis/shardis/internal/rdb"
)

// migHost implements slotmig.Host for s.
type migHost struct{ s *Server }

func newSlotMigrations(s *Server) *slotmig.Engine { return slotmig.New(migHost{s}, s.log) }

func (h migHost) Routing() *cluster.Routing { return h.s.cluster.route.Load() }

func (h migHost) ClaimSlots(slots []int) (uint64, error) {
	var epoch uint64
	var err error
	if !h.s.cluster.do(func(m *cluster.Machine, now time.Time) { epoch, err = m.ClaimSlots(now, slots) }) {
		return 0, errors.New("slotmig: the cluster bus is closed")
	}
	return epoch, err
}

func (h migHost) YieldSlots(dest string, epoch uint64, slots []int) error {
	var err error
	h.s.cluster.do(func(m *cluster.Machine, now time.Time) { err = m.YieldSlots(now, dest, epoch, slots) })
	return err
}

func (h migHost) ConfigEpoch() uint64 {
	var e uint64
	h.s.cluster.do(func(m *cluster.Machine, _ time.Time) { e = m.Myself().ConfigEpoch })
	return e
}

func (h migHost) Settings() slotmig.Settings {
	cfg := h.s.cfg
	return slotmig.Settings{
		WritePauseTimeout: time.Duration(cfg.Int(DirClusterSlotMigrationWritePauseTimeout)) * time.Millisecond,
		HandoffMaxLag:     int64(cfg.Int(DirClusterSlotMigrationHandoffMaxLagBytes)),
		ReplTimeout:       time.Duration(cfg.Int(DirReplTimeout)) * time.Second,
		MasterUser:        cfg.Get(DirMasteruser),
		MasterAuth:        cfg.Get(DirMasterauth),
	}
}

// SnapshotSlot dumps slot's keys under the slot's shard lock, which every
// write to the slot holds while it applies and propagates itself: a
// string as SET key value [PXAT ms], any other type as RESTORE ... REPLACE
// ABSTTL. SET replaces a key of any type, as RESTORE REPLACE does, and a
// PXAT in the past leaves no key, as a past ABSTTL does.
func (h migHost) SnapshotSlot(slot int, b []byte, locked func(b []byte, keys int)) []byte {
	s := h.s
	db := s.dbs[0]
	comp := s.cfg.Bool(DirRdbcompression)
	lim := s.rdbLimits()
	restore, replace, absttl := []byte("RESTORE"), []byte("REPLACE"), []byte("ABSTTL")
	sh := &db.Shards[keyspace.SlotShard(slot)]
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	set, pxat := []byte("SET"), []byte("PXAT")
	var ttl []byte
	n := 0
	db.ForEachInSlot(slot, func(e *keyspace.Entry) bool {
		key := sbytes(e.Key) // appended, not kept
		if e.Obj == nil {
			// A string goes as SET, as an AOF rewrite writes it: no DUMP
			// to encode here and no payload to check and decode there.
			if e.Expire > 0 {
				ttl = strconv.AppendInt(ttl[:0], e.Expire, 10)
				b = appendCommand(b, set, key, e.Str, pxat, ttl)
			} else {
				b = appendCommand(b, set, key, e.Str)
			}
		} else {
			ttl = strconv.AppendInt(ttl[:0], max(e.Expire, 0), 10)
			b = appendCommand(b, restore, key, ttl, rdb.Dump(entryValue(e), comp, lim), replace, absttl)
		}
		n++
		return true
	})
	locked(b, n)
	return b
}

func (h migHost) TrimSlots(slots []int) int { return h.s.trimSlots(slots) }

func (h migHost) AddTap(t slotmig.Tap) { h.s.AddPropagator(t) }

func (h migHost) WaitReplicasAck(d time.Duration) bool { return h.s.waitReplicasAck(d) }

func (h migHost) SyncAOF() error {
	if a := h.s.persist.AOF(); a != nil && h.s.cfg.Bool(DirAppendonly) {
		return a.FsyncNow()
	}
	return nil
}

func (h migHost) NewApplier(nc net.Conn) slotmig.Applier {
	c := newClient(h.s, nc)
	c.authed.Store(true)
	c.setFlag(clientMaster, true)
	c.replyMode = replyOn
	return migApplier{c}
}

func (h migHost) CommandSlot(args [][]byte) int {
	c := h.s.table.lookup(args[0])
	if c == nil {
		return -1
	}
	return cmdSlot(c, args)
}

// migApplier runs the source's stream through a master-flagged client.
type migApplier struct{ c *Client }

func (a migApplier) Apply(args [][]byte) string {
	c := a.c
	c.executeCmd(args, c.lookupCmd(args[0]))
	msg := ""
	if len(c.out) > 0 && c.out[0] == '-' {
		m, _, _ := bytes.Cut(c.out[1:], []byte("\r\n"))
		msg = string(m)
	}
	c.out = c.out[:0]
	return msg
}

func (a migApplier) InTransaction() bool { return a.c.hasFlag(clientMulti) }

// migConn is the connection a source task writes the stream on.
type migConn struct{ c *Client }

func (m migConn) Write(b []byte) (int, error)        { return m.c.conn.Write(b) }
func (m migConn) SetWriteDeadline(t time.Time) error { return m.c.conn.SetWriteDeadline(t) }
func (m migConn) Done() <-chan struct{}              { return m.c.done }
func (m migConn) Close()                             { m.c.close() }

// slotmigEnter is the dispatcher's check for writes to slots a source
// task is moving (after the cluster redirect check): it returns the
// function to call once the command has run, or, when the command waited
// for a pause and the slots changed owner meanwhile, the redirect to
// reply instead. Commands queued in MULTI are checked at their EXEC.
func (c *Client) slotmigEnter(cmd *command, args [][]byte) (done func(), msg string) {
	mig := c.srv.cluster.mig
	g := mig.Gate()
	if g == nil {
		return nil, ""
	}
	isExec := cmd.fullName() == "exec"
	if c.hasFlag(clientMulti) && !isExec {
		return nil, ""
	}
	slot := c.writeSlot(cmd, args, isExec)
	if !g.Covers(slot) {
		return nil, ""
	}
	for {
		if g.Released() {
			return nil, c.clusterRedirect(cmd, args)
		}
		if g.Enter() {
			return g.Exit, ""
		}
		select {
		case <-g.Wait():
		case <-c.done:
			return nil, ""
		}
		if msg := c.clusterRedirect(cmd, args); msg != "" {
			return nil, msg
		}
		if g = mig.Gate(); g == nil || !g.Covers(slot) {
			return nil, ""
		}
	}
}

// writeSlot returns the slot a write command (or an EXEC with a write
// queued) works on, -1 for a read or a command without keys. Keys of one
// command are in one slot (the redirect check refused CROSSSLOT).
func (c *Client) writeSlot(cmd *command, args [][]byte, isExec bool) int {
	if !isExec {
		if cmd.flags&flagWrite == 0 {
			return -1
		}
		return cmdSlot(cmd, args)
	}
	slot, write := -1, false
	for _, q := range c.multi {
		qc := c.srv.table.lookup(q[0])
		if qc == nil {
			continue
		}
		if qc.subs != nil && len(q) >= 2 {
			if sub := qc.subs[lowerASCII(q[1])]; sub != nil {
				qc = sub
			}
		}
		if qc.flags&flagWrite != 0 {
			write = true
		}
		if s := cmdSlot(qc, q); s >= 0 {
			slot = s
		}
	}
	if !write {
		return -1
	}
	return slot
}

// cmdSlot is the slot of cmd's first key, -1 without keys.
func cmdSlot(cmd *command, args [][]byte) int {
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				return keySlot(string(args[p]))
			}
		}
		return -1
	}
	if cmd.first <= 0 || cmd.first >= len(args) {
		return -1
	}
	return keySlot(string(args[cmd.first]))
}

// trimSlots deletes every key of database 0 in slots, each with a DEL in
// the replication stream and the AOF, so replicas and a restart drop them
// too. It returns the number of keys deleted.
func (s *Server) trimSlots(slots []int) int {
	db := s.dbs[0]
	n := 0
	for _, slot := range slots {
		if db.CountKeysInSlot(slot) == 0 {
			continue
		}
		sh := &db.Shards[keyspace.SlotShard(slot)]
		sh.Mu.Lock()
		var keys []string
		db.ForEachInSlot(slot, func(e *keyspace.Entry) bool {
			keys = append(keys, e.Key)
			return true
		})
		del := [][]byte{[]byte("DEL")}
		for _, k := range keys {
			if db.Remove(k) != nil {
				n++
				del = append(del, []byte(k))
			}
		}
		// One DEL per slot: one AOF write and fsync, not one per key.
		if len(del) > 1 && s.hasPropagators() {
			s.propagate(0, [][][]byte{del})
		}
		sh.Mu.Unlock()
		for _, k := range keys {
			s.touchWatchedKey(0, k)
		}
	}
	return n
}

// waitReplicasAck waits until every online replica acknowledged the
// replication offset as of the call (REPLCONF GETACK asks them at once),
// for at most d; true when they all did (or there is none).
func (s *Server) waitReplicasAck(d time.Duration) bool { return s.repl.WaitAll(d) }

// Propagates reports whether writes go to an AOF or to replicas.
func (h migHost) Propagates() bool {
	if h.s.cfg.Bool(DirAppendonly) {
		return true
	}
	return h.s.repl.HasReplicas()
}
