package tocluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/clustertest"
	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/testutil"
)

func TestClassify(t *testing.T) {
	a := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	cases := []struct {
		cmd  string
		want Kind
	}{
		{"SET a 1", Single},
		{"PING", Ignore},
		{"SELECT 0", Ignore},
		{"SELECT 3", Refuse},
		{"PUBLISH __sentinel__:hello x", Ignore},
		{"DEL a b", Split},
		{"DEL {t}a {t}b", Single},
		{"MSET a 1 b 2", Split},
		{"RENAME a b", Colocate},
		{"RENAME {t}a {t}b", Single},
		{"SMOVE a b m", Colocate},
		{"LMOVE a b LEFT RIGHT", Colocate},
		{"SUNIONSTORE d a b", Colocate},
		{"FLUSHALL", Flush},
		{"FLUSHDB ASYNC", Flush},
		{"SWAPDB 0 1", Refuse},
		{"MOVE a 1", Refuse},
		{"COPY a b DB 1", Refuse},
		{"MULTI", Multi},
		{"EXEC", Exec},
		{"FUNCTION LOAD x", Broadcast},
		{"SET " + NoticeKey + " x", Ignore},
		{"NOSUCHCOMMAND a", Refuse},
	}
	for _, c := range cases {
		if got, _, _ := Classify(a(c.cmd)); got != c.want {
			t.Errorf("Classify(%q) = %d, want %d", c.cmd, got, c.want)
		}
	}
	parts := SplitBySlot(a("MSET a 1 b 2 {a}x 3"))
	if len(parts) != 2 || len(parts[0]) != 5 || string(parts[0][3]) != "{a}x" || string(parts[1][1]) != "b" {
		t.Errorf("SplitBySlot = %q", parts)
	}
	for _, s := range []int{0, 1, 8000, 16383} {
		if got := consistent.KeySlot(TempKey(s, 7)); got != s {
			t.Errorf("TempKey(%d) lands in slot %d", s, got)
		}
	}
}

// fixture is a source deployment of redis-servers watched by one
// redis-sentinel, and a redis-server cluster of 3 masters.
type fixture struct {
	masters  []*testutil.Process
	replicas []*testutil.Process
	sentinel *testutil.Process
	names    []string
	cluster  []string
}

func startFixture(t *testing.T, shards int) *fixture {
	t.Helper()
	f := &fixture{}
	conf := ""
	for i := range shards {
		m := testutil.StartRedis(t)
		r := testutil.StartRedis(t, "--replicaof", "127.0.0.1 "+strconv.Itoa(m.Port))
		f.masters = append(f.masters, m)
		f.replicas = append(f.replicas, r)
		name := fmt.Sprintf("shard-%d", i+1)
		f.names = append(f.names, name)
		conf += fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 5000\n", name, m.Port, name, name)
	}
	f.sentinel = testutil.StartSentinel(t, conf)
	nodes := clustertest.StartNodes(t, 3)
	clustertest.CreateWithRedisCli(t, nodes, 0)
	f.cluster = clustertest.Addrs(nodes)
	ctx := context.Background()
	sc := redis.NewSentinelClient(&redis.Options{Addr: f.sentinel.Addr})
	defer sc.Close()
	testutil.WaitFor(t, 15*time.Second, "sentinel sees the replicas", func() bool {
		for _, n := range f.names {
			r, err := sc.Replicas(ctx, n).Result()
			if err != nil || len(r) != 1 {
				return false
			}
		}
		return true
	})
	return f
}

