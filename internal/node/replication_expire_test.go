package node

import (
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// A replica hides keys that expired but keeps them until the master's DEL;
// the master's DEL removes them (the master link sees expired keys as
// alive); keys a writable replica's own writes gave a TTL are expired by
// the replica itself.
func TestReplicaExpiry(t *testing.T) {
	_, _, mc, rc := linkedPair(t)
	c := ctx(t)

	// The master does not expire on its own: the replica must keep the
	// key (hidden) until the master deletes it.
	if err := mc.Do(c, "DEBUG", "SET-ACTIVE-EXPIRE", "0").Err(); err != nil {
		t.Fatal(err)
	}
	mc.Set(c, "k", "v", 50*time.Millisecond)
	testutil.WaitFor(t, 5*time.Second, "k replicated and expired", func() bool {
		return rc.DBSize(c).Val() == 1 && rc.Exists(c, "k").Val() == 0
	})
	if v := rc.Get(c, "k").Val(); v != "" {
		t.Fatalf("GET of an expired key on the replica = %q", v)
	}
	time.Sleep(1200 * time.Millisecond) // a replication cron tick
	if n := rc.DBSize(c).Val(); n != 1 {
		t.Fatalf("replica deleted an expired key on its own: dbsize %d", n)
	}
	// The master's lazy expiry propagates a DEL that reaches the key.
	if n := mc.Exists(c, "k").Val(); n != 0 {
		t.Fatalf("EXISTS on master = %d", n)
	}
	testutil.WaitFor(t, 5*time.Second, "DEL from master applied", func() bool {
		return rc.DBSize(c).Val() == 0
	})

	// A writable replica expires the keys its own writes gave a TTL.
	if err := rc.ConfigSet(c, "replica-read-only", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(c, "local", "1", 100*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(c, "local2", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Expire(c, "local2", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 6*time.Second, "local keys expired by the replica", func() bool {
		return rc.DBSize(c).Val() == 0
	})
	if err := mc.Set(c, "x", "y", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "stream still applied", func() bool {
		return rc.Get(c, "x").Val() == "y"
	})
	if info := rc.Info(c, "replication").Val(); !strings.Contains(info, "master_link_status:up") {
		t.Fatalf("link down: %s", info)
	}
}
