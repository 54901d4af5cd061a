package cluster

import (
	"strconv"
	"time"
)

// Operator inputs: the state-changing CLUSTER subcommands. Each returns
// nil for +OK or an *Error with Redis 7.0's reply text; none needs the
// network to answer. Arguments arrive as the client sent them, so the
// parsing errors are Redis's too.

// Meet starts a handshake with ip:port, bus port cport ("" : port+10000)
// (CLUSTER MEET). A handshake already in progress for the address is not
// an error.
func (m *Machine) Meet(now time.Time, ip, port, cport string) error {
	m.begin(now)
	defer m.end()
	p, err := strconv.ParseInt(port, 10, 64)
	if err != nil {
		return errf("ERR Invalid TCP base port specified: %s", port)
	}
	cp := p + PortIncr
	if cport != "" {
		if cp, err = strconv.ParseInt(cport, 10, 64); err != nil {
			return errf("ERR Invalid TCP bus port specified: %s", cport)
		}
	}
	if p > 65535 || cp > 65535 {
		return errf("ERR Invalid node address specified: %s:%s", ip, port)
	}
	if _, err := m.startHandshake(ip, int(p), int(cp)); err != nil {
		return errf("ERR Invalid node address specified: %s:%s", ip, port)
	}
	return nil
}

// Forget removes a node and blacklists its id for 60 s so gossip does not
// bring it back (CLUSTER FORGET).
func (m *Machine) Forget(now time.Time, id string) error {
	m.begin(now)
	defer m.end()
	n := m.lookup(id)
	switch {
	case n == nil:
		return errf("ERR Unknown node %s", id)
	case n == m.myself:
		return errForgetMyself
	case m.myself.isSlave() && m.myself.slaveOf == n:
		return errForgetMaster
	}
	m.blacklistAdd(n.name)
	m.event(EventNodeForgotten, n.name, "")
	m.delNode(n)
	m.todo |= todoUpdateState | todoSaveConfig
	return nil
}

// parseSlot is getSlotOrReply.
func parseSlot(s string) (int, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v >= NumSlots {
		return 0, errInvalidSlot
	}
	return int(v), nil
}

// checkSlots is checkSlotAssignmentsOrReply over one range.
func (m *Machine) checkSlots(marked []bool, del bool, start, end int) error {
	for s := start; s <= end; s++ {
		if del && m.slots[s] == nil {
			return errf("ERR Slot %d is already unassigned", s)
		} else if !del && m.slots[s] != nil {
			return errf("ERR Slot %d is already busy", s)
		}
		if marked[s] {
			return errf("ERR Slot %d specified multiple times", s)
		}
		marked[s] = true
	}
	return nil
}

func (m *Machine) applySlots(marked []bool, del bool) {
	for s, on := range marked {
		if !on {
			continue
		}
		m.setImporting(s, nil)
		if del {
			m.delSlot(s)
		} else {
			m.addSlot(m.myself, s)
		}
	}
	m.todo |= todoUpdateState | todoSaveConfig
}

// AddSlots assigns slots to myself (CLUSTER ADDSLOTS).
func (m *Machine) AddSlots(now time.Time, slots ...string) error {
	return m.slotsCmd(now, false, slots)
}

// DelSlots unassigns slots (CLUSTER DELSLOTS).
func (m *Machine) DelSlots(now time.Time, slots ...string) error {
	return m.slotsCmd(now, true, slots)
}

func (m *Machine) slotsCmd(now time.Time, del bool, args []string) error {
	m.begin(now)
	defer m.end()
	if len(args) == 0 {
		return errArity(del, false)
	}
	nums := make([]int, len(args))
	for i, a := range args {
		s, err := parseSlot(a)
		if err != nil {
			return err
		}
		nums[i] = s
	}
	marked := make([]bool, NumSlots)
	for _, s := range nums {
		if err := m.checkSlots(marked, del, s, s); err != nil {
			return err
		}
	}
	m.applySlots(marked, del)
	return nil
}

// AddSlotsRange assigns the ranges start end [start end ...] to myself
// (CLUSTER ADDSLOTSRANGE).
func (m *Machine) AddSlotsRange(now time.Time, bounds ...string) error {
	return m.rangeCmd(now, false, bounds)
}

// DelSlotsRange unassigns ranges (CLUSTER DELSLOTSRANGE).
func (m *Machine) DelSlotsRange(now time.Time, bounds ...string) error {
	return m.rangeCmd(now, true, bounds)
}

func errArity(del, rng bool) error {
	name := "addslots"
	if del {
		name = "delslots"
	}
	if rng {
		name += "range"
	}
	return errf("ERR wrong number of arguments for 'cluster|%s' command", name)
}