func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// preload writes n keys of every type, some with TTLs and hash tags.
func preload(t *testing.T, c *redis.Client, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	pipe := c.Pipeline()
	for i := range n {
		k := fmt.Sprintf("%s:%d", prefix, i)
		switch i % 6 {
		case 0:
			pipe.Set(ctx, k, "v"+strconv.Itoa(i), 0)
		case 1:
			pipe.RPush(ctx, "{"+prefix+"}l:"+strconv.Itoa(i), "a", "b", i)
		case 2:
			pipe.SAdd(ctx, k, "x", "y", i)
		case 3:
			pipe.ZAdd(ctx, k, redis.Z{Score: 1.5, Member: "m"}, redis.Z{Score: float64(i), Member: "n"})
		case 4:
			pipe.HSet(ctx, k, "f", i, "g", "h")
		case 5:
			pipe.Set(ctx, k, strings.Repeat("z", 100), time.Hour)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("preload: %v", err)
	}
}

// dumpAll reads every key of c: type, value, TTL.
func dumpAll(t *testing.T, ctx context.Context, keys []string, get func(key string) redis.Cmdable) map[string]keyState {
	t.Helper()
	out := map[string]keyState{}
	for _, k := range keys {
		c := get(k)
		typ := c.Type(ctx, k).Val()
		var v string
		switch typ {
		case "string":
			v = c.Get(ctx, k).Val()
		case "list":
			v = strings.Join(c.LRange(ctx, k, 0, -1).Val(), ",")
		case "set":
			m := c.SMembers(ctx, k).Val()
			slices.Sort(m)
			v = strings.Join(m, ",")
		case "zset":
			v = fmt.Sprint(c.ZRangeWithScores(ctx, k, 0, -1).Val())
		case "hash":
			v = fmt.Sprint(c.HGetAll(ctx, k).Val())
		}
		st := keyState{val: typ + " " + v}
		if ttl := c.PTTL(ctx, k).Val(); ttl > 0 {
			st.expireAt = time.Now().Add(ttl)
		}
		out[k] = st
	}
	return out
}

// keyState is a key's type and value, and when it expires (as read).
type keyState struct {
	val      string
	expireAt time.Time
}

// same reports whether two keys are equal, expiry times within a second.
func (a keyState) same(b keyState) bool {
	if a.expireAt.IsZero() != b.expireAt.IsZero() {
		return false
	}
	d := a.expireAt.Sub(b.expireAt)
	return a.val == b.val && d <= time.Second && d >= -time.Second
}

func sourceKeys(t *testing.T, ctx context.Context, c *redis.Client) []string {
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(keys, func(k string) bool { return k == NoticeKey })
}

// TestMigrateRedisServer migrates two redis-server shards (each with a
// replica, watched by redis-sentinel) into a redis-server cluster while
// writers run on the sources, with cross-slot commands, a transaction and
// a FLUSHALL in the stream, then cuts over on request: every key equal,
// sources fenced, the tool never listed as a replica by Sentinel.
func TestMigrateRedisServer(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	f := startFixture(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	src := []*redis.Client{client(t, f.masters[0].Addr), client(t, f.masters[1].Addr)}
	perShard := 1200
	if v, err := strconv.Atoi(os.Getenv("TOCLUSTER_KEYS")); err == nil && v > 0 {
		perShard = v / 2 // scripts/bench-tocluster.sh
	}
	preload(t, src[0], "a", perShard)
	preload(t, src[1], "b", perShard)

	streaming := make(chan struct{})
	var once sync.Once
	opt := Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0], NoCutover: true, Logger: testLogger(t),
		ProgressInterval: 20 * time.Millisecond,
		OnProgress: func(p Progress) {
			if p.Phase == "streaming" {
				once.Do(func() { close(streaming) })
			}
		}}
	type result struct {
		r   *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Run(ctx, opt)
		done <- result{r, err}
	}()

	// Writers: counters incremented until the fence refuses them; the
	// last acknowledged value must be on the cluster.
	var wg sync.WaitGroup
	acked := make([]int64, 4)
	stopWriters := make(chan struct{})
	for w := range acked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := src[w%2]
			for i := 0; i < 1_000_000; i++ {
				select {
				case <-stopWriters:
					return
				default:
				}
				v, err := c.Incr(ctx, fmt.Sprintf("counter:%d", w)).Result()
				if err != nil {
					if strings.HasPrefix(err.Error(), "NOREPLICAS") {
						return
					}
					continue
				}
				acked[w] = v
			}
		}()
	}
	select {
	case <-streaming:
	case r := <-done:
		t.Fatalf("Run ended before streaming: %v", r.err)
	case <-ctx.Done():
		t.Fatal("no streaming phase")
	}
	// The stream's rules.
	must := func(err error) {
		t.Helper()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
	}
	must(src[0].Rename(ctx, "a:0", "a:renamed").Err())
	must(src[0].SMove(ctx, "a:2", "a:8", "x").Err())
	must(src[0].LMove(ctx, "{a}l:1", "a:newlist", "LEFT", "RIGHT").Err())
	must(src[0].SUnionStore(ctx, "a:union", "a:2", "a:8", "a:14").Err())
	must(src[0].MSet(ctx, "a:m1", "1", "a:m2", "2", "a:m3", "3").Err())
	must(src[0].Del(ctx, "a:3", "a:4", "a:9").Err())
	must(src[0].Expire(ctx, "a:6", 30*time.Minute).Err())
	_, err := src[0].TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a:tx1", "1", 0)
		p.Set(ctx, "a:tx2", "2", 0)
		p.Incr(ctx, "a:tx1")
		return nil
	})
	must(err)
	if err := src[0].Eval(ctx, "redis.call('set', KEYS[1], 'lua'); redis.call('del', KEYS[2])", []string{"{s}x", "{s}y"}).Err(); err != nil && !errors.Is(err, redis.Nil) && !strings.Contains(err.Error(), "unknown command") {
		t.Fatal(err) // shardnode has no scripting
	}
	// FLUSHALL on shard 2 deletes only shard 2's keys on the cluster.
	must(src[1].FlushAll(ctx).Err())
	preload(t, src[1], "c", 300)

	// Sentinel never lists the tool as a replica.
	sc := redis.NewSentinelClient(&redis.Options{Addr: f.sentinel.Addr})
	defer sc.Close()
	for _, n := range f.names {
		r, err := sc.Replicas(ctx, n).Result()
		if err != nil || len(r) != 1 {
			t.Errorf("SENTINEL REPLICAS %s = %v, %v; want only the real replica", n, r, err)
		}
	}
	// The tool does count for min-replicas-to-write (Redis has no opt-out:
	// an online replica that ACKed within min-replicas-max-lag is good);
	// it never counts for WAIT (it ACKs offset 0).
	must(src[0].ConfigSet(ctx, "min-replicas-to-write", "1").Err())
	testutil.WaitFor(t, 5*time.Second, "good replicas counted", func() bool {
		info := src[0].Info(ctx, "replication").Val()
		return strings.Contains(info, "min_slaves_good_slaves:2")
	})
	must(src[0].ConfigSet(ctx, "min-replicas-to-write", "0").Err())
	// On one connection: a write, then WAIT 1 until the real replica has
	// it (a loaded machine may take longer than WAIT 2's 200 ms), then
	// WAIT 2, which only the tool's ACK of offset 0 could complete.
	wc := src[0].Conn()
	must(wc.Set(ctx, "{s}wait", "1", 0).Err())
	if n, err := wc.Do(ctx, "WAIT", 1, 30000).Int(); err != nil || n != 1 {
		t.Errorf("WAIT 1 = %d, %v; want 1 (the real replica)", n, err)
	}
	if n, err := wc.Do(ctx, "WAIT", 2, 200).Int(); err != nil || n != 1 {
		t.Errorf("WAIT 2 = %d, %v; want 1 (the real replica only)", n, err)
	}
	wc.Close()

	msg, err := FinishCutover(ctx, Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0]}, 30*time.Second)
	if err != nil {
		select {
		case r := <-done:
			t.Fatalf("FinishCutover: %v; Run: %v", err, r.err)
		default:
			t.Fatalf("FinishCutover: %v; Run still running", err)
		}
	}
	t.Logf("cutover-only: %s", msg)
	r := <-done
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	close(stopWriters)
	wg.Wait()
	t.Logf("copied %d keys at %.0f keys/s (every shard streaming after %v), writes paused %v", r.r.Keys, r.r.CopyRate, r.r.CopyTime, r.r.PauseTime)
	for _, s := range r.r.Shards {
		if s.ApplyErrors != 0 {
			t.Errorf("shard %s: %d apply errors, first %s", s.Name, s.ApplyErrors, s.FirstError)
		}
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.cluster})
	defer cc.Close()
	var all []string
	want := map[string]keyState{}
	for _, c := range src {
		keys := sourceKeys(t, ctx, c)
		all = append(all, keys...)
		for k, v := range dumpAll(t, ctx, keys, func(string) redis.Cmdable { return c }) {
			want[k] = v
		}
	}
	got := dumpAll(t, ctx, all, func(string) redis.Cmdable { return cc })
	bad := 0
	for k, v := range want {
		if !got[k].same(v) {
			if bad++; bad < 10 {
				t.Errorf("key %s: cluster %+v, source %+v", k, got[k], v)
			}
		}
	}
	var n int64
	for _, a := range f.cluster {
		c := client(t, a)
		n += c.DBSize(ctx).Val()
	}
	// The cluster holds exactly the sources' keys and the commit key.
	if n != int64(len(want))+1 {
		t.Errorf("cluster holds %d keys, sources %d (+1 commit key)", n, len(want))
	}
	for w, v := range acked {
		if got, _ := cc.Get(ctx, fmt.Sprintf("counter:%d", w)).Int64(); got != v {
			t.Errorf("counter:%d on the cluster = %d, last acknowledged %d", w, got, v)
		}
	}
	// Fenced: the masters and the replicas.
	for i, c := range src {
		if err := c.Set(ctx, "after", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
			t.Errorf("write on source %d after the cut-over: %v, want NOREPLICAS", i, err)
		}
		rc := client(t, f.replicas[i].Addr)
		if v := rc.ConfigGet(ctx, "min-replicas-to-write").Val()["min-replicas-to-write"]; v != FenceReplicas {
			t.Errorf("replica %d min-replicas-to-write = %q", i, v)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(testWriter{t}, nil)) }

