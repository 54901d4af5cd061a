package clusternode

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/reply"
	"github.com/shardis/shardis/internal/node/slotmig"
	"github.com/shardis/shardis/internal/node/value"
)

// ErrClusterDisabled is the reply to a cluster command outside cluster
// mode, as Redis's clusterCommand.
const ErrClusterDisabled = "ERR This instance has cluster support disabled"

const errBusClosed = "ERR cluster bus is shutting down"

// Reply is a client's reply as the handlers of this package write it,
// in the client's protocol.
type Reply interface {
	reply.Writer
	Error(msg string)
	Simple(s string)
	OK()
	Verbatim(text string)
	Strings(items []string)
	// Help is a HELP subcommand's reply: name's lines.
	Help(name string, lines []string)
	// SubSyntaxError is Redis's addReplySubcommandSyntaxError for the
	// call args (a known subcommand given the wrong arguments).
	SubSyntaxError(args [][]byte)
	// SourceConn is the client's connection as a whole-slot migration's
	// source task writes on it; StopReplies hands the connection over to
	// that task (the client replies nothing more).
	SourceConn() slotmig.SourceConn
	StopReplies()
}

// Handler serves one CLUSTER subcommand (or a cluster DEBUG subcommand);
// m is nil outside cluster mode.
type Handler func(m *Mode, w Reply, args [][]byte)

// argError replies a package reply grammar error.
func argError(w Reply, msg string, args [][]byte) {
	if msg == reply.ErrSubSyntax {
		w.SubSyntaxError(args)
		return
	}
	w.Error(msg)
}

// machineDo runs fn on the cluster machine and replies its error, if any,
// with Redis's text; it reports whether fn succeeded.
func (cm *Mode) machineDo(w Reply, fn func(m *cluster.Machine, now time.Time) error) bool {
	var err error
	if !cm.Do(func(m *cluster.Machine, now time.Time) { err = fn(m, now) }) {
		w.Error(errBusClosed)
		return false
	}
	if err != nil {
		var ce *cluster.Error
		if errors.As(err, &ce) {
			w.Error(ce.Text)
		} else {
			w.Error("ERR " + err.Error())
		}
		return false
	}
	return true
}

// Help is CLUSTER HELP.
func Help(cm *Mode, w Reply, args [][]byte) { w.Help("CLUSTER", reply.HelpLines) }

// Info is CLUSTER INFO.
func Info(cm *Mode, w Reply, args [][]byte) {
	var text string
	exceeded := uint64(cm.r.Stats().BufferLimitExceeded)
	cm.machineDo(w, func(m *cluster.Machine, _ time.Time) error { text = m.Info(exceeded); return nil })
	w.Verbatim(text)
}

// MyID is CLUSTER MYID.
func MyID(cm *Mode, w Reply, args [][]byte) {
	var id string
	cm.machineDo(w, func(m *cluster.Machine, _ time.Time) error { id = m.MyID(); return nil })
	w.Bulk(id)
}

// Nodes is CLUSTER NODES.
func Nodes(cm *Mode, w Reply, args [][]byte) {
	var text string
	cm.machineDo(w, func(m *cluster.Machine, _ time.Time) error { text = m.Nodes(false); return nil })
	w.Verbatim(text)
}

// Slots is CLUSTER SLOTS.
func Slots(cm *Mode, w Reply, args [][]byte) {
	var ranges []cluster.SlotRange
	cm.machineDo(w, func(m *cluster.Machine, _ time.Time) error { ranges = m.Slots(); return nil })
	reply.Slots(w, ranges, cm.h.EndpointType())
}

// Shards is CLUSTER SHARDS.
func Shards(cm *Mode, w Reply, args [][]byte) {
	var shards []cluster.Shard
	cm.machineDo(w, func(m *cluster.Machine, _ time.Time) error { shards = m.Shards(); return nil })
	reply.Shards(w, shards, cm.h.EndpointType())
}

// Links is CLUSTER LINKS: the machine knows the links; the runner owns
// their send buffers.
func Links(cm *Mode, w Reply, args [][]byte) {
	var links []cluster.LinkInfo
	if cm.machineDo(w, func(m *cluster.Machine, _ time.Time) error { links = m.Links(); return nil }) {
		reply.Links(w, links, cm.r.LinkBuffers())
	}
}

