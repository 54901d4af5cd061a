package node

// Whole-slot migration's side in the node: the engine is package slotmig
// (internal/node/slotmig) and the cluster machine's and the snapshot's
// part of its Host are package clusternode's; this file implements the
// rest (clusternode.MigHost: the trim, the replication stream, the
// applier) and the dispatcher's check against the source's write gate.

import (
	"bytes"
	"net"
	"time"

	"github.com/shardis/shardis/internal/node/clusternode"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/slotmig"
)

// migHost implements clusternode.MigHost for s.
type migHost struct{ s *Server }

func (h migHost) Settings() slotmig.Settings { return slotmig.SettingsFrom(h.s.cfg) }

func (h migHost) Dump() clusternode.Dump {
	return clusternode.Dump{DB: h.s.dbs[0], Compress: h.s.cfg.Bool(config.DirRdbcompression), Limits: h.s.rdbLimits()}
}

func (h migHost) TrimSlots(slots []int) int { return h.s.trimSlots(slots) }

func (h migHost) AddTap(t slotmig.Tap) { h.s.AddPropagator(t) }

func (h migHost) WaitReplicasAck(d time.Duration) bool { return h.s.waitReplicasAck(d) }

func (h migHost) SyncAOF() error {
	if a := h.s.persist.AOF(); a != nil && h.s.cfg.Bool(config.DirAppendonly) {
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
	cm := c.srv.cluster
	if cm.Migrations().Gate() == nil {
		return nil, ""
	}
	isExec := cmd.fullName() == "exec"
	if c.hasFlag(clientMulti) && !isExec {
		return nil, ""
	}
	return cm.AdmitWrite(c.writeSlot(cmd, args, isExec), c.done, func() string { return c.clusterRedirect(cmd, args) })
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
		qc := c.srv.queuedCommand(q)
		if qc == nil {
			continue
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
	return clusternode.FirstKeySlot(args, cmd.keys, cmd.first)
}

// trimSlots deletes every key of database 0 in slots, with a DEL per
// slot in the replication stream and the AOF (clusternode.TrimSlots).
func (s *Server) trimSlots(slots []int) int {
	return clusternode.TrimSlots(s.dbs[0], slots, func(del [][]byte) {
		if s.hasPropagators() {
			s.propagate(0, [][][]byte{del})
		}
	}, func(keys []string) {
		for _, k := range keys {
			s.touchWatchedKey(0, k)
		}
	})
}

// waitReplicasAck waits until every online replica acknowledged the
// replication offset as of the call (REPLCONF GETACK asks them at once),
// for at most d; true when they all did (or there is none).
func (s *Server) waitReplicasAck(d time.Duration) bool { return s.repl.WaitAll(d) }

// Propagates reports whether writes go to an AOF or to replicas.
func (h migHost) Propagates() bool {
	if h.s.cfg.Bool(config.DirAppendonly) {
		return true
	}
	return h.s.repl.HasReplicas()
}
