package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/resp"
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

// TestReplicationKillMasterClientUnderLoad: the replica kills its master
// client (CLIENT KILL <master addr>, as Redis's replication-psync suite
// does) again and again while three writers change lists, sets and
// sorted sets in three databases; each time the link comes back with a
// partial resync, and at the end both datasets are equal. Commands left
// in the replica's read buffer when the client was killed were once
// counted in the offset without running, so the partial resync skipped
// them: lists and sets drifted apart within a few kills.
func TestReplicationKillMasterClientUnderLoad(t *testing.T) {
	master, _, mc, rc := linkedPair(t)
	c := ctx(t)
	if err := mc.ConfigSet(c, "repl-backlog-size", "100mb").Err(); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for w, db := range []int{9, 11, 12} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- complexWrites(master.addr, db, uint64(w), stop)
		}()
	}
	before := master.srv.repl.partialOK()
	kills := 0
	for i := 0; kills < 8 && i < 16; i++ {
		waitLinkUp(t, rc)
		time.Sleep(100 * time.Millisecond)
		c := ctx(t)
		if kills%2 == 1 {
			// As the suite's "ok after delay": the kill and a sleep in
			// one transaction, so the stream piles up meanwhile.
			p := rc.TxPipeline()
			p.Do(c, "CLIENT", "KILL", master.addr)
			p.Do(c, "DEBUG", "SLEEP", "0.2")
			if _, err := p.Exec(c); err != nil {
				t.Logf("kill in MULTI: %v", err) // the link may be down already
			} else {
				kills++
			}
			continue
		}
		if err := rc.Do(c, "CLIENT", "KILL", master.addr).Err(); err == nil {
			kills++
		}
	}
	close(stop)
	wg.Wait()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if kills < 8 {
		t.Fatalf("only %d of 16 kills found the master client", kills)
	}
	waitLinkUp(t, rc)
	c = ctx(t)
	testutil.WaitFor(t, 20*time.Second, "equal offsets", func() bool {
		return replInfoField(t, mc, "master_repl_offset") == replInfoField(t, rc, "slave_repl_offset")
	})
	partial := master.srv.repl.partialOK() - before
	full := master.srv.repl.fullSyncs() - 1
	if partial < int64(kills)-1 || full > 0 {
		t.Fatalf("%d kills: %d partial resyncs, %d full syncs", kills, partial, full)
	}
	if n := mc.DBSize(c).Val(); n != 0 {
		t.Fatalf("db 0 has %d keys; the writers use 9, 11 and 12", n)
	}
	da, dr := dataset(t, mc), dataset(t, rc)
	if len(da) < 50 {
		t.Fatalf("only %d keys written", len(da))
	}
	var diff []string
	for k, v := range da {
		if dr[k] != v {
			diff = append(diff, fmt.Sprintf("%s: master %q replica %q", k, v, dr[k]))
		}
	}
	for k, v := range dr {
		if _, ok := da[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: only on the replica: %q", k, v))
		}
	}
	if len(diff) > 0 {
		if len(diff) > 10 {
			diff = diff[:10]
		}
		t.Fatalf("after %d kills and %d partial resyncs, %d keys, the datasets differ:\n%s", kills, partial, len(da), strings.Join(diff, "\n"))
	}
	t.Logf("%d kills, %d partial resyncs, %d full syncs, %d keys equal", kills, partial, full, len(da))
}

// complexWrites changes lists, sets and sorted sets of 200 keys in db
// with pipelines of 20 commands until stop is closed (at most 20,000
// pipelines), like the Redis suite's createComplexDataset: pushes, pops
// and removals, whose outcome depends on every earlier write.
func complexWrites(addr string, db int, seed uint64, stop <-chan struct{}) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, DB: db, MaxRetries: -1})
	defer rc.Close()
	rng := rand.New(rand.NewPCG(seed, 7))
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 20000; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		p := rc.Pipeline()
		for j := 0; j < 20; j++ {
			n := rng.IntN(200)
			v := strconv.Itoa(rng.IntN(20))
			switch n % 3 {
			case 0:
				k := "list:" + strconv.Itoa(n)
				switch rng.IntN(5) {
				case 0:
					p.LPush(c, k, v)
				case 1:
					p.RPush(c, k, v)
				case 2:
					p.LRem(c, k, 0, v)
				case 3:
					p.RPop(c, k)
				default:
					p.LPop(c, k)
				}
			case 1:
				k := "set:" + strconv.Itoa(n)
				switch rng.IntN(4) {
				case 0, 1:
					p.SAdd(c, k, v)
				case 2:
					p.SRem(c, k, v)
				default:
					p.SUnionStore(c, "set:"+strconv.Itoa(rng.IntN(200)/3*3+1), k, "set:"+strconv.Itoa(rng.IntN(200)/3*3+1))
				}
			default:
				k := "zset:" + strconv.Itoa(n)
				if rng.IntN(3) == 0 {
					p.ZRem(c, k, v)
				} else {
					p.ZAdd(c, k, redis.Z{Score: rng.Float64(), Member: v})
				}
			}
		}
		if _, err := p.Exec(c); err != nil && err != redis.Nil {
			return fmt.Errorf("writer db %d: %w", db, err)
		}
	}
	return nil
}

