package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// flagNames is representClusterNodeFlags's table, in its order.
var flagNames = []struct {
	flag uint16
	name string
}{
	{FlagMyself, "myself"},
	{FlagMaster, "master"},
	{FlagSlave, "slave"},
	{FlagPFail, "fail?"},
	{FlagFail, "fail"},
	{FlagHandshake, "handshake"},
	{FlagNoAddr, "noaddr"},
	{FlagNoFailover, "nofailover"},
}

// FlagsString renders node flags as CLUSTER NODES does ("myself,master",
// "noflags").
func FlagsString(flags uint16) string {
	var b strings.Builder
	for _, f := range flagNames {
		if flags&f.flag != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.name)
		}
	}
	if b.Len() == 0 {
		return "noflags"
	}
	return b.String()
}

// slotRanges returns, per node, its slot ranges from the slot table in
// ascending order (clusterGenNodesSlotsInfo).
func (m *Machine) slotRanges() map[*node][][2]int {
	out := make(map[*node][][2]int, len(m.order))
	for _, n := range m.order {
		if n.numSlots > 0 {
			out[n] = n.slots.Ranges(nil)
		}
	}
	return out
}

// nodeLine renders one CLUSTER NODES line without its newline
// (clusterGenNodeDescription).
func (m *Machine) nodeLine(n *node, ranges [][2]int, usePPort bool) string {
	return string(m.appendNodeLine(nil, n, ranges, usePPort))
}

// appendNodeLine appends nodeLine's text to b.
func (m *Machine) appendNodeLine(b []byte, n *node, ranges [][2]int, usePPort bool) []byte {
	port := n.port
	if usePPort && n.pport != 0 {
		port = n.pport
	}
	b = append(b, n.name[:]...)
	b = append(b, ' ')
	b = append(b, n.ip...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(port), 10)
	b = append(b, '@')
	b = strconv.AppendInt(b, int64(n.cport), 10)
	if n.hostname != "" {
		b = append(b, ',')
		b = append(b, n.hostname...)
	}
	b = append(b, ' ')
	b = append(b, FlagsString(n.flags)...)
	b = append(b, ' ')
	if n.slaveOf != nil {
		b = append(b, n.slaveOf.name[:]...)
	} else {
		b = append(b, '-')
	}
	epoch := n.configEpoch
	if n.isSlave() && n.slaveOf != nil {
		epoch = n.slaveOf.configEpoch
	}
	state := " disconnected"
	if n.link != nil || n.flags&FlagMyself != 0 {
		state = " connected"
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, unixMs(n.pingSent), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, unixMs(n.pongReceived), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, epoch, 10)
	b = append(b, state...)
	for _, r := range ranges {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(r[0]), 10)
		if r[0] != r[1] {
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(r[1]), 10)
		}
	}
	if n.flags&FlagMyself != 0 {
		for s := range m.openSlots.All() {
			if t := m.migrating[s]; t != nil {
				b = append(b, " ["...)
				b = strconv.AppendInt(b, int64(s), 10)
				b = append(b, "->-"...)
				b = append(b, t.name[:]...)
				b = append(b, ']')
			} else if f := m.importing[s]; f != nil {
				b = append(b, " ["...)
				b = strconv.AppendInt(b, int64(s), 10)
				b = append(b, "-<-"...)
				b = append(b, f.name[:]...)
				b = append(b, ']')
			}
		}
	}
	return b
}

// appendNodesDescription appends the CLUSTER NODES lines of the nodes
// without a flag of filter to b.
func (m *Machine) appendNodesDescription(b []byte, filter uint16, usePPort bool) []byte {
	var ranges [][2]int
	for _, n := range m.order {
		if n.flags&filter != 0 {
			continue
		}
		ranges = ranges[:0]
		if n.numSlots > 0 {
			ranges = n.slots.Ranges(ranges)
		}
		b = m.appendNodeLine(b, n, ranges, usePPort)
		b = append(b, '\n')
	}
	return b
}

