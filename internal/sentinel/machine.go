package sentinel

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Timing holds the Sentinel's internal periods. SENTINEL DEBUG changes them.
type Timing struct {
	PingPeriod             time.Duration // PING every (at most down-after); default 1 s
	InfoPeriod             time.Duration // INFO every; default 10 s
	PublishPeriod          time.Duration // hello every; default 2 s
	AskPeriod              time.Duration // IS-MASTER-DOWN-BY-ADDR every; default 1 s
	TiltTrigger            time.Duration // a clock jump above this enters TILT; default 2 s
	TiltPeriod             time.Duration // TILT lasts; default 30 s
	ElectionTimeout        time.Duration // max wait for votes; default 10 s
	ReplicaReconfTimeout   time.Duration // replica considered reconfigured after; default 10 s
	MinLinkReconnectPeriod time.Duration // never kill a link younger than this; default 15 s
	MaxDesync              time.Duration // random failover start delay; default 1 s
	DefaultDownAfter       time.Duration // down-after-milliseconds default; 30 s
	DefaultFailoverTimeout time.Duration // failover-timeout default; 180 s
}

// DefaultTiming returns redis-sentinel's periods.
func DefaultTiming() Timing {
	return Timing{
		PingPeriod: time.Second, InfoPeriod: 10 * time.Second, PublishPeriod: 2 * time.Second,
		AskPeriod: time.Second, TiltTrigger: 2 * time.Second, TiltPeriod: 30 * time.Second,
		ElectionTimeout: 10 * time.Second, ReplicaReconfTimeout: 10 * time.Second,
		MinLinkReconnectPeriod: 15 * time.Second, MaxDesync: time.Second,
		DefaultDownAfter: 30 * time.Second, DefaultFailoverTimeout: 180 * time.Second,
	}
}

// MasterConfig is a monitored master and what is known about it.
type MasterConfig struct {
	Name                 string
	Addr                 Addr
	Quorum               int
	DownAfter            time.Duration // 0: Timing.DefaultDownAfter
	FailoverTimeout      time.Duration // 0: Timing.DefaultFailoverTimeout
	ParallelSyncs        int           // 0: 1
	AuthUser, AuthPass   string
	NotificationScript   string
	ClientReconfigScript string
	ConfigEpoch          uint64
	LeaderEpoch          uint64
	Leader               string
	KnownReplicas        []Addr
	KnownSentinels       []KnownSentinel
	RenamedCommands      [][2]string   // rename-command: {name, renamed}
	RebootDownAfter      time.Duration // master-reboot-down-after-period; 0: disabled
}

// KnownSentinel is a peer Sentinel remembered in the config file.
type KnownSentinel struct {
	Addr  Addr
	RunID string
}

// Config configures a Machine; Machine.Config returns the current state in
// the same form for persistence.
type Config struct {
	MyID                string // 40 hex characters; generated when empty
	Port                int    // our listening port, announced in hellos unless AnnouncePort
	AnnounceIP          string
	AnnouncePort        int
	CurrentEpoch        uint64
	SentinelUser        string // credentials for talking to other Sentinels
	SentinelPass        string
	DenyScriptsReconfig bool
	ResolveHostnames    bool
	AnnounceHostnames   bool
	Timing              Timing // zero fields take DefaultTiming values
	Masters             []MasterConfig
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.MyID != "" && len(c.MyID) != 40 {
		return fmt.Errorf("sentinel: myid must be 40 characters, got %d", len(c.MyID))
	}
	seen := map[string]bool{}
	for _, mc := range c.Masters {
		if err := mc.validate(); err != nil {
			return err
		}
		if seen[mc.Name] {
			return fmt.Errorf("sentinel: duplicated master name %q", mc.Name)
		}
		seen[mc.Name] = true
	}
	return nil
}

func (mc *MasterConfig) validate() error {
	switch {
	case mc.Name == "":
		return fmt.Errorf("sentinel: empty master name")
	case mc.Quorum <= 0:
		return fmt.Errorf("sentinel: master %s: quorum must be 1 or greater", mc.Name)
	case mc.Addr.Port <= 0 || mc.Addr.Port > 65535:
		return fmt.Errorf("sentinel: master %s: invalid port %d", mc.Name, mc.Addr.Port)
	case mc.Addr.IP == "":
		return fmt.Errorf("sentinel: master %s: empty address", mc.Name)
	case mc.DownAfter < 0 || mc.FailoverTimeout < 0 || mc.ParallelSyncs < 0:
		return fmt.Errorf("sentinel: master %s: negative setting", mc.Name)
	}
	return nil
}

