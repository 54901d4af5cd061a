package node

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// Regressions found by Redis's integration/replication-psync.tcl.

// A link cut by CLIENT KILL on the replica (the master client is listed)
// resumes partially, and the stream keeps applying to the database the
// master last selected (the master sends no SELECT on a partial resync).
func TestReplicationPartialKeepsSelectedDB(t *testing.T) {
	master := startServer(t)
	replica := startServer(t)
	c := ctx(t)
	mc := redis.NewClient(&redis.Options{Addr: master.addr, DB: 5})
	defer mc.Close()
	rc := redis.NewClient(&redis.Options{Addr: replica.addr, DB: 5})
	defer rc.Close()
	h, p := hostPort(master.addr)
	if err := rc.Do(c, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, rc)
	mc.Set(c, "a", "1", 0)
	testutil.WaitFor(t, 5*time.Second, "a replicated", func() bool { return rc.Get(c, "a").Val() == "1" })

	// The master client appears in CLIENT LIST with flags=M; kill it.
	list := rc.ClientList(c).Val()
	addr := ""
	for _, line := range splitLines(list) {
		if fields := clientFields(line); fields["flags"] == "M" {
			addr = fields["addr"]
		}
	}
	if addr == "" {
		t.Fatalf("no master client in CLIENT LIST:\n%s", list)
	}
	before := replInfoField(t, mc, "sync_partial_ok")
	if err := rc.Do(c, "CLIENT", "KILL", addr).Err(); err != nil {
		t.Fatal(err)
	}
	mc.Set(c, "b", "2", 0)
	testutil.WaitFor(t, 10*time.Second, "partial resync", func() bool {
		return replInfoField(t, mc, "sync_partial_ok") != before
	})
	mc.Set(c, "c", "3", 0)
	testutil.WaitFor(t, 5*time.Second, "writes after the cut in db 5", func() bool {
		return rc.Get(c, "b").Val() == "2" && rc.Get(c, "c").Val() == "3"
	})
	r0 := redis.NewClient(&redis.Options{Addr: replica.addr, DB: 0})
	defer r0.Close()
	if n := r0.DBSize(c).Val(); n != 0 {
		t.Fatalf("replica db 0 has %d keys (stream applied to the wrong database)", n)
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if line := s[:i]; len(line) > 0 {
			out = append(out, line)
		}
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

func clientFields(line string) map[string]string {
	m := map[string]string{}
	start := 0
	for i := 0; i <= len(line); i++ {
		if i == len(line) || line[i] == ' ' {
			kv := line[start:i]
			for j := 0; j < len(kv); j++ {
				if kv[j] == '=' {
					m[kv[:j]] = kv[j+1:]
					break
				}
			}
			start = i + 1
		}
	}
	return m
}

// FAILOVER without a target hands over to the replica that reached our
// offset, with PSYNC ... FAILOVER: the target promotes itself and the old
// master continues from it partially (no full sync), with every write.
func TestFailoverAnyReplica(t *testing.T) {
	a := startServer(t)
	b := startServer(t)
	ac, bc := a.client(t), b.client(t)
	c := ctx(t)
	h, p := hostPort(a.addr)
	if err := bc.Do(c, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, bc)
	fill(t, ac, "pre", 20)
	if err := ac.Set(c, "last", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	fullBefore := replInfoField(t, bc, "sync_full")
	if err := ac.Do(c, "FAILOVER").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "failover done", func() bool {
		return replInfoField(t, ac, "master_failover_state") == "no-failover" &&
			replInfoField(t, ac, "role") == "slave" && replInfoField(t, bc, "role") == "master"
	})
	waitLinkUp(t, ac)
	if got := replInfoField(t, bc, "sync_full"); got != fullBefore {
		t.Fatalf("new master served a full sync (sync_full %s -> %s)", fullBefore, got)
	}
	if replInfoField(t, bc, "sync_partial_ok") == "0" {
		t.Fatal("old master did not continue partially")
	}
	if v := bc.Get(c, "last").Val(); v != "1" {
		t.Fatalf("last write lost: %q", v)
	}
	sameDataset(t, ac, bc)
	// The old master is now a replica: FAILOVER is refused there.
	if err := ac.Do(c, "FAILOVER").Err(); err == nil {
		t.Fatal("FAILOVER on a replica accepted")
	}
}

// PSYNC2 chain (Redis's psync2.tcl): when a master becomes the replica of
// its promoted replica and continues partially under the new replication
// id, its own replicas are dropped before any byte of the new history
// reaches them, so they continue partially too (no full sync).
func TestReplicationSubReplicasContinueAfterReplIDChange(t *testing.T) {
	m := startServer(t)
	a := startServer(t)
	b := startServer(t)
	mc, ac, bc := m.client(t), a.client(t), b.client(t)
	c := ctx(t)
	mh, mp := hostPort(m.addr)
	for _, rc := range []*redis.Client{ac, bc} {
		if err := rc.Do(c, "REPLICAOF", mh, mp).Err(); err != nil {
			t.Fatal(err)
		}
		waitLinkUp(t, rc)
	}
	mc.Set(c, "k0", "v", 0)
	testutil.WaitFor(t, 5*time.Second, "k0 everywhere", func() bool {
		return ac.Get(c, "k0").Val() == "v" && bc.Get(c, "k0").Val() == "v"
	})
	if err := ac.Do(c, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	// New history on the promoted node, before the old master follows it.
	for i := 0; i < 20; i++ {
		ac.Set(c, "new"+strconv.Itoa(i), "x", 0)
	}
	fullBefore := replInfoField(t, mc, "sync_full")
	ah, ap := hostPort(a.addr)
	if err := mc.Do(c, "REPLICAOF", ah, ap).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "b follows the new history", func() bool {
		return bc.Get(c, "new19").Val() == "x" && replInfoField(t, bc, "master_link_status") == "up"
	})
	if got := replInfoField(t, mc, "sync_full"); got != fullBefore {
		t.Fatalf("sub-replica needed a full sync (sync_full %s -> %s)", fullBefore, got)
	}
	if got := replInfoField(t, ac, "sync_full"); got != "0" {
		t.Fatalf("old master needed a full sync from the promoted node (sync_full %s)", got)
	}
	sameDataset(t, ac, bc)
}
