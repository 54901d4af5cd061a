package sentinel

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func setup(t *testing.T, sentinels, quorum int, tweak func(*MasterConfig)) (*world, *fakeRedis, *fakeRedis, *fakeRedis) {
	w := newWorld(t)
	m := w.addRedis(6379, 0)
	r1 := w.addRedis(6380, 6379)
	r2 := w.addRedis(6381, 6379)
	w.addSentinels(sentinels, 6379, quorum, tweak)
	w.runUntil(20*time.Second, "discovery", func() bool {
		for _, s := range w.sents {
			cfg := s.m.Config().Masters[0]
			if len(cfg.KnownReplicas) != 2 || len(cfg.KnownSentinels) != sentinels-1 {
				return false
			}
		}
		return true
	})
	return w, m, r1, r2
}

func TestDiscovery(t *testing.T) {
	w, _, _, _ := setup(t, 3, 2, nil)
	s := w.sents[0]
	if got := s.count(EventReplica); got != 2 {
		t.Fatalf("+slave events = %d, want 2", got)
	}
	if got := s.count(EventSentinel); got != 2 {
		t.Fatalf("+sentinel events = %d, want 2", got)
	}
	want := "slave 10.0.0.1:6380 10.0.0.1 6380 @ mymaster 10.0.0.1 6379"
	if e := s.events(EventReplica)[0]; e.Payload != want {
		t.Fatalf("+slave payload %q, want %q", e.Payload, want)
	}
	if n := w.total(EventSDown); n != 0 {
		t.Fatalf("unexpected +sdown while all healthy: %d", n)
	}
}

func TestSDownTiming(t *testing.T) {
	w, m, r1, r2 := setup(t, 1, 1, func(mc *MasterConfig) { mc.FailoverTimeout = time.Hour })
	r1.priority, r2.priority = 0, 0 // no failover: we only watch the master
	w.run(11 * time.Second)
	s := w.sents[0]
	m.up = false
	killed := w.now
	w.runUntil(5*time.Second, "+sdown", func() bool { return s.count(EventSDown) > 0 })
	elapsed := w.now.Sub(killed)
	// The last PING was answered at most one ping period before the kill;
	// the next unanswered one starts the down-after clock.
	if elapsed < time.Second || elapsed > 2200*time.Millisecond {
		t.Fatalf("+sdown after %v, want within (1s, 2.2s]", elapsed)
	}
	if got, want := s.events(EventSDown)[0].Payload, "master mymaster 10.0.0.1 6379"; got != want {
		t.Fatalf("+sdown payload %q, want %q", got, want)
	}
	// Quorum 1: ODOWN immediately with #quorum 1/1.
	w.run(200 * time.Millisecond)
	if od := s.events(EventODown); len(od) != 1 || od[0].Payload != "master mymaster 10.0.0.1 6379 #quorum 1/1" {
		t.Fatalf("+odown events %v", od)
	}
	m.up = true
	w.runUntil(3*time.Second, "-sdown", func() bool { return s.count(EventSDownExit) > 0 })
	if s.count(EventODownExit) != 1 {
		t.Fatal("no -odown after the master returned")
	}
}

func TestODownNeedsQuorum(t *testing.T) {
	// Quorum 3 of 3, but one sentinel cannot see the master go down
	// because it is partitioned from its peers: no ODOWN anywhere.
	w, m, _, _ := setup(t, 3, 3, nil)
	w.setCut(w.sents[2].addr, w.sents[0].addr, true)
	w.setCut(w.sents[2].addr, w.sents[1].addr, true)
	m.up = false
	w.run(5 * time.Second)
	if w.sents[0].count(EventSDown) == 0 {
		t.Fatal("sentinel A never saw +sdown")
	}
	if n := w.total(EventODown); n != 0 {
		t.Fatalf("+odown with 2 of quorum 3: %d events", n)
	}
	w.setCut(w.sents[2].addr, w.sents[0].addr, false)
	w.setCut(w.sents[2].addr, w.sents[1].addr, false)
	w.runUntil(5*time.Second, "+odown", func() bool { return w.total(EventODown) > 0 })
}

