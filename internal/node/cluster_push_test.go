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

	"github.com/shardis/shardis/internal/node/cluster/push"
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
	if limit := push.Burst + 1 + int(time.Since(start)/push.Coalesce); messages > limit || messages >= 100 {
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