// Machine is the Sentinel state machine. It is not safe for concurrent use.
type Machine struct {
	myID         string
	port         int
	announceIP   string
	announcePort int
	currentEpoch uint64
	sentinelUser string
	sentinelPass string
	denyScripts  bool
	resolveHosts bool
	announceHost bool
	timing       Timing
	rng          *rand.Rand

	masters   map[string]*instance
	tilt      bool      // in TILT mode
	tiltStart time.Time // when TILT was entered
	prevTick  time.Time // time of the previous Tick, for the TILT check
	simFail   SimFailure

	ready   Ready
	addrs   map[Addr]bool // addresses we hold links to, to emit ActDisconnect
	resolve func(host string) string
}

// SetResolver installs the hostname resolver used to report IPs when
// announce-hostnames is off (the machine itself never resolves).
func (m *Machine) SetResolver(f func(host string) string) { m.resolve = f }

// announce is Redis's announceSentinelAddr: the hostname if
// announce-hostnames is on, else the resolved IP.
func (m *Machine) announce(a Addr) Addr {
	if m.announceHost || m.resolve == nil {
		return a
	}
	return Addr{m.resolve(a.IP), a.Port}
}

// SimFailure selects the crashes SENTINEL SIMULATE-FAILURE arms.
type SimFailure int

// SimFailure bits.
const (
	SimCrashAfterElection SimFailure = 1 << iota
	SimCrashAfterPromotion
)

// NewMachine builds a machine from a validated config. rng provides all
// randomness (run id generation, failover desynchronisation).
func NewMachine(cfg Config, rng *rand.Rand) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Machine{myID: cfg.MyID, port: cfg.Port, announceIP: cfg.AnnounceIP, announcePort: cfg.AnnouncePort,
		currentEpoch: cfg.CurrentEpoch, sentinelUser: cfg.SentinelUser, sentinelPass: cfg.SentinelPass,
		denyScripts: cfg.DenyScriptsReconfig, resolveHosts: cfg.ResolveHostnames, announceHost: cfg.AnnounceHostnames,
		timing: cfg.Timing.withDefaults(), rng: rng, masters: map[string]*instance{}, addrs: map[Addr]bool{}}
	if m.myID == "" {
		const hex = "0123456789abcdef"
		b := make([]byte, 40)
		for i := range b {
			b[i] = hex[rng.IntN(16)]
		}
		m.myID = string(b)
		m.ready.PersistConfig = true
	}
	for _, mc := range cfg.Masters {
		m.addMaster(time.Time{}, mc)
	}
	return m, nil
}

func (t Timing) withDefaults() Timing {
	d := DefaultTiming()
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&t.PingPeriod, d.PingPeriod)
	set(&t.InfoPeriod, d.InfoPeriod)
	set(&t.PublishPeriod, d.PublishPeriod)
	set(&t.AskPeriod, d.AskPeriod)
	set(&t.TiltTrigger, d.TiltTrigger)
	set(&t.TiltPeriod, d.TiltPeriod)
	set(&t.ElectionTimeout, d.ElectionTimeout)
	set(&t.ReplicaReconfTimeout, d.ReplicaReconfTimeout)
	set(&t.MinLinkReconnectPeriod, d.MinLinkReconnectPeriod)
	set(&t.MaxDesync, d.MaxDesync)
	set(&t.DefaultDownAfter, d.DefaultDownAfter)
	set(&t.DefaultFailoverTimeout, d.DefaultFailoverTimeout)
	return t
}

// addMaster creates a master (and its known replicas and sentinels).
func (m *Machine) addMaster(now time.Time, mc MasterConfig) *instance {
	downAfter := mc.DownAfter
	if downAfter == 0 {
		downAfter = m.timing.DefaultDownAfter
	}
	ri := newInstance(RoleMaster, mc.Name, mc.Addr, nil, now, downAfter)
	ri.quorum = mc.Quorum
	ri.failoverTimeout = mc.FailoverTimeout
	if ri.failoverTimeout == 0 {
		ri.failoverTimeout = m.timing.DefaultFailoverTimeout
	}
	ri.parallelSyncs = mc.ParallelSyncs
	if ri.parallelSyncs == 0 {
		ri.parallelSyncs = 1
	}
	ri.authUser, ri.authPass = mc.AuthUser, mc.AuthPass
	ri.rebootDownAfter = mc.RebootDownAfter
	ri.notificationScript, ri.clientReconfigScript = mc.NotificationScript, mc.ClientReconfigScript
	ri.configEpoch, ri.leaderEpoch, ri.leader = mc.ConfigEpoch, mc.LeaderEpoch, mc.Leader
	for _, rc := range mc.RenamedCommands {
		ri.renamed[strings.ToLower(rc[0])] = rc[1]
	}
	for _, a := range mc.KnownReplicas {
		if !addrEqual(a, mc.Addr) {
			m.addReplica(now, ri, a)
		}
	}
	for _, ks := range mc.KnownSentinels {
		if ks.RunID != m.myID {
			m.addSentinel(now, ri, ks.RunID, ks.Addr)
		}
	}
	m.masters[mc.Name] = ri
	return ri
}