// Admin is CLUSTER MEET, FORGET, ADDSLOTS[RANGE], DELSLOTS[RANGE],
// FLUSHSLOTS, SETSLOT, REPLICATE, FAILOVER, SET-CONFIG-EPOCH, SAVECONFIG,
// COUNT-FAILURE-REPORTS, REPLICAS: machine operations (reply.Admin).
func Admin(cm *Mode, w Reply, args [][]byte) {
	rest := make([]string, len(args)-2)
	for i, a := range args[2:] {
		rest[i] = string(a)
	}
	a := reply.AdminCommand(strings.ToLower(string(args[1])))
	if msg := a.Check(rest); msg != "" {
		argError(w, msg, args)
		return
	}
	var res reply.Result
	if !cm.machineDo(w, func(m *cluster.Machine, now time.Time) (err error) { res, err = a.Run(m, now, rest); return err }) {
		return
	}
	switch res.Kind {
	case reply.Integer:
		w.Int(res.Int)
	case reply.Strings:
		w.Strings(res.Strings)
	default:
		w.OK()
	}
}

// Reset is CLUSTER RESET [HARD|SOFT].
func Reset(cm *Mode, w Reply, args [][]byte) {
	hard, msg := reply.ParseReset(args[2:])
	if msg != "" {
		argError(w, msg, args)
		return
	}
	wasReplica := cm.h.IsReplica()
	if !cm.machineDo(w, func(m *cluster.Machine, now time.Time) error { return m.Reset(now, hard) }) {
		return
	}
	if wasReplica {
		// A replica that is reset becomes an empty master.
		cm.h.FlushAll()
	}
	w.OK()
}

// BumpEpoch is CLUSTER BUMPEPOCH.
func BumpEpoch(cm *Mode, w Reply, args [][]byte) {
	var s string
	cm.machineDo(w, func(m *cluster.Machine, now time.Time) error { s = m.BumpEpoch(now); return nil })
	w.Simple(s)
}

// KeySlot is CLUSTER KEYSLOT key.
func KeySlot(cm *Mode, w Reply, args [][]byte) {
	w.Int(int64(consistent.KeySlot(string(args[2]))))
}

// CountKeysInSlot is CLUSTER COUNTKEYSINSLOT slot.
func CountKeysInSlot(cm *Mode, w Reply, args [][]byte) {
	if slot, msg := reply.ParseCountKeysInSlot(args[2]); msg != "" {
		w.Error(msg)
	} else {
		w.Int(int64(cm.h.CountKeysInSlot(slot)))
	}
}

// GetKeysInSlot is CLUSTER GETKEYSINSLOT slot count.
func GetKeysInSlot(cm *Mode, w Reply, args [][]byte) {
	if slot, n, msg := reply.ParseGetKeysInSlot(args[2], args[3]); msg != "" {
		w.Error(msg)
	} else {
		w.Strings(cm.h.KeysInSlot(slot, n))
	}
}

// Migration is CLUSTER MIGRATION IMPORT <start> <end> [...] | CANCEL ID
// <id> | CANCEL ALL | STATUS [ID <id> | ALL]: Redis 8.4's atomic slot
// migration, an extension of the 7.0 command set; the engine is package
// slotmig.
func Migration(cm *Mode, w Reply, args [][]byte) {
	mig := cm.mig
	op, msg := reply.ParseMigration(args[2:])
	if msg != "" {
		argError(w, msg, args)
		return
	}
	if op.Verb == "import" {
		t, err := mig.StartImport(op.Ranges)
		if err != nil {
			w.Error(err.Error())
			return
		}
		w.Bulk(t.ID())
		return
	}
	var tasks []*slotmig.Task
	switch {
	case op.All:
		tasks = mig.List()
	case op.ID != "":
		if t := mig.Find(op.ID); t != nil {
			tasks = []*slotmig.Task{t}
		}
	default:
		if t := mig.Active(); t != nil {
			tasks = []*slotmig.Task{t}
		}
	}
	if op.Verb == "status" {
		w.ArrayLen(len(tasks))
		for _, t := range tasks {
			reply.Fields(w, t.Fields())
		}
		return
	}
	n := 0
	for _, t := range tasks {
		if t.Finished() {
			continue
		}
		t.Cancel()
		n++
		// Answer once the rollback is done, so STATUS shows it.
		select {
		case <-t.Done():
		case <-time.After(5 * time.Second):
		}
	}
	w.Int(int64(n))
}