func (m *Machine) rangeCmd(now time.Time, del bool, args []string) error {
	m.begin(now)
	defer m.end()
	if len(args) < 2 || len(args)%2 == 1 {
		return errArity(del, true)
	}
	marked := make([]bool, NumSlots)
	for j := 0; j < len(args); j += 2 {
		start, err := parseSlot(args[j])
		if err != nil {
			return err
		}
		end, err := parseSlot(args[j+1])
		if err != nil {
			return err
		}
		if start > end {
			return errf("ERR start slot number %d is greater than end slot number %d", start, end)
		}
		if err := m.checkSlots(marked, del, start, end); err != nil {
			return err
		}
	}
	m.applySlots(marked, del)
	return nil
}

// FlushSlots unassigns all my slots; db 0 must be empty (CLUSTER FLUSHSLOTS).
func (m *Machine) FlushSlots(now time.Time) error {
	m.begin(now)
	defer m.end()
	if m.local.DBSize() != 0 {
		return errFlushSlotsKeys
	}
	m.delNodeSlots(m.myself)
	m.todo |= todoUpdateState | todoSaveConfig
	return nil
}

// SetSlot is CLUSTER SETSLOT <slot> IMPORTING|MIGRATING|NODE <id> and
// SETSLOT <slot> STABLE: rest holds the arguments after the action, which
// is matched case-insensitively.
func (m *Machine) SetSlot(now time.Time, slotArg, action string, rest ...string) error {
	m.begin(now)
	defer m.end()
	hasID := len(rest) == 1
	id := ""
	if hasID {
		id = rest[0]
	}
	if len(rest) > 1 {
		action = "" // wrong number of arguments for any action
	}
	me := m.myself
	if me.isSlave() {
		return errSetSlotReplica
	}
	slot, err := parseSlot(slotArg)
	if err != nil {
		return err
	}
	switch {
	case equalFoldASCII(action, "migrating") && hasID:
		if m.slots[slot] != me {
			return errf("ERR I'm not the owner of hash slot %d", slot)
		}
		n := m.lookup(id)
		if n == nil {
			return errf("ERR I don't know about node %s", id)
		}
		if n.isSlave() {
			return errTargetNotMaster
		}
		m.setMigrating(slot, n)
	case equalFoldASCII(action, "importing") && hasID:
		if m.slots[slot] == me {
			return errf("ERR I'm already the owner of hash slot %d", slot)
		}
		n := m.lookup(id)
		if n == nil {
			return errf("ERR I don't know about node %s", id)
		}
		if n.isSlave() {
			return errTargetNotMaster
		}
		m.setImporting(slot, n)
	case equalFoldASCII(action, "stable") && !hasID:
		m.setImporting(slot, nil)
		m.setMigrating(slot, nil)
	case equalFoldASCII(action, "node") && hasID:
		n := m.lookup(id)
		if n == nil {
			return errf("ERR Unknown node %s", id)
		}
		if n.isSlave() {
			return errTargetNotMaster
		}
		keys := m.local.KeysInSlot(slot)
		if m.slots[slot] == me && n != me && keys != 0 {
			return errf("ERR Can't assign hashslot %d to a different node while I still hold keys for this hash slot.", slot)
		}
		if keys == 0 && m.migrating[slot] != nil {
			m.setMigrating(slot, nil)
		}
		wasMine := m.slots[slot] == me
		m.delSlot(slot)
		m.addSlot(n, slot)
		// A master left without slots follows the new owner.
		if wasMine && n != me && me.numSlots == 0 && m.cfg.AllowReplicaMigration {
			m.setMaster(n)
			m.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
		}
		// Closing an import: take a new config epoch (without consensus)
		// so the new owner wins, and tell everyone at once.
		if n == me && m.importing[slot] != nil {
			m.bumpEpochWithoutConsensus()
			m.setImporting(slot, nil)
			m.broadcastPong(false)
		}
	default:
		return errSetSlotSyntax
	}
	m.todo |= todoSaveConfig | todoUpdateState
	return nil
}

// Replicate makes myself a replica of the master id (CLUSTER REPLICATE).
func (m *Machine) Replicate(now time.Time, id string) error {
	m.begin(now)
	defer m.end()
	n := m.lookup(id)
	me := m.myself
	switch {
	case n == nil:
		return errf("ERR Unknown node %s", id)
	case n == me:
		return errReplicateMyself
	case n.isSlave():
		return errReplicateReplica
	case me.isMaster() && (me.numSlots != 0 || m.local.DBSize() != 0):
		return errReplicateBusy
	}
	m.setMaster(n)
	m.todo |= todoUpdateState | todoSaveConfig
	return nil
}

