package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/slotmig"
	"github.com/shardis/shardis/internal/testutil"
)

// keyInSlot returns a key of slot, named after tag.
func keyInSlot(slot int, tag string) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s:%d", tag, i)
		if keySlot(k) == slot {
			return k
		}
	}
}

// migStatus returns STATUS ID id's fields, nil if the task is unknown.
func migStatus(t *testing.T, n *clNode, id string) map[string]string {
	t.Helper()
	v, err := n.rc.Do(ctx(t), "cluster", "migration", "status", "id", id).Result()
	if err != nil {
		t.Fatalf("%s STATUS: %v", n.addr, err)
	}
	tasks, _ := v.([]any)
	if len(tasks) == 0 {
		return nil
	}
	out := map[string]string{}
	switch f := tasks[0].(type) {
	case []any:
		for i := 0; i+1 < len(f); i += 2 {
			out[fmt.Sprint(f[i])] = fmt.Sprint(f[i+1])
		}
	case map[any]any:
		for k, v := range f {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	}
	return out
}

func waitMigState(t *testing.T, n *clNode, id string, states ...string) map[string]string {
	t.Helper()
	var st map[string]string
	testutil.WaitFor(t, clusterTimeout, "migration "+id+" to reach "+strings.Join(states, "|"), func() bool {
		st = migStatus(t, n, id)
		for _, s := range states {
			if st != nil && st["state"] == s {
				return true
			}
		}
		return false
	})
	return st
}

// errorCount returns errorstat_<code>'s count on n.
func errorCount(t *testing.T, n *clNode, code string) int {
	t.Helper()
	info, err := n.rc.Info(ctx(t), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "errorstat_"+code+":count="); ok {
			c, _ := strconv.Atoi(v)
			return c
		}
	}
	return 0
}

func countKeys(t *testing.T, n *clNode, slots []int) int {
	total := 0
	for _, s := range slots {
		c, err := n.rc.Do(ctx(t), "cluster", "countkeysinslot", s).Int()
		if err != nil {
			t.Fatal(err)
		}
		total += c
	}
	return total
}

// writers runs k go-redis ClusterClient writers that INCR one counter
// each (half of them in moving slots) until stop, counting the
// acknowledged increments.
type writers struct {
	keys  []string
	acked []atomic.Int64
	errs  atomic.Int64
	first atomic.Value
	wg    sync.WaitGroup
	stop  chan struct{}
}

func startWriters(cc *redis.ClusterClient, keys []string) *writers {
	w := &writers{keys: keys, acked: make([]atomic.Int64, len(keys)), stop: make(chan struct{})}
	for i, k := range keys {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for n := 0; n < 1_000_000; n++ {
				select {
				case <-w.stop:
					return
				default:
				}
				c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := cc.Incr(c, k).Err()
				cancel()
				if err != nil {
					w.errs.Add(1)
					w.first.CompareAndSwap(nil, err.Error())
					time.Sleep(time.Millisecond)
					continue
				}
				w.acked[i].Add(1)
			}
		}()
	}
	return w
}

func (w *writers) halt() { close(w.stop); w.wg.Wait() }

// check verifies every counter holds exactly its acknowledged increments.
func (w *writers) check(t *testing.T, cc *redis.ClusterClient) {
	t.Helper()
	if n := w.errs.Load(); n > 0 {
		t.Errorf("%d write errors, first: %v", n, w.first.Load())
	}
	for i, k := range w.keys {
		v, err := cc.Get(ctx(t), k).Int64()
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		if v != w.acked[i].Load() {
			t.Errorf("%s = %d, %d increments acknowledged", k, v, w.acked[i].Load())
		}
	}
}