func TestFailoverThreeSentinels(t *testing.T) {
	w, m, r1, r2 := setup(t, 3, 2, nil)
	r1.offset, r2.offset = 100, 200 // r2 is the most up to date
	w.run(11 * time.Second)         // let INFO refresh offsets
	m.up = false
	w.runUntil(30*time.Second, "+switch-master everywhere", func() bool {
		for _, s := range w.sents {
			if s.count(EventSwitchMaster) == 0 {
				return false
			}
		}
		return true
	})
	if n := w.total(EventElectedLeader); n != 1 {
		t.Fatalf("%d leaders elected, want 1", n)
	}
	for _, s := range w.sents {
		sw := s.events(EventSwitchMaster)[0]
		if sw.Payload != "mymaster 10.0.0.1 6379 10.0.0.1 6381" {
			t.Fatalf("sentinel %s: +switch-master %q", s.name, sw.Payload)
		}
		if a := w.masterAddr(s); a.Port != 6381 {
			t.Fatalf("sentinel %s: master addr %v", s.name, a)
		}
	}
	if !r2.master.IsZero() || r1.master != r2.addr {
		t.Fatalf("topology after failover: r1->%v r2->%v", r1.master, r2.master)
	}
	// The old master is now known as a replica of the new one.
	cfg := w.sents[0].m.Config().Masters[0]
	if len(cfg.KnownReplicas) != 2 || cfg.ConfigEpoch == 0 {
		t.Fatalf("config after failover: %+v", cfg)
	}
	// Epoch agreement: all sentinels share the failover epoch.
	for _, s := range w.sents {
		if s.m.CurrentEpoch() != w.sents[0].m.CurrentEpoch() {
			t.Fatalf("epochs differ: %d vs %d", s.m.CurrentEpoch(), w.sents[0].m.CurrentEpoch())
		}
	}
}

func TestOldMasterDemotedWhenItReturns(t *testing.T) {
	w, m, _, _ := setup(t, 3, 2, nil)
	// The master is partitioned away (from sentinels), keeps running as
	// master, and comes back after the failover.
	for _, s := range w.sents {
		w.setCut(s.addr, m.addr, true)
	}
	w.runUntil(30*time.Second, "switch", func() bool { return w.total(EventSwitchMaster) == 3 })
	newMaster := w.masterAddr(w.sents[0])
	for _, s := range w.sents {
		w.setCut(s.addr, m.addr, false)
	}
	w.runUntil(40*time.Second, "+convert-to-slave", func() bool { return w.total(EventConvertToReplica) > 0 })
	if m.master != newMaster {
		t.Fatalf("old master replicates from %v, want %v", m.master, newMaster)
	}
}

func TestMinorityCannotElect(t *testing.T) {
	// Quorum 1 lets an isolated sentinel reach ODOWN alone, but it can
	// never gather a majority of the three known sentinels.
	w, m, _, _ := setup(t, 3, 1, func(mc *MasterConfig) { mc.FailoverTimeout = 4 * time.Second })
	a := w.sents[0]
	for _, o := range w.sents[1:] {
		w.setCut(a.addr, o.addr, true)
	}
	w.setCut(a.addr, m.addr, true) // only A sees the master fail
	w.run(20 * time.Second)
	if a.count(EventTryFailover) == 0 {
		t.Fatal("A never tried a failover")
	}
	if a.count(EventAbortNotElected) == 0 {
		t.Fatal("A was not refused: no -failover-abort-not-elected")
	}
	if n := w.total(EventElectedLeader) + w.total(EventSwitchMaster); n != 0 {
		t.Fatalf("minority elected or switched: %d events", n)
	}
}