func (m *Machine) addReplica(now time.Time, master *instance, a Addr) *instance {
	r := newInstance(RoleReplica, a.String(), a, master, now, master.downAfter)
	master.replicas[r.name] = r
	return r
}

func (m *Machine) addSentinel(now time.Time, master *instance, runID string, a Addr) *instance {
	s := newInstance(RoleSentinel, runID, a, master, now, master.downAfter)
	s.runID = runID
	master.sentinels[runID] = s
	return s
}

// MyID returns the Sentinel's run id.
func (m *Machine) MyID() string { return m.myID }

// CurrentEpoch returns the current epoch.
func (m *Machine) CurrentEpoch() uint64 { return m.currentEpoch }

// Tilt reports whether the machine is in TILT mode.
func (m *Machine) Tilt() bool { return m.tilt }

// Ready returns and clears the pending actions, events and persist flag.
func (m *Machine) Ready() Ready {
	rd := m.ready
	m.ready = Ready{}
	return rd
}

// instEvent records an event whose payload is the description of ri
// (Redis's "%@") followed by the formatted suffix.
func (m *Machine) instEvent(level Level, typ string, ri *instance, suffix string, args ...any) {
	m.emit(level, typ, ri, instanceDesc(ri)+fmt.Sprintf(suffix, args...))
}

// event records an event with a formatted payload; ri (may be nil) names
// the master it concerns.
func (m *Machine) event(level Level, typ string, ri *instance, format string, args ...any) {
	m.emit(level, typ, ri, fmt.Sprintf(format, args...))
}

func (m *Machine) emit(level Level, typ string, ri *instance, payload string) {
	ev := Event{Type: typ, Payload: payload, Level: level}
	if ri != nil {
		if ri.master != nil {
			ev.Master = ri.master.name
		} else {
			ev.Master = ri.name
		}
	}
	m.ready.Events = append(m.ready.Events, ev)
	// As Redis: warnings run the master's notification script with
	// <event type> <event description>.
	if level == LevelWarning && ri != nil {
		master := ri
		if ri.master != nil {
			master = ri.master
		}
		if master.notificationScript != "" {
			m.ready.Scripts = append(m.ready.Scripts, ScriptCall{master.notificationScript, []string{typ, payload}})
		}
	}
}

// clientReconfScript schedules the client-reconfig-script:
// <master-name> <role> <state> <from-ip> <from-port> <to-ip> <to-port>.
func (m *Machine) clientReconfScript(master *instance, role, state string, from, to Addr) {
	if master.clientReconfigScript == "" {
		return
	}
	m.ready.Scripts = append(m.ready.Scripts, ScriptCall{master.clientReconfigScript, []string{master.name, role, state,
		from.IP, strconv.Itoa(from.Port), to.IP, strconv.Itoa(to.Port)}})
}

func (m *Machine) act(a Action) { m.ready.Actions = append(m.ready.Actions, a) }

func (m *Machine) persist() { m.ready.PersistConfig = true }

// sortedMasters returns the masters sorted by name.
func (m *Machine) sortedMasters() []*instance { return sortedInstances(m.masters) }

// Tick advances timers: it runs Redis's sentinelTimer once.
func (m *Machine) Tick(now time.Time) {
	if m.prevTick.IsZero() {
		m.start(now)
	}
	m.checkTilt(now)
	var toSwitch []*instance
	for _, master := range m.sortedMasters() {
		m.handleInstance(now, master)
		for _, r := range master.sortedReplicas() {
			m.handleInstance(now, r)
		}
		for _, s := range master.sortedSentinels() {
			m.handleInstance(now, s)
		}
		if master.failoverState == stateUpdateConfig {
			toSwitch = append(toSwitch, master)
		}
	}
	for _, master := range toSwitch {
		m.failoverSwitchToPromotedReplica(now, master)
	}
	m.gcLinks()
}

// start gives the instances loaded from the config their initial times.
func (m *Machine) start(now time.Time) {
	for _, master := range m.masters {
		all := append(master.sortedReplicas(), master.sortedSentinels()...)
		for _, ri := range append(all, master) {
			if ri.link.lastAvail.IsZero() {
				ri.link = link{actPing: now, lastAvail: now, lastPong: now}
				ri.roleReportedTime = now
			}
		}
	}
}

// checkTilt enters TILT when the clock jumped forward by more than
// TiltTrigger or went backwards since the previous Tick.
func (m *Machine) checkTilt(now time.Time) {
	if !m.prevTick.IsZero() {
		delta := now.Sub(m.prevTick)
		if delta < 0 || delta > m.timing.TiltTrigger {
			m.enterTilt(now)
		}
	}
	m.prevTick = now
}

func (m *Machine) enterTilt(now time.Time) {
	m.tilt = true
	m.tiltStart = now
	m.event(LevelWarning, EventTilt, nil, "#tilt mode entered")
}

