package node

import (
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// FAILOVER queued in MULTI, as in Redis 7.0 (no no-multi flag): EXEC
// replies OK for it at once, the transaction's commands after it run,
// and the failover then hands over with every write of the transaction.
// The EXEC once waited inside the handler for the writes in flight, of
// which it is one, holding its locks: its reply came only when the wait's
// bound (failoverDrain) ran out. The EXEC reply is read with half that
// bound as its deadline: it has nothing to wait for.
func TestFailoverInMulti(t *testing.T) {
	a := startServer(t)
	b := startServer(t)
	ac, bc := a.client(t), b.client(t)
	c := ctx(t)
	h, p := hostPort(a.addr)
	if err := bc.Do(c, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, bc)
	testutil.WaitFor(t, 10*time.Second, "the replica online on the master", func() bool {
		return replInfoField(t, ac, "connected_slaves") == "1"
	})

	rc := a.raw(t)
	rc.expect("MULTI\r\n", "+OK")
	rc.expect("SET before 1\r\n", "+QUEUED")
	rc.expect("FAILOVER\r\n", "+QUEUED")
	rc.expect("SET after 2\r\n", "+QUEUED")
	rc.send("EXEC\r\n")
	_ = rc.nc.SetReadDeadline(time.Now().Add(failoverDrain / 2))
	for _, want := range []string{"*3", "+OK", "+OK", "+OK"} {
		line, err := rc.br.ReadString('\n')
		if err != nil {
			t.Fatalf("EXEC reply: %v (got %q, want %q)", err, line, want)
		}
		if line != want+"\r\n" {
			t.Fatalf("EXEC reply line %q, want %q", line, want)
		}
	}

	testutil.WaitFor(t, 10*time.Second, "failover done", func() bool {
		return replInfoField(t, ac, "master_failover_state") == "no-failover" &&
			replInfoField(t, ac, "role") == "slave" && replInfoField(t, bc, "role") == "master"
	})
	for k, want := range map[string]string{"before": "1", "after": "2"} {
		if v := bc.Get(c, k).Val(); v != want {
			t.Errorf("new master: %s = %q, want %q", k, v, want)
		}
	}
}