// TestMigrateFollowsFailover kills the source master (SIGKILL) while the
// tool streams: the Sentinel promotes the replica, the tool continues
// from the new master (a partial resync), and after the cut-over the
// cluster equals the new master.
func TestMigrateFollowsFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	f := startFixture(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	old := client(t, f.masters[0].Addr)
	preload(t, old, "a", 1000)
	streaming := make(chan struct{})
	var once sync.Once
	opt := Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0], NoCutover: true, Logger: testLogger(t),
		ProgressInterval: 20 * time.Millisecond,
		OnProgress: func(p Progress) {
			if p.Phase == "streaming" {
				once.Do(func() { close(streaming) })
			}
		}}
	var res *Result
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, runErr = Run(ctx, opt)
	}()
	select {
	case <-streaming:
	case <-done:
		t.Fatalf("Run ended before streaming: %v", runErr)
	}
	for i := range 100 {
		if err := old.Set(ctx, "before:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The replica must hold every write before the kill, or the failover
	// itself loses them.
	if n, err := old.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT = %d, %v", n, err)
	}
	f.masters[0].Kill()
	sc := redis.NewSentinelClient(&redis.Options{Addr: f.sentinel.Addr})
	defer sc.Close()
	testutil.WaitFor(t, 30*time.Second, "failover to the replica", func() bool {
		a, err := sc.GetMasterAddrByName(ctx, f.names[0]).Result()
		return err == nil && a[1] == strconv.Itoa(f.replicas[0].Port)
	})
	nm := client(t, f.replicas[0].Addr)
	testutil.WaitFor(t, 10*time.Second, "new master writable", func() bool {
		return nm.Set(ctx, "after:0", 0, 0).Err() == nil
	})
	for i := 1; i < 100; i++ {
		if err := nm.Set(ctx, "after:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := FinishCutover(ctx, Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0]}, 60*time.Second); err != nil {
		select {
		case <-done:
			t.Fatalf("FinishCutover: %v; Run: %v", err, runErr)
		default:
			t.Fatalf("FinishCutover: %v; Run still running", err)
		}
	}
	<-done
	if runErr != nil {
		t.Fatalf("Run: %v", runErr)
	}
	s := res.Shards[0]
	t.Logf("shard %s: master %s, %d partial and %d full resyncs", s.Name, s.Master, s.PartialResyncs, s.FullResyncs)
	if s.Master != f.replicas[0].Addr || s.PartialResyncs+s.FullResyncs == 0 {
		t.Errorf("the tool did not follow the failover: %+v", s)
	}
	keys := sourceKeys(t, ctx, nm)
	want := dumpAll(t, ctx, keys, func(string) redis.Cmdable { return nm })
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.cluster})
	defer cc.Close()
	got := dumpAll(t, ctx, keys, func(string) redis.Cmdable { return cc })
	for k, v := range want {
		if !got[k].same(v) {
			t.Errorf("key %s: cluster %+v, new master %+v", k, got[k], v)
		}
	}
	var n int64
	for _, a := range f.cluster {
		n += client(t, a).DBSize(ctx).Val()
	}
	if n != int64(len(want))+1 {
		t.Errorf("cluster holds %d keys, the new master %d (+1 commit key)", n, len(want))
	}
}