// handleInstance is sentinelHandleRedisInstance: monitoring, then (unless
// in TILT) the down checks and, for masters, the failover.
func (m *Machine) handleInstance(now time.Time, ri *instance) {
	m.reconnectInstance(now, ri)
	m.sendPeriodicCommands(now, ri)
	if m.tilt {
		if now.Sub(m.tiltStart) < m.timing.TiltPeriod {
			return
		}
		m.tilt = false
		m.event(LevelWarning, EventTiltExit, nil, "#tilt mode exited")
	}
	m.checkSubjectivelyDown(now, ri)
	if ri.kind == RoleMaster {
		m.checkObjectivelyDown(now, ri)
		if m.startFailoverIfNeeded(now, ri) {
			m.askMasterStateToOtherSentinels(now, ri, true)
		}
		m.failoverStateMachine(now, ri)
		m.askMasterStateToOtherSentinels(now, ri, false)
	}
}

// auth returns the credentials used to talk to ri.
func (m *Machine) auth(ri *instance) (string, string) {
	if ri.kind == RoleSentinel {
		return m.sentinelUser, m.sentinelPass
	}
	master := ri
	if ri.master != nil {
		master = ri.master
	}
	return master.authUser, master.authPass
}

func (m *Machine) actionFor(kind ActionKind, ri *instance) Action {
	a := Action{Kind: kind, Addr: ri.addr, Role: ri.kind}
	if ri.master != nil {
		a.MasterName = ri.master.name
	} else {
		a.MasterName = ri.name
	}
	a.AuthUser, a.AuthPass = m.auth(ri)
	if ri.kind != RoleSentinel {
		master := ri
		if ri.master != nil {
			master = ri.master
		}
		a.Renames = master.renamed
	}
	return a
}

// reconnectInstance asks for a connection when the link is down, at most
// once per ping period.
func (m *Machine) reconnectInstance(now time.Time, ri *instance) {
	if ri.link.connected || ri.addr.Port == 0 {
		return
	}
	if !ri.link.lastReconnect.IsZero() && now.Sub(ri.link.lastReconnect) < m.timing.PingPeriod {
		return
	}
	ri.link.lastReconnect = now
	m.addrs[ri.addr] = true
	m.act(m.actionFor(ActConnect, ri))
}

// gcLinks emits ActDisconnect for addresses no instance uses any more.
func (m *Machine) gcLinks() {
	used := map[Addr]bool{}
	for _, master := range m.masters {
		used[master.addr] = true
		for _, r := range master.replicas {
			used[r.addr] = true
		}
		for _, s := range master.sentinels {
			used[s.addr] = true
		}
	}
	var gone []Addr
	for a := range m.addrs {
		if !used[a] {
			gone = append(gone, a)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].String() < gone[j].String() })
	for _, a := range gone {
		delete(m.addrs, a)
		m.act(Action{Kind: ActDisconnect, Addr: a})
	}
}

// fastAskPeriod is how often peers are asked about a master we see down
// before agreement is reached.
const fastAskPeriod = 100 * time.Millisecond

// sendPeriodicCommands sends INFO, PING and hello as their periods expire.
func (m *Machine) sendPeriodicCommands(now time.Time, ri *instance) {
	if !ri.link.connected {
		return
	}
	if ri.link.pending >= 100 {
		return
	}
	infoPeriod := m.timing.InfoPeriod
	// Redis polls replicas every second once the master is ODOWN; we
	// start at SDOWN, so that the replica ranking (which wants INFO
	// fresher than 5 ping periods) has fresh data however fast the
	// agreement comes.
	if ri.kind == RoleReplica && (ri.master.has(flagSDown|flagODown|flagFailoverInProgress) || ri.masterLinkDownTime != 0) {
		infoPeriod = time.Second
	}
	// A replica claiming to be a master is watched every second too, so
	// that its conversion (after the 4 publish periods Redis waits) is
	// not delayed by up to an INFO period.
	if ri.kind == RoleReplica && ri.roleReported == RoleMaster {
		infoPeriod = time.Second
	}
	// Unlike Redis, poll the replicas our failover is waiting on quickly:
	// the promotion and the reconfiguration are only seen through INFO.
	if ri.kind == RoleReplica && (ri.has(flagReconfSent|flagReconfInprog) ||
		(ri.has(flagPromoted) && ri.master.failoverState == stateWaitPromotion)) {
		infoPeriod = fastInfoPeriod
	}
	pingPeriod := min(ri.downAfter, m.timing.PingPeriod)
	switch {
	case ri.kind != RoleSentinel && (ri.infoRefresh.IsZero() || now.Sub(ri.infoRefresh) > infoPeriod) &&
		(ri.infoSent.IsZero() || now.Sub(ri.infoSent) >= pingPeriod):
		ri.infoSent = now
		ri.link.pending++
		m.act(m.actionFor(ActInfo, ri))
	case now.Sub(ri.link.lastPong) > pingPeriod && now.Sub(ri.link.lastPing) > pingPeriod/2:
		m.sendPing(now, ri)
	case now.Sub(ri.lastPub) > m.timing.PublishPeriod:
		m.sendHello(now, ri)
	}
}

