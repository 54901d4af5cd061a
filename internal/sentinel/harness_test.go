package sentinel

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The in-memory network: fake redis-servers and sentinel machines driven
// by a virtual clock. Actions are executed synchronously; cut links drop
// every message in both directions.

type fakeRedis struct {
	addr      Addr
	runID     string
	up        bool
	master    Addr // zero: a master
	priority  int
	offset    int64
	promoteOK bool // honours REPLICAOF NO ONE (default true)
	loading   bool // answers PING with LOADING
	ackNeed   int  // a shardnode master's min-replicas-ack (INFO min_replicas_ack)
	// ackLease is a shardnode master's Sentinel fence lease (INFO
	// min_replicas_ack_sentinel_lease; 0: none).
	ackLease time.Duration
	// The replica freeze: pausedUntil is the end of a CLIENT PAUSE WRITE
	// (zero: none); noPause makes CLIENT PAUSE fail (an old server).
	pausedUntil time.Time
	noPause     bool
}

// paused reports whether a CLIENT PAUSE holds r's writes at now.
func (r *fakeRedis) paused(now time.Time) bool { return now.Before(r.pausedUntil) }

type simSentinel struct {
	name string
	addr Addr
	m    *Machine
	ev   []Event
	scr  []ScriptCall
	subs map[Addr]bool // redis instances whose hello channel we hear
	down bool
}

type world struct {
	t          *testing.T
	now        time.Time
	redis      map[Addr]*fakeRedis
	sents      []*simSentinel
	cut        map[[2]string]bool // pairs of endpoint names ("ip:port")
	drop       map[ActionKind]bool
	replicaofs []string // log: "<addr> -> <target>"
	// acts logs the replica freeze's actions (ActFreeze, ActUnpause,
	// ActReplicaOf) in order, as executed.
	acts []Action
	// onFreeze, if set, runs when a CLIENT PAUSE reaches r, before its
	// INFO is read (to interleave writes between two replicas' freezes).
	onFreeze func(r *fakeRedis)
	// helloWhilePaused counts hellos that reached a paused replica.
	helloWhilePaused int
}

func newWorld(t *testing.T) *world {
	return &world{t: t, now: time.Unix(1_000_000, 0), redis: map[Addr]*fakeRedis{},
		cut: map[[2]string]bool{}, drop: map[ActionKind]bool{}}
}

func (w *world) addRedis(port int, master int) *fakeRedis {
	a := Addr{"10.0.0.1", port}
	r := &fakeRedis{addr: a, runID: fmt.Sprintf("%040d", port), up: true, priority: 100, promoteOK: true}
	if master != 0 {
		r.master = Addr{"10.0.0.1", master}
	}
	w.redis[a] = r
	return r
}

// addSentinels creates n sentinels monitoring the master at port with the
// given quorum.
func (w *world) addSentinels(n, masterPort, quorum int, tweak func(*MasterConfig)) {
	for i := 0; i < n; i++ {
		mc := MasterConfig{Name: "mymaster", Addr: Addr{"10.0.0.1", masterPort}, Quorum: quorum,
			DownAfter: time.Second, FailoverTimeout: 10 * time.Second}
		if tweak != nil {
			tweak(&mc)
		}
		port := 26379 + i
		m, err := NewMachine(Config{MyID: strings.Repeat(string(rune('a'+i)), 40), Port: port,
			AnnounceIP: "10.0.0.9", Masters: []MasterConfig{mc}}, rand.New(rand.NewPCG(uint64(i), 7)))
		if err != nil {
			w.t.Fatal(err)
		}
		w.sents = append(w.sents, &simSentinel{name: string(rune('A' + i)), addr: Addr{"10.0.0.9", port}, m: m,
			subs: map[Addr]bool{}})
	}
}

func key(a, b Addr) [2]string {
	x, y := a.String(), b.String()
	if x > y {
		x, y = y, x
	}
	return [2]string{x, y}
}

func (w *world) setCut(a, b Addr, v bool) { w.cut[key(a, b)] = v }

// isolate cuts s from everything.
func (w *world) isolate(s *simSentinel, v bool) {
	for a := range w.redis {
		w.setCut(s.addr, a, v)
	}
	for _, o := range w.sents {
		if o != s {
			w.setCut(s.addr, o.addr, v)
		}
	}
}

func (w *world) reachable(a, b Addr) bool { return !w.cut[key(a, b)] }

func (w *world) info(r *fakeRedis) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Server\r\nrun_id:%s\r\n# Replication\r\n", r.runID)
	if r.master.IsZero() {
		b.WriteString("role:master\r\n")
		i, eligible := 0, 0
		for _, o := range w.sortedRedis() {
			if o.up && o.master == r.addr {
				fmt.Fprintf(&b, "slave%d:ip=%s,port=%d,state=online,offset=%d,lag=0\r\n", i, o.addr.IP, o.addr.Port, o.offset)
				i++
				if o.priority > 0 {
					eligible++
				}
			}
		}
		if r.ackNeed > 0 {
			fmt.Fprintf(&b, "min_replicas_ack:%d\r\nmin_replicas_ack_eligible:%d\r\n", r.ackNeed, eligible)
			if r.ackLease > 0 {
				fmt.Fprintf(&b, "min_replicas_ack_sentinel_lease:%d\r\n", r.ackLease.Milliseconds())
			}
		}
		return b.String()
	}
	m := w.redis[r.master]
	link := "down"
	if m != nil && m.up && m.master.IsZero() {
		link = "up"
	}
	fmt.Fprintf(&b, "role:slave\r\nmaster_host:%s\r\nmaster_port:%d\r\nmaster_link_status:%s\r\n", r.master.IP, r.master.Port, link)
	if link == "down" {
		b.WriteString("master_link_down_since_seconds:1\r\n")
	}
	fmt.Fprintf(&b, "slave_repl_offset:%d\r\nslave_priority:%d\r\n", r.offset, r.priority)
	return b.String()
}

