package cluster

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// Timing constants of Redis 7.0's cluster.c / cluster.h.
const (
	failReportValidityMult = 2                // CLUSTER_FAIL_REPORT_VALIDITY_MULT
	failUndoTimeMult       = 2                // CLUSTER_FAIL_UNDO_TIME_MULT
	blacklistTTL           = 60 * time.Second // CLUSTER_BLACKLIST_TTL
	maxRejoinDelay         = 5 * time.Second  // CLUSTER_MAX_REJOIN_DELAY
	minRejoinDelay         = 500 * time.Millisecond
	writableDelay          = 2 * time.Second // CLUSTER_WRITABLE_DELAY
	cronPeriod             = 100 * time.Millisecond
	// PortIncr is the default offset of the bus port (CLUSTER_PORT_INCR).
	PortIncr = 10000
)

// Config configures a Machine. Start from DefaultConfig: fields are used
// as given (a zero NodeTimeout alone is replaced by its default).
type Config struct {
	// Name is this node's id, 40 lowercase hex characters; empty: a
	// random one is drawn from the machine's rng. LoadNodesConf replaces it.
	Name string
	// IP is cluster-announce-ip; empty: learnt from the first MEET (the
	// local address of the link it came in on).
	IP string
	// Port is the announced client port (cluster-announce-port or port;
	// the TLS port when TLS is on).
	Port int
	// PPort is the plaintext port announced when Port is TLS; 0 otherwise.
	PPort int
	// CPort is the announced bus port (cluster-announce-bus-port, else
	// cluster-port, else Port+10000). 0: Port+10000.
	CPort int
	// Hostname is cluster-announce-hostname, sent in the hostname
	// extension; default "".
	Hostname string
	// NodeTimeout is cluster-node-timeout; Redis default 15 s.
	NodeTimeout time.Duration
	// RequireFullCoverage is cluster-require-full-coverage: the cluster
	// state is fail while a slot is unassigned or its owner FAIL. Default yes.
	RequireFullCoverage bool
	// AllowReadsWhenDown is cluster-allow-reads-when-down; default no. The
	// machine only reports it back (the dispatcher uses it).
	AllowReadsWhenDown bool
	// AllowPubsubShardWhenDown is cluster-allow-pubsubshard-when-down;
	// default yes. Reported back only.
	AllowPubsubShardWhenDown bool
	// MigrationBarrier is cluster-migration-barrier; default 1 (issue 22).
	MigrationBarrier int
	// AllowReplicaMigration is cluster-allow-replica-migration; default yes.
	// It also decides whether a master left without slots by an update
	// becomes a replica of the new owner.
	AllowReplicaMigration bool
	// ReplicaValidityFactor is cluster-replica-validity-factor; default 10
	// (0: a replica always tries to fail over; issue 22).
	ReplicaValidityFactor int
	// ReplicaNoFailover is cluster-replica-no-failover; default no. It is
	// announced as the nofailover flag.
	ReplicaNoFailover bool
	// MinReplicasAck is min-replicas-ack: n > 0 means a master replies to
	// a write once n of its eligible replicas acknowledged it, and the
	// election rule of failover.go (ackRuleMet) holds. The rule reads the
	// replica's own setting: the nodes of a shard must agree on it.
	// Default 0 (Redis's elections).
	MinReplicasAck int
	// ReplPingReplicaPeriod is repl-ping-replica-period, part of the
	// replica validity limit; default 10 s (0: the default).
	ReplPingReplicaPeriod time.Duration
	// Local answers questions about the local data set; nil: an empty one.
	Local Local
}

// Local is what the machine needs to know about the node's own data, read
// only: key counts for the commands Redis refuses on a non-empty node, and
// the replication offset announced in every header.
type Local interface {
	// KeysInSlot returns the number of keys of db 0 in slot.
	KeysInSlot(slot int) int
	// DBSize returns the number of keys in db 0.
	DBSize() int
	// ReplOffset returns master_repl_offset on a master, the processed
	// offset on a replica.
	ReplOffset() int64
}

type emptyLocal struct{}

func (emptyLocal) KeysInSlot(int) int { return 0 }
func (emptyLocal) DBSize() int        { return 0 }
func (emptyLocal) ReplOffset() int64  { return 0 }

