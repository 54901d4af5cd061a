package push

import (
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// TestTopologyPacer: the announcements' token bucket lets a burst of
// Burst leave at once, then one per interval; a lone change after
// a pause shorter than the interval is not held back (the pacing a burst
// needs does not delay an isolated move), and in any period t at most
// burst + t/interval announcements leave.
func TestTopologyPacer(t *testing.T) {
	const iv = 10 * time.Millisecond
	t0 := time.Unix(1000, 0)
	p := pacer{interval: iv, burst: 4}
	for i := range 4 {
		if d := p.delay(t0); d != 0 {
			t.Fatalf("announcement %d of a burst waits %v", i+1, d)
		}
		p.sent(t0)
	}
	if d := p.delay(t0); d != iv {
		t.Fatalf("fifth announcement of a burst waits %v, want %v", d, iv)
	}
	p.sent(t0.Add(iv))
	if d := p.delay(t0.Add(iv + 3*time.Millisecond)); d != 7*time.Millisecond {
		t.Fatalf("sixth waits %v, want 7ms", d)
	}

	// Quiet for 4 intervals: the bucket is full again.
	q := pacer{interval: iv, burst: 4}
	q.sent(t0)
	if d := q.delay(t0.Add(2 * time.Millisecond)); d != 0 {
		t.Fatalf("a lone change 2 ms after the previous one waits %v", d)
	}
	q.sent(t0.Add(2 * time.Millisecond))

	// Greedy sender over 1 s: never more than burst + t/interval in any
	// window starting at the first send.
	g := pacer{interval: iv, burst: 4}
	now := t0
	var sends []time.Time
	for now.Before(t0.Add(time.Second)) {
		now = now.Add(g.delay(now))
		g.sent(now)
		sends = append(sends, now)
		now = now.Add(100 * time.Microsecond)
	}
	for i, a := range sends {
		for j := i; j < len(sends); j++ {
			if n, limit := j-i+1, 4+int(sends[j].Sub(a)/iv); n > limit {
				t.Fatalf("%d announcements in %v (limit %d)", n, sends[j].Sub(a), limit)
			}
		}
	}
	if n := len(sends); n < 100 || n > 105 {
		t.Fatalf("%d announcements in 1 s of a greedy sender, want about 100+4", n)
	}
}

// TestTopologyLines: the reserved channel's lines for each kind of change.
func TestTopologyLines(t *testing.T) {
	mk := func(nodes []cluster.RouteNode, owner func(s int) int32) *cluster.Routing {
		r := &cluster.Routing{Nodes: nodes}
		for s := range cluster.NumSlots {
			r.SetSlot(s, owner(s), -1, -1)
		}
		return r
	}
	n1 := cluster.RouteNode{ID: "a", IP: "10.0.0.1", Port: 7000, ConfigEpoch: 4}
	n2 := cluster.RouteNode{ID: "b", IP: "10.0.0.2", Port: 7001}
	n3 := cluster.RouteNode{ID: "c", IP: "10.0.0.3", Port: 7002, ConfigEpoch: 9}
	prev := mk([]cluster.RouteNode{n1, n2}, func(s int) int32 { return int32(s % 2) })
	moved := n2
	moved.Port = 7100
	cur := mk([]cluster.RouteNode{n1, moved, n3}, func(s int) int32 {
		switch {
		case s < 4:
			return 2
		case s == 10:
			return -1
		}
		return int32(s % 2)
	})
	got := topologyLines(prev, cur, 7, [][2]string{{"fail", "a"}, {"recover", "zz"}}, nil)
	want := []string{
		"epoch 7 address b 10.0.0.2:7100",
		"epoch 7 join c 10.0.0.3:7002",
		"epoch 7 slots c 10.0.0.3:7002 0-3 config-epoch=9",
		"epoch 7 unassigned - - 10",
		"epoch 7 fail a 10.0.0.1:7000",
		"epoch 7 recover zz -",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	left := mk([]cluster.RouteNode{n1}, func(int) int32 { return 0 })
	got = topologyLines(prev, left, 8, nil, nil)
	want = []string{"epoch 8 slots a 10.0.0.1:7000 " + oddSlots() + " config-epoch=4", "epoch 8 leave b 10.0.0.2:7001"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if mv := slotMoves(prev, cur, nil); len(mv) != 2 || mv[0] != (slotMove{"10.0.0.1:7000", "10.0.0.3:7002", "0,2"}) ||
		mv[1] != (slotMove{"10.0.0.2:7001", "10.0.0.3:7002", "1,3"}) {
		t.Fatalf("slotMoves = %+v", mv)
	}
}

func oddSlots() string {
	var parts []string
	for s := 1; s < cluster.NumSlots; s += 2 {
		parts = append(parts, strconv.Itoa(s))
	}
	return strings.Join(parts, ",")
}

// fakeHost publishes a machine's routing as the node does (a copy of a
// reused Routing after each fill that changed it) and records what the
// pusher publishes.
type fakeHost struct {
	m       *cluster.Machine
	scratch cluster.Routing
	cur     *cluster.Routing
	msgs    []string
}

func (h *fakeHost) Routing() *cluster.Routing { return h.cur }
func (h *fakeHost) Publish(ch string, msg []byte) int {
	h.msgs = append(h.msgs, string(msg))
	return 1
}
func (h *fakeHost) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (h *fakeHost) publish() {
	if !h.m.FillRouting(&h.scratch) {
		return
	}
	h.cur = h.scratch.Share()
}

// TestAnnounceFromChangedSlots: the announcement compares only the slots
// the fills since the last one changed, and says what a comparison of
// every slot says; a publication the hook did not see (or a fill of
// every slot) makes it compare every slot.
func TestAnnounceFromChangedSlots(t *testing.T) {
	cfg := cluster.DefaultConfig()
	cfg.Port, cfg.CPort = 7000, 17000
	m, err := cluster.New(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	h := &fakeHost{m: m}
	h.publish()
	p := newPusher(h, nil)
	me := m.MyID()
	// step changes the machine, publishes, hooks (unless missed) and
	// announces; the lines must be the full comparison's.
	step := func(what string, change func(), hooked bool, wantAll bool, want string) {
		t.Helper()
		change()
		h.publish()
		if !hooked {
			return
		}
		p.Hook(m, &cluster.Ready{})
		p.mu.Lock()
		all := p.dirtyAll
		p.mu.Unlock()
		if all != wantAll {
			t.Fatalf("%s: compares every slot = %v, want %v", what, all, wantAll)
		}
		prev := p.sent
		full := topologyLines(prev, h.cur, m.CurrentEpoch(), nil, nil)
		n := len(h.msgs)
		p.announce()
		got := ""
		if len(h.msgs) > n {
			got = h.msgs[n]
		}
		if got != strings.Join(full, "\n") {
			t.Fatalf("%s: announced %q, a full comparison gives %q", what, got, full)
		}
		if !strings.Contains(got, want) {
			t.Fatalf("%s: announced %q, want it to contain %q", what, got, want)
		}
	}
	step("add 0-99", func() {
		if err := m.AddSlotsRange(now, "0", "99"); err != nil {
			t.Fatal(err)
		}
	}, true, false, "slots "+me+" :7000 0-99 config-epoch=0")
	step("delete 5 and 50", func() {
		if err := m.DelSlots(now, "5", "50"); err != nil {
			t.Fatal(err)
		}
	}, true, false, "unassigned - - 5,50")
	step("delete 7, not hooked", func() {
		if err := m.DelSlots(now, "7"); err != nil {
			t.Fatal(err)
		}
	}, false, false, "")
	step("add 200 after a missed publication", func() {
		if err := m.AddSlots(now, "200"); err != nil {
			t.Fatal(err)
		}
	}, true, true, "unassigned - - 7")
	step("add 300 again from the changed slots", func() {
		if err := m.AddSlots(now, "300"); err != nil {
			t.Fatal(err)
		}
	}, true, false, "slots "+me+" :7000 300 config-epoch=0")
}