func (m *Machine) sendPing(now time.Time, ri *instance) {
	ri.link.pending++
	ri.link.lastPing = now
	if ri.link.actPing.IsZero() {
		ri.link.actPing = now
	}
	m.act(m.actionFor(ActPing, ri))
}

// sendHello publishes our hello about ri's master to ri.
func (m *Machine) sendHello(now time.Time, ri *instance) {
	if !ri.link.connected {
		return
	}
	master := ri
	if ri.master != nil {
		master = ri.master
	}
	port := m.port
	if m.announcePort != 0 {
		port = m.announcePort
	}
	a := m.actionFor(ActPublishHello, ri)
	a.Hello = Hello{IP: m.announceIP, Port: port, RunID: m.myID, CurrentEpoch: m.currentEpoch,
		MasterName: master.name, MasterAddr: currentMasterAddr(master), ConfigEpoch: master.configEpoch}
	ri.lastPub = now
	ri.link.pending++
	m.act(a)
}

// forceHelloUpdate makes the next Tick publish hellos for master to all its
// instances.
func (m *Machine) forceHelloUpdate(master *instance) {
	master.lastPub = time.Time{}
	for _, r := range master.replicas {
		r.lastPub = time.Time{}
	}
	for _, s := range master.sentinels {
		s.lastPub = time.Time{}
	}
}

// checkSubjectivelyDown is sentinelCheckSubjectivelyDown.
func (m *Machine) checkSubjectivelyDown(now time.Time, ri *instance) {
	var elapsed time.Duration
	if !ri.link.actPing.IsZero() {
		elapsed = now.Sub(ri.link.actPing)
	} else if !ri.link.connected {
		elapsed = now.Sub(ri.link.lastAvail)
	}
	// A link that stopped answering is killed to reconnect, unless young.
	if ri.link.connected && now.Sub(ri.link.connTime) > m.timing.MinLinkReconnectPeriod &&
		!ri.link.actPing.IsZero() && now.Sub(ri.link.actPing) > ri.downAfter/2 &&
		now.Sub(ri.link.lastPong) > ri.downAfter/2 {
		m.linkDown(ri)
		m.act(Action{Kind: ActDisconnect, Addr: ri.addr})
	}
	down := elapsed > ri.downAfter
	if !down && ri.kind == RoleMaster && ri.roleReported == RoleReplica &&
		now.Sub(ri.roleReportedTime) > ri.downAfter+2*m.timing.InfoPeriod {
		down = true
	}
	// A restarted master still loading its data (answering LOADING) is
	// down after master-reboot-down-after-period.
	if ri.has(flagMasterReboot) && now.Sub(ri.rebootSince) > ri.rebootDownAfter {
		down = true
	}
	if down {
		if !ri.has(flagSDown) {
			m.instEvent(LevelWarning, EventSDown, ri, "")
			ri.sDownSince = now
			ri.flags |= flagSDown
		}
	} else if ri.has(flagSDown) {
		m.instEvent(LevelWarning, EventSDownExit, ri, "")
		ri.flags &^= flagSDown
	}
}

// checkObjectivelyDown is sentinelCheckObjectivelyDown: SDOWN here plus
// enough peers saying master_down reach the quorum.
func (m *Machine) checkObjectivelyDown(now time.Time, master *instance) {
	quorum, odown := 0, false
	if master.has(flagSDown) {
		quorum = 1
		for _, s := range master.sentinels {
			if s.has(flagMasterDown) {
				quorum++
			}
		}
		odown = quorum >= master.quorum
	}
	if odown {
		if !master.has(flagODown) {
			m.instEvent(LevelWarning, EventODown, master, " #quorum %d/%d", quorum, master.quorum)
			master.flags |= flagODown
			master.oDownSince = now
		}
	} else if master.has(flagODown) {
		m.instEvent(LevelWarning, EventODownExit, master, "")
		master.flags &^= flagODown
	}
}

// askMasterStateToOtherSentinels sends IS-MASTER-DOWN-BY-ADDR to the peers
// while we see the master down, once per ask period unless forced.
func (m *Machine) askMasterStateToOtherSentinels(now time.Time, master *instance, forced bool) {
	for _, s := range master.sortedSentinels() {
		if now.Sub(s.lastDownAns) > 5*m.timing.AskPeriod {
			s.flags &^= flagMasterDown
			s.leader = ""
		}
		if !master.has(flagSDown) || !s.link.connected {
			continue
		}
		// Unlike Redis, ask every fastAskPeriod until ODOWN is reached or
		// the election is won: agreement is the critical path of a
		// failover, and a question costs one small command.
		period := m.timing.AskPeriod
		if !master.has(flagODown) || master.failoverState == stateWaitStart {
			period = min(period, fastAskPeriod)
		}
		if !forced && now.Sub(s.lastDownAns) < period {
			continue
		}
		if !forced && s.askPending && now.Sub(s.lastAskSent) < m.timing.AskPeriod {
			continue
		}
		s.askPending, s.lastAskSent = true, now
		runID := "*"
		if master.failoverState > stateNone {
			runID = m.myID
		}
		a := m.actionFor(ActAskMasterDown, s)
		a.MasterAddr, a.Epoch, a.RunID = master.addr, m.currentEpoch, runID
		s.link.pending++
		m.act(a)
	}
}