// DefaultConfig returns Redis 7.0's defaults (ports still to be set).
func DefaultConfig() Config {
	return Config{
		NodeTimeout:              15 * time.Second,
		RequireFullCoverage:      true,
		AllowPubsubShardWhenDown: true,
		MigrationBarrier:         1,
		AllowReplicaMigration:    true,
		ReplicaValidityFactor:    10,
		ReplPingReplicaPeriod:    10 * time.Second,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Name != "" && !validName(c.Name) {
		return fmt.Errorf("cluster: invalid node name %q: want 40 characters of [a-z0-9]", c.Name)
	}
	if c.Port <= 0 || c.Port > 65535 {
		return fmt.Errorf("cluster: invalid port %d", c.Port)
	}
	if c.CPort < 0 || c.CPort > 65535 || c.PPort < 0 || c.PPort > 65535 {
		return fmt.Errorf("cluster: invalid bus or plaintext port")
	}
	if c.CPort == 0 && c.Port+PortIncr > 65535 {
		return fmt.Errorf("cluster: port %d too high for a bus port 10000 above it", c.Port)
	}
	if c.NodeTimeout < 0 || c.MigrationBarrier < 0 || c.ReplicaValidityFactor < 0 || c.ReplPingReplicaPeriod < 0 {
		return fmt.Errorf("cluster: negative setting")
	}
	if len(c.IP) >= IPLen {
		return fmt.Errorf("cluster: announced ip %q too long", c.IP)
	}
	return nil
}

// LinkID names a bus connection. The machine allocates every id: outbound
// ones in Connect, inbound ones as Accepted's result.
type LinkID uint64

// link is one bus connection (clusterLink).
type link struct {
	id      LinkID
	node    *node // nil for an inbound link until its sender is known
	inbound bool
	up      bool // outbound: connected (LinkUp seen); inbound: always
	ctime   time.Time
	peerIP  string    // remote address, for nodes that announce no ip
	localIP string    // our address on this connection, to learn our ip
	pings   pingQueue // outbound: send times of the unanswered PINGs (fence.go)
}

// Send asks the runner to write Msg on Link. Msgs may be shared by several
// Sends and must not be modified.
type Send struct {
	Link LinkID
	Msg  *Msg
}

// Connect asks the runner to open an outbound bus connection to IP:CPort
// for Node and to report LinkUp or LinkDown for Link.
type Connect struct {
	Link  LinkID
	Node  string
	IP    string
	CPort int
}

// RoleChange tells the runner to replicate from Master (REPLICAOF ip
// port), or, when Master is empty, to stop replicating (REPLICAOF NO ONE).
type RoleChange struct {
	Master string // node id; "" to become a master
	IP     string
	Port   int
}

// SlotsChanged lists the slots this node's shard (myself as a master, my
// master as a replica) gained and lost since the previous Ready — the
// node drops the sharded pub/sub channels of lost slots, as Redis's
// clusterDelSlot does on masters and replicas — and the slots whose keys
// it must delete because an update took them away while it stays a master
// (clusterUpdateSlotsConfigWith's dirty slots; a master demoted to
// replica resyncs instead).
type SlotsChanged struct {
	Gained, Lost []int
	DeleteKeys   []int
}

// Delivery is a PUBLISH or PUBLISHSHARD received from the bus, to deliver
// to the local subscribers.
type Delivery struct {
	Shard            bool
	Channel, Message []byte
}

// EventType names a notable transition, for logs and tests.
type EventType string

// Event types.
const (
	EventHandshakeStarted EventType = "handshake-started"
	EventHandshakeTimeout EventType = "handshake-timeout"
	EventNodeRenamed      EventType = "node-renamed"   // Detail: new name
	EventNodeAdded        EventType = "node-added"     // from gossip
	EventNodeForgotten    EventType = "node-forgotten" // CLUSTER FORGET
	EventAddressChanged   EventType = "address-changed"
	EventPFail            EventType = "pfail"
	EventFail             EventType = "fail"
	EventFailCleared      EventType = "fail-cleared"
	EventEpochCollision   EventType = "epoch-collision" // Detail: new config epoch
	EventConfigEpoch      EventType = "config-epoch"    // Detail: new config epoch (bumped)
	EventStateChanged     EventType = "state"           // Detail: ok|fail
	EventSetMaster        EventType = "set-master"      // Node: new master
	EventSubReplica       EventType = "sub-replica"
)

// Event is one notable transition.
type Event struct {
	Type   EventType
	Node   string // the node it is about
	Detail string
}

// Ready is what the runner must do after feeding the machine, in this
// order: save nodes.conf (RenderNodesConf) when SaveConfig, fsyncing it
// when Fsync — before writing any Send, since some depend on the saved
// state (Redis's clusterBeforeSleep runs before its write handlers) —
// then close Closes (a Close may name an outbound link whose connect is
// still in flight: abandon it, and report nothing more for it), open
// Connects, write Sends in order (each link is a byte stream; a Send on a
// link the runner no longer has is dropped), apply RoleChange,
// PauseWrites or Unpause, SlotsChanged and Deliveries. Events are for
// logs. A vote (FAILOVER_AUTH_ACK) is always in a Ready with SaveConfig
// and Fsync: lastVoteEpoch is on disk before the vote leaves.
type Ready struct {
	Sends      []Send
	Closes     []LinkID
	Connects   []Connect
	SaveConfig bool
	Fsync      bool
	// FsyncLearned is set, with Fsync, when every change the fsync is
	// for was learned from a peer's durable claim (a slot rebound to a
	// node announcing a newer config epoch, a node's newer config epoch,
	// myself following the master that took my last slot): a crash that
	// takes such a change back is undone by the claimant's next packet.
	// The packets of the Ready still wait for the save; a CLUSTER
	// command's reply need not (the runner's Do).
	FsyncLearned bool
	// StateChanged is set when State changed since the previous Ready.
	StateChanged bool
	State        State
	// RoleChange is the latest replication target, when it changed.
	RoleChange *RoleChange
	// PauseWrites, when non-zero, asks the node to pause writes for that
	// long from now, as CLIENT PAUSE WRITE does (a master asked for a
	// manual failover by its replica). Once the pause is in force (writes
	// already executing have finished and no new one will run), the
	// runner calls Machine.WritesPaused: the offset the machine then
	// announces is final.
	PauseWrites time.Duration
	// Unpause asks the node to lift the pause PauseWrites started (the
	// manual failover ended, whatever its outcome).
	Unpause      bool
	SlotsChanged *SlotsChanged
	Deliveries   []Delivery
	Events       []Event
}

// State is the cluster state (cluster_state).
type State byte

// Cluster states.
const (
	ClusterOK   State = State(StateOK)
	ClusterFail State = State(StateFail)
)

// String returns "ok" or "fail".
func (s State) String() string {
	if s == ClusterOK {
		return "ok"
	}
	return "fail"
}

// todo flags (CLUSTER_TODO_*).
const (
	todoUpdateState = 1 << iota
	todoSaveConfig
	todoFsyncConfig
	// todoFsyncLearned asks for an fsync of what was learned from a
	// peer's durable claim (Ready.FsyncLearned); Redis's
	// CLUSTER_TODO_FSYNC_CONFIG at those sites.
	todoFsyncLearned
	todoHandleFailover       // run the replica election again (CLUSTER_TODO_HANDLE_FAILOVER)
	todoHandleManualFailover // check the manual failover's offset (CLUSTER_TODO_HANDLE_MANUALFAILOVER)
)

// Machine is the Redis Cluster state machine of one node. It is not safe
// for concurrent use.
//
// The runner owns the bus sockets, nodes.conf and the clock. It calls
// Tick every 100 ms (clusterCron's rate); reports connections with
// LinkUp/LinkDown (outbound links the machine asked for in a Connect)
// and Accepted (inbound ones, whose node is known at their first packet);
// hands every decoded packet to HandlePacket with the link it came on;
// calls the operator methods for CLUSTER subcommands; and after each of
// these calls Ready and performs it as documented there. PINGs go on the
// outbound link of a peer, PONGs back on the link their PING came on, so
// every peer has two links, as in Redis.
type Machine struct {
	cfg   Config     // as given, NodeTimeout and CPort defaulted; SetConfig replaces it
	rng   *rand.Rand // all randomness: names, gossip and ping picks
	local Local      // the node's data set, read only

	myself        *node
	nodes         map[Name]*node // the node table (server.cluster->nodes)
	order         []*node        // the same nodes in insertion order, for deterministic iteration
	currentEpoch  uint64
	lastVoteEpoch uint64 // epoch of the last vote granted; saved (fsynced) in nodes.conf before the vote leaves
	state         State
	size          int // masters serving at least one slot, as of the last updateState

	slots            [NumSlots]*node // owner per slot (nil: unassigned)
	migrating        [NumSlots]*node // open slots: migrating to (SETSLOT MIGRATING)
	importing        [NumSlots]*node // open slots: importing from (SETSLOT IMPORTING)
	ownerNotClaiming SlotBitmap      // slots still bound to an owner that stopped claiming them
	// slotGen counts writes to slots, migrating and importing (addSlot,
	// delSlot, setMigrating, setImporting; a whole-table reset counts as
	// more than slotLogLen), and slotLog holds the slot of each of the
	// last slotLogLen writes, at slotGen % slotLogLen: FillRouting updates
	// only the slots written since its last fill. Never reset.
	slotGen uint64
	slotLog [slotLogLen]int16
	// openSlots has the slots with a migrating or importing entry, kept
	// with them, so CLUSTER NODES and nodes.conf find them without a scan.
	openSlots SlotBitmap

	blacklist map[Name]time.Time // FORGET: id -> when it may be re-added

	links    map[LinkID]*link // every open link, outbound and inbound
	nextLink LinkID           // last id given out

	nextRandomPing time.Time // when the once-a-second random ping is due
	tickNodes      []*node   // Tick's copy of order, reused from tick to tick
	pingsSent      uint64    // PING/PONG/MEET built, for gossip de-duplication
	statsPFail     int       // PFAIL nodes counted by the last Tick; caps PFAIL gossip entries
	firstStateCall time.Time // first updateState, start of the writable delay; reset never
	minorityTime   time.Time // last updateState that found us in a minority
	dropFilter     int       // DEBUG DROP-CLUSTER-PACKET-FILTER; -1 none

	fo election       // a replica's election (failover_auth_*); see failover.go
	mf manualFailover // CLUSTER FAILOVER in progress (mf_*); see manual.go

	statsSent, statsReceived [TypeCount]uint64 // CLUSTER INFO message counters; never reset

	now   time.Time // time of the input being processed
	todo  int       // clusterBeforeSleep flags, run by end() after every input
	ready Ready     // actions accumulated since the last Ready()

	reportedState State      // state as of the last Ready, for StateChanged
	reportedSlots SlotBitmap // my shard's slots as of the last Ready, for SlotsChanged
	lastRole      RoleChange // replication target, reported when roleDirty
	roleDirty     bool
	deleteKeys    []int // dirty slots since the last Ready

	// The cluster fence (fence.go): up from fenceUntil while fenceOn;
	// fenceHeard is updateFence's scratch.
	fenceOn    bool
	fenceUntil time.Time
	fenceHeard []time.Time

	hold replHold // the freeze of a replica's stream (freeze.go)
}

// New builds a machine for a fresh node (no nodes.conf): a master knowing
// only itself, cluster state fail. rng provides all randomness.
func New(cfg Config, rng *rand.Rand) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 15 * time.Second
	}
	if cfg.ReplPingReplicaPeriod == 0 {
		cfg.ReplPingReplicaPeriod = 10 * time.Second
	}
	if cfg.CPort == 0 {
		cfg.CPort = cfg.Port + PortIncr
	}
	m := &Machine{cfg: cfg, rng: rng, local: cfg.Local, dropFilter: -1}
	if m.local == nil {
		m.local = emptyLocal{}
	}
	m.resetTables()
	var name Name
	if cfg.Name != "" {
		name = nameOf(cfg.Name)
	}
	m.myself = m.createNode(time.Time{}, name, FlagMyself|FlagMaster)
	m.addNode(m.myself)
	m.applyMyselfConfig()
	m.state = ClusterFail
	m.reportedState = ClusterFail
	m.size = 1
	m.todo |= todoSaveConfig | todoFsyncConfig
	m.flushTodo()
	return m, nil
}