// TestReplicationTransactionCountsAtExec: the offset of a replica counts
// a transaction from its master only once its EXEC ran, as Redis's does:
// a link cut between MULTI and EXEC drops the queued commands, and the
// partial resync must then ask for the transaction from its MULTI. The
// bytes read are counted at once (slave_read_repl_offset).
func TestReplicationTransactionCountsAtExec(t *testing.T) {
	rdb := emptyRDB(t)
	var first []byte
	first = resp.AppendCommandStrings(first, "SELECT", "0")
	first = resp.AppendCommandStrings(first, "SET", "a", "1")
	before := int64(100 + len(first))
	txn := resp.AppendCommandStrings(nil, "MULTI")
	txn = resp.AppendCommandStrings(txn, "INCR", "n")
	txn = resp.AppendCommandStrings(txn, "REPLCONF", "GETACK", "*")
	first = append(first, txn...)
	exec := resp.AppendCommandStrings(nil, "EXEC")
	acks := make(chan string, 16)
	addr, sendRest := streamingFakeMaster(t, rdb, first, exec, func(off string) {
		select {
		case acks <- off:
		default:
		}
	})
	rc := replicaOfAddr(t, addr)
	c := ctx(t)
	testutil.WaitFor(t, 10*time.Second, "the transaction's head read", func() bool {
		return replInfoField(t, rc, "slave_read_repl_offset") == strconv.FormatInt(before+int64(len(txn)), 10)
	})
	if got := replInfoField(t, rc, "slave_repl_offset"); got != strconv.FormatInt(before, 10) {
		t.Fatalf("slave_repl_offset = %s inside a transaction, want %d (before its MULTI)", got, before)
	}
	if got := rc.Get(c, "n").Val(); got != "" {
		t.Fatalf("n = %q before EXEC", got)
	}
	sendRest()
	testutil.WaitFor(t, 10*time.Second, "EXEC applied", func() bool { return rc.Get(ctx(t), "n").Val() == "1" })
	// The applier counts the transaction right after EXEC ran, not under
	// its locks: a GET can see n before INFO sees the offset, so wait for
	// the offset; it must go from before the MULTI (checked above) to the
	// end of EXEC, never to a value inside the transaction.
	end := strconv.FormatInt(before+int64(len(txn)+len(exec)), 10)
	testutil.WaitFor(t, 10*time.Second, "the offset after EXEC", func() bool {
		got := replInfoField(t, rc, "slave_repl_offset")
		if got != end && got != strconv.FormatInt(before, 10) {
			t.Fatalf("slave_repl_offset = %s after EXEC, want %s (or %d until it is counted)", got, end, before)
		}
		return got == end
	})
	// The once-a-second ACK (or the GETACK's) reports a whole offset:
	// before the transaction or after it, never inside.
	for deadline := time.After(5 * time.Second); ; {
		select {
		case a := <-acks:
			if a == end {
				return
			}
			if n, _ := strconv.ParseInt(a, 10, 64); n > before {
				t.Fatalf("REPLCONF ACK %s, want at most %d or %s", a, before, end)
			}
			continue
		case <-deadline:
			t.Fatalf("no REPLCONF ACK %s after EXEC", end)
		}
	}
}

// TestReplBacklogResize: CONFIG SET repl-backlog-size resizes the backlog
// of a running master and keeps the history the new size holds (Redis's
// resizeReplicationBacklog); a replica cut afterwards still continues.
func TestReplBacklogResize(t *testing.T) {
	master, _, mc, rc := linkedPair(t)
	c := ctx(t)
	histlen := func() int {
		n, _ := strconv.Atoi(replInfoField(t, mc, "repl_backlog_histlen"))
		return n
	}
	value := strings.Repeat("v", 200)
	for i := 0; i < 200; i++ { // ~48 kB of stream
		mc.Set(c, "k"+strconv.Itoa(i), value, 0)
	}
	before := histlen()
	if before < 40000 {
		t.Fatalf("histlen %d after ~48 kB of writes", before)
	}
	if err := mc.ConfigSet(c, "repl-backlog-size", "10mb").Err(); err != nil {
		t.Fatal(err)
	}
	if got := histlen(); got != before {
		t.Fatalf("histlen %d after growing, want %d", got, before)
	}
	if err := mc.ConfigSet(c, "repl-backlog-size", "20000").Err(); err != nil {
		t.Fatal(err)
	}
	if got := histlen(); got != 20000 {
		t.Fatalf("histlen %d after shrinking to 20000", got)
	}
	// One INFO for both fields: a replication PING may be fed between two.
	info := mc.Info(c, "replication").Val()
	field := func(name string) int64 {
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatalf("no %s in INFO replication", name)
		return 0
	}
	first, off := field("repl_backlog_first_byte_offset"), field("master_repl_offset")
	if first != off-20000+1 {
		t.Fatalf("first byte offset %d, master offset %d: want a 20000-byte history", first, off)
	}
	partial := master.srv.repl.partialOK()
	testutil.WaitFor(t, 10*time.Second, "replica caught up", func() bool {
		n, _ := strconv.ParseInt(replInfoField(t, rc, "slave_repl_offset"), 10, 64)
		return n >= off
	})
	if err := rc.Do(c, "CLIENT", "KILL", master.addr).Err(); err != nil {
		t.Fatal(err)
	}
	mc.Set(c, "after-cut", "1", 0)
	testutil.WaitFor(t, 10*time.Second, "partial resync from the resized backlog", func() bool {
		return master.srv.repl.partialOK() > partial
	})
	sameDataset(t, mc, rc)
}
