package node

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, p := hostPort(ln.Addr().String())
	ln.Close()
	return p
}

// waitPortFree waits until a stopped server's listener is closed.
func waitPortFree(t *testing.T, port string) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, "port "+port+" free", func() bool {
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			return false
		}
		ln.Close()
		return true
	})
}

// TestReplicationMasterRestartPartialResync: a master saves its
// replication id and offset in the RDB on SHUTDOWN; restarted from it, it
// keeps the old id as replid2 and its replica continues partially
// (+CONTINUE, sync_partial_ok), receiving the DELs of the keys that expired
// while the master was down (fed to the backlog at load, as Redis does).
func TestReplicationMasterRestartPartialResync(t *testing.T) {
	port, dir := freePort(t), t.TempDir()
	master := startServer(t, "port", port, "dir", dir, "enable-debug-command", "yes")
	mc := master.client(t)
	replica := startServer(t)
	rc := replica.client(t)
	c := ctx(t)
	if err := rc.Do(c, "REPLICAOF", "127.0.0.1", port).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, rc)
	fill(t, mc, "k", 50)
	if err := mc.Do(c, "DEBUG", "SET-ACTIVE-EXPIRE", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		mc.Set(c, "vol:"+strconv.Itoa(i), "x", 20*time.Millisecond)
	}
	testutil.WaitFor(t, 10*time.Second, "equal offsets", func() bool {
		return replInfoField(t, mc, "master_repl_offset") == replInfoField(t, rc, "master_repl_offset")
	})
	replid := replInfoField(t, mc, "master_replid")
	offset, _ := strconv.ParseInt(replInfoField(t, mc, "master_repl_offset"), 10, 64)
	time.Sleep(50 * time.Millisecond) // the volatile keys expire
	_ = mc.Do(c, "SHUTDOWN", "SAVE").Err()
	testutil.WaitFor(t, 10*time.Second, "link down", func() bool { return replInfoField(t, rc, "master_link_status") == "down" })

	waitPortFree(t, port)
	master2 := startServer(t, "port", port, "dir", dir)
	mc2 := master2.client(t)
	waitLinkUp(t, rc)
	if got := replInfoField(t, mc2, "master_replid2"); got != replid {
		t.Fatalf("master_replid2 = %s, want the old replid %s", got, replid)
	}
	if got := replInfoField(t, mc2, "master_replid"); got == replid {
		t.Fatal("the restarted master kept its old replid as the main one")
	}
	if got := replInfoField(t, mc2, "second_repl_offset"); got != strconv.FormatInt(offset+1, 10) {
		t.Fatalf("second_repl_offset = %s, want %d", got, offset+1)
	}
	if got := infoLine(mc2.Info(c, "persistence").Val(), "rdb_last_load_keys_expired"); got != "30" {
		t.Fatalf("rdb_last_load_keys_expired = %s, want 30", got)
	}
	hist, _ := strconv.ParseInt(replInfoField(t, mc2, "repl_backlog_histlen"), 10, 64)
	if got := replInfoField(t, mc2, "master_repl_offset"); got != strconv.FormatInt(offset+hist, 10) || hist == 0 {
		t.Fatalf("master_repl_offset = %s, want %d + %d bytes of DELs", got, offset, hist)
	}
	if full, ok := replInfoField(t, mc2, "sync_full"), replInfoField(t, mc2, "sync_partial_ok"); full != "0" || ok != "1" {
		t.Fatalf("restarted master: sync_full=%s sync_partial_ok=%s, want a partial resync", full, ok)
	}
	testutil.WaitFor(t, 10*time.Second, "equal offsets after restart", func() bool {
		return replInfoField(t, mc2, "master_repl_offset") == replInfoField(t, rc, "master_repl_offset")
	})
	mc2.Set(c, "after", "restart", 0)
	testutil.WaitFor(t, 10*time.Second, "write after restart replicated", func() bool { return rc.Get(c, "after").Val() == "restart" })
	for _, db := range []int{0, 3} {
		a := master2.srv.DB(db).Size()
		b := replica.srv.DB(db).Size()
		if a != b {
			t.Fatalf("db %d: master %d keys, replica %d", db, a, b)
		}
	}
	if n := replica.srv.DB(0).Size(); n == 0 {
		t.Fatal("replica lost its dataset")
	}
	if v := rc.Exists(c, "vol:1").Val(); v != 0 {
		t.Fatal("expired key still on the replica")
	}
	sameDataset(t, mc2, rc)
}

func infoLine(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// TestReplicationReplicaRestartPartialResync: a replica restarted from its
// own RDB (replicaof in its config) takes the saved id and offset as its
// cached master and continues partially.
func TestReplicationReplicaRestartPartialResync(t *testing.T) {
	master := startServer(t)
	mc := master.client(t)
	c := ctx(t)
	h, p := hostPort(master.addr)
	rport, rdir := freePort(t), t.TempDir()
	replica := startServer(t, "port", rport, "dir", rdir, "replicaof", h+" "+p)
	rc := replica.client(t)
	waitLinkUp(t, rc)
	fill(t, mc, "k", 30)
	testutil.WaitFor(t, 10*time.Second, "equal offsets", func() bool {
		return replInfoField(t, mc, "master_repl_offset") == replInfoField(t, rc, "master_repl_offset")
	})
	_ = rc.Do(c, "SHUTDOWN", "SAVE").Err()
	mc.Set(c, "while-down", "1", 0) // within the backlog
	waitPortFree(t, rport)
	replica2 := startServer(t, "port", rport, "dir", rdir, "replicaof", h+" "+p)
	rc2 := replica2.client(t)
	waitLinkUp(t, rc2)
	testutil.WaitFor(t, 10*time.Second, "write made while down", func() bool { return rc2.Get(c, "while-down").Val() == "1" })
	if full, ok := replInfoField(t, mc, "sync_full"), replInfoField(t, mc, "sync_partial_ok"); full != "1" || ok != "1" {
		t.Fatalf("master: sync_full=%s sync_partial_ok=%s, want the restarted replica to continue partially", full, ok)
	}
	sameDataset(t, mc, rc2)
}