// Reset forgets every other node and my slots; hard also zeroes the epochs
// and takes a new id (CLUSTER RESET). A replica becomes a master (the
// runner gets a RoleChange to stop replicating and must flush its data).
func (m *Machine) Reset(now time.Time, hard bool) error {
	m.begin(now)
	defer m.end()
	me := m.myself
	if me.isMaster() && m.local.DBSize() != 0 {
		return errResetKeys
	}
	if me.isSlave() {
		m.setNodeAsMaster(me)
		m.setRole(nil)
	}
	m.closeAllSlots()
	m.resetManualFailover()
	for s := 0; s < NumSlots; s++ {
		m.delSlot(s)
	}
	for _, n := range append([]*node(nil), m.order...) {
		if n != me {
			m.delNode(n)
		}
	}
	if hard {
		m.currentEpoch = 0
		m.lastVoteEpoch = 0
		me.configEpoch = 0
		delete(m.nodes, me.name)
		me.name = m.randomName()
		m.nodes[me.name] = me
	}
	m.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
	return nil
}

// SetConfigEpoch sets my config epoch on a node that knows no other node
// and has epoch 0 (CLUSTER SET-CONFIG-EPOCH).
func (m *Machine) SetConfigEpoch(now time.Time, arg string) error {
	m.begin(now)
	defer m.end()
	epoch, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return &Error{"ERR value is not an integer or out of range"}
	}
	switch {
	case epoch < 0:
		return errf("ERR Invalid config epoch specified: %d", epoch)
	case len(m.nodes) > 1:
		return errEpochKnowsNodes
	case m.myself.configEpoch != 0:
		return errEpochNonZero
	}
	m.myself.configEpoch = uint64(epoch)
	if m.currentEpoch < uint64(epoch) {
		m.currentEpoch = uint64(epoch)
	}
	m.todo |= todoUpdateState | todoSaveConfig
	return nil
}

// BumpEpoch is CLUSTER BUMPEPOCH: it returns the status reply text,
// "BUMPED <epoch>" or "STILL <epoch>".
func (m *Machine) BumpEpoch(now time.Time) string {
	m.begin(now)
	defer m.end()
	word := "STILL"
	if m.bumpEpochWithoutConsensus() {
		word = "BUMPED"
	}
	return word + " " + strconv.FormatUint(m.myself.configEpoch, 10)
}

// CountFailureReports is CLUSTER COUNT-FAILURE-REPORTS.
func (m *Machine) CountFailureReports(now time.Time, id string) (int, error) {
	n := m.lookup(id)
	if n == nil {
		return 0, errf("ERR Unknown node %s", id)
	}
	return n.failureReportsCount(now, m.cfg.NodeTimeout), nil
}

// SaveConfig asks for nodes.conf to be saved and fsynced (CLUSTER
// SAVECONFIG answers after the runner saved it).
func (m *Machine) SaveConfig() {
	m.ready.SaveConfig = true
	m.ready.Fsync, m.ready.FsyncLearned = true, false
}

// Publish broadcasts a PUBLISH to every node (clusterPropagatePublish).
func (m *Machine) Publish(now time.Time, channel, message []byte) {
	m.begin(now)
	defer m.end()
	msg := m.buildHeader(TypePublish)
	msg.Channel, msg.Message = channel, message
	m.broadcast(msg)
}

// PublishShard sends a PUBLISHSHARD to the other nodes of my shard.
func (m *Machine) PublishShard(now time.Time, channel, message []byte) {
	m.begin(now)
	defer m.end()
	master := m.myself.master()
	if master == nil {
		return
	}
	msg := m.buildHeader(TypePublishShard)
	msg.Channel, msg.Message = channel, message
	for _, n := range append([]*node{master}, master.slaves...) {
		if n.flags&(FlagMyself|FlagHandshake) != 0 {
			continue
		}
		m.send(n.link, msg)
	}
}

// VerifyWithData reconciles the slot table with the keys loaded at
// start-up (verifyClusterConfigWithData): on a master, a slot holding keys
// that is neither mine nor importing becomes mine if unassigned, else
// importing from its owner. The node layer refuses to start when db 1+
// hold keys, as Redis does; that check is not here.
func (m *Machine) VerifyWithData(now time.Time) {
	m.begin(now)
	defer m.end()
	if m.myself.isSlave() {
		return
	}
	changed := false
	for s := 0; s < NumSlots; s++ {
		if m.local.KeysInSlot(s) == 0 || m.slots[s] == m.myself || m.importing[s] != nil {
			continue
		}
		changed = true
		if m.slots[s] == nil {
			m.addSlot(m.myself, s)
		} else {
			m.setImporting(s, m.slots[s])
		}
	}
	if changed {
		m.todo |= todoSaveConfig | todoFsyncConfig
	}
}