// Step feeds one observation to the machine.
func (m *Machine) Step(now time.Time, msg Message) {
	switch msg := msg.(type) {
	case LinkUp:
		m.forAddr(msg.Addr, func(ri *instance) {
			if !ri.link.connected {
				ri.link.connected = true
				ri.link.connTime = now
				ri.link.pending = 0
				m.sendPing(now, ri) // as Redis: PING as soon as connected
				// INFO at once too when the instance is new or was
				// unreachable: it may have restarted with another role.
				if ri.kind != RoleSentinel && (ri.infoRefresh.IsZero() || ri.has(flagSDown)) {
					ri.infoSent = now
					ri.link.pending++
					m.act(m.actionFor(ActInfo, ri))
				}
			}
		})
	case LinkDown:
		m.forAddr(msg.Addr, func(ri *instance) {
			m.linkDown(ri)
			// As Redis, whose reconnection sends a PING at once: the
			// down-after clock starts now, not at the last reply, so a
			// dropped link alone never makes an instance SDOWN early.
			if ri.link.actPing.IsZero() {
				ri.link.actPing = now
			}
		})
	case PingReply:
		m.forAddr(msg.Addr, func(ri *instance) { m.pingReply(now, ri, msg.Reply) })
	case InfoReply:
		info := ParseInfo(msg.Text)
		m.forAddr(msg.Addr, func(ri *instance) {
			if ri.kind != RoleSentinel {
				ri.info = msg.Text
				m.refreshInstanceInfo(now, ri, info)
			}
		})
	case HelloReceived:
		m.processHello(now, msg.Payload)
	case MasterDownReply:
		m.masterDownReply(now, msg)
	}
}

// forAddr applies f to every instance at address a.
func (m *Machine) forAddr(a Addr, f func(*instance)) {
	for _, master := range m.sortedMasters() {
		if addrEqual(master.addr, a) {
			f(master)
		}
		for _, r := range master.sortedReplicas() {
			if addrEqual(r.addr, a) {
				f(r)
			}
		}
		for _, s := range master.sortedSentinels() {
			if addrEqual(s.addr, a) {
				f(s)
			}
		}
	}
}

func (m *Machine) linkDown(ri *instance) {
	ri.link.connected = false
	ri.link.pending = 0
}

func (m *Machine) pingReply(now time.Time, ri *instance, reply string) {
	if ri.link.pending > 0 {
		ri.link.pending--
	}
	if hasAnyPrefix(reply, "PONG", "LOADING", "MASTERDOWN") {
		ri.link.lastAvail = now
		ri.link.actPing = time.Time{}
		if hasAnyPrefix(reply, "PONG") {
			ri.flags &^= flagMasterReboot
		}
	}
	ri.link.lastPong = now
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if len(s) >= len(p) && s[:len(p)] == p {
			return true
		}
	}
	return false
}