// TestCutoverOnlyRecovers puts a source in the states a tool killed
// during its cut-over leaves, and checks --cutover-only's repair: fenced
// without a commit (killed between the fence and the commit point): the
// fence is lifted from the notice's saved settings, the source takes
// writes again, and a rerun of the migration completes over the earlier
// attempt's keys; committed but not fenced (killed right after the
// commit): the fence is put on every node.
func TestCutoverOnlyRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	f := startFixture(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	m := client(t, f.masters[0].Addr)
	r := client(t, f.replicas[0].Addr)
	preload(t, m, "a", 300)
	opt := Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0], Logger: testLogger(t)}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.cluster})
	defer cc.Close()

	// An earlier attempt's keys on the cluster, the sources fenced, no commit.
	if err := cc.Set(ctx, AttemptKey, "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Set(ctx, "stale", "from the earlier attempt", 0).Err(); err != nil {
		t.Fatal(err)
	}
	notice := Notice{ID: "old", Seeds: f.cluster, Fence: map[string][2]string{f.masters[0].Addr: {"0", "10"}, f.replicas[0].Addr: {"0", "10"}}}
	if err := m.Set(ctx, NoticeKey, encodeNotice(notice), 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*redis.Client{m, r} {
		if err := fence(ctx, c, [2]string{"0", "10"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Set(ctx, "x", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
		t.Fatalf("fenced source took a write: %v", err)
	}
	_, err := FinishCutover(ctx, opt, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "lifted the fence of 2 source nodes") {
		t.Fatalf("FinishCutover on a fenced, uncommitted source: %v", err)
	}
	if err := m.Set(ctx, "x", "1", 0).Err(); err != nil {
		t.Fatalf("source after the rollback: %v", err)
	}
	if v := r.ConfigGet(ctx, "min-replicas-to-write").Val()["min-replicas-to-write"]; v != "0" {
		t.Errorf("replica min-replicas-to-write after the rollback = %q", v)
	}
	// The rerun: the earlier attempt's keys go, the sources' come.
	res, err := Run(ctx, opt)
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if cc.Exists(ctx, "stale").Val() != 0 || cc.Get(ctx, "x").Val() != "1" {
		t.Errorf("after the rerun: stale key kept or x missing")
	}
	t.Logf("rerun: %d keys", res.Keys)

	// Committed, fence lost (as if the tool died right after the commit
	// and the nodes restarted without their config).
	for _, c := range []*redis.Client{m, r} {
		if err := unfence(ctx, c, [2]string{"0", "10"}); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := FinishCutover(ctx, opt, time.Second)
	id := res.ID
	if err != nil || !strings.HasPrefix(msg, "committed "+id) {
		t.Fatalf("FinishCutover after a commit: %q, %v", msg, err)
	}
	for i, c := range []*redis.Client{m, r} {
		if v := c.ConfigGet(ctx, "min-replicas-to-write").Val()["min-replicas-to-write"]; v != FenceReplicas {
			t.Errorf("node %d not fenced again: %q", i, v)
		}
	}
	// A rerun over a committed migration completes: it only finishes the
	// fences (a tool killed past its commit point).
	if err := unfence(ctx, r, [2]string{"0", "10"}); err != nil {
		t.Fatal(err)
	}
	if res, err := Run(ctx, opt); err != nil || !res.AlreadyCommitted || res.ID != id {
		t.Errorf("rerun over a committed migration: %+v, %v", res, err)
	}
	if v := r.ConfigGet(ctx, "min-replicas-to-write").Val()["min-replicas-to-write"]; v != FenceReplicas {
		t.Errorf("replica not fenced by the rerun: %q", v)
	}
}