func (m *Machine) resetTables() {
	m.nodes = map[Name]*node{}
	m.order = nil
	m.blacklist = map[Name]time.Time{}
	m.links = map[LinkID]*link{}
	m.slots = [NumSlots]*node{}
	m.migrating = [NumSlots]*node{}
	m.importing = [NumSlots]*node{}
	m.slotTablesReset()
	m.ownerNotClaiming = SlotBitmap{}
}

// applyMyselfConfig sets myself's announced address, hostname and
// nofailover flag from the config (deriveAnnouncedPorts,
// clusterUpdateMyselfIp/Hostname/Flags).
func (m *Machine) applyMyselfConfig() {
	me := m.myself
	me.port, me.pport, me.cport = m.cfg.Port, m.cfg.PPort, m.cfg.CPort
	if m.cfg.IP != "" {
		me.ip = m.cfg.IP
	}
	me.hostname = m.cfg.Hostname
	old := me.flags
	me.flags &^= FlagNoFailover
	if m.cfg.ReplicaNoFailover {
		me.flags |= FlagNoFailover
	}
	if me.flags != old {
		m.todo |= todoSaveConfig | todoUpdateState
	}
}

// SetConfig applies a changed configuration at run time (CONFIG SET of
// the cluster-* directives): timeouts, coverage and migration settings,
// the announced ip, ports and hostname. Name and Local are kept from the
// running machine; an invalid config is refused with no change.
func (m *Machine) SetConfig(now time.Time, cfg Config) error {
	cfg.Name = m.cfg.Name
	cfg.Local = m.cfg.Local
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 15 * time.Second
	}
	if cfg.ReplPingReplicaPeriod == 0 {
		cfg.ReplPingReplicaPeriod = 10 * time.Second
	}
	if cfg.CPort == 0 {
		cfg.CPort = cfg.Port + PortIncr
	}
	m.begin(now)
	defer m.end()
	if cfg.IP == "" && m.cfg.IP != "" {
		// No longer announced: learn it again from the next MEET.
		m.myself.ip = ""
	}
	m.cfg = cfg
	m.applyMyselfConfig()
	m.todo |= todoUpdateState
	return nil
}