// refreshInstanceInfo is sentinelRefreshInstanceInfo: learn from INFO, then
// act on role changes unless in TILT.
func (m *Machine) refreshInstanceInfo(now time.Time, ri *instance, info Info) {
	if ri.link.pending > 0 {
		ri.link.pending--
	}
	ri.infoRefresh = now
	ri.infoSent = time.Time{}
	ri.hasInfo = true
	ri.masterLinkDownTime = info.MasterLinkDownSince
	if info.RunID != "" {
		if ri.runID != "" && ri.runID != info.RunID {
			m.instEvent(LevelNotice, EventReboot, ri, "")
			if ri.kind == RoleMaster && ri.rebootDownAfter != 0 {
				ri.flags |= flagMasterReboot
				ri.rebootSince = now
			}
		}
		ri.runID = info.RunID
	}
	if ri.kind == RoleMaster {
		for _, a := range info.Replicas {
			if ri.lookupReplica(a) == nil && !addrEqual(a, ri.addr) {
				r := m.addReplica(now, ri, a)
				m.instEvent(LevelNotice, EventReplica, r, "")
				m.persist()
			}
		}
	}
	role := info.Role
	if role == RoleReplica {
		if ri.replMasterHost == "" || !equalFold(info.MasterHost, ri.replMasterHost) {
			ri.replMasterHost = info.MasterHost
			ri.replConfChangeTime = now
		}
		if ri.replMasterPort != info.MasterPort {
			ri.replMasterPort = info.MasterPort
			ri.replConfChangeTime = now
		}
		ri.replMasterLinkUp = info.MasterLinkUp
		if info.HasPriority {
			ri.replPriority = info.Priority
		}
		ri.replOffset = info.ReplOffset
		if info.HasAnnounced {
			ri.replAnnounced = info.Announced
		}
	}
	if role != 0 && role != ri.roleReported {
		ri.roleReportedTime = now
		ri.roleReported = role
		if role == RoleReplica {
			ri.replConfChangeTime = now
		}
		typ := EventRoleChange
		if role != ri.kind {
			typ = EventRoleMismatch
		}
		m.instEvent(LevelVerbose, typ, ri, " new reported role is %s", role)
	}
	if m.tilt || role == 0 {
		return
	}
	master := ri.master
	// A replica turned master: our promotion finishing, or a rogue master.
	if ri.kind == RoleReplica && role == RoleMaster {
		if ri.has(flagPromoted) && master.has(flagFailoverInProgress) && master.failoverState == stateWaitPromotion {
			master.configEpoch = master.failoverEpoch
			m.persist()
			m.instEvent(LevelWarning, EventPromotedReplica, ri, "")
			m.setFailoverState(now, master, stateReconfReplicas)
			m.instEvent(LevelWarning, EventStateReconfReplicas, master, "")
			m.clientReconfScript(master, "leader", "start", master.addr, ri.addr)
			m.forceHelloUpdate(master)
		} else {
			wait := 4 * m.timing.PublishPeriod
			if !ri.has(flagPromoted) && m.masterLooksSane(now, master) && ri.noDownFor(now, wait) &&
				now.Sub(ri.roleReportedTime) > wait {
				if m.sendReplicaOf(ri, master.addr) {
					m.instEvent(LevelNotice, EventConvertToReplica, ri, "")
				}
			}
		}
	}
	// A replica replicating from the wrong master.
	if ri.kind == RoleReplica && role == RoleReplica &&
		(ri.replMasterPort != master.addr.Port || !equalFold(ri.replMasterHost, master.addr.IP)) {
		wait := master.failoverTimeout
		if m.masterLooksSane(now, master) && ri.noDownFor(now, wait) && now.Sub(ri.replConfChangeTime) > wait {
			if m.sendReplicaOf(ri, master.addr) {
				m.instEvent(LevelNotice, EventFixReplicaConfig, ri, "")
			}
		}
	}
	// Progress of a replica being reconfigured by our failover.
	if ri.kind == RoleReplica && role == RoleReplica && ri.has(flagReconfSent|flagReconfInprog) && master.promoted != nil {
		if ri.has(flagReconfSent) && equalFold(ri.replMasterHost, master.promoted.addr.IP) &&
			ri.replMasterPort == master.promoted.addr.Port {
			ri.flags = ri.flags&^flagReconfSent | flagReconfInprog
			m.instEvent(LevelNotice, EventReplicaReconfInprog, ri, "")
		}
		if ri.has(flagReconfInprog) && ri.replMasterLinkUp {
			ri.flags = ri.flags&^flagReconfInprog | flagReconfDone
			m.instEvent(LevelNotice, EventReplicaReconfDone, ri, "")
		}
	}
}

func equalFold(a, b string) bool { return len(a) == len(b) && (a == b || lower(a) == lower(b)) }

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// masterLooksSane: a master we can safely point replicas at.
func (m *Machine) masterLooksSane(now time.Time, master *instance) bool {
	return master.roleReported == RoleMaster && !master.has(flagSDown|flagODown) &&
		!master.infoRefresh.IsZero() && now.Sub(master.infoRefresh) < 2*m.timing.InfoPeriod
}

// fastInfoPeriod is the INFO period for replicas a failover waits on.
const fastInfoPeriod = 100 * time.Millisecond

// sendReplicaOf emits ActReplicaOf if the link is up; target zero means NO
// ONE. An INFO follows at once (the link runs commands in order) so the
// new role is seen without waiting for the INFO period.
func (m *Machine) sendReplicaOf(ri *instance, target Addr) bool {
	if !ri.link.connected {
		return false
	}
	a := m.actionFor(ActReplicaOf, ri)
	a.Target = target
	ri.link.pending += 2
	m.act(a)
	ri.infoSent = time.Time{}
	m.act(m.actionFor(ActInfo, ri))
	return true
}