func (w *world) sortedRedis() []*fakeRedis {
	var out []*fakeRedis
	for p := 1; p < 70000 && len(out) < len(w.redis); p++ {
		if r := w.redis[Addr{"10.0.0.1", p}]; r != nil {
			out = append(out, r)
		}
	}
	return out
}

func (w *world) sentinelAt(a Addr) *simSentinel {
	for _, s := range w.sents {
		if s.addr == a {
			return s
		}
	}
	return nil
}

// run advances the clock by d in 100 ms steps.
func (w *world) run(d time.Duration) {
	for end := w.now.Add(d); w.now.Before(end); {
		w.now = w.now.Add(100 * time.Millisecond)
		for _, s := range w.sents {
			if s.down {
				continue
			}
			s.m.Tick(w.now)
			w.process(s)
		}
		for _, s := range w.sents {
			w.process(s)
		}
	}
}

// runUntil runs until cond holds, failing after limit.
func (w *world) runUntil(limit time.Duration, what string, cond func() bool) {
	w.t.Helper()
	for end := w.now.Add(limit); w.now.Before(end); {
		if cond() {
			return
		}
		w.run(100 * time.Millisecond)
	}
	if !cond() {
		w.t.Fatalf("timeout after %v waiting for %s", limit, what)
	}
}

func (w *world) process(s *simSentinel) {
	for i := 0; i < 10; i++ {
		rd := s.m.Ready()
		s.ev = append(s.ev, rd.Events...)
		s.scr = append(s.scr, rd.Scripts...)
		if len(rd.Actions) == 0 {
			return
		}
		for _, a := range rd.Actions {
			w.execute(s, a)
		}
	}
}

func (w *world) execute(s *simSentinel, a Action) {
	if w.drop[a.Kind] {
		return
	}
	ok := w.reachable(s.addr, a.Addr)
	if peer := w.sentinelAt(a.Addr); peer != nil {
		ok = ok && !peer.down
		switch a.Kind {
		case ActConnect:
			if ok {
				s.m.Step(w.now, LinkUp{a.Addr})
			} else {
				s.m.Step(w.now, LinkDown{a.Addr})
			}
		case ActPing:
			if ok {
				s.m.Step(w.now, PingReply{a.Addr, "PONG"})
			}
		case ActPublishHello:
			if ok {
				peer.m.Step(w.now, HelloReceived{a.Hello.String()})
			}
		case ActAskMasterDown:
			if ok {
				down, leader, ep := peer.m.IsMasterDownByAddr(w.now, a.MasterAddr, a.Epoch, a.RunID)
				s.m.Step(w.now, MasterDownReply{Addr: a.Addr, MasterName: a.MasterName, Down: down, Leader: leader, LeaderEpoch: ep})
			}
		}
		return
	}
	r := w.redis[a.Addr]
	ok = ok && r != nil && r.up
	switch a.Kind {
	case ActConnect:
		if ok {
			s.subs[a.Addr] = true
			s.m.Step(w.now, LinkUp{a.Addr})
		} else {
			delete(s.subs, a.Addr)
			s.m.Step(w.now, LinkDown{a.Addr})
		}
	case ActDisconnect:
		delete(s.subs, a.Addr)
	case ActPing:
		if ok && r.loading {
			s.m.Step(w.now, PingReply{a.Addr, "LOADING Redis is loading the dataset in memory"})
		} else if ok {
			s.m.Step(w.now, PingReply{a.Addr, "PONG"})
		}
	case ActInfo:
		if ok {
			s.m.Step(w.now, InfoReply{a.Addr, w.info(r)})
		}
	case ActPublishHello:
		if ok && r.paused(w.now) {
			w.helloWhilePaused++
		}
		if ok {
			for _, o := range w.sents {
				if o.subs[a.Addr] && !o.down && w.reachable(o.addr, a.Addr) {
					o.m.Step(w.now, HelloReceived{a.Hello.String()})
				}
			}
		}
	case ActFreeze:
		if ok {
			w.acts = append(w.acts, a)
			paused := !r.noPause
			if paused && w.now.Add(a.Pause).After(r.pausedUntil) {
				r.pausedUntil = w.now.Add(a.Pause)
			}
			if w.onFreeze != nil && paused {
				w.onFreeze(r)
			}
			if !a.Refreeze {
				s.m.Step(w.now, FreezeReply{Addr: a.Addr, Epoch: a.Epoch, Paused: paused, Text: w.info(r)})
			}
		}
	case ActUnpause:
		if ok {
			w.acts = append(w.acts, a)
			r.pausedUntil = time.Time{}
		}
	case ActReplicaOf:
		if ok {
			w.acts = append(w.acts, a)
			if a.Unpause {
				r.pausedUntil = time.Time{}
			}
			w.replicaofs = append(w.replicaofs, fmt.Sprintf("%s -> %s", a.Addr, a.Target))
			if a.Target.IsZero() {
				if r.promoteOK {
					r.master = Addr{}
				}
			} else {
				r.master = a.Target
			}
		}
	}
}

func (w *world) masterAddr(s *simSentinel) Addr {
	a, _ := s.m.MasterAddr("mymaster")
	return a
}

// events returns s's events of the given type.
func (s *simSentinel) events(typ string) []Event {
	var out []Event
	for _, e := range s.ev {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (s *simSentinel) count(typ string) int { return len(s.events(typ)) }

func (w *world) total(typ string) int {
	n := 0
	for _, s := range w.sents {
		n += s.count(typ)
	}
	return n
}
