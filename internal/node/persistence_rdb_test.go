package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/testutil"
)

// item is a key's content in a canonical, comparable form.
type item struct {
	typ    string
	val    string
	expire int64 // absolute unix ms, 0 = none
}

// canonValue renders a value canonically: sets and hashes sorted, sorted
// sets in order with %.17g scores.
func canonList(elems []string) string { return strings.Join(elems, "\x00") }

func canonSorted(elems []string) string {
	sort.Strings(elems)
	return strings.Join(elems, "\x00")
}

func fmtScore(f float64) string { return strconv.FormatFloat(f, 'g', 17, 64) }

// canonServer reads our dataset directly, every database.
func canonServer(s *Server) map[string]item {
	out := map[string]item{}
	s.LockAll()
	defer s.UnlockAll()
	for i, db := range s.dbs {
		for j := range db.Shards {
			db.Shards[j].ForEach(func(e *keyspace.Entry) bool {
				it := item{expire: e.Expire}
				switch o := e.Obj.(type) {
				case nil:
					it.typ, it.val = "string", string(e.Str)
				case *value.List:
					var l []string
					o.ForEach(func(v []byte) bool { l = append(l, string(v)); return true })
					it.typ, it.val = "list", canonList(l)
				case *value.Set:
					var l []string
					o.ForEach(func(m string) bool { l = append(l, m); return true })
					it.typ, it.val = "set", canonSorted(l)
				case *value.Hash:
					var l []string
					o.ForEach(func(f string, v []byte) bool { l = append(l, f+"="+string(v)); return true })
					it.typ, it.val = "hash", canonSorted(l)
				case *value.ZSet:
					var l []string
					o.ForEach(func(m string, sc float64) bool { l = append(l, m+"="+fmtScore(sc)); return true })
					it.typ, it.val = "zset", canonList(l)
				}
				out[fmt.Sprintf("%d:%s", i, e.Key)] = it
				return true
			})
		}
	}
	return out
}

// canonRedis reads a redis-server's (or any node's) dataset with a full
// SCAN of databases 0..15.
func canonRedis(t *testing.T, addr string) map[string]item {
	t.Helper()
	out := map[string]item{}
	for db := 0; db < 16; db++ {
		rc := redis.NewClient(&redis.Options{Addr: addr, DB: db, DisableIdentity: true})
		c := ctx(t)
		var cursor uint64
		for n := 0; n < 100000; n++ {
			keys, next, err := rc.Scan(c, cursor, "*", 1000).Result()
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			for _, k := range keys {
				typ := rc.Type(c, k).Val()
				it := item{typ: typ}
				switch typ {
				case "string":
					it.val = rc.Get(c, k).Val()
				case "list":
					it.val = canonList(rc.LRange(c, k, 0, -1).Val())
				case "set":
					it.val = canonSorted(rc.SMembers(c, k).Val())
				case "hash":
					var l []string
					for f, v := range rc.HGetAll(c, k).Val() {
						l = append(l, f+"="+v)
					}
					it.val = canonSorted(l)
				case "zset":
					var l []string
					for _, z := range rc.ZRangeWithScores(c, k, 0, -1).Val() {
						l = append(l, z.Member.(string)+"="+fmtScore(z.Score))
					}
					it.val = canonList(l)
				}
				if pt := rc.PTTL(c, k).Val(); pt > 0 {
					it.expire = time.Now().Add(pt).UnixMilli()
				}
				out[fmt.Sprintf("%d:%s", db, k)] = it
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
		rc.Close()
	}
	return out
}

// sameData compares datasets; expiries may differ by clock skew of a
// couple of seconds.
func sameData(t *testing.T, got, want map[string]item) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d keys, want %d", len(got), len(want))
	}
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("key %s missing", k)
		case g.typ != w.typ || g.val != w.val:
			t.Errorf("key %s: got %s %.80q, want %s %.80q", k, g.typ, g.val, w.typ, w.val)
		case (g.expire == 0) != (w.expire == 0) || math.Abs(float64(g.expire-w.expire)) > 3000:
			t.Errorf("key %s: expire %d, want %d", k, g.expire, w.expire)
		default:
			continue
		}
		if bad++; bad > 10 {
			t.Fatal("too many differences")
		}
	}
}