// processHello is sentinelProcessHelloMessage.
func (m *Machine) processHello(now time.Time, payload string) {
	h, err := ParseHello(payload)
	if err != nil || h.RunID == m.myID {
		return
	}
	master := m.masters[h.MasterName]
	if master == nil {
		return
	}
	addr := Addr{h.IP, h.Port}
	si := master.sentinels[h.RunID]
	if si != nil && !addrEqual(si.addr, addr) {
		// Same run id at a new address: replace it everywhere.
		for _, mm := range m.sortedMasters() {
			if old := mm.sentinels[h.RunID]; old != nil {
				delete(mm.sentinels, h.RunID)
				n := m.addSentinel(now, mm, h.RunID, addr)
				n.leader, n.leaderEpoch = old.leader, old.leaderEpoch
			}
		}
		m.instEvent(LevelNotice, EventSentinelAddressSwitch, master, " ip %s port %d for %s", h.IP, h.Port, h.RunID)
		si = master.sentinels[h.RunID]
		m.persist()
	}
	if si == nil {
		// Another Sentinel at the same address is stale: it restarted
		// with a new run id.
		for id, other := range master.sentinels {
			if addrEqual(other.addr, addr) {
				m.instEvent(LevelNotice, EventDupSentinel, other, " #duplicate of %s:%d or %s", h.IP, h.Port, h.RunID)
				delete(master.sentinels, id)
			}
		}
		si = m.addSentinel(now, master, h.RunID, addr)
		m.instEvent(LevelNotice, EventSentinel, si, "")
		m.persist()
	}
	if h.CurrentEpoch > m.currentEpoch {
		m.currentEpoch = h.CurrentEpoch
		m.persist()
		m.event(LevelWarning, EventNewEpoch, master, "%d", m.currentEpoch)
	}
	if master.configEpoch < h.ConfigEpoch {
		master.configEpoch = h.ConfigEpoch
		m.persist()
		if h.MasterAddr.Port != master.addr.Port || !equalFold(h.MasterAddr.IP, master.addr.IP) {
			m.instEvent(LevelWarning, EventConfigUpdateFrom, si, "")
			m.event(LevelWarning, EventSwitchMaster, master, "%s %s %d %s %d", master.name,
				master.addr.IP, master.addr.Port, h.MasterAddr.IP, h.MasterAddr.Port)
			old := master.addr
			m.resetMasterAndChangeAddress(now, master, h.MasterAddr)
			m.clientReconfScript(master, "observer", "start", old, master.addr)
		}
	}
	si.lastHello = now
}

// masterDownReply records a peer's IS-MASTER-DOWN-BY-ADDR answer.
func (m *Machine) masterDownReply(now time.Time, r MasterDownReply) {
	master := m.masters[r.MasterName]
	if master == nil {
		return
	}
	for _, s := range master.sentinels {
		if !addrEqual(s.addr, r.Addr) {
			continue
		}
		if s.link.pending > 0 {
			s.link.pending--
		}
		s.lastDownAns = now
		s.askPending = false
		if r.Down {
			s.flags |= flagMasterDown
		} else {
			s.flags &^= flagMasterDown
		}
		if r.Leader != "*" && r.Leader != "" {
			if s.leaderEpoch != r.LeaderEpoch || s.leader != r.Leader {
				m.event(LevelVerbose, EventVoteForLeader, s, "%s %d", r.Leader, r.LeaderEpoch)
			}
			s.leader = r.Leader
			s.leaderEpoch = r.LeaderEpoch
		}
	}
}

// resetMaster is sentinelResetMaster: forget replicas (and sentinels if
// withSentinels), failover state and flags.
func (m *Machine) resetMaster(now time.Time, ri *instance, withSentinels, genEvent bool) {
	ri.replicas = map[string]*instance{}
	if withSentinels {
		ri.sentinels = map[string]*instance{}
	}
	ri.flags &= 0
	ri.leader = ""
	ri.failoverState = stateNone
	ri.failoverStartTime = time.Time{}
	ri.failoverStateChange = time.Time{}
	ri.failoverEpoch = 0
	ri.promoted = nil
	ri.sDownSince, ri.oDownSince = time.Time{}, time.Time{}
	ri.runID = ""
	ri.infoRefresh, ri.infoSent = time.Time{}, time.Time{}
	ri.roleReported, ri.roleReportedTime = RoleMaster, now
	ri.link = link{actPing: now, lastAvail: now, lastPong: now}
	m.act(Action{Kind: ActDisconnect, Addr: ri.addr})
	if genEvent {
		m.instEvent(LevelWarning, EventResetMaster, ri, "")
	}
}

// resetMasterAndChangeAddress is sentinelResetMasterAndChangeAddress: the
// master moves to addr; the old master and the other replicas become its
// replicas.
func (m *Machine) resetMasterAndChangeAddress(now time.Time, master *instance, addr Addr) {
	var reps []Addr
	for _, r := range master.sortedReplicas() {
		if !addrEqual(r.addr, addr) {
			reps = append(reps, r.addr)
		}
	}
	if !addrEqual(master.addr, addr) {
		reps = append(reps, master.addr)
	}
	m.resetMaster(now, master, false, false)
	master.addr = addr
	for _, a := range reps {
		m.addReplica(now, master, a)
	}
	// Links to sentinels survive; clear their stale votes and down flags.
	for _, s := range master.sentinels {
		s.flags &^= flagMasterDown
	}
	m.persist()
}