// SetDropFilter makes the machine drop every received packet of type t
// (DEBUG DROP-CLUSTER-PACKET-FILTER); -1 disables it.
func (m *Machine) SetDropFilter(t int) { m.dropFilter = t }

// Ready returns and clears the accumulated actions.
func (m *Machine) Ready() Ready {
	rd := m.ready
	m.ready = Ready{}
	if m.state != m.reportedState {
		rd.StateChanged = true
		m.reportedState = m.state
	}
	rd.State = m.state
	if m.roleDirty {
		r := m.lastRole
		rd.RoleChange = &r
		m.roleDirty = false
	}
	if shard := m.shardSlots(); shard != m.reportedSlots || len(m.deleteKeys) > 0 {
		sc := &SlotsChanged{DeleteKeys: m.deleteKeys}
		// Byte by byte: a SETSLOT changes one slot of 16384.
		for i := range shard {
			if shard[i] == m.reportedSlots[i] {
				continue
			}
			for s := i * 8; s < i*8+8; s++ {
				was, is := m.reportedSlots.Has(s), shard.Has(s)
				if is && !was {
					sc.Gained = append(sc.Gained, s)
				} else if was && !is {
					sc.Lost = append(sc.Lost, s)
				}
			}
		}
		m.reportedSlots = shard
		m.deleteKeys = nil
		rd.SlotsChanged = sc
	}
	return rd
}