func (m *Machine) nodesDescription(filter uint16, usePPort bool) string {
	return string(m.appendNodesDescription(make([]byte, 0, 256*len(m.order)), filter, usePPort))
}

// Nodes returns the CLUSTER NODES text; usePPort reports plaintext ports
// (a non-TLS client of a TLS cluster).
func (m *Machine) Nodes(usePPort bool) string { return m.nodesDescription(0, usePPort) }

// RenderNodesConf returns nodes.conf's content: the CLUSTER NODES lines
// without handshake nodes, then the vars line (clusterSaveConfig).
func (m *Machine) RenderNodesConf() string {
	b := m.appendNodesDescription(make([]byte, 0, 256*len(m.order)+64), FlagHandshake, false)
	b = append(b, "vars currentEpoch "...)
	b = strconv.AppendUint(b, m.currentEpoch, 10)
	b = append(b, " lastVoteEpoch "...)
	b = strconv.AppendUint(b, m.lastVoteEpoch, 10)
	b = append(b, '\n')
	// b is not used again: the text shares its bytes, as strings.Builder
	// does (a save per SETSLOT rendered, then copied, every time).
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func corruptLine(line string, why string) error {
	return fmt.Errorf("%w: %s: %q", ErrCorruptConfig, why, line)
}

// LoadNodesConf replaces the machine's state with a nodes.conf
// (clusterLoadConfig): the node keeps its id, epochs, slots, open slots
// and role. An empty text changes nothing (Redis treats a zero-length
// file as missing). A file Redis would refuse returns an error wrapping
// ErrCorruptConfig and leaves the machine unchanged. The announced
// address, ports and hostname of the Config are reapplied to myself, and
// the cluster state is computed in the same step (see the end).
func (m *Machine) LoadNodesConf(now time.Time, text string) error {
	if len(text) == 0 {
		return nil
	}
	t := &Machine{cfg: m.cfg, rng: m.rng, local: m.local, dropFilter: m.dropFilter}
	t.resetTables()
	t.now = now
	get := func(s string) *node {
		n := t.lookup(s)
		if n == nil {
			n = t.createNode(now, nameOf(s), 0)
			t.addNode(n)
		}
		return n
	}
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		argv := strings.Fields(line)
		if len(argv) == 0 {
			continue
		}
		if strings.EqualFold(argv[0], "vars") {
			if len(argv)%2 == 0 {
				return corruptLine(line, "odd vars")
			}
			for j := 1; j < len(argv); j += 2 {
				v, err := strconv.ParseUint(argv[j+1], 10, 64)
				if err != nil {
					return corruptLine(line, "bad number")
				}
				switch {
				case strings.EqualFold(argv[j], "currentEpoch"):
					t.currentEpoch = v
				case strings.EqualFold(argv[j], "lastVoteEpoch"):
					t.lastVoteEpoch = v
				}
			}
			continue
		}
		if len(argv) < 8 {
			return corruptLine(line, "fewer than 8 fields")
		}
		if !validName(argv[0]) {
			return corruptLine(line, "bad node id")
		}
		n := get(argv[0])
		addr := argv[1]
		n.hostname = ""
		if i := strings.IndexByte(addr, ','); i >= 0 {
			n.hostname = addr[i+1:]
			addr = addr[:i]
		}
		colon := strings.LastIndexByte(addr, ':')
		if colon < 0 {
			return corruptLine(line, "no port")
		}
		n.ip = addr[:colon]
		portPart, busPart, hasBus := strings.Cut(addr[colon+1:], "@")
		port, err := strconv.Atoi(portPart)
		if err != nil {
			return corruptLine(line, "bad port")
		}
		n.port = port
		n.cport = port + PortIncr
		if hasBus {
			if n.cport, err = strconv.Atoi(busPart); err != nil {
				return corruptLine(line, "bad bus port")
			}
		}
		for _, f := range strings.Split(argv[2], ",") {
			switch strings.ToLower(f) {
			case "myself":
				if t.myself != nil {
					return corruptLine(line, "two myself nodes")
				}
				t.myself = n
				n.flags |= FlagMyself
			case "master":
				n.flags |= FlagMaster
			case "slave":
				n.flags |= FlagSlave
			case "fail?":
				n.flags |= FlagPFail
			case "fail":
				n.flags |= FlagFail
				n.failTime = now
			case "handshake":
				n.flags |= FlagHandshake
			case "noaddr":
				n.flags |= FlagNoAddr
			case "nofailover":
				n.flags |= FlagNoFailover
			case "noflags":
			default:
				return corruptLine(line, "unknown flag "+f)
			}
		}
		if argv[3][0] != '-' {
			if !validName(argv[3]) {
				return corruptLine(line, "bad master id")
			}
			master := get(argv[3])
			n.slaveOf = master
			master.addSlave(n)
		}
		if v, _ := strconv.Atoi(argv[4]); v != 0 {
			n.pingSent = now
		}
		if v, _ := strconv.Atoi(argv[5]); v != 0 {
			n.pongReceived = now
		}
		epoch, err := strconv.ParseUint(argv[6], 10, 64)
		if err != nil {
			return corruptLine(line, "bad config epoch")
		}
		if n.isSlave() && n.slaveOf != nil {
			epoch = 0
		}
		n.configEpoch = epoch
		for _, a := range argv[8:] {
			if a[0] == '[' {
				dash := strings.IndexByte(a, '-')
				end := strings.IndexByte(a, ']')
				if dash < 0 || end < 0 || dash+3 > end || (a[dash+1] != '>' && a[dash+1] != '<') {
					return corruptLine(line, "bad open slot")
				}
				slot, err := strconv.Atoi(a[1:dash])
				if err != nil || slot < 0 || slot >= NumSlots {
					return corruptLine(line, "bad open slot number")
				}
				id := a[dash+3 : end]
				if !validName(id) {
					return corruptLine(line, "bad open slot node")
				}
				other := get(id)
				if a[dash+1] == '>' {
					t.migrating[slot] = other
				} else {
					t.importing[slot] = other
				}
				continue
			}
			lo, hi, isRange := strings.Cut(a, "-")
			start, err1 := strconv.Atoi(lo)
			stop := start
			var err2 error
			if isRange {
				stop, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || start < 0 || start >= NumSlots || stop < 0 || stop >= NumSlots {
				return corruptLine(line, "bad slot")
			}
			for s := start; s <= stop; s++ {
				t.addSlot(n, s)
			}
		}
	}
	if t.myself == nil {
		return fmt.Errorf("%w: no myself node", ErrCorruptConfig)
	}
	if max := t.maxEpoch(); max > t.currentEpoch {
		t.currentEpoch = max
	}
	// Adopt the loaded state.
	m.nodes, m.order, m.myself = t.nodes, t.order, t.myself
	m.currentEpoch, m.lastVoteEpoch = t.currentEpoch, t.lastVoteEpoch
	m.slots, m.migrating, m.importing = t.slots, t.migrating, t.importing
	m.slotTablesReset()
	m.ownerNotClaiming = SlotBitmap{}
	m.blacklist = map[Name]time.Time{}
	for _, l := range m.links {
		m.ready.Closes = append(m.ready.Closes, l.id)
	}
	m.links = map[LinkID]*link{}
	m.begin(now)
	m.applyMyselfConfig()
	m.reportedSlots = m.shardSlots()
	if m.myself.isSlave() && m.myself.slaveOf != nil {
		m.setRole(m.myself.slaveOf)
	}
	// The state is computed in the step that sets the replication
	// target, as clusterCron calls replicationSetMaster and
	// clusterUpdateState together: a replica's first Ready carries both,
	// so a read served once its replication started never meets a state
	// not yet computed. A master still waits writableDelay from here.
	m.todo |= todoUpdateState
	m.end()
	return nil
}
