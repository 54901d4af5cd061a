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
	case now.Sub(ri.lastPub) > m.timing.PublishPeriod && !ri.paused:
		// No hello to a replica our failover paused (freeze.go).
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