// shardSlots returns the slots served by my shard.
func (m *Machine) shardSlots() SlotBitmap {
	if master := m.myself.master(); master != nil {
		return master.slots
	}
	return SlotBitmap{}
}

// begin and end bracket every input: end runs the deferred work Redis
// does in clusterBeforeSleep (update state, save config).
func (m *Machine) begin(now time.Time) { m.now = now }

func (m *Machine) end() {
	m.flushTodo()
	m.updateFence()
	m.updateReplHold()
}

func (m *Machine) flushTodo() {
	// As clusterBeforeSleep: the manual failover check, or else the
	// election, first; what they ask for again waits for the next input.
	handle := m.todo & (todoHandleFailover | todoHandleManualFailover)
	m.todo &^= handle
	if handle&todoHandleManualFailover != 0 {
		if m.myself.isSlave() {
			m.handleManualFailover()
			m.handleReplicaFailover()
		}
	} else if handle&todoHandleFailover != 0 {
		m.handleReplicaFailover()
	}
	again := m.todo & (todoHandleFailover | todoHandleManualFailover)
	if m.todo&todoUpdateState != 0 {
		m.updateState()
	}
	if m.todo&todoSaveConfig != 0 {
		m.ready.SaveConfig = true
		switch {
		case m.todo&todoFsyncConfig != 0:
			m.ready.Fsync, m.ready.FsyncLearned = true, false
		case m.todo&todoFsyncLearned != 0 && !m.ready.Fsync:
			m.ready.Fsync, m.ready.FsyncLearned = true, true
		}
	}
	m.todo = again
}