// datasetCommands are the writes of a test dataset with every type in
// its small and big encodings, compressible strings, expiries and two
// databases.
func datasetCommands() [][]string {
	var cmds [][]string
	add := func(a ...string) { cmds = append(cmds, a) }
	add("SELECT", "0")
	add("SET", "str:small", "hello")
	add("SET", "str:int", "12345")
	add("SET", "str:neg", "-7")
	add("SET", "str:bigint", "9223372036854775807")
	add("SET", "str:empty", "")
	add("SET", "str:lzf", strings.Repeat("abcdefgh", 200))
	add("SET", "str:bin", "\x00\x01\xff\r\n")
	add("SET", "str:ttl", "v", "PX", "3600000")
	add("RPUSH", "list:small", "a", "1", "b", "-300", "70000")
	big := []string{"RPUSH", "list:big"}
	for i := 0; i < 2000; i++ {
		big = append(big, fmt.Sprintf("element-%d-%s", i, strings.Repeat("x", i%100)))
	}
	add(big...)
	add("RPUSH", "list:huge-elem", strings.Repeat("z", 20000), "tail")
	add("SADD", "set:ints", "1", "2", "-3", "100000", "4294967296")
	add("SADD", "set:strs", "a", "b", "c")
	bigSet := []string{"SADD", "set:big"}
	for i := 0; i < 700; i++ {
		bigSet = append(bigSet, strconv.Itoa(i*3))
	}
	add(bigSet...)
	add("HSET", "hash:small", "f1", "v1", "f2", "2", "f3", "")
	bigHash := []string{"HSET", "hash:big"}
	for i := 0; i < 200; i++ {
		bigHash = append(bigHash, fmt.Sprintf("field%d", i), strings.Repeat("v", i))
	}
	add(bigHash...)
	add("HSET", "hash:longval", "f", strings.Repeat("long", 30))
	add("ZADD", "zset:small", "1", "a", "2.5", "b", "-inf", "c", "0.1", "d", "1e300", "e")
	bigZ := []string{"ZADD", "zset:big"}
	for i := 0; i < 300; i++ {
		bigZ = append(bigZ, fmtScore(float64(i)/7), fmt.Sprintf("member-%d", i))
	}
	add(bigZ...)
	add("PEXPIRE", "hash:small", "5000000")
	add("PEXPIRE", "list:big", "7000000")
	add("SELECT", "2")
	add("SET", "db2:key", "in db 2")
	add("ZADD", "db2:z", "3", "x")
	add("SELECT", "0")
	return cmds
}

func runCommands(t *testing.T, addr string, cmds [][]string) {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, PoolSize: 1})
	defer rc.Close()
	c := ctx(t)
	conn := rc.Conn()
	defer conn.Close()
	for _, cmd := range cmds {
		args := make([]any, len(cmd))
		for i, a := range cmd {
			args[i] = a
		}
		if err := conn.Do(c, args...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", cmd[0], err)
		}
	}
}

