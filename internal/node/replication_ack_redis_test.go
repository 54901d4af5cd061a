package node

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// A redis-server that ran as a master, with nothing replicated, and then
// becomes our replica by REPLICAOF (CLUSTER REPLICATE does the same) asks
// PSYNC <its own replid> 1: a history with no byte. A master with
// min-replicas-ack once took it for a history unknown to a restarted
// master, refused to resynchronize it, and answered NOREPLICAS to every
// write until a failover. It gets a full resync, and acknowledged writes.
func TestAckRedisServerReplicaAttachedAtRuntime(t *testing.T) {
	bin := testutil.LookPath(t, "redis-server")
	m := startServer(t, "min-replicas-ack", "1")
	mc := m.client(t)
	rc := redis.NewClient(&redis.Options{Addr: startRedisServer(t, bin), DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	c := ctx(t)
	if err := mc.Set(c, "k", "v", 0).Err(); err == nil || err.Error() != "NOREPLICAS Not enough good replicas to write." {
		t.Fatalf("write without a replica: %v", err)
	}
	h, p := hostPort(m.addr)
	if err := rc.Do(c, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "redis-server replica link up", func() bool {
		return replInfoField(t, rc, "master_link_status") == "up"
	})
	testutil.WaitFor(t, 10*time.Second, "the replica eligible on the master", func() bool {
		return replInfoField(t, mc, "min_replicas_ack_eligible") == "1"
	})
	if err := mc.Set(c, "k", "v", 0).Err(); err != nil {
		t.Fatalf("write with the replica online: %v", err)
	}
	if got := replInfoField(t, mc, "min_replicas_ack_restart_refused"); got != "0" {
		t.Errorf("min_replicas_ack_restart_refused = %s", got)
	}
	testutil.WaitFor(t, 5*time.Second, "k on the replica", func() bool { return rc.Get(c, "k").Val() == "v" })
}
