package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/testutil"
)

// dataset renders every key of db 0..15 with its type and value, for
// comparing two servers.
func dataset(t *testing.T, rc *redis.Client) map[string]string {
	t.Helper()
	c := ctx(t)
	out := map[string]string{}
	for db := 0; db < 16; db++ {
		if err := rc.Do(c, "SELECT", db).Err(); err != nil {
			t.Fatalf("SELECT %d: %v", db, err)
		}
		var cursor uint64
		for i := 0; i < 100000; i++ {
			keys, next, err := rc.Scan(c, cursor, "*", 1000).Result()
			if err != nil {
				t.Fatalf("SCAN: %v", err)
			}
			for _, k := range keys {
				typ := rc.Type(c, k).Val()
				var v string
				switch typ {
				case "string":
					v = rc.Get(c, k).Val()
				case "hash":
					m := rc.HGetAll(c, k).Val()
					var kv []string
					for f, x := range m {
						kv = append(kv, f+"="+x)
					}
					sort.Strings(kv)
					v = strings.Join(kv, ",")
				case "list":
					v = strings.Join(rc.LRange(c, k, 0, -1).Val(), ",")
				case "set":
					m := rc.SMembers(c, k).Val()
					sort.Strings(m)
					v = strings.Join(m, ",")
				case "zset":
					for _, z := range rc.ZRangeWithScores(c, k, 0, -1).Val() {
						v += fmt.Sprintf("%v:%v,", z.Member, z.Score)
					}
				}
				ttl := rc.PTTL(c, k).Val()
				hasTTL := ttl > 0
				out[fmt.Sprintf("%d/%s", db, k)] = fmt.Sprintf("%s|%s|ttl=%v", typ, v, hasTTL)
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
	}
	if err := rc.Do(c, "SELECT", 0).Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameDataset(t *testing.T, a, b *redis.Client) {
	t.Helper()
	var da, db map[string]string
	testutil.WaitFor(t, 10*time.Second, "datasets equal", func() bool {
		da, db = dataset(t, a), dataset(t, b)
		if len(da) != len(db) {
			return false
		}
		for k, v := range da {
			if db[k] != v {
				return false
			}
		}
		return true
	})
}

// fill writes keys of every type the node supports into db 0 and db 3.
func fill(t *testing.T, rc *redis.Client, prefix string, n int) {
	t.Helper()
	c := ctx(t)
	for _, db := range []int{0, 3} {
		p := rc.Pipeline()
		p.Do(c, "SELECT", db)
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("%s:%d:%d", prefix, db, i)
			p.Set(c, "s:"+k, strings.Repeat("v", i%50), 0)
			p.HSet(c, "h:"+k, "f1", i, "f2", "x")
			p.RPush(c, "l:"+k, "a", "b", i)
			p.SAdd(c, "set:"+k, "m1", i)
			p.ZAdd(c, "z:"+k, redis.Z{Score: float64(i), Member: "m"}, redis.Z{Score: 1.5, Member: "n"})
			if i%10 == 0 {
				p.Expire(c, "s:"+k, time.Hour)
			}
		}
		p.Do(c, "SELECT", 0)
		if _, err := p.Exec(c); err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
}

func replInfoField(t *testing.T, rc *redis.Client, field string) string {
	t.Helper()
	info := rc.Info(ctx(t), "replication", "stats").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

func waitLinkUp(t *testing.T, rc *redis.Client) {
	t.Helper()
	testutil.WaitFor(t, 15*time.Second, "master_link_status:up", func() bool {
		return replInfoField(t, rc, "master_link_status") == "up"
	})
}

func hostPort(addr string) (string, string) {
	h, p, _ := net.SplitHostPort(addr)
	return h, p
}

func TestReplicationNodeToNode(t *testing.T) {
	master := startServer(t)
	replica := startServer(t)
	mc, rc := master.client(t), replica.client(t)
	c := ctx(t)
	fill(t, mc, "before", 50)
	h, p := hostPort(master.addr)
	if err := rc.Do(c, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, rc)
	sameDataset(t, mc, rc)

	// Streamed writes, including a MULTI block and another database.
	fill(t, mc, "after", 20)
	if _, err := mc.TxPipelined(c, func(p redis.Pipeliner) error {
		p.Incr(c, "counter")
		p.Incr(c, "counter")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sameDataset(t, mc, rc)

	// Writes on the replica are refused.
	if err := rc.Set(c, "x", "y", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Fatalf("write on replica: %v", err)
	}

	// Cut the link: the replica comes back with a partial resync.
	before := master.srv.repl.partialOK()
	replica.srv.repl.mu.Lock()
	link := replica.srv.repl.link
	replica.srv.repl.mu.Unlock()
	link.CloseConn()
	mc.Set(c, "during-cut", "1", 0)
	testutil.WaitFor(t, 10*time.Second, "partial resync", func() bool {
		return master.srv.repl.partialOK() > before
	})
	waitLinkUp(t, rc)
	sameDataset(t, mc, rc)

	// ROLE on both sides.
	role := rc.Do(c, "ROLE").Val().([]any)
	if role[0] != "slave" || role[3] != "connected" {
		t.Fatalf("replica ROLE = %v", role)
	}
	mrole := mc.Do(c, "ROLE").Val().([]any)
	if mrole[0] != "master" || len(mrole[2].([]any)) != 1 {
		t.Fatalf("master ROLE = %v", mrole)
	}
}

func TestReplicationPSync2AfterPromotion(t *testing.T) {
	master := startServer(t)
	a := startServer(t)
	b := startServer(t)
	mc, ac, bc := master.client(t), a.client(t), b.client(t)
	c := ctx(t)
	fill(t, mc, "k", 20)
	h, p := hostPort(master.addr)
	for _, rc := range []*redis.Client{ac, bc} {
		if err := rc.Do(c, "REPLICAOF", h, p).Err(); err != nil {
			t.Fatal(err)
		}
		waitLinkUp(t, rc)
	}
	mc.Set(c, "last", "1", 0)
	sameDataset(t, mc, ac)
	sameDataset(t, mc, bc)
	// Promote a; b follows it and must continue partially.
	if err := ac.Do(c, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	ah, ap := hostPort(a.addr)
	if err := bc.Do(c, "REPLICAOF", ah, ap).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, bc)
	partial, full := a.srv.repl.partialOK(), a.srv.repl.fullSyncs()
	if partial != 1 || full != 0 {
		t.Fatalf("promoted replica: sync_partial_ok=%d sync_full=%d, want 1 and 0", partial, full)
	}
	ac.Set(c, "after-promotion", "1", 0)
	sameDataset(t, ac, bc)
	if got := replInfoField(t, ac, "master_replid2"); got != replInfoField(t, mc, "master_replid") {
		t.Fatalf("master_replid2 %q is not the old master's replid", got)
	}
}

func TestWaitAndMinReplicas(t *testing.T) {
	master := startServer(t, "min-replicas-max-lag", "10")
	replica := startServer(t)
	mc, rc := master.client(t), replica.client(t)
	c := ctx(t)
	if n := mc.Do(c, "WAIT", 1, 50).Val(); n != int64(0) {
		t.Fatalf("WAIT without replicas = %v", n)
	}
	if err := mc.Do(c, "CONFIG", "SET", "min-replicas-to-write", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Set(c, "k", "v", 0).Err(); err == nil || err.Error() != "NOREPLICAS Not enough good replicas to write." {
		t.Fatalf("write without good replicas: %v", err)
	}
	h, p := hostPort(master.addr)
	rc.Do(c, "REPLICAOF", h, p)
	waitLinkUp(t, rc)
	testutil.WaitFor(t, 5*time.Second, "write accepted with a replica", func() bool {
		return mc.Set(c, "k", "v", 0).Err() == nil
	})
	start := time.Now()
	n, err := mc.Do(c, "WAIT", 1, 5000).Int64()
	if err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v", n, err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("WAIT took %v with an acking replica", time.Since(start))
	}
	if err := rc.Do(c, "WAIT", 1, 10).Err(); err == nil {
		t.Fatal("WAIT on a replica must fail")
	}
}

func TestReplicationInteropRedis(t *testing.T) {
	testutil.Binary(t, "redis-server")
	c := context.Background()
	t.Run("RedisMasterNodeReplica", func(t *testing.T) {
		rm := testutil.StartRedis(t)
		mc := redis.NewClient(&redis.Options{Addr: rm.Addr, DisableIdentity: true})
		defer mc.Close()
		fill(t, mc, "r", 100)
		// A big value and big collections (non-listpack encodings).
		mc.Set(c, "big", strings.Repeat("x", 100000), 0)
		for i := 0; i < 300; i++ {
			mc.HSet(c, "bighash", "f"+strconv.Itoa(i), i)
			mc.RPush(c, "biglist", i)
			mc.SAdd(c, "bigset", "m"+strconv.Itoa(i))
			mc.ZAdd(c, "bigzset", redis.Z{Score: float64(i), Member: strconv.Itoa(i)})
		}
		node := startServer(t)
		nc := node.client(t)
		nc.Do(c, "REPLICAOF", "127.0.0.1", rm.Port)
		waitLinkUp(t, nc)
		sameDataset(t, mc, nc)
		fill(t, mc, "stream", 20)
		sameDataset(t, mc, nc)
	})
	t.Run("NodeMasterRedisReplica", func(t *testing.T) {
		node := startServer(t)
		nc := node.client(t)
		fill(t, nc, "n", 100)
		_, p := hostPort(node.addr)
		rr := testutil.StartRedis(t, "--replicaof", "127.0.0.1 "+p)
		rc := redis.NewClient(&redis.Options{Addr: rr.Addr, DisableIdentity: true})
		defer rc.Close()
		waitLinkUp(t, rc)
		sameDataset(t, nc, rc)
		fill(t, nc, "stream", 20)
		sameDataset(t, nc, rc)
	})
}

// TestReplicationMasterDiesMidTransfer uses a fake master that announces a
// full resync, sends part of the payload and hangs up: the replica keeps
// its previous dataset (never a half-loaded one) and retries.
func TestReplicationMasterDiesMidTransfer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var attempts atomic32
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			attempts.add()
			go func(nc net.Conn) {
				defer nc.Close()
				br := bufio.NewReader(nc)
				for {
					v, err := resp.ReadValue(br)
					if err != nil {
						return
					}
					cmd := strings.ToUpper(v.Elems[0].Str)
					switch cmd {
					case "PING":
						nc.Write([]byte("+PONG\r\n"))
					case "REPLCONF":
						nc.Write([]byte("+OK\r\n"))
					case "PSYNC":
						nc.Write([]byte("+FULLRESYNC " + strings.Repeat("a", 40) + " 100\r\n$100000\r\nREDIS0010"))
						nc.Write(bytes.Repeat([]byte{0}, 5000))
						time.Sleep(50 * time.Millisecond)
						return // hang up mid-transfer
					}
				}
			}(nc)
		}
	}()
	replica := startServer(t)
	rc := replica.client(t)
	c := ctx(t)
	for i := 0; i < 100; i++ {
		rc.Set(c, fmt.Sprintf("old:%d", i), i, 0)
	}
	_, p := hostPort(ln.Addr().String())
	if err := rc.Do(c, "REPLICAOF", "127.0.0.1", p).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "three sync attempts", func() bool { return attempts.get() >= 3 })
	if n := rc.DBSize(c).Val(); n != 100 {
		t.Fatalf("replica has %d keys after cut transfers, want its 100 old keys", n)
	}
	if got := replInfoField(t, rc, "master_link_status"); got != "down" {
		t.Fatalf("master_link_status = %q", got)
	}
	// While a dataset is loading, commands get LOADING.
	replica.srv.loading.Store(true)
	err = rc.Get(c, "old:1").Err()
	replica.srv.loading.Store(false)
	if err == nil || !strings.HasPrefix(err.Error(), "LOADING") {
		t.Fatalf("GET while loading: %v", err)
	}
}

type atomic32 struct {
	mu sync.Mutex
	n  int
}

func (a *atomic32) add() { a.mu.Lock(); a.n++; a.mu.Unlock() }
func (a *atomic32) get() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// TestReplicationMixedChain: redis-server master -> shardnode replica ->
// redis-server sub-replica; writes on the top reach the bottom, and the
// offsets of the chain stay in one space (the node forwards the stream).
func TestReplicationMixedChain(t *testing.T) {
	testutil.Binary(t, "redis-server")
	c := context.Background()
	top := testutil.StartRedis(t)
	tc := redis.NewClient(&redis.Options{Addr: top.Addr, DisableIdentity: true})
	defer tc.Close()
	fill(t, tc, "chain", 50)
	node := startServer(t)
	nc := node.client(t)
	if err := nc.Do(c, "REPLICAOF", "127.0.0.1", top.Port).Err(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, nc)
	_, p := hostPort(node.addr)
	bottom := testutil.StartRedis(t, "--replicaof", "127.0.0.1 "+p)
	bc := redis.NewClient(&redis.Options{Addr: bottom.Addr, DisableIdentity: true})
	defer bc.Close()
	waitLinkUp(t, bc)
	fill(t, tc, "after", 20)
	sameDataset(t, tc, nc)
	sameDataset(t, tc, bc)
	testutil.WaitFor(t, 10*time.Second, "equal offsets along the chain", func() bool {
		return replInfoField(t, tc, "master_repl_offset") == replInfoField(t, nc, "master_repl_offset") &&
			replInfoField(t, nc, "master_repl_offset") == replInfoField(t, bc, "master_repl_offset")
	})
}

// testReplication returns a replication state with no server at offset
// off (for tests of the adapters).
func testReplication(off int64) *replication {
	r := &replication{}
	r.Master = repl.NewMaster(&r.mu, nil, slog.Default(), 0, false)
	r.FeedFromMaster(make([]byte, off))
	return r
}

// partialOK and fullSyncs are INFO's sync_partial_ok and sync_full.
func (r *replication) partialOK() int64 { _, p, _ := r.SyncCounters(); return p }
func (r *replication) fullSyncs() int64 { f, _, _ := r.SyncCounters(); return f }