// TestSlotMigrationImport moves slots 0-99, holding keys of every type
// (TTLs among them), from A to B under concurrent INCRs through a go-redis
// ClusterClient: every acknowledged increment is there afterwards, no
// client got ASK or TRYAGAIN, the keys reached B's replica, and A and its
// replica dropped them.
func TestSlotMigrationImport(t *testing.T) {
	a, b := startShardNode(t, 0, 0, ""), startShardNode(t, 0, 0, "")
	ra, rb := startShardNode(t, 0, 0, ""), startShardNode(t, 0, 0, "")
	buildCluster(t, []*clNode{a, b}, []*clNode{ra, rb}, false)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.addr}, MaxRedirects: 8})
	defer cc.Close()

	var slots []int
	for s := 0; s < 100; s++ {
		slots = append(slots, s)
	}
	type want struct{ typ, ttl string }
	wantKeys := map[string]want{}
	bigVals := map[string]string{} // values of 40 KiB and more: big bulks on the stream
	for _, s := range slots {
		if s%10 == 7 {
			kb := keyInSlot(s, "big")
			bigVals[kb] = string(bigString(40<<10+s*1000, uint64(s)))
			a.do(t, "set", kb, bigVals[kb])
			wantKeys[kb] = want{"string", ""}
		}
		k := keyInSlot(s, "k")
		switch s % 6 {
		case 0:
			a.do(t, "set", k, strings.Repeat("v", s+1))
			wantKeys[k] = want{"string", ""}
		case 1:
			a.do(t, "rpush", k, "a", "b", "c")
			wantKeys[k] = want{"list", ""}
		case 2:
			a.do(t, "hset", k, "f", "v", "g", "w")
			wantKeys[k] = want{"hash", ""}
		case 3:
			a.do(t, "sadd", k, "x", "y")
			wantKeys[k] = want{"set", ""}
		case 4:
			a.do(t, "zadd", k, 1, "x", 2, "y")
			wantKeys[k] = want{"zset", ""}
		case 5:
			a.do(t, "set", k, "ttl", "px", 600000)
			wantKeys[k] = want{"string", "ttl"}
		}
	}
	// Writers: counters in moving slots and outside them.
	var counters []string
	for i := 0; i < 4; i++ {
		counters = append(counters, keyInSlot(i*25+3, "ctr"), keyInSlot(200+i, "ctr"))
	}
	w := startWriters(cc, counters)
	time.Sleep(200 * time.Millisecond)

	id := b.str(t, "cluster", "migration", "import", 0, 99)
	if len(id) != 40 {
		t.Fatalf("IMPORT replied %q", id)
	}
	st := waitMigState(t, b, id, slotmig.StateCompleted, slotmig.StateFailed, slotmig.StateCanceled)
	if st["state"] != slotmig.StateCompleted {
		t.Fatalf("import ended %v", st)
	}
	if st["source"] != a.id(t) || st["dest"] != b.id(t) || st["operation"] != slotmig.OpImport || st["slots"] != "0-99" {
		t.Fatalf("status %v", st)
	}
	srcSt := waitMigState(t, a, id, slotmig.StateCompleted)
	if srcSt["operation"] != slotmig.OpMigrate {
		t.Fatalf("source status %v", srcSt)
	}
	t.Logf("write pause %s ms (source), keys %s", srcSt["write_pause_ms"], srcSt["keys"])
	time.Sleep(200 * time.Millisecond) // writes go on after the flip
	w.halt()
	w.check(t, cc)

	for _, n := range []*clNode{a, b, ra, rb} {
		for _, code := range []string{"ASK", "TRYAGAIN"} {
			if c := errorCount(t, n, code); c != 0 {
				t.Errorf("%s replied %s %d times", n.addr, code, c)
			}
		}
	}
	// Every node sees B as the owner of 0-99.
	bid := b.id(t)
	for _, n := range []*clNode{a, b, ra, rb} {
		testutil.WaitFor(t, clusterTimeout, n.addr+" to bind 0-99 to B", func() bool {
			v, err := n.rc.ClusterSlots(ctx(t)).Result()
			if err != nil {
				return false
			}
			for _, r := range v {
				if r.Start == 0 && r.End == 99 && r.Nodes[0].ID == bid {
					return true
				}
			}
			return false
		})
	}
	for k, wk := range wantKeys {
		typ, err := cc.Type(ctx(t), k).Result()
		if err != nil || typ != wk.typ {
			t.Fatalf("TYPE %s = %q %v, want %s", k, typ, err, wk.typ)
		}
		ttl := b.do(t, "pttl", k).(int64)
		if (wk.ttl != "") != (ttl > 0) {
			t.Fatalf("PTTL %s = %d", k, ttl)
		}
	}
	for k, v := range bigVals {
		if got := b.str(t, "get", k); got != v {
			t.Fatalf("GET %s on the target: %d bytes that differ from the %d written", k, len(got), len(v))
		}
	}
	if n := countKeys(t, a, slots); n != 0 {
		t.Fatalf("source kept %d keys of the moved slots", n)
	}
	testutil.WaitFor(t, clusterTimeout, "A's replica to drop the slots' keys", func() bool { return countKeys(t, ra, slots) == 0 })
	nwant := len(wantKeys) + 4
	testutil.WaitFor(t, clusterTimeout, "B's replica to hold the slots' keys", func() bool { return countKeys(t, rb, slots) == nwant })
	if n := countKeys(t, b, slots); n != nwant {
		t.Fatalf("target holds %d keys, want %d", n, nwant)
	}
	info, _ := b.rc.Info(ctx(t), "cluster").Result()
	if !strings.Contains(info, "cluster_slot_migration_active_tasks:0") {
		t.Fatalf("INFO cluster:\n%s", info)
	}
}