func TestSplitVoteThenRetry(t *testing.T) {
	// Four sentinels, quorum 2, partitioned 2+2: both halves reach ODOWN
	// but neither gets the 3 votes a majority of 4 requires. After the
	// partition heals a retry in a higher epoch succeeds.
	w, m, _, _ := setup(t, 4, 2, func(mc *MasterConfig) { mc.FailoverTimeout = 3 * time.Second })
	half := func(v bool) {
		for _, x := range w.sents[:2] {
			for _, y := range w.sents[2:] {
				w.setCut(x.addr, y.addr, v)
			}
		}
	}
	half(true)
	m.up = false
	w.runUntil(20*time.Second, "two aborts", func() bool { return w.total(EventAbortNotElected) >= 2 })
	if n := w.total(EventElectedLeader); n != 0 {
		t.Fatalf("a split group elected a leader (%d)", n)
	}
	firstEpoch := w.sents[0].m.CurrentEpoch()
	half(false)
	w.runUntil(60*time.Second, "switch after retry", func() bool { return w.total(EventSwitchMaster) == 4 })
	if n := w.total(EventElectedLeader); n != 1 {
		t.Fatalf("%d leaders, want 1", n)
	}
	if w.sents[0].m.CurrentEpoch() <= firstEpoch {
		t.Fatalf("retry did not use a higher epoch: %d <= %d", w.sents[0].m.CurrentEpoch(), firstEpoch)
	}
}

