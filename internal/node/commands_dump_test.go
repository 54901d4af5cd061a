package node

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/rdb"
	"github.com/shardis/shardis/internal/testutil"
)

func dbKeys(m map[string]item, db string) []string {
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, db+":") {
			keys = append(keys, strings.TrimPrefix(k, db+":"))
		}
	}
	return keys
}

func TestDumpRestoreInteropBothWays(t *testing.T) {
	r := testutil.StartRedis(t)
	runCommands(t, r.Addr, datasetCommands())
	want := canonRedis(t, r.Addr)
	rr := redis.NewClient(&redis.Options{Addr: r.Addr, DisableIdentity: true})
	defer rr.Close()
	ts := startServer(t)
	ours := ts.client(t)
	c := ctx(t)
	// redis-server DUMP -> shardnode RESTORE (db 0 keys).
	for _, k := range dbKeys(want, "0") {
		p, err := rr.Dump(c, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttl := rr.PTTL(c, k).Val()
		if ttl < 0 {
			ttl = 0
		}
		if err := ours.Restore(c, k, ttl, p).Err(); err != nil {
			t.Fatalf("RESTORE %s: %v", k, err)
		}
	}
	got := canonServer(ts.srv)
	for k := range want {
		if !strings.HasPrefix(k, "0:") {
			delete(want, k)
		}
	}
	sameData(t, got, want)
	// shardnode DUMP -> fresh redis-server RESTORE.
	r2 := testutil.StartRedis(t)
	rr2 := redis.NewClient(&redis.Options{Addr: r2.Addr, DisableIdentity: true})
	defer rr2.Close()
	for _, k := range dbKeys(want, "0") {
		p, err := ours.Dump(c, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Byte-identical to redis-server's own payload for the same value.
		// (LZF output may differ between compressors: short values only.)
		short := map[string]bool{"str:small": true, "str:int": true, "list:small": true, "hash:small": true, "str:bin": true}
		if theirs := rr.Dump(c, k).Val(); theirs != p && short[k] {
			t.Errorf("DUMP %s differs from redis-server's", k)
		}
		if err := rr2.Restore(c, k, 0, p).Err(); err != nil {
			t.Fatalf("redis RESTORE %s: %v", k, err)
		}
	}
	back := canonRedis(t, r2.Addr)
	for k, it := range want {
		it.expire = 0
		want[k] = it
	}
	sameData(t, back, want)
}

func TestRestoreOptionsAndErrors(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.Set(c, "k", "hello", 0)
	p := rc.Dump(c, "k").Val()
	r := ts.raw(t)
	cases := []struct{ req, want string }{
		{"RESTORE k 0 x\r\n", "-BUSYKEY Target key name already exists."},
		{"RESTORE n -1 x\r\n", "-ERR Invalid TTL value, must be >= 0"},
		{"RESTORE n abc x\r\n", "-ERR value is not an integer or out of range"},
		{"RESTORE n 0 x\r\n", "-ERR DUMP payload version or checksum are wrong"},
		{"RESTORE n 0 x FOO\r\n", "-ERR syntax error"},
		{"RESTORE n 0 x IDLETIME -1\r\n", "-ERR Invalid IDLETIME value, must be >= 0"},
		{"RESTORE n 0 x FREQ 256\r\n", "-ERR Invalid FREQ value, must be >= 0 and <= 255"},
		{"RESTORE n 0 x IDLETIME 1 FREQ 1\r\n", "-ERR syntax error"},
		{"DUMP nokey\r\n", "$-1"},
	}
	for _, tc := range cases {
		r.expect(tc.req, tc.want)
	}
	if err := rc.RestoreReplace(c, "k", 0, p).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(c, "RESTORE", "t", time.Now().Add(time.Hour).UnixMilli(), p, "ABSTTL").Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := rc.PTTL(c, "t").Val(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Fatalf("ABSTTL pttl %v", ttl)
	}
	// A TTL already in the past: OK, key not created, old key deleted.
	if err := rc.Do(c, "RESTORE", "k", 1, p, "ABSTTL", "REPLACE").Err(); err != nil {
		t.Fatal(err)
	}
	if n := rc.Exists(c, "k").Val(); n != 0 {
		t.Fatal("expired RESTORE left the key")
	}
	// A corrupt body with a valid checksum is "Bad data format".
	bad := []byte{0x12, 0x05, 0x02, 0x00, 0x00, 0x0a, 0x00}
	bad = append(bad, crcLE(bad)...)
	if err := rc.Restore(c, "z", 0, string(bad)).Err(); err == nil || err.Error() != "ERR Bad data format" {
		t.Fatalf("bad body: %v", err)
	}
}

func crcLE(b []byte) []byte {
	c := rdb.Checksum(b)
	out := make([]byte, 8)
	for i := range out {
		out[i] = byte(c >> (8 * i))
	}
	return out
}

func TestMigrate(t *testing.T) {
	src := startServer(t)
	s := src.client(t)
	c := ctx(t)
	dst := testutil.StartRedis(t)
	if err := redis.NewClient(&redis.Options{Addr: dst.Addr, DisableIdentity: true}).ConfigSet(c, "requirepass", "pw").Err(); err != nil {
		t.Fatal(err)
	}
	d := redis.NewClient(&redis.Options{Addr: dst.Addr, Password: "pw", DisableIdentity: true})
	defer d.Close()
	host, port := "127.0.0.1", dst.Port
	s.Set(c, "a", "1", time.Hour)
	s.Set(c, "b", "2", 0)
	s.Set(c, "c", "3", 0)
	// Single key, AUTH.
	if got := s.Do(c, "MIGRATE", host, port, "a", 3, 5000, "AUTH", "pw").Val(); got != "OK" {
		t.Fatalf("MIGRATE: %v", s.Do(c, "MIGRATE", host, port, "a", 3, 5000, "AUTH", "pw").Err())
	}
	if s.Exists(c, "a").Val() != 0 {
		t.Fatal("migrated key still here")
	}
	d3 := redis.NewClient(&redis.Options{Addr: dst.Addr, Password: "pw", DB: 3, DisableIdentity: true})
	defer d3.Close()
	if d3.Get(c, "a").Val() != "1" || d3.PTTL(c, "a").Val() < 59*time.Minute {
		t.Fatal("target does not have a with its TTL")
	}
	// KEYS form with COPY: keys stay.
	if err := s.Do(c, "MIGRATE", host, port, "", 0, 5000, "COPY", "AUTH2", "default", "pw", "KEYS", "b", "c", "missing").Err(); err != nil {
		t.Fatal(err)
	}
	if s.Exists(c, "b", "c").Val() != 2 || d.Get(c, "b").Val() != "2" || d.Get(c, "c").Val() != "3" {
		t.Fatal("COPY")
	}
	// Existing key on the target without REPLACE: the target's error.
	err := s.Do(c, "MIGRATE", host, port, "b", 0, 5000, "AUTH", "pw").Err()
	if err == nil || !strings.Contains(err.Error(), "Target instance replied with error: BUSYKEY") {
		t.Fatalf("busy: %v", err)
	}
	if err := s.Do(c, "MIGRATE", host, port, "b", 0, 5000, "REPLACE", "AUTH", "pw").Err(); err != nil {
		t.Fatal(err)
	}
	if got := s.Do(c, "MIGRATE", host, port, "nokey", 0, 5000).Val(); got != "NOKEY" {
		t.Fatalf("NOKEY: %v", got)
	}
	r := src.raw(t)
	r.expect("MIGRATE 127.0.0.1 1 x 0 100 KEYS a\r\n", "-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
	r.expect("MIGRATE 127.0.0.1 1 c 0 100 AUTH\r\n", "-ERR syntax error")
	closed := testutil.FreePort(t)
	r.send("MIGRATE 127.0.0.1 " + strconv.Itoa(closed) + " c 0 100\r\n")
	if got := r.readLine(); !strings.HasPrefix(got, "-IOERR") {
		t.Fatalf("closed port: %s", got)
	}
	// shardnode to shardnode.
	dst2 := startServer(t)
	if err := s.Do(c, "MIGRATE", "127.0.0.1", strings.Split(dst2.addr, ":")[1], "c", 0, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	if dst2.client(t).Get(c, "c").Val() != "3" {
		t.Fatal("shardnode target")
	}
}

// TestDumpLZFSkipRedisRestores: strings whose matches follow a long
// incompressible stretch (where the LZF compressor steps over positions)
// DUMP to compressed payloads that redis-server RESTOREs to the same bytes.
func TestDumpLZFSkipRedisRestores(t *testing.T) {
	r := testutil.StartRedis(t)
	rr := redis.NewClient(&redis.Options{Addr: r.Addr, DisableIdentity: true})
	defer rr.Close()
	ts := startServer(t)
	ours := ts.client(t)
	c := ctx(t)
	rng := rand.New(rand.NewPCG(3, 4))
	noise := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	values := map[string]string{
		"noise-then-text": noise(64<<10) + strings.Repeat("the quick brown fox ", 5000),
		"text-noise-text": strings.Repeat("abcdefgh", 2000) + noise(20000) + strings.Repeat("0123456789", 3000),
		"noise-runs":      strings.Repeat(noise(3000)+strings.Repeat("x", 400), 30),
	}
	for k, v := range values {
		if err := ours.Set(c, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		p, err := ours.Dump(c, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) >= len(v) {
			t.Errorf("%s: payload %d bytes for a %d-byte value: not compressed", k, len(p), len(v))
		}
		if err := rr.Restore(c, k, 0, p).Err(); err != nil {
			t.Fatalf("redis RESTORE %s: %v", k, err)
		}
		if got := rr.Get(c, k).Val(); got != v {
			t.Errorf("%s: redis-server holds %d bytes, want the %d set", k, len(got), len(v))
		}
	}
}
