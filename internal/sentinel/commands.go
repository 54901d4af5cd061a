package sentinel

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// ReplyError is an error whose text is the exact Redis error reply, without
// the leading "-" (for example "ERR No such master with that name").
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// Errors with redis-sentinel's reply text.
const (
	ErrNoSuchMaster   ReplyError = "ERR No such master with that name"
	ErrInProgress     ReplyError = "INPROG Failover already in progress"
	ErrNoGoodReplica  ReplyError = "NOGOODSLAVE No suitable replica to promote"
	ErrDuplicateName  ReplyError = "ERR Duplicated master name"
	ErrQuorumTooSmall ReplyError = "ERR Quorum must be 1 or greater."
)

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func since(now, t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return ms(now.Sub(t))
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// fields renders an instance as redis-sentinel's SENTINEL MASTER/REPLICAS/
// SENTINELS entries: name/value pairs in Redis's order.
func (m *Machine) fields(now time.Time, ri *instance) []string {
	var flags []string
	add := func(cond bool, s string) {
		if cond {
			flags = append(flags, s)
		}
	}
	add(ri.has(flagSDown), "s_down")
	add(ri.has(flagODown), "o_down")
	add(ri.kind == RoleMaster, "master")
	add(ri.kind == RoleReplica, "slave")
	add(ri.kind == RoleSentinel, "sentinel")
	add(!ri.link.connected, "disconnected")
	add(ri.has(flagMasterDown), "master_down")
	add(ri.has(flagFailoverInProgress), "failover_in_progress")
	add(ri.has(flagPromoted), "promoted")
	add(ri.has(flagReconfSent), "reconf_sent")
	add(ri.has(flagReconfInprog), "reconf_inprog")
	add(ri.has(flagReconfDone), "reconf_done")
	add(ri.has(flagForceFailover), "force_failover")
	f := []string{"name", ri.name, "ip", m.announce(ri.addr).IP, "port", strconv.Itoa(ri.addr.Port),
		"runid", ri.runID, "flags", strings.Join(flags, ","),
		"link-pending-commands", strconv.Itoa(ri.link.pending), "link-refcount", "1"}
	if ri.has(flagFailoverInProgress) {
		f = append(f, "failover-state", ri.failoverState.String())
	}
	f = append(f, "last-ping-sent", since(now, ri.link.actPing),
		"last-ok-ping-reply", ms(now.Sub(ri.link.lastAvail)),
		"last-ping-reply", ms(now.Sub(ri.link.lastPong)))
	if ri.has(flagSDown) {
		f = append(f, "s-down-time", ms(now.Sub(ri.sDownSince)))
	}
	if ri.has(flagODown) {
		f = append(f, "o-down-time", ms(now.Sub(ri.oDownSince)))
	}
	f = append(f, "down-after-milliseconds", ms(ri.downAfter))
	if ri.kind != RoleSentinel {
		f = append(f, "info-refresh", since(now, ri.infoRefresh),
			"role-reported", ri.roleReported.String(),
			"role-reported-time", ms(now.Sub(ri.roleReportedTime)))
	}
	if ri.kind == RoleMaster {
		f = append(f, "config-epoch", u64(ri.configEpoch),
			"num-slaves", strconv.Itoa(len(ri.replicas)),
			"num-other-sentinels", strconv.Itoa(len(ri.sentinels)),
			"quorum", strconv.Itoa(ri.quorum),
			"failover-timeout", ms(ri.failoverTimeout),
			"parallel-syncs", strconv.Itoa(ri.parallelSyncs))
		if ri.notificationScript != "" {
			f = append(f, "notification-script", ri.notificationScript)
		}
		if ri.clientReconfigScript != "" {
			f = append(f, "client-reconfig-script", ri.clientReconfigScript)
		}
	}
	if ri.kind == RoleReplica {
		status, host := "err", ri.replMasterHost
		if ri.replMasterLinkUp {
			status = "ok"
		}
		if host == "" {
			host = "?"
		}
		ann := "0"
		if ri.replAnnounced {
			ann = "1"
		}
		f = append(f, "master-link-down-time", ms(ri.masterLinkDownTime),
			"master-link-status", status, "master-host", host,
			"master-port", strconv.Itoa(ri.replMasterPort),
			"slave-priority", strconv.Itoa(ri.replPriority),
			"slave-repl-offset", strconv.FormatInt(ri.replOffset, 10),
			"replica-announced", ann)
	}
	if ri.kind == RoleSentinel {
		leader := ri.leader
		if leader == "" {
			leader = "?"
		}
		f = append(f, "last-hello-message", ms(now.Sub(ri.lastHello)),
			"voted-leader", leader, "voted-leader-epoch", u64(ri.leaderEpoch))
	}
	return f
}

// MasterNames returns the monitored masters' names, sorted.
func (m *Machine) MasterNames() []string {
	var out []string
	for _, ri := range m.sortedMasters() {
		out = append(out, ri.name)
	}
	return out
}

// MasterFields returns SENTINEL MASTER's name/value pairs.
func (m *Machine) MasterFields(now time.Time, name string) ([]string, error) {
	ri := m.masters[name]
	if ri == nil {
		return nil, ErrNoSuchMaster
	}
	return m.fields(now, ri), nil
}

// ReplicaFields returns SENTINEL REPLICAS's entries (announced replicas).
func (m *Machine) ReplicaFields(now time.Time, name string) ([][]string, error) {
	ri := m.masters[name]
	if ri == nil {
		return nil, ErrNoSuchMaster
	}
	var out [][]string
	for _, r := range ri.sortedReplicas() {
		if r.replAnnounced {
			out = append(out, m.fields(now, r))
		}
	}
	return out, nil
}

// SentinelFields returns SENTINEL SENTINELS's entries.
func (m *Machine) SentinelFields(now time.Time, name string) ([][]string, error) {
	ri := m.masters[name]
	if ri == nil {
		return nil, ErrNoSuchMaster
	}
	var out [][]string
	for _, s := range ri.sortedSentinels() {
		out = append(out, m.fields(now, s))
	}
	return out, nil
}

// MasterAddr is SENTINEL GET-MASTER-ADDR-BY-NAME: the promoted replica once
// a failover reached the reconfiguration phase, else the master.
func (m *Machine) MasterAddr(name string) (Addr, bool) {
	ri := m.masters[name]
	if ri == nil {
		return Addr{}, false
	}
	return m.announce(currentMasterAddr(ri)), true
}

// currentMasterAddr is the promoted replica's address once a failover
// reached the reconfiguration phase, else the master's.
func currentMasterAddr(ri *instance) Addr {
	if ri.has(flagFailoverInProgress) && ri.promoted != nil && ri.failoverState >= stateReconfReplicas {
		return ri.promoted.addr
	}
	return ri.addr
}

// InfoCache is one cached INFO reply for SENTINEL INFO-CACHE.
type InfoCache struct {
	Age  time.Duration // time since the reply
	Text string        // the reply, "" if none yet
	Has  bool          // whether a reply was received
}

// InfoCache returns the cached INFO of the master then its replicas.
func (m *Machine) InfoCache(now time.Time, name string) ([]InfoCache, bool) {
	ri := m.masters[name]
	if ri == nil {
		return nil, false
	}
	one := func(r *instance) InfoCache {
		c := InfoCache{Text: r.info, Has: r.hasInfo}
		if !r.infoRefresh.IsZero() {
			c.Age = now.Sub(r.infoRefresh)
		}
		return c
	}
	out := []InfoCache{one(ri)}
	for _, r := range ri.sortedReplicas() {
		out = append(out, one(r))
	}
	return out, true
}

// IsMasterDownByAddr answers SENTINEL IS-MASTER-DOWN-BY-ADDR: whether we
// see the master at addr down (never in TILT), and, if runID is not "*",
// our vote for reqEpoch.
func (m *Machine) IsMasterDownByAddr(now time.Time, addr Addr, reqEpoch uint64, runID string) (bool, string, uint64) {
	var master *instance
	for _, ri := range m.sortedMasters() {
		if addrEqual(ri.addr, addr) {
			master = ri
			break
		}
	}
	down := !m.tilt && master != nil && master.has(flagSDown)
	leader, epoch := "*", uint64(0)
	if master != nil && runID != "*" {
		if l, e := m.voteLeader(now, master, reqEpoch, runID); l != "" {
			leader, epoch = l, e
		}
	}
	return down, leader, epoch
}

// Monitor is SENTINEL MONITOR: start monitoring a master.
func (m *Machine) Monitor(now time.Time, mc MasterConfig) error {
	if mc.Quorum <= 0 {
		return ErrQuorumTooSmall
	}
	if m.masters[mc.Name] != nil {
		return ErrDuplicateName
	}
	if err := mc.validate(); err != nil {
		return ReplyError("ERR " + strings.TrimPrefix(err.Error(), "sentinel: "))
	}
	ri := m.addMaster(now, mc)
	m.persist()
	m.instEvent(LevelWarning, EventMonitor, ri, " quorum %d", ri.quorum)
	return nil
}

// Remove is SENTINEL REMOVE.
func (m *Machine) Remove(name string) error {
	ri := m.masters[name]
	if ri == nil {
		return ErrNoSuchMaster
	}
	m.instEvent(LevelWarning, EventUnmonitor, ri, "")
	delete(m.masters, name)
	m.persist()
	m.gcLinks()
	return nil
}

// Reset is SENTINEL RESET <pattern>: forget replicas, sentinels and
// failover state of the matching masters. It returns how many matched.
func (m *Machine) Reset(now time.Time, pattern string) int {
	n := 0
	for _, ri := range m.sortedMasters() {
		if ok, _ := path.Match(pattern, ri.name); ok || pattern == "*" {
			m.resetMaster(now, ri, true, true)
			n++
		}
	}
	if n > 0 {
		m.persist()
	}
	return n
}

// Failover is SENTINEL FAILOVER: start a failover without agreement.
func (m *Machine) Failover(now time.Time, name string) error {
	ri := m.masters[name]
	if ri == nil {
		return ErrNoSuchMaster
	}
	if ri.has(flagFailoverInProgress) {
		return ErrInProgress
	}
	if m.selectReplica(now, ri) == nil {
		return ErrNoGoodReplica
	}
	m.startFailover(now, ri)
	ri.flags |= flagForceFailover
	return nil
}

// CKQuorum is SENTINEL CKQUORUM: the reply text of the status or error.
func (m *Machine) CKQuorum(name string) (string, error) {
	ri := m.masters[name]
	if ri == nil {
		return "", ErrNoSuchMaster
	}
	usable, voters := 1, len(ri.sentinels)+1
	for _, s := range ri.sentinels {
		if !s.has(flagSDown | flagODown) {
			usable++
		}
	}
	noQuorum, noAuth := usable < ri.quorum, usable < voters/2+1
	if !noQuorum && !noAuth {
		return fmt.Sprintf("OK %d usable Sentinels. Quorum and failover authorization can be reached", usable), nil
	}
	e := fmt.Sprintf("NOQUORUM %d usable Sentinels. ", usable)
	if noQuorum {
		e += "Not enough available Sentinels to reach the specified quorum for this master"
	}
	if noAuth {
		if noQuorum {
			e += ". "
		}
		e += "Not enough available Sentinels to reach the majority and authorize a failover"
	}
	return "", ReplyError(e)
}

// Set is SENTINEL SET <name> <option> <value> ...
func (m *Machine) Set(name string, args []string) error {
	ri := m.masters[name]
	if ri == nil {
		return ErrNoSuchMaster
	}
	// Validate everything first so an error changes nothing.
	type change struct{ opt, val, val2 string }
	var changes []change
	for j := 0; j < len(args); j++ {
		opt := strings.ToLower(args[j])
		if opt == "rename-command" && j+2 < len(args) {
			if args[j+1] == "" || args[j+2] == "" {
				return ReplyError(fmt.Sprintf("ERR Invalid argument '%s' for SENTINEL SET 'rename-command'", args[j+1]))
			}
			changes = append(changes, change{opt, args[j+1], args[j+2]})
			j += 2
			continue
		}
		if j+1 >= len(args) {
			return ReplyError(fmt.Sprintf("ERR Unknown option or number of arguments for SENTINEL SET '%s'", args[j]))
		}
		val := args[j+1]
		j++
		bad := ReplyError(fmt.Sprintf("ERR Invalid argument '%s' for SENTINEL SET '%s'", val, args[j-1]))
		n, err := strconv.ParseInt(val, 10, 64)
		switch opt {
		case "down-after-milliseconds", "failover-timeout", "parallel-syncs", "quorum":
			if err != nil || n <= 0 {
				return bad
			}
		case "master-reboot-down-after-period":
			if err != nil || n < 0 {
				return bad
			}
		case "notification-script", "client-reconfig-script":
			if m.denyScripts {
				return ReplyError("ERR Reconfiguration of scripts path is denied for security reasons. Check the deny-scripts-reconfig configuration directive in your Sentinel configuration")
			}
		case "auth-pass", "auth-user":
		default:
			return ReplyError(fmt.Sprintf("ERR Unknown option or number of arguments for SENTINEL SET '%s'", args[j-1]))
		}
		changes = append(changes, change{opt: opt, val: val})
	}
	for _, c := range changes {
		n, _ := strconv.ParseInt(c.val, 10, 64)
		shown := c.val
		switch c.opt {
		case "down-after-milliseconds":
			m.setDownAfter(ri, time.Duration(n)*time.Millisecond)
		case "failover-timeout":
			ri.failoverTimeout = time.Duration(n) * time.Millisecond
		case "parallel-syncs":
			ri.parallelSyncs = int(n)
		case "quorum":
			ri.quorum = int(n)
		case "notification-script":
			ri.notificationScript = c.val
		case "client-reconfig-script":
			ri.clientReconfigScript = c.val
		case "auth-pass":
			ri.authPass = c.val
			shown = "******"
			m.reconnectAll(ri)
		case "auth-user":
			ri.authUser = c.val
			m.reconnectAll(ri)
		case "master-reboot-down-after-period":
			ri.rebootDownAfter = time.Duration(n) * time.Millisecond
		case "rename-command":
			if strings.EqualFold(c.val, c.val2) {
				delete(ri.renamed, strings.ToLower(c.val))
			} else {
				ri.renamed[strings.ToLower(c.val)] = c.val2
			}
			m.instEvent(LevelWarning, "+set", ri, " %s %s %s", c.opt, c.val, c.val2)
			continue
		}
		m.instEvent(LevelWarning, "+set", ri, " %s %s", c.opt, shown)
	}
	m.persist()
	return nil
}

func (m *Machine) setDownAfter(ri *instance, d time.Duration) {
	ri.downAfter = d
	for _, r := range ri.replicas {
		r.downAfter = d
	}
	for _, s := range ri.sentinels {
		s.downAfter = d
	}
}

// reconnectSentinels drops the links to peer Sentinels so new credentials
// are used.
func (m *Machine) reconnectSentinels() {
	for _, master := range m.sortedMasters() {
		for _, s := range master.sortedSentinels() {
			if s.link.connected {
				m.linkDown(s)
				m.act(Action{Kind: ActDisconnect, Addr: s.addr})
			}
		}
	}
}

// reconnectAll drops the links of a master and its replicas so new
// credentials are used.
func (m *Machine) reconnectAll(ri *instance) {
	drop := func(r *instance) {
		if r.link.connected {
			m.linkDown(r)
			m.act(Action{Kind: ActDisconnect, Addr: r.addr})
		}
	}
	drop(ri)
	for _, r := range ri.sortedReplicas() {
		drop(r)
	}
}

// SimulateFailure arms SENTINEL SIMULATE-FAILURE crashes; the runner checks
// SimFailure after events +elected-leader and +promoted-slave.
func (m *Machine) SimulateFailure(f SimFailure) { m.simFail = f }

// SimFailure returns the armed simulated failures.
func (m *Machine) SimFailure() SimFailure { return m.simFail }

// debugParams maps SENTINEL DEBUG names to timing fields.
func (m *Machine) debugParams() []struct {
	name string
	v    *time.Duration
} {
	t := &m.timing
	return []struct {
		name string
		v    *time.Duration
	}{
		{"info-period", &t.InfoPeriod}, {"ping-period", &t.PingPeriod}, {"ask-period", &t.AskPeriod},
		{"publish-period", &t.PublishPeriod}, {"default-down-after", &t.DefaultDownAfter},
		{"default-failover-timeout", &t.DefaultFailoverTimeout}, {"tilt-trigger", &t.TiltTrigger},
		{"tilt-period", &t.TiltPeriod}, {"slave-reconf-timeout", &t.ReplicaReconfTimeout},
		{"min-link-reconnect-period", &t.MinLinkReconnectPeriod}, {"election-timeout", &t.ElectionTimeout},
	}
}

// Debug returns SENTINEL DEBUG's name/value pairs (upper-case names, ms).
func (m *Machine) Debug() []string {
	var out []string
	for _, p := range m.debugParams() {
		out = append(out, strings.ToUpper(p.name), ms(*p.v))
	}
	return out
}

// SetDebug is SENTINEL DEBUG <param> <ms> ...; all or nothing.
func (m *Machine) SetDebug(args []string) error {
	params := m.debugParams()
	vals := map[int]time.Duration{}
	for j := 0; j < len(args); j += 2 {
		idx := -1
		for i, p := range params {
			if strings.EqualFold(p.name, args[j]) {
				idx = i
			}
		}
		if idx < 0 || j+1 >= len(args) {
			return ReplyError(fmt.Sprintf("ERR Unknown option or number of arguments for SENTINEL DEBUG '%s'", args[j]))
		}
		n, err := strconv.ParseInt(args[j+1], 10, 64)
		if err != nil || n <= 0 {
			return ReplyError(fmt.Sprintf("ERR Invalid argument '%s' for SENTINEL DEBUG '%s'", args[j+1], args[j]))
		}
		vals[idx] = time.Duration(n) * time.Millisecond
	}
	for i, v := range vals {
		*params[i].v = v
	}
	return nil
}

// ConfigGet returns SENTINEL CONFIG GET values for the global options.
func (m *Machine) ConfigGet(pattern string) []string {
	boolStr := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	all := []string{"resolve-hostnames", boolStr(m.resolveHosts), "announce-hostnames", boolStr(m.announceHost),
		"announce-ip", m.announceIP, "announce-port", strconv.Itoa(m.announcePort),
		"sentinel-user", m.sentinelUser, "sentinel-pass", m.sentinelPass}
	var out []string
	for i := 0; i < len(all); i += 2 {
		if ok, _ := path.Match(strings.ToLower(pattern), all[i]); ok {
			out = append(out, all[i], all[i+1])
		}
	}
	return out
}

// ConfigSet is SENTINEL CONFIG SET for the global options.
func (m *Machine) ConfigSet(opt, val string) error {
	yesno := func() (bool, error) {
		switch strings.ToLower(val) {
		case "yes":
			return true, nil
		case "no":
			return false, nil
		}
		return false, ReplyError("ERR Invalid value for config")
	}
	var err error
	switch strings.ToLower(opt) {
	case "resolve-hostnames":
		m.resolveHosts, err = yesno()
	case "announce-hostnames":
		m.announceHost, err = yesno()
	case "announce-ip":
		m.announceIP = val
	case "announce-port":
		n, e := strconv.Atoi(val)
		if e != nil || n < 0 || n > 65535 {
			return ReplyError("ERR Invalid value for config")
		}
		m.announcePort = n
	case "sentinel-user":
		m.sentinelUser = val
		m.reconnectSentinels()
	case "sentinel-pass":
		m.sentinelPass = val
		m.reconnectSentinels()
	default:
		return ReplyError(fmt.Sprintf("ERR Invalid argument '%s' to SENTINEL CONFIG SET", opt))
	}
	if err != nil {
		return err
	}
	m.persist()
	return nil
}

// SentinelInfo is the summary the INFO sentinel section reports per master.
type SentinelInfo struct {
	Name      string
	Status    string // "ok", "sdown" or "odown"
	Addr      Addr
	Replicas  int
	Sentinels int // including us
}

// Summary returns the INFO sentinel section data.
func (m *Machine) Summary(now time.Time) (tiltSince time.Duration, masters []SentinelInfo) {
	tiltSince = -1
	if m.tilt {
		tiltSince = now.Sub(m.tiltStart)
	}
	for _, ri := range m.sortedMasters() {
		st := "ok"
		if ri.has(flagODown) {
			st = "odown"
		} else if ri.has(flagSDown) {
			st = "sdown"
		}
		masters = append(masters, SentinelInfo{ri.name, st, ri.addr, len(ri.replicas), len(ri.sentinels) + 1})
	}
	return tiltSince, masters
}

// Config returns the current state in persistable form.
func (m *Machine) Config() Config {
	c := Config{MyID: m.myID, Port: m.port, AnnounceIP: m.announceIP, AnnouncePort: m.announcePort,
		CurrentEpoch: m.currentEpoch, SentinelUser: m.sentinelUser, SentinelPass: m.sentinelPass,
		DenyScriptsReconfig: m.denyScripts, ResolveHostnames: m.resolveHosts, AnnounceHostnames: m.announceHost,
		Timing: m.timing}
	for _, ri := range m.sortedMasters() {
		mc := MasterConfig{Name: ri.name, Addr: ri.addr, Quorum: ri.quorum, DownAfter: ri.downAfter,
			FailoverTimeout: ri.failoverTimeout, ParallelSyncs: ri.parallelSyncs, AuthUser: ri.authUser,
			AuthPass: ri.authPass, NotificationScript: ri.notificationScript,
			ClientReconfigScript: ri.clientReconfigScript, ConfigEpoch: ri.configEpoch,
			LeaderEpoch: ri.leaderEpoch, Leader: ri.leader, RebootDownAfter: ri.rebootDownAfter}
		for _, old := range sortedKeys(ri.renamed) {
			mc.RenamedCommands = append(mc.RenamedCommands, [2]string{old, ri.renamed[old]})
		}
		for _, r := range ri.sortedReplicas() {
			mc.KnownReplicas = append(mc.KnownReplicas, r.addr)
		}
		for _, s := range ri.sortedSentinels() {
			mc.KnownSentinels = append(mc.KnownSentinels, KnownSentinel{s.addr, s.runID})
		}
		c.Masters = append(c.Masters, mc)
	}
	return c
}

// ApplyMasters applies an operator's edit of the monitored masters: masters
// missing from ms are removed, new ones added, changed settings updated. A
// master whose address changed is re-added. Nothing changes on error.
func (m *Machine) ApplyMasters(now time.Time, ms []MasterConfig) error {
	for i := range ms {
		if err := ms[i].validate(); err != nil {
			return err
		}
	}
	want := map[string]MasterConfig{}
	for _, mc := range ms {
		want[mc.Name] = mc
	}
	for _, ri := range m.sortedMasters() {
		mc, ok := want[ri.name]
		if !ok || !addrEqual(mc.Addr, ri.addr) {
			_ = m.Remove(ri.name)
		}
	}
	for _, mc := range ms {
		ri := m.masters[mc.Name]
		if ri == nil {
			_ = m.Monitor(now, mc)
			continue
		}
		if mc.DownAfter == 0 {
			mc.DownAfter = m.timing.DefaultDownAfter
		}
		if mc.FailoverTimeout == 0 {
			mc.FailoverTimeout = m.timing.DefaultFailoverTimeout
		}
		if mc.ParallelSyncs == 0 {
			mc.ParallelSyncs = 1
		}
		if ri.downAfter != mc.DownAfter {
			m.setDownAfter(ri, mc.DownAfter)
		}
		ri.quorum, ri.failoverTimeout, ri.parallelSyncs = mc.Quorum, mc.FailoverTimeout, mc.ParallelSyncs
		ri.notificationScript, ri.clientReconfigScript = mc.NotificationScript, mc.ClientReconfigScript
		if ri.authPass != mc.AuthPass || ri.authUser != mc.AuthUser {
			ri.authPass, ri.authUser = mc.AuthPass, mc.AuthUser
			m.reconnectAll(ri)
		}
	}
	m.persist()
	return nil
}