func (m *Machine) event(t EventType, about Name, detail string) {
	m.ready.Events = append(m.ready.Events, Event{Type: t, Node: about.String(), Detail: detail})
}

// send queues msg on l if the link is usable.
func (m *Machine) send(l *link, msg *Msg) {
	if l == nil || !l.up {
		return
	}
	if int(msg.Type) < TypeCount {
		m.statsSent[msg.Type]++
	}
	m.ready.Sends = append(m.ready.Sends, Send{Link: l.id, Msg: msg})
}

// broadcast sends msg on the outbound link of every node but myself and
// handshake nodes (clusterBroadcastMessage).
func (m *Machine) broadcast(msg *Msg) {
	for _, n := range m.order {
		if n.flags&(FlagMyself|FlagHandshake) != 0 {
			continue
		}
		m.send(n.link, msg)
	}
}

func (m *Machine) freeLink(l *link) {
	if _, ok := m.links[l.id]; !ok {
		return
	}
	delete(m.links, l.id)
	if l.node != nil {
		if l.node.link == l {
			l.node.link = nil
		} else if l.node.inbound == l {
			l.node.inbound = nil
		}
	}
	m.ready.Closes = append(m.ready.Closes, l.id)
}

func (m *Machine) newLink(n *node, inbound bool) *link {
	m.nextLink++
	l := &link{id: m.nextLink, node: n, inbound: inbound, ctime: m.now}
	m.links[l.id] = l
	if !inbound {
		n.link = l
	}
	return l
}

// LinkUp reports that the outbound link id is connected. The machine
// sends its first PING (or MEET) on it (clusterLinkConnectHandler).
func (m *Machine) LinkUp(now time.Time, id LinkID) {
	m.begin(now)
	defer m.end()
	l := m.links[id]
	if l == nil || l.inbound || l.up {
		return
	}
	l.up = true
	n := l.node
	old := n.pingSent
	typ := TypePing
	if n.flags&FlagMeet != 0 {
		typ = TypeMeet
	}
	m.sendPing(l, typ)
	if !old.IsZero() {
		n.pingSent = old
	}
	n.flags &^= FlagMeet
}

// LinkDown reports that link id failed to connect, or broke, or was
// closed by the peer. The next Tick reconnects outbound links.
func (m *Machine) LinkDown(now time.Time, id LinkID) {
	m.begin(now)
	defer m.end()
	l := m.links[id]
	if l == nil {
		return
	}
	if !l.inbound && !l.up && l.node != nil && l.node.pingSent.IsZero() {
		// A connect that never succeeded counts as a ping in flight, so
		// failure detection works for a node we cannot reach at all.
		l.node.pingSent = now
	}
	delete(m.links, id)
	if l.node != nil {
		if l.node.link == l {
			l.node.link = nil
		} else if l.node.inbound == l {
			l.node.inbound = nil
		}
	}
}

// Accepted registers an inbound bus connection and returns its id.
// peerIP is the remote address, localIP ours on that connection (Redis
// learns its own ip from the latter when a MEET comes in).
func (m *Machine) Accepted(now time.Time, peerIP, localIP string) LinkID {
	m.begin(now)
	defer m.end()
	m.nextLink++
	l := &link{id: m.nextLink, inbound: true, up: true, ctime: now, peerIP: peerIP, localIP: localIP}
	m.links[l.id] = l
	return l.id
}

// normalizeIP validates and normalizes an address as inet_pton/inet_ntop
// do; ok is false for anything that is not an IPv4 or IPv6 literal.
func normalizeIP(ip string) (string, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Zone() != "" {
		return "", false
	}
	return a.String(), true
}
