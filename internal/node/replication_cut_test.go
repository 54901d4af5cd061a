package node

import (
	"bytes"
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

// TestReplicationKillMasterClientUnderLoad: the replica kills its master
// client (CLIENT KILL <master addr>, as Redis's replication-psync suite
// does) again and again while three writers change lists, sets and
// sorted sets in three databases; each time the link comes back with a
// partial resync, and at the end both datasets are equal. Commands left
// in the replica's read buffer when the client was killed were once
// counted in the offset without running, so the partial resync skipped
// them: lists and sets drifted apart within a few kills.
func TestReplicationKillMasterClientUnderLoad(t *testing.T) {
	master := startServer(t)
	replica := startServer(t)
	mc, rc := master.client(t), replica.client(t)
	c := ctx(t)
	if err := mc.ConfigSet(c, "repl-backlog-size", "100mb").Err(); err != nil {
		t.Fatal(err)
	}
	h, p := hostPort(master.addr)
	if err := rc.Do(c, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, rc)

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
	before := master.srv.repl.syncPartialOK
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
	master.srv.repl.mu.Lock()
	partial := master.srv.repl.syncPartialOK - before
	full := master.srv.repl.syncFull - 1
	master.srv.repl.mu.Unlock()
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
	empty := startServer(t)
	var rdb bytes.Buffer
	if err := empty.srv.WriteRDB(&rdb); err != nil {
		t.Fatal(err)
	}
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
	addr, sendRest := streamingFakeMaster(t, rdb.Bytes(), first, exec, func(off string) {
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
	end := strconv.FormatInt(before+int64(len(txn)+len(exec)), 10)
	if got := replInfoField(t, rc, "slave_repl_offset"); got != end {
		t.Fatalf("slave_repl_offset = %s after EXEC, want %s", got, end)
	}
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
