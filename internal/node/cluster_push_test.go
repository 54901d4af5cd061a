package node

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/resp"
)

// maintConn is a raw RESP3 connection that turned maintenance
// notifications on.
type maintConn struct {
	conn net.Conn
	br   *bufio.Reader
}

func dialMaint(t *testing.T, addr string) *maintConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	mc := &maintConn{conn: conn, br: bufio.NewReader(conn)}
	if v := mc.do(t, "hello", "3"); v.IsError() {
		t.Fatalf("HELLO 3: %s", v.Str)
	}
	if v := mc.do(t, "client", "maint_notifications", "on", "moving-endpoint-type", "internal-ip"); v.Type != '+' || v.Str != "OK" {
		t.Fatalf("CLIENT MAINT_NOTIFICATIONS ON: %+v", v)
	}
	return mc
}

func (mc *maintConn) do(t *testing.T, args ...string) resp.Value {
	t.Helper()
	if _, err := mc.conn.Write(resp.AppendCommandStrings(nil, args...)); err != nil {
		t.Fatal(err)
	}
	return mc.read(t)
}

func (mc *maintConn) read(t *testing.T) resp.Value {
	t.Helper()
	_ = mc.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	v, err := resp.ReadValue(mc.br)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTopologyPush: moving slots between two shardnode masters makes each
// node tell its own clients, on the reserved channel (one line per new
// owner, coalesced) and as the SMIGRATED push go-redis understands.
func TestTopologyPush(t *testing.T) {
	a := startShardNode(t, 0, 0, "")
	b := startShardNode(t, 0, 0, "")
	buildCluster(t, []*clNode{a, b}, nil, false)
	ctx := context.Background()
	bID := b.id(t)

	sub := b.rc.Subscribe(ctx, TopologyChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	mc := dialMaint(t, b.addr)
	// b's config epoch, which every line must carry (b imports nothing:
	// SETSLOT NODE does not bump it).
	info, err := b.rc.ClusterInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	_, myEpoch, _ := strings.Cut(info, "cluster_my_epoch:")
	myEpoch, _, _ = strings.Cut(myEpoch, "\r\n")
	if myEpoch == "" {
		t.Fatalf("no cluster_my_epoch in CLUSTER INFO:\n%s", info)
	}

	// Slots 0..99 go from a to b, one SETSLOT NODE each, as fast as
	// one connection sends them.
	start := time.Now()
	pipe := b.rc.Pipeline()
	for s := 0; s < 100; s++ {
		pipe.Do(ctx, "cluster", "setslot", s, "node", bID)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	sent := time.Since(start)

	got := map[int]bool{}
	messages := 0
	for len(got) < 100 {
		msg, err := sub.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatalf("after %d of 100 slots announced: %v", len(got), err)
		}
		m, ok := msg.(*redis.Message)
		if !ok {
			t.Fatalf("unexpected %T %v", msg, msg)
		}
		messages++
		for _, line := range strings.Split(m.Payload, "\n") {
			f := strings.Fields(line)
			if len(f) != 7 || f[0] != "epoch" || f[2] != "slots" || f[3] != bID || f[4] != b.addr ||
				f[6] != "config-epoch="+myEpoch {
				t.Fatalf("unexpected line %q", line)
			}
			for _, s := range expandRanges(t, f[5]) {
				got[s] = true
			}
		}
	}
	for s := range got {
		if s >= 100 {
			t.Fatalf("slot %d announced but not moved", s)
		}
	}
	// Coalesced: the pacer's burst, then at most one message per window
	// while the SETSLOTs lasted, and one for the tail.
	if limit := topologyBurst + 1 + int(time.Since(start)/topologyCoalesce); messages > limit || messages >= 100 {
		t.Fatalf("%d messages for 100 SETSLOTs sent in %v (limit %d)", messages, sent, limit)
	}

	// The SMIGRATED pushes name a as the source and b as the target and
	// cover the same slots.
	pushed := map[int]bool{}
	for len(pushed) < 100 {
		v := mc.read(t)
		if v.Type != '>' || len(v.Elems) != 3 || v.Elems[0].Str != "SMIGRATED" || v.Elems[1].Type != ':' {
			t.Fatalf("not an SMIGRATED push: %+v", v)
		}
		for _, tr := range v.Elems[2].Elems {
			if len(tr.Elems) != 3 || tr.Elems[0].Str != a.addr || tr.Elems[1].Str != b.addr {
				t.Fatalf("SMIGRATED triplet %+v, want %s -> %s", tr, a.addr, b.addr)
			}
			for _, s := range expandRanges(t, tr.Elems[2].Str) {
				pushed[s] = true
			}
		}
	}
}

// TestTopologyPacer: the announcements' token bucket lets a burst of
// topologyBurst leave at once, then one per interval; a lone change after
// a pause shorter than the interval is not held back (the pacing a burst
// needs does not delay an isolated move), and in any period t at most
// burst + t/interval announcements leave.
func TestTopologyPacer(t *testing.T) {
	const iv = 10 * time.Millisecond
	t0 := time.Unix(1000, 0)
	p := topologyPacer{interval: iv, burst: 4}
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
	q := topologyPacer{interval: iv, burst: 4}
	q.sent(t0)
	if d := q.delay(t0.Add(2 * time.Millisecond)); d != 0 {
		t.Fatalf("a lone change 2 ms after the previous one waits %v", d)
	}
	q.sent(t0.Add(2 * time.Millisecond))

	// Greedy sender over 1 s: never more than burst + t/interval in any
	// window starting at the first send.
	g := topologyPacer{interval: iv, burst: 4}
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

// TestMaintNotificationsCommand: the handshake's replies.
func TestMaintNotificationsCommand(t *testing.T) {
	a := startShardNode(t, 0, 0, "")
	ctx := context.Background()
	r2 := redis.NewClient(&redis.Options{Addr: a.addr, Protocol: 2, DisableIdentity: true})
	defer r2.Close()
	if err := r2.Do(ctx, "client", "maint_notifications", "on").Err(); err == nil || !strings.Contains(err.Error(), "RESP3") {
		t.Fatalf("ON over RESP2: %v", err)
	}
	if err := a.rc.Do(ctx, "client", "maint_notifications", "on", "moving-endpoint-type", "bogus").Err(); err == nil || err.Error() != errSyntax {
		t.Fatalf("bad endpoint type: %v", err)
	}
	if err := a.rc.Do(ctx, "client", "maint_notifications", "off").Err(); err != nil {
		t.Fatalf("OFF: %v", err)
	}
}

// TestTopologyLines: the reserved channel's lines for each kind of change.
func TestTopologyLines(t *testing.T) {
	mk := func(nodes []cluster.RouteNode, owner func(s int) int32) *cluster.Routing {
		r := &cluster.Routing{Nodes: nodes}
		for s := range r.Owner {
			r.Owner[s] = owner(s)
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
	got := topologyLines(prev, cur, 7, [][2]string{{"fail", "a"}, {"recover", "zz"}})
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
	got = topologyLines(prev, left, 8, nil)
	want = []string{"epoch 8 slots a 10.0.0.1:7000 " + oddSlots() + " config-epoch=4", "epoch 8 leave b 10.0.0.2:7001"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if mv := slotMoves(prev, cur); len(mv) != 2 || mv[0] != (slotMove{"10.0.0.1:7000", "10.0.0.3:7002", "0,2"}) ||
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

// expandRanges parses "a-b,c".
func expandRanges(t *testing.T, text string) []int {
	t.Helper()
	var out []int
	for _, part := range strings.Split(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			t.Fatalf("bad slots %q", text)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				t.Fatalf("bad slots %q", text)
			}
		}
		for s := a; s <= b; s++ {
			out = append(out, s)
		}
	}
	return out
}