// loadCommands builds the dataset of cmds (SELECT, SET [PX], RPUSH, SADD,
// HSET, ZADD, PEXPIRE) in our server directly with the value types, so
// these tests do not depend on the command families.
func loadCommands(t *testing.T, s *Server, cmds [][]string) {
	t.Helper()
	s.LockAll()
	defer s.UnlockAll()
	db := s.dbs[0]
	now := time.Now().UnixMilli()
	for _, cmd := range cmds {
		k := cmd[1]
		e := db.GetEntry(k)
		switch strings.ToUpper(cmd[0]) {
		case "SELECT":
			n, _ := strconv.Atoi(cmd[1])
			db = s.dbs[n]
		case "SET":
			var exp int64
			if len(cmd) == 5 {
				ms, _ := strconv.ParseInt(cmd[4], 10, 64)
				exp = now + ms
			}
			db.SetString(k, []byte(cmd[2]), exp, false)
		case "RPUSH":
			if e == nil {
				e = db.SetObject(k, value.NewList())
			}
			for _, v := range cmd[2:] {
				e.Obj.(*value.List).PushBack([]byte(v))
			}
		case "SADD":
			if e == nil {
				e = db.SetObject(k, value.NewSet())
			}
			for _, v := range cmd[2:] {
				e.Obj.(*value.Set).AddB([]byte(v), s.intsetLimit())
			}
		case "HSET":
			if e == nil {
				e = db.SetObject(k, value.NewHash())
			}
			for i := 2; i+1 < len(cmd); i += 2 {
				e.Obj.(*value.Hash).SetB([]byte(cmd[i]), []byte(cmd[i+1]), s.hashLimits())
			}
		case "ZADD":
			if e == nil {
				e = db.SetObject(k, value.NewZSet())
			}
			for i := 2; i+1 < len(cmd); i += 2 {
				sc, _ := strconv.ParseFloat(cmd[i], 64)
				e.Obj.(*value.ZSet).Add(cmd[i+1], sc)
			}
		case "PEXPIRE":
			ms, _ := strconv.ParseInt(cmd[2], 10, 64)
			db.SetExpire(e, now+ms)
		default:
			t.Fatalf("loadCommands: %s", cmd[0])
		}
	}
}

// newTestServer starts a node in dir without the fixture's TempDir.
func startServerIn(t *testing.T, dir string, directives ...string) *testServer {
	t.Helper()
	return startServer(t, append([]string{"dir", dir}, directives...)...)
}

func sendRaw(t *testing.T, ts *testServer, args ...string) string {
	t.Helper()
	r := ts.raw(t)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	r.send(b.String())
	return r.readLine()
}

func TestRDBSaveAndLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir)
	loadCommands(t, a.srv, datasetCommands())
	want := canonServer(a.srv)
	if len(want) < 15 {
		t.Fatalf("dataset has only %d keys", len(want))
	}
	if got := sendRaw(t, a, "SAVE"); got != "+OK" {
		t.Fatalf("SAVE: %s", got)
	}
	b := startServerIn(t, dir)
	sameData(t, canonServer(b.srv), want)
	// LASTSAVE moved to the save.
	if got := sendRaw(t, a, "LASTSAVE"); got == ":0" {
		t.Fatalf("LASTSAVE %s", got)
	}
}

func TestRDBRedisCheckAndRedisServerLoadOurs(t *testing.T) {
	check := testutil.Binary(t, "redis-check-rdb")
	dir := t.TempDir()
	a := startServerIn(t, dir)
	loadCommands(t, a.srv, datasetCommands())
	want := canonServer(a.srv)
	if got := sendRaw(t, a, "SAVE"); got != "+OK" {
		t.Fatalf("SAVE: %s", got)
	}
	out, err := exec.Command(check, filepath.Join(dir, "dump.rdb")).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("RDB looks OK!")) {
		t.Fatalf("redis-check-rdb: %v\n%s", err, out)
	}
	r := testutil.StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	sameData(t, canonRedis(t, r.Addr), want)
}