// TestSlotMigrationCancel cancels an import mid-way (B waits for its
// frozen replica to acknowledge the snapshot): B drops what it imported,
// A keeps owning and serving the slots with every key and every
// acknowledged write.
func TestSlotMigrationCancel(t *testing.T) {
	a, b, rb := startShardNode(t, 0, 0, ""), startShardNode(t, 0, 0, ""), startShardNode(t, 0, 0, "")
	// B is the first master (slots 0-8191) so that rb replicates it.
	buildCluster(t, []*clNode{b, a}, []*clNode{rb}, false)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.addr}, MaxRedirects: 8})
	defer cc.Close()
	slots := []int{9010, 9011, 9012}
	for _, s := range slots {
		for i := 0; i < 20; i++ {
			a.do(t, "set", keyInSlot(s, fmt.Sprintf("c%d", i)), i)
		}
	}
	w := startWriters(cc, []string{keyInSlot(9011, "ctr"), keyInSlot(9300, "ctr")})
	// B's replica is frozen: B cannot get the snapshot acknowledged, so
	// it stays in streaming until canceled.
	go rb.rc.Do(context.Background(), "debug", "sleep", "3")
	time.Sleep(50 * time.Millisecond)
	id := b.str(t, "cluster", "migration", "import", 9010, 9012)
	waitMigState(t, b, id, slotmig.StateStreaming)
	if n := b.do(t, "cluster", "migration", "cancel", "id", id).(int64); n != 1 {
		t.Fatalf("CANCEL = %d", n)
	}
	st := migStatus(t, b, id)
	if st["state"] != slotmig.StateCanceled {
		t.Fatalf("after CANCEL: %v", st)
	}
	waitMigState(t, a, id, slotmig.StateFailed)
	if n := countKeys(t, b, slots); n != 0 {
		t.Fatalf("target kept %d imported keys", n)
	}
	time.Sleep(100 * time.Millisecond)
	w.halt()
	w.check(t, cc)
	aid := a.id(t)
	for _, s := range slots {
		if o := clusterOwnerID(t, b, s); o != aid {
			t.Fatalf("slot %d owned by %s after the cancel", s, o)
		}
	}
	if n := countKeys(t, a, slots); n != 61 {
		t.Fatalf("source holds %d keys, want 61", n)
	}
	if n := b.do(t, "cluster", "migration", "cancel", "all").(int64); n != 0 {
		t.Fatalf("CANCEL ALL with nothing running = %d", n)
	}
}

func clusterOwnerID(t *testing.T, n *clNode, slot int) string {
	v, err := n.rc.ClusterSlots(ctx(t)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v {
		if r.Start <= slot && slot <= r.End {
			return r.Nodes[0].ID
		}
	}
	return ""
}

// TestSlotMigrationArgs: IMPORT's checks and STATUS of unknown tasks.
func TestSlotMigrationArgs(t *testing.T) {
	a, b := startShardNode(t, 0, 0, ""), startShardNode(t, 0, 0, "")
	buildCluster(t, []*clNode{a, b}, nil, false)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"import", 0}, "ERR wrong number of arguments for 'cluster|migration' command"},
		{[]any{"import", 5, 3}, "ERR start slot number 5 is greater than end slot number 3"},
		{[]any{"import", 0, 16384}, "ERR Invalid or out of range slot"},
		{[]any{"import", 0, 5, 3, 7}, "ERR Slot 3 specified multiple times"},
		{[]any{"import", 0, 10}, "ERR Slot 0 is already served by this node"},
	} {
		_, err := a.rc.Do(ctx(t), append([]any{"cluster", "migration"}, tc.args...)...).Result()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if st := migStatus(t, a, "nosuchid"); st != nil {
		t.Fatalf("status of an unknown id: %v", st)
	}
	v := a.do(t, "cluster", "migration", "status", "all").([]any)
	if len(v) != 0 {
		t.Fatalf("STATUS ALL = %v", v)
	}
}
