package cluster

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shardis/shardis/internal/testutil"
)

// nodesLineOf returns c's CLUSTER NODES line about id.
func nodesLineOf(ctx context.Context, c *redis.Client, id string) string {
	nodes, _ := c.ClusterNodes(ctx).Result()
	for _, l := range strings.Split(nodes, "\n") {
		if strings.HasPrefix(l, id+" ") {
			return l
		}
	}
	return ""
}

// mixedCluster is redis-server masters A and B and machine master M,
// machine R replica of A, redis-server RR replica of M (validity factor
// 0: it never synced).
type mixedCluster struct {
	pa            *testutil.Process
	ca, cb, crr   *redis.Client
	m, r          *liveNode
	aID, mID, rID string
	rrID          string
}

func startMixed(t *testing.T) *mixedCluster {
	t.Helper()
	ctx := context.Background()
	pa, ca := startClusterRedis(t)
	_, cb := startClusterRedis(t)
	_, crr := startClusterRedis(t, "--cluster-replica-validity-factor", "0")
	m := startLive(t, testutil.FreePort(t), testutil.FreePort(t))
	r := startLive(t, testutil.FreePort(t), testutil.FreePort(t))
	busPort := func(c *redis.Client) string {
		v, _ := c.ConfigGet(ctx, "cluster-port").Result()
		return v["cluster-port"]
	}
	clientPort := func(c *redis.Client) string { return strings.Split(c.Options().Addr, ":")[1] }
	for _, c := range []*redis.Client{cb, crr} {
		if err := ca.Do(ctx, "cluster", "meet", "127.0.0.1", clientPort(c), busPort(c)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []*liveNode{m, r} {
		if err := ca.Do(ctx, "cluster", "meet", "127.0.0.1", n.m.cfg.Port, n.cport).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var mID, rID string
	m.do(func() { mID = m.m.MyID() })
	r.do(func() { rID = r.m.MyID() })
	aID, _ := ca.ClusterMyID(ctx).Result()
	rrID, _ := crr.ClusterMyID(ctx).Result()
	testutil.WaitFor(t, 30*time.Second, "all five know each other", func() bool {
		for _, c := range []*redis.Client{ca, cb, crr} {
			nodes, _ := c.ClusterNodes(ctx).Result()
			if strings.Count(nodes, "\n") != 5 || strings.Contains(nodes, "handshake") {
				return false
			}
		}
		ok := true
		for _, n := range []*liveNode{m, r} {
			n.do(func() { ok = ok && len(n.m.KnownNodes()) == 5 && !strings.Contains(n.m.Nodes(false), "handshake") })
		}
		return ok
	})
	if err := ca.ClusterAddSlotsRange(ctx, 0, 5460).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cb.ClusterAddSlotsRange(ctx, 5461, 10922).Err(); err != nil {
		t.Fatal(err)
	}
	var err error
	m.do(func() { err = m.m.AddSlotsRange(time.Now(), "10923", "16383") })
	if err != nil {
		t.Fatal(err)
	}
	r.do(func() { err = r.m.Replicate(time.Now(), aID) })
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "RR knows M", func() bool { return nodesLineOf(ctx, crr, mID) != "" })
	if err := crr.Do(ctx, "cluster", "replicate", mID).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "cluster ok, replicas known everywhere", func() bool {
		for _, c := range []*redis.Client{ca, cb, crr} {
			info, _ := c.ClusterInfo(ctx).Result()
			if !strings.Contains(info, "cluster_state:ok") ||
				!strings.Contains(nodesLineOf(ctx, c, rID), "slave "+aID) ||
				!strings.Contains(nodesLineOf(ctx, c, rrID), "slave "+mID) {
				return false
			}
		}
		ok := true
		for _, n := range []*liveNode{m, r} {
			n.do(func() {
				a, _ := n.m.Node(aID)
				rr, _ := n.m.Node(rrID)
				ok = ok && n.m.State() == ClusterOK && len(a.Master) == 0 && rr.Master == mID
			})
		}
		return ok
	})

	return &mixedCluster{pa: pa, ca: ca, cb: cb, crr: crr, m: m, r: r, aID: aID, mID: mID, rID: rID, rrID: rrID}
}

func TestInteropFailoverBothWays(t *testing.T) {
	// A dies: R is elected with the votes of B (redis-server) and M
	// (ours). Then M dies: RR is elected with the votes of B and R.
	ctx := context.Background()
	x := startMixed(t)
	pa, cb, crr, m, r := x.pa, x.cb, x.crr, x.m, x.r
	rID, rrID := x.rID, x.rrID
	// A redis-server master dies; our replica takes over.
	pa.Kill()
	testutil.WaitFor(t, 30*time.Second, "R promoted, B agrees", func() bool {
		isMaster := false
		r.do(func() { isMaster = r.m.IsMaster() })
		l := nodesLineOf(ctx, cb, rID)
		return isMaster && strings.Contains(l, " master - ") && strings.HasSuffix(l, " connected 0-5460")
	})
	var rEpoch, mVote uint64
	r.do(func() { rEpoch = r.m.Myself().ConfigEpoch })
	m.do(func() { mVote = m.m.LastVoteEpoch() })
	if mVote != rEpoch {
		t.Fatalf("M's lastVoteEpoch %d, R won epoch %d", mVote, rEpoch)
	}
	if l := nodesLineOf(ctx, cb, rID); !strings.Contains(l, " "+strconv.FormatUint(rEpoch, 10)+" connected") {
		t.Fatalf("B's view of R: %s", l)
	}
	testutil.WaitFor(t, 10*time.Second, "cluster ok again", func() bool {
		info, _ := cb.ClusterInfo(ctx).Result()
		ok := false
		m.do(func() { ok = m.m.State() == ClusterOK })
		return ok && strings.Contains(info, "cluster_state:ok")
	})

	// Our master dies; its redis-server replica takes over with our vote.
	m.close()
	testutil.WaitFor(t, 30*time.Second, "RR promoted, R agrees", func() bool {
		role, _ := crr.Do(ctx, "role").Slice()
		if len(role) == 0 || role[0] != "master" {
			return false
		}
		ok := false
		r.do(func() {
			o, _ := r.m.SlotOwner(16383)
			ok = o.ID == rrID
		})
		return ok
	})
	var rVote uint64
	r.do(func() { rVote = r.m.LastVoteEpoch() })
	rrLine := nodesLineOf(ctx, crr, rrID)
	f := strings.Fields(rrLine)
	if len(f) < 9 || f[6] != strconv.FormatUint(rVote, 10) || f[8] != "10923-16383" {
		t.Fatalf("RR %s, R's lastVoteEpoch %d", rrLine, rVote)
	}
}

func TestInteropManualFailoverBothWays(t *testing.T) {
	// CLUSTER FAILOVER on our replica R of redis-server A: A pauses and
	// announces its offset, R matches it and is elected with FORCEACK
	// votes; A follows R. Then CLUSTER FAILOVER on redis-server RR of our
	// M: M pauses (PauseWrites, WritesPaused) and RR takes over.
	ctx := context.Background()
	x := startMixed(t)
	var err error
	x.r.do(func() { err = x.r.m.Failover(time.Now(), "") })
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "R promoted, A its replica", func() bool {
		isMaster := false
		x.r.do(func() { isMaster = x.r.m.IsMaster() })
		return isMaster && strings.Contains(nodesLineOf(ctx, x.ca, x.aID), "myself,slave "+x.rID)
	})
	if err := x.crr.Do(ctx, "cluster", "failover").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "RR promoted, M its replica", func() bool {
		ok := false
		x.m.do(func() { ok = !x.m.m.IsMaster() && x.m.m.Myself().Master == x.rrID })
		return ok && strings.Contains(nodesLineOf(ctx, x.crr, x.rrID), "myself,master ")
	})
	var pauses, unpauses int
	x.m.do(func() { pauses, unpauses = x.m.pauses, x.m.unpauses })
	if pauses != 1 || unpauses != 1 {
		t.Fatalf("M paused %d times, unpaused %d", pauses, unpauses)
	}
}