func TestRDBWeLoadRedisServerDump(t *testing.T) {
	r := testutil.StartRedis(t, "--enable-debug-command", "yes")
	runCommands(t, r.Addr, datasetCommands())
	want := canonRedis(t, r.Addr)
	rc := redis.NewClient(&redis.Options{Addr: r.Addr, DisableIdentity: true})
	defer rc.Close()
	// Tiny listpack limits would not change what redis writes for the big
	// keys; the dataset already has both encodings.
	if err := rc.Save(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(r.Dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	a := startServerIn(t, dir, "enable-debug-command", "yes")
	sameData(t, canonServer(a.srv), want)
	// DEBUG DIGEST and DIGEST-VALUE agree with redis-server's.
	ours := a.client(t)
	c := ctx(t)
	if got, want := ours.Do(c, "DEBUG", "DIGEST").Val(), rc.Do(c, "DEBUG", "DIGEST").Val(); got != want {
		t.Errorf("DEBUG DIGEST %v, redis-server %v", got, want)
	}
	for _, k := range []string{"str:small", "list:big", "set:ints", "set:big", "zset:small", "zset:big", "hash:big", "str:ttl", "nokey"} {
		got := fmt.Sprint(ours.Do(c, "DEBUG", "DIGEST-VALUE", k).Val())
		want := fmt.Sprint(rc.Do(c, "DEBUG", "DIGEST-VALUE", k).Val())
		if got != want {
			t.Errorf("DIGEST-VALUE %s: %s, redis-server %s", k, got, want)
		}
	}
}

func TestRDBPointInTimeSnapshot(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir)
	const n = 50000
	var cmds [][]string
	for i := 0; i < n; i++ {
		cmds = append(cmds, []string{"SET", "k" + strconv.Itoa(i), "old"})
	}
	loadCommands(t, a.srv, cmds)
	// BGSAVE then, on the same connection, overwrite every key: the file
	// must hold only the old values, the clients' writes all succeed.
	r := a.raw(t)
	var b strings.Builder
	b.WriteString("*1\r\n$6\r\nBGSAVE\r\n*1\r\n$6\r\nBGSAVE\r\n")
	for i := 0; i < n; i++ {
		k := "k" + strconv.Itoa(i)
		fmt.Fprintf(&b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$3\r\nnew\r\n", len(k), k)
	}
	go func() { _, _ = r.nc.Write([]byte(b.String())) }()
	if got := r.readLine(); got != "+Background saving started" {
		t.Fatalf("BGSAVE: %s", got)
	}
	if got := r.readLine(); got != "-ERR Background save already in progress" {
		// The first save may already be done on a very fast machine.
		if got != "+Background saving started" {
			t.Fatalf("second BGSAVE: %s", got)
		}
	}
	for i := 0; i < n; i++ {
		if got := r.readLine(); got != "+OK" {
			t.Fatalf("SET %d: %s", i, got)
		}
	}
	testutil.WaitFor(t, 10*time.Second, "bgsave done", func() bool { return !a.srv.persist.BgsaveInProgress() })
	if !a.srv.persist.LastBgsaveOK() {
		t.Fatal("bgsave failed")
	}
	// Wait for a possible second save to finish as well, then load the
	// first file alone: copy it now.
	data, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	srv := newBareServer(t)
	if err := srv.LoadRDB(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got := canonServer(srv)
	if len(got) != n {
		t.Fatalf("%d keys", len(got))
	}
	old := 0
	for _, it := range got {
		if it.val == "old" {
			old++
		}
	}
	// With two BGSAVEs the second may see the new values; the first is
	// the one that raced with the writes. Either all old or all new.
	if old != 0 && old != n {
		t.Fatalf("snapshot mixes old and new values: %d old of %d", old, n)
	}
}

func newBareServer(t *testing.T) *Server {
	t.Helper()
	cfg := NewConfig()
	_ = cfg.Set("save", "")
	_ = cfg.Set("dir", t.TempDir())
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRDBSnapshotConsistentUnderConcurrentWrites(t *testing.T) {
	a := startServerIn(t, t.TempDir())
	const n = 20000
	var cmds [][]string
	for i := 0; i < n; i++ {
		cmds = append(cmds, []string{"SET", "k" + strconv.Itoa(i), "0"})
	}
	loadCommands(t, a.srv, cmds)
	// A writer keeps replacing all keys with generation g (in MULTI so a
	// snapshot could only cut between generations on a whole-keyspace
	// level if it were not point-in-time; here we check per-key monotony
	// and that the snapshot ran while writes were served).
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		rc := a.client(t)
		g := 0
		for {
			select {
			case <-stop:
				done <- g
				return
			default:
			}
			g++
			pipe := rc.Pipeline()
			for i := 0; i < n; i += 97 {
				pipe.Set(context.Background(), "k"+strconv.Itoa(i), g, 0)
			}
			if _, err := pipe.Exec(context.Background()); err != nil {
				done <- -1
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	var buf bytes.Buffer
	if err := a.srv.WriteRDB(&buf); err != nil {
		t.Fatal(err)
	}
	close(stop)
	if g := <-done; g < 1 {
		t.Fatalf("writer failed (%d)", g)
	}
	srv := newBareServer(t)
	if err := srv.LoadRDB(&buf); err != nil {
		t.Fatal(err)
	}
	if got := canonServer(srv); len(got) != n {
		t.Fatalf("%d keys", len(got))
	}
}

func TestRDBSaveRulesAndShutdownSave(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir, "save", "1 1")
	loadCommands(t, a.srv, [][]string{{"SET", "a", "1"}})
	a.srv.dirty.Add(1) // loadCommands does not count changes
	testutil.WaitFor(t, 5*time.Second, "save rule fired", func() bool {
		_, err := os.Stat(filepath.Join(dir, "dump.rdb"))
		return err == nil && a.srv.dirty.Load() == 0
	})
	// Shutdown with save rules saves.
	loadCommands(t, a.srv, [][]string{{"SET", "b", "2"}})
	if err := a.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := startServerIn(t, dir)
	got := canonServer(b.srv)
	if got["0:a"].val != "1" || got["0:b"].val != "2" {
		t.Fatalf("after shutdown save: %v", got)
	}
}

func TestRDBCorruptFileStopsStartup(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir)
	loadCommands(t, a.srv, datasetCommands())
	if got := sendRaw(t, a, "SAVE"); got != "+OK" {
		t.Fatal(got)
	}
	path := filepath.Join(dir, "dump.rdb")
	data, _ := os.ReadFile(path)
	for name, bad := range map[string][]byte{
		"truncated": data[:len(data)/2],
		"bitflip":   append(append(append([]byte{}, data[:len(data)/2]...), data[len(data)/2]^0x40), data[len(data)/2+1:]...),
	} {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, "dump.rdb"), bad, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := NewConfig()
			_ = cfg.Set("save", "")
			_ = cfg.Set("dir", d)
			_ = cfg.Set("port", "0")
			_ = cfg.Set("bind", "127.0.0.1")
			s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), "dump.rdb") {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

func TestDebugReloadObjectAndInfo(t *testing.T) {
	ts := startServer(t, "enable-debug-command", "yes")
	rc := ts.client(t)
	c := ctx(t)
	rc.Set(c, "s", "hello", time.Hour)
	rc.RPush(c, "l", "a", "b", "c")
	before := canonServer(ts.srv)
	if err := rc.Do(c, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	sameData(t, canonServer(ts.srv), before)
	// NOSAVE NOFLUSH MERGE reloads the file saved above over changed data.
	rc.Set(c, "s", "changed", 0)
	rc.Set(c, "extra", "x", 0)
	if err := rc.Do(c, "DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE").Err(); err != nil {
		t.Fatal(err)
	}
	if rc.Get(c, "s").Val() != "hello" || rc.Get(c, "extra").Val() != "x" {
		t.Fatal("MERGE did not restore s or lost extra")
	}
	if err := rc.Do(c, "DEBUG", "RELOAD", "BOGUS").Err(); err == nil {
		t.Fatal("bad option accepted")
	}
	obj := rc.Do(c, "DEBUG", "OBJECT", "s").Val().(string)
	if !strings.HasPrefix(obj, "Value at:") || !strings.Contains(obj, "encoding:embstr serializedlength:6 lru:") {
		t.Fatalf("DEBUG OBJECT: %q", obj)
	}
	if err := rc.Do(c, "DEBUG", "OBJECT", "nokey").Err(); err == nil || err.Error() != "ERR no such key" {
		t.Fatalf("DEBUG OBJECT nokey: %v", err)
	}
	info := rc.Info(c, "persistence").Val()
	for _, f := range []string{"loading:0", "rdb_bgsave_in_progress:0", "rdb_last_bgsave_status:ok", "aof_enabled:0", "aof_rewrite_in_progress:0", "aof_last_write_status:ok", "rdb_changes_since_last_save:"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO persistence lacks %q:\n%s", f, info)
		}
	}
}

func TestShutdownSaveModes(t *testing.T) {
	for _, tc := range []struct {
		save, arg string
		want      bool
	}{{"", "SAVE", true}, {"", "", false}, {"3600 1", "", true}, {"3600 1", "NOSAVE", false}} {
		t.Run(tc.save+"/"+tc.arg, func(t *testing.T) {
			dir := t.TempDir()
			a := startServerIn(t, dir, "save", tc.save)
			rc := a.client(t)
			rc.Set(ctx(t), "k", "v", 0)
			args := []any{"SHUTDOWN"}
			if tc.arg != "" {
				args = append(args, tc.arg)
			}
			_ = rc.Do(ctx(t), args...).Err()
			_, err := os.Stat(filepath.Join(dir, "dump.rdb"))
			if (err == nil) != tc.want {
				t.Fatalf("dump.rdb exists=%v, want %v", err == nil, tc.want)
			}
		})
	}
}

func TestBgsaveErrorStopsWrites(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir, "save", "3600 1", "enable-protected-configs", "yes") // CONFIG SET dir
	rc := a.client(t)
	c := ctx(t)
	if err := rc.ConfigSet(c, "dir", filepath.Join(dir, "missing", "sub")).Err(); err != nil {
		t.Fatal(err)
	}
	if got := rc.BgSave(c).Val(); got != "Background saving started" {
		t.Fatalf("BGSAVE: %q", got)
	}
	testutil.WaitFor(t, 5*time.Second, "bgsave failed", func() bool {
		return !a.srv.persist.BgsaveInProgress() && !a.srv.persist.LastBgsaveOK()
	})
	if info := rc.Info(c, "persistence").Val(); !strings.Contains(info, "rdb_last_bgsave_status:err") {
		t.Fatalf("INFO: %s", info)
	}
	err := rc.Set(c, "k", "v", 0).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "MISCONF Redis is configured to save RDB snapshots") {
		t.Fatalf("write after failed bgsave: %v", err)
	}
	if rc.Get(c, "k").Err() != redis.Nil {
		t.Fatal("reads must still work")
	}
	rc.ConfigSet(c, "dir", dir)
	if err := rc.BgSave(c).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "bgsave ok", func() bool { return a.srv.persist.LastBgsaveOK() })
	if err := rc.Set(c, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestRDBStreamFromRedisLoads: a redis-server RDB holding a stream loads
// (RDB_TYPE_STREAM_LISTPACKS_2), and so does a DUMP payload of it
// (stream_interop_test.go checks every part of the value).
func TestRDBStreamFromRedisLoads(t *testing.T) {
	r := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: r.Addr, DisableIdentity: true})
	defer rc.Close()
	c := ctx(t)
	rc.Set(c, "a", "1", 0)
	rc.XAdd(c, &redis.XAddArgs{Stream: "mystream", ID: "1-1", Values: []string{"f", "v"}})
	if err := rc.Save(c).Err(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(r.Dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644)
	ts := startServerIn(t, dir)
	nc := ts.client(t)
	if got := nc.XRange(c, "mystream", "-", "+").Val(); len(got) != 1 || got[0].ID != "1-1" || got[0].Values["f"] != "v" {
		t.Fatalf("loaded stream %v", got)
	}
	p := rc.Dump(c, "mystream").Val()
	if err := nc.Restore(c, "s", 0, p).Err(); err != nil {
		t.Fatalf("RESTORE stream: %v", err)
	}
	if n := nc.XLen(c, "s").Val(); n != 1 {
		t.Fatalf("restored XLEN %d", n)
	}
}

func TestSaveAndBgsaveInsideMulti(t *testing.T) {
	dir := t.TempDir()
	a := startServerIn(t, dir)
	rc := a.client(t)
	c := ctx(t)
	// SAVE is no-multi in Redis 7.0: the transaction is aborted.
	r := a.raw(t)
	r.expect("MULTI\r\n", "+OK")
	r.expect("SAVE\r\n", "-ERR Command not allowed inside a transaction")
	r.expect("EXEC\r\n", "-EXECABORT Transaction discarded because of previous errors.")
	// BGSAVE runs inside EXEC, which then holds every shard lock.
	cmds, err := rc.TxPipelined(c, func(p redis.Pipeliner) error {
		p.Set(c, "x", "1", 0)
		p.BgSave(c)
		p.Set(c, "y", "2", 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := cmds[1].(*redis.StatusCmd).Val(); got != "Background saving started" {
		t.Fatalf("BGSAVE in MULTI: %q", got)
	}
	testutil.WaitFor(t, 5*time.Second, "bgsave", func() bool { return !a.srv.persist.BgsaveInProgress() })
	// The snapshot opened inside the block: x is in it, y not yet.
	b := startServerIn(t, dir)
	if got := canonServer(b.srv); got["0:x"].val != "1" || got["0:y"].val != "" {
		t.Fatalf("after reload: %v", got)
	}
}

// DEBUG RELOAD (and the other DEBUG subcommands) inside MULTI complete:
// EXEC used to hold the block's key locks while DEBUG RELOAD waited for
// all of them. The block stays atomic, also with a BGSAVE writing and
// other clients writing meanwhile.
func TestDebugReloadInsideMulti(t *testing.T) {
	a := startServerIn(t, t.TempDir(), "enable-debug-command", "yes")
	rc := a.client(t)
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 2000 {
		rc.Set(c, "pre:"+strconv.Itoa(i), i, 0)
	}
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		wc := a.client(t)
		for i := 0; ; i++ {
			if i >= 100 { // every w: key written at least once
				select {
				case <-stop:
					writerDone <- nil
					return
				default:
				}
			}
			if err := wc.Set(c, "w:"+strconv.Itoa(i%100), i, 0).Err(); err != nil {
				writerDone <- err
				return
			}
		}
	}()
	for round := range 5 {
		if round == 2 {
			if err := rc.BgSave(c).Err(); err != nil {
				t.Fatal(err)
			}
		}
		cmds, err := rc.TxPipelined(c, func(p redis.Pipeliner) error {
			p.Set(c, "k", round, 0)
			p.Do(c, "DEBUG", "RELOAD")
			p.Get(c, "k")
			p.Do(c, "DEBUG", "OBJECT", "k")
			p.Do(c, "DEBUG", "DIGEST-VALUE", "k")
			p.Do(c, "DEBUG", "SLEEP", "0")
			p.Incr(c, "k")
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got := cmds[1].(*redis.Cmd).Val(); got != "OK" {
			t.Fatalf("round %d: DEBUG RELOAD = %v", round, got)
		}
		if got := cmds[2].(*redis.StringCmd).Val(); got != strconv.Itoa(round) {
			t.Fatalf("round %d: GET after reload = %q", round, got)
		}
		if got := cmds[6].(*redis.IntCmd).Val(); got != int64(round+1) {
			t.Fatalf("round %d: INCR = %d", round, got)
		}
	}
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	if n := rc.DBSize(c).Val(); n != 2000+1+100 {
		t.Fatalf("DBSIZE after the reloads = %d", n)
	}
	// Outside MULTI too.
	if err := rc.Do(c, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
}