// SyncSlots is CLUSTER SYNCSLOTS START <id> <target-id> <start> <end>
// [...] | ACK <id> <applied> | HANDOFF <id> <epoch> | QUERY <id> <start>
// <end> [...], the internal command of CLUSTER MIGRATION's protocol
// between target and source.
func SyncSlots(cm *Mode, w Reply, args [][]byte) {
	mig := cm.mig
	sub := strings.ToLower(string(args[2]))
	switch {
	case sub == "start" && len(args) >= 7:
		ranges, msg := reply.ParseSlotRanges(args[5:])
		if msg != "" {
			w.Error(msg)
			return
		}
		if err := mig.StartSource(w.SourceConn(), string(args[3]), string(args[4]), ranges); err != nil {
			w.Error(err.Error())
			return
		}
		w.StopReplies() // the task writes on this connection from now on
	case sub == "ack" && len(args) == 5:
		if off, ok := value.ParseInt(args[4]); ok {
			mig.Ack(string(args[3]), w.SourceConn(), off)
		}
	case sub == "handoff" && len(args) == 5:
		if epoch, err := strconv.ParseUint(string(args[4]), 10, 64); err == nil {
			mig.Handoff(string(args[3]), epoch)
		}
	case sub == "query" && len(args) >= 6:
		ranges, msg := reply.ParseSlotRanges(args[4:])
		if msg != "" {
			w.Error(msg)
			return
		}
		w.Simple(mig.AnswerQuery(string(args[3]), reply.SlotList(ranges)))
	default:
		w.SubSyntaxError(args)
	}
}

// DebugDropPacketFilter is DEBUG DROP-CLUSTER-PACKET-FILTER <type>: drop
// every received bus packet of that type (-1: none). As in Redis it is
// accepted outside cluster mode too (cm nil), where it has nothing to
// filter.
func DebugDropPacketFilter(cm *Mode, w Reply, args [][]byte) {
	if len(args) != 3 {
		w.SubSyntaxError(args)
		return
	}
	t, ok := value.ParseInt(args[2])
	if !ok {
		w.Error("ERR value is not an integer or out of range")
		return
	}
	if cm != nil {
		if !cm.Do(func(m *cluster.Machine, _ time.Time) { m.SetDropFilter(int(t)) }) {
			w.Error(errBusClosed)
			return
		}
	}
	w.OK()
}

// DebugClusterLink is DEBUG CLUSTERLINK KILL to|from|all <node-id>: close
// a node's outbound link, inbound link or both; the cron reconnects as
// after a network error.
func DebugClusterLink(cm *Mode, w Reply, args [][]byte) {
	if len(args) != 5 || !strings.EqualFold(string(args[2]), "kill") {
		w.SubSyntaxError(args)
		return
	}
	if cm == nil {
		w.Error("ERR Debug option only available for cluster mode enabled setup!")
		return
	}
	dir := strings.ToLower(string(args[3]))
	id := string(args[4])
	known := false
	if !cm.Do(func(m *cluster.Machine, now time.Time) {
		if _, known = m.Node(id); !known {
			return
		}
		if dir == "to" || dir == "from" || dir == "all" {
			m.KillLink(now, dir, id)
		}
	}) {
		w.Error(errBusClosed)
		return
	}
	switch {
	case !known:
		w.Error("ERR Unknown node " + id)
	case dir != "to" && dir != "from" && dir != "all":
		// Redis 7.0 replies this error and then +OK as well; one reply
		// keeps the connection in step.
		w.Error("ERR Unknown direction " + string(args[3]))
	default:
		w.OK()
	}
}
