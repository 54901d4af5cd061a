package sentinel

import (
	"sort"
	"strings"
	"time"
)

// flag is a bit of an instance's state, as Redis's SRI_* flags.
type flag uint32

const (
	flagSDown              flag = 1 << iota // subjectively down
	flagODown                               // objectively down (masters)
	flagMasterDown                          // a peer Sentinel says our master is down (sentinels)
	flagFailoverInProgress                  // a failover of this master is running
	flagPromoted                            // the replica selected for promotion
	flagReconfSent                          // REPLICAOF new-master sent to this replica
	flagReconfInprog                        // the replica is syncing with the new master
	flagReconfDone                          // the replica is reconfigured
	flagForceFailover                       // SENTINEL FAILOVER: no agreement needed
	flagMasterReboot                        // the master restarted (new run id) recently
)

// failoverState is the state of a master's failover.
type failoverState int

const (
	stateNone failoverState = iota
	stateWaitStart
	stateSelectReplica
	stateSendReplicaOfNoOne
	stateWaitPromotion
	stateReconfReplicas
	stateUpdateConfig
)

var failoverStateNames = [...]string{"none", "wait_start", "select_slave", "send_slaveof_noone",
	"wait_promotion", "reconf_slaves", "update_config"}

func (s failoverState) String() string { return failoverStateNames[s] }

// link is the state of the connection to an instance. It is reset when the
// instance is created.
type link struct {
	connected     bool      // LinkUp seen and no LinkDown since
	connTime      time.Time // when the link was last established
	lastReconnect time.Time // last ActConnect emitted
	actPing       time.Time // when the oldest unanswered PING was sent; zero once answered
	lastPing      time.Time // when the last PING was sent
	lastPong      time.Time // last reply of any kind to a PING
	lastAvail     time.Time // last valid PING reply (PONG, LOADING, MASTERDOWN)
	pending       int       // commands sent, not yet answered
}

// instance is a master, a replica or a Sentinel as the machine sees it.
type instance struct {
	kind   Role
	name   string    // master name; "ip:port" for replicas; run id for sentinels
	addr   Addr      // address
	runID  string    // run id learnt from INFO (or hello for sentinels)
	master *instance // the master a replica or sentinel belongs to; nil for masters
	flags  flag
	link   link

	downAfter   time.Duration // down-after-milliseconds
	sDownSince  time.Time     // when SDOWN was last entered
	oDownSince  time.Time     // when ODOWN was last entered
	lastPub     time.Time     // last hello published to this instance
	lastHello   time.Time     // (sentinels) last hello received from it
	lastDownAns time.Time     // (sentinels) last IS-MASTER-DOWN-BY-ADDR reply
	lastAskSent time.Time     // (sentinels) last IS-MASTER-DOWN-BY-ADDR sent
	askPending  bool          // (sentinels) a question is unanswered
	leader      string        // (sentinels) the leader it voted for; (masters) our vote
	leaderEpoch uint64        // epoch of leader

	// INFO-derived state; infoRefresh is zero until the first reply.
	infoRefresh        time.Time
	infoSent           time.Time
	roleReported       Role
	roleReportedTime   time.Time
	replConfChangeTime time.Time // (replicas) last change of master_host/port
	masterLinkDownTime time.Duration
	replMasterHost     string
	replMasterPort     int
	replMasterLinkUp   bool
	replPriority       int
	replOffset         int64
	replAnnounced      bool
	replReconfSentTime time.Time
	// The replica freeze (ackrule.go), replicas only. pausedEpoch is the
	// failover epoch of the last CLIENT PAUSE sent, pauseSent when it (or
	// the last re-freeze) was sent; paused is set from that send until a
	// CLIENT UNPAUSE is sent (it stops hellos: a PUBLISH would wait out
	// the pause and hold the link's replies). frozenEpoch and
	// frozenOffset are the epoch and the offset of the last FreezeReply
	// whose pause succeeded; pauseRefused, that the last CLIENT PAUSE was
	// refused (not retried in that epoch).
	pausedEpoch        uint64
	pauseSent          time.Time
	paused             bool
	frozenEpoch        uint64
	frozenOffset       int64
	pauseRefused       bool
	lastConvertAttempt time.Time
	hasInfo            bool
	info               string // last INFO reply text

	// Masters only.
	// ackNeed and ackEligible are min-replicas-ack and the eligible
	// replicas the master counted, from its last INFO (ackrule.go).
	ackNeed, ackEligible int
	quorum               int
	parallelSyncs        int
	failoverTimeout      time.Duration
	authUser, authPass   string
	notificationScript   string
	clientReconfigScript string
	configEpoch          uint64
	failoverState        failoverState
	failoverEpoch        uint64
	failoverStartTime    time.Time
	failoverStateChange  time.Time
	promoted             *instance
	rebootDownAfter      time.Duration        // master-reboot-down-after-period; 0: disabled
	rebootSince          time.Time            // when the reboot was detected
	renamed              map[string]string    // rename-command: lower-case name -> name to send
	replicas             map[string]*instance // by "ip:port"
	sentinels            map[string]*instance // by run id
}

func newInstance(kind Role, name string, addr Addr, master *instance, now time.Time, downAfter time.Duration) *instance {
	ri := &instance{kind: kind, name: name, addr: addr, master: master, downAfter: downAfter,
		roleReported: kind, roleReportedTime: now, replPriority: 100, replAnnounced: true}
	if kind == RoleReplica {
		ri.roleReported = RoleReplica
	}
	ri.link = link{actPing: now, lastAvail: now, lastPong: now}
	if kind == RoleMaster {
		ri.replicas = map[string]*instance{}
		ri.sentinels = map[string]*instance{}
		ri.renamed = map[string]string{}
	}
	return ri
}

func (ri *instance) has(f flag) bool { return ri.flags&f != 0 }

// sortedReplicas returns the replicas of a master sorted by name, for
// deterministic iteration.
func (ri *instance) sortedReplicas() []*instance { return sortedInstances(ri.replicas) }

// sortedSentinels returns the sentinels of a master sorted by run id.
func (ri *instance) sortedSentinels() []*instance { return sortedInstances(ri.sentinels) }

func sortedInstances(m map[string]*instance) []*instance {
	out := make([]*instance, 0, len(m))
	for _, ri := range m {
		out = append(out, ri)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// addrEqual compares addresses, hostnames case-insensitively as Redis.
func addrEqual(a, b Addr) bool { return a.Port == b.Port && strings.EqualFold(a.IP, b.IP) }

// lookupReplica finds a master's replica by address.
func (ri *instance) lookupReplica(a Addr) *instance {
	for _, r := range ri.replicas {
		if addrEqual(r.addr, a) {
			return r
		}
	}
	return nil
}

// noDownFor reports whether the instance has not entered SDOWN or ODOWN in
// the last d.
func (ri *instance) noDownFor(now time.Time, d time.Duration) bool {
	recent := ri.sDownSince
	if ri.oDownSince.After(recent) {
		recent = ri.oDownSince
	}
	return recent.IsZero() || now.Sub(recent) > d
}