func TestOneVotePerEpoch(t *testing.T) {
	m, err := NewMachine(Config{MyID: strings.Repeat("z", 40), Masters: []MasterConfig{
		{Name: "mymaster", Addr: Addr{"10.0.0.1", 6379}, Quorum: 2}}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(100, 0)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	steps := []struct {
		epoch      uint64
		runID      string
		wantLeader string
		wantEpoch  uint64
	}{
		{1, a, a, 1},     // first request in epoch 1 wins the vote
		{1, b, a, 1},     // same epoch: the vote stays with a
		{2, b, b, 2},     // new epoch: b can win
		{1, a, b, 2},     // an older epoch changes nothing
		{2, a, b, 2},     // still one vote in epoch 2
		{3, "*", "*", 0}, // not a vote request: the epoch is not raised
	}
	for i, s := range steps {
		_, leader, ep := m.IsMasterDownByAddr(now, Addr{"10.0.0.1", 6379}, s.epoch, s.runID)
		if leader != s.wantLeader || ep != s.wantEpoch {
			t.Fatalf("step %d: got %s/%d, want %s/%d", i, leader, ep, s.wantLeader, s.wantEpoch)
		}
	}
	if m.CurrentEpoch() != 2 {
		t.Fatalf("current epoch %d, want 2 (raised by vote requests only)", m.CurrentEpoch())
	}
	// An unknown master is neither down nor voted.
	down, leader, _ := m.IsMasterDownByAddr(now, Addr{"10.0.0.2", 1}, 9, a)
	if down || leader != "*" {
		t.Fatalf("unknown master: %v %s", down, leader)
	}
}

func TestElectionWon(t *testing.T) {
	tests := []struct {
		votes, voters, quorum int
		want                  bool
	}{
		{1, 1, 1, true},
		{2, 3, 2, true},
		{1, 3, 1, false}, // quorum met but no majority
		{2, 4, 2, false}, // 2 of 4 is not a majority
		{3, 4, 2, true},
		{3, 5, 4, false}, // majority but below quorum
		{4, 5, 4, true},
	}
	for _, tt := range tests {
		if got := electionWon(tt.votes, tt.voters, tt.quorum); got != tt.want {
			t.Errorf("electionWon(%d,%d,%d) = %v, want %v", tt.votes, tt.voters, tt.quorum, got, tt.want)
		}
	}
}

func TestMostVoted(t *testing.T) {
	w, n := mostVoted(map[string]int{"b": 2, "a": 2, "c": 1})
	if w != "a" || n != 2 {
		t.Fatalf("tie: got %s/%d, want a/2", w, n)
	}
	if w, _ := mostVoted(nil); w != "" {
		t.Fatalf("no votes: %q", w)
	}
}

func TestBetterReplica(t *testing.T) {
	r := func(prio int, off int64, id string) *instance {
		return &instance{replPriority: prio, replOffset: off, runID: id}
	}
	tests := []struct {
		name string
		a, b *instance
		want bool
	}{
		{"lower priority wins", r(10, 0, "b"), r(100, 999, "a"), true},
		{"higher priority loses", r(100, 999, "a"), r(10, 0, "b"), false},
		{"higher offset wins", r(100, 50, "b"), r(100, 40, "a"), true},
		{"smaller runid wins", r(100, 50, "a"), r(100, 50, "b"), true},
		{"runid compare ignores case", r(100, 50, "A"), r(100, 50, "b"), true},
		{"unknown runid last", r(100, 50, ""), r(100, 50, "z"), false},
		{"known beats unknown", r(100, 50, "z"), r(100, 50, ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := betterReplica(tt.a, tt.b); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSelectReplicaExclusions(t *testing.T) {
	w, _, r1, r2 := setup(t, 1, 1, nil)
	s := w.sents[0]
	r1.priority = 0 // never promote
	r2.offset = 10
	w.run(11 * time.Second)
	master := s.m.masters["mymaster"]
	got := s.m.selectReplica(w.now, master)
	if got == nil || got.addr != r2.addr {
		t.Fatalf("selected %v, want %v (r1 has priority 0)", got, r2.addr)
	}
	r2.up = false
	w.run(3 * time.Second) // r2 becomes SDOWN
	if got := s.m.selectReplica(w.now, master); got != nil {
		t.Fatalf("selected %v though r1 has priority 0 and r2 is down", got.addr)
	}
	if err := s.m.Failover(w.now, "mymaster"); err != ErrNoGoodReplica {
		t.Fatalf("SENTINEL FAILOVER: %v, want %v", err, ErrNoGoodReplica)
	}
}

func TestParallelSyncs(t *testing.T) {
	for _, ps := range []int{1, 2} {
		t.Run("parallel-syncs="+string(rune('0'+ps)), func(t *testing.T) {
			w := newWorld(t)
			m := w.addRedis(6379, 0)
			for p := 6380; p < 6385; p++ {
				w.addRedis(p, 6379)
			}
			w.addSentinels(1, 6379, 1, func(mc *MasterConfig) { mc.ParallelSyncs = ps })
			w.run(12 * time.Second)
			m.up = false
			s := w.sents[0]
			w.runUntil(60*time.Second, "+failover-end", func() bool { return s.count(EventFailoverEnd) > 0 })
			// Replay the events: replicas between +slave-reconf-sent and
			// +slave-reconf-done are in flight.
			maxInFlight, inFlight := 0, 0
			for _, e := range s.ev {
				switch e.Type {
				case EventReplicaReconfSent:
					inFlight++
				case EventReplicaReconfDone:
					inFlight--
				}
				maxInFlight = max(maxInFlight, inFlight)
			}
			if maxInFlight != ps {
				t.Fatalf("max replicas reconfiguring at once = %d, want %d", maxInFlight, ps)
			}
			if n := s.count(EventReplicaReconfDone); n != 4 {
				t.Fatalf("+slave-reconf-done %d, want 4", n)
			}
		})
	}
}

func TestFailoverTimeoutWaitingPromotion(t *testing.T) {
	w, m, r1, r2 := setup(t, 1, 1, func(mc *MasterConfig) { mc.FailoverTimeout = 5 * time.Second })
	r1.promoteOK, r2.promoteOK = false, false // REPLICAOF NO ONE is ignored
	m.up = false
	s := w.sents[0]
	w.runUntil(20*time.Second, "abort", func() bool { return s.count(EventAbortReplicaTimeout) > 0 })
	wp := s.events(EventStateWaitPromotion)
	if len(wp) != 1 {
		t.Fatalf("wait-promotion events: %v", wp)
	}
	if s.count(EventSwitchMaster) != 0 {
		t.Fatal("switched master without promotion")
	}
	// The next attempt waits 2*failover-timeout from the previous start.
	tries := s.count(EventTryFailover)
	w.run(5 * time.Second)
	if s.count(EventTryFailover) != tries {
		t.Fatal("retried before 2*failover-timeout")
	}
	r1.promoteOK, r2.promoteOK = true, true
	w.runUntil(30*time.Second, "switch on retry", func() bool { return s.count(EventSwitchMaster) > 0 })
}

func TestTilt(t *testing.T) {
	w, m, _, _ := setup(t, 1, 1, nil)
	s := w.sents[0]
	w.now = w.now.Add(3 * time.Second) // clock jump
	m.up = false
	w.run(5 * time.Second)
	if s.count(EventTilt) != 1 {
		t.Fatalf("+tilt events %d, want 1", s.count(EventTilt))
	}
	if s.count(EventSDown) != 0 {
		t.Fatal("+sdown acted on during TILT")
	}
	if down, _, _ := s.m.IsMasterDownByAddr(w.now, m.addr, 0, "*"); down {
		t.Fatal("IS-MASTER-DOWN-BY-ADDR answered 1 in TILT")
	}
	w.runUntil(30*time.Second, "-tilt", func() bool { return s.count(EventTiltExit) > 0 })
	w.runUntil(3*time.Second, "+sdown after tilt", func() bool { return s.count(EventSDown) > 0 })

	// A backwards jump also triggers TILT.
	w.now = w.now.Add(-time.Second)
	w.run(200 * time.Millisecond)
	if s.count(EventTilt) != 2 {
		t.Fatalf("backwards clock: +tilt events %d, want 2", s.count(EventTilt))
	}
}

func TestForcedFailover(t *testing.T) {
	w, _, r1, _ := setup(t, 3, 2, nil)
	r1.priority = 1
	w.run(11 * time.Second)
	s := w.sents[0]
	if err := s.m.Failover(w.now, "mymaster"); err != nil {
		t.Fatal(err)
	}
	if err := s.m.Failover(w.now, "mymaster"); err != ErrInProgress {
		t.Fatalf("second FAILOVER: %v", err)
	}
	w.runUntil(30*time.Second, "switch everywhere", func() bool { return w.total(EventSwitchMaster) == 3 })
	if a := w.masterAddr(w.sents[2]); a != r1.addr {
		t.Fatalf("new master %v, want %v (lowest priority)", a, r1.addr)
	}
}

func TestWrongMasterFixed(t *testing.T) {
	w, _, r1, r2 := setup(t, 1, 1, func(mc *MasterConfig) { mc.FailoverTimeout = 3 * time.Second })
	r1.master = r2.addr // misconfigured by hand
	s := w.sents[0]
	w.runUntil(30*time.Second, "+fix-slave-config", func() bool { return s.count(EventFixReplicaConfig) > 0 })
	if r1.master.Port != 6379 {
		t.Fatalf("r1 still replicates from %v", r1.master)
	}
}

func TestReset(t *testing.T) {
	w, _, _, _ := setup(t, 3, 2, nil)
	s := w.sents[0]
	n := s.m.Reset(w.now, "my*")
	w.process(s)
	if n != 1 {
		t.Fatalf("RESET matched %d", n)
	}
	if s.count(EventResetMaster) != 1 {
		t.Fatal("no +reset-master")
	}
	cfg := s.m.Config().Masters[0]
	if len(cfg.KnownReplicas)+len(cfg.KnownSentinels) != 0 {
		t.Fatalf("after reset: %+v", cfg)
	}
	w.runUntil(20*time.Second, "rediscovery", func() bool {
		c := s.m.Config().Masters[0]
		return len(c.KnownReplicas) == 2 && len(c.KnownSentinels) == 2
	})
}

func TestHelloRoundTrip(t *testing.T) {
	h := Hello{IP: "127.0.0.1", Port: 26379, RunID: strings.Repeat("f", 40), CurrentEpoch: 7,
		MasterName: "mymaster", MasterAddr: Addr{"127.0.0.1", 6379}, ConfigEpoch: 3}
	want := "127.0.0.1,26379," + strings.Repeat("f", 40) + ",7,mymaster,127.0.0.1,6379,3"
	if h.String() != want {
		t.Fatalf("hello %q, want %q", h.String(), want)
	}
	got, err := ParseHello(want)
	if err != nil || got != h {
		t.Fatalf("parse: %+v %v", got, err)
	}
	for _, bad := range []string{"", "a,b", "1,x,id,1,m,ip,1,1", want + ",extra"} {
		if _, err := ParseHello(bad); err == nil {
			t.Errorf("ParseHello(%q) accepted", bad)
		}
	}
}

func TestParseInfo(t *testing.T) {
	in := ParseInfo("# Server\r\nrun_id:abc\r\n# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\n" +
		"master_link_status:down\r\nmaster_link_down_since_seconds:7\r\nslave_repl_offset:42\r\nslave_priority:5\r\nreplica_announced:0\r\n")
	if in.RunID != "abc" || in.Role != RoleReplica || in.MasterHost != "10.0.0.1" || in.MasterPort != 6379 ||
		in.MasterLinkUp || in.MasterLinkDownSince != 7*time.Second || in.ReplOffset != 42 || in.Priority != 5 ||
		!in.HasAnnounced || in.Announced {
		t.Fatalf("%+v", in)
	}
	mi := ParseInfo("role:master\r\nslave0:ip=10.0.0.2,port=6380,state=online,offset=1,lag=0\r\nslave1:10.0.0.3,6381,online\r\n")
	if len(mi.Replicas) != 2 || mi.Replicas[0] != (Addr{"10.0.0.2", 6380}) || mi.Replicas[1] != (Addr{"10.0.0.3", 6381}) {
		t.Fatalf("%+v", mi.Replicas)
	}
}

func TestMasterRebootDownAfter(t *testing.T) {
	w, m, r1, r2 := setup(t, 1, 1, func(mc *MasterConfig) {
		mc.RebootDownAfter = 2 * time.Second
		mc.FailoverTimeout = time.Hour
	})
	r1.priority, r2.priority = 0, 0
	s := w.sents[0]
	// The master restarts and stays LOADING: PINGs are answered (valid),
	// but its new run id marks it rebooted.
	m.runID = strings.Repeat("9", 40)
	m.loading = true
	w.runUntil(15*time.Second, "+reboot", func() bool { return s.count(EventReboot) > 0 })
	rebooted := w.now
	w.runUntil(5*time.Second, "+sdown", func() bool { return s.count(EventSDown) > 0 })
	if d := w.now.Sub(rebooted); d < 2*time.Second {
		t.Fatalf("+sdown %v after +reboot, want >= 2s", d)
	}
	m.loading = false // PONG clears the reboot state
	w.runUntil(5*time.Second, "-sdown", func() bool { return s.count(EventSDownExit) > 0 })
}

func TestScripts(t *testing.T) {
	w, m, _, _ := setup(t, 3, 2, func(mc *MasterConfig) {
		mc.NotificationScript = "/bin/notify"
		mc.ClientReconfigScript = "/bin/reconf"
	})
	m.up = false
	w.runUntil(30*time.Second, "switch everywhere", func() bool { return w.total(EventSwitchMaster) == 3 })
	leaders, observers := 0, 0
	for _, s := range w.sents {
		sawSDown := false
		for _, sc := range s.scr {
			switch sc.Path {
			case "/bin/notify":
				if sc.Args[0] == EventSDown && sc.Args[1] == "master mymaster 10.0.0.1 6379" {
					sawSDown = true
				}
			case "/bin/reconf":
				if len(sc.Args) != 7 || sc.Args[0] != "mymaster" || sc.Args[2] != "start" || sc.Args[4] != "6379" {
					t.Fatalf("client-reconfig-script args %v", sc.Args)
				}
				if sc.Args[1] == "leader" {
					leaders++
				} else if sc.Args[1] == "observer" {
					observers++
				}
			}
		}
		if !sawSDown {
			t.Fatalf("sentinel %s: no notification-script call for +sdown", s.name)
		}
	}
	if leaders != 1 || observers != 2 {
		t.Fatalf("client-reconfig-script: %d leader and %d observer calls, want 1 and 2", leaders, observers)
	}
}

func TestLinkDropStartsDownAfterClock(t *testing.T) {
	// A master whose link drops (and cannot be re-established) is SDOWN
	// down-after after the drop, even if its last reply is older.
	w, m, r1, r2 := setup(t, 1, 1, func(mc *MasterConfig) { mc.FailoverTimeout = time.Hour })
	r1.priority, r2.priority = 0, 0
	s := w.sents[0]
	w.run(900 * time.Millisecond) // the last PONG ages
	m.up = false
	dropped := w.now
	s.m.Step(w.now, LinkDown{m.addr})
	w.runUntil(3*time.Second, "+sdown", func() bool { return s.count(EventSDown) > 0 })
	if d := w.now.Sub(dropped); d <= time.Second {
		t.Fatalf("+sdown %v after the link dropped, want > down-after (1s)", d)
	}
}
