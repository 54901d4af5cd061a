package node

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestKeysBasic(t *testing.T) {
	ts, m := startManual(t)
	r := ts.raw(t)
	r.expect("MSET a 1 b 2 c 3\r\n", "+OK")
	t.Run("DEL", func(t *testing.T) {
		r.expect("DEL a b nope\r\n", ":2")
		r.expect("UNLINK c c\r\n", ":1")
		r.expect("DEL\r\n", "-ERR wrong number of arguments for 'del' command")
	})
	t.Run("EXISTS/TOUCH", func(t *testing.T) {
		r.expect("SET k v\r\n", "+OK")
		r.expect("EXISTS k k nope\r\n", ":2")
		r.expect("TOUCH k nope k\r\n", ":2")
	})
	t.Run("TYPE", func(t *testing.T) {
		r.expect("TYPE k\r\n", "+string")
		r.expect("TYPE nope\r\n", "+none")
		r.expect("RPUSH l a\r\n", ":1")
		r.expect("TYPE l\r\n", "+list")
	})
	t.Run("KEYS", func(t *testing.T) {
		rc := ts.client(t)
		c := ctx(t)
		rc.FlushDB(c)
		rc.MSet(c, "foo_a", 1, "foo_b", 2, "bar", 3)
		rc.Set(c, "foo_gone", 1, time.Millisecond)
		m.Advance(time.Millisecond)
		got := rc.Keys(c, "foo*").Val()
		sort.Strings(got)
		if fmt.Sprint(got) != "[foo_a foo_b]" {
			t.Fatalf("KEYS foo* = %v", got)
		}
		if n := len(rc.Keys(c, "*").Val()); n != 3 {
			t.Fatalf("KEYS * = %d keys", n)
		}
		rc.Set(c, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1, 0)
		start := time.Now()
		if v := rc.Keys(c, "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b").Val(); len(v) != 0 {
			t.Fatalf("nested pattern matched %v", v)
		}
		if time.Since(start) > time.Second {
			t.Fatal("nested * pattern took too long")
		}
	})
}

func TestRename(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("RENAME nope x\r\n", "-ERR no such key")
	r.expect("RENAMENX nope x\r\n", "-ERR no such key")
	r.expect("SET a 1\r\n", "+OK")
	r.expect("RENAME a a\r\n", "+OK")
	r.expect("RENAMENX a a\r\n", ":0")
	r.expect("PEXPIRE a 100000\r\n", ":1")
	r.expect("SET b 2\r\n", "+OK")
	r.expect("RENAMENX a b\r\n", ":0")
	r.expect("RENAME a b\r\n", "+OK")
	r.expect("EXISTS a\r\n", ":0")
	expectLines(t, r, "GET b\r\n", "$1", "1")
	r.expect("TTL b\r\n", ":100")
	r.expect("SET c 3\r\n", "+OK")
	r.expect("RENAME c b\r\n", "+OK")
	r.expect("TTL b\r\n", ":-1") // the target's TTL is not inherited
	r.expect("RENAMENX b d\r\n", ":1")
	r.expect("RPUSH l x y\r\n", ":2")
	r.expect("RENAME l l2\r\n", "+OK")
	r.expect("LLEN l2\r\n", ":2")
}

func TestMoveCopy(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("SET k v\r\n", "+OK")
	r.expect("EXPIRE k 100\r\n", ":1")
	r.expect("MOVE k 0\r\n", "-ERR source and destination objects are the same")
	r.expect("MOVE k x\r\n", "-"+errNotInt)
	r.expect("MOVE k 16\r\n", "-ERR DB index is out of range")
	r.expect("MOVE nope 1\r\n", ":0")
	r.expect("MOVE k 1\r\n", ":1")
	r.expect("EXISTS k\r\n", ":0")
	r.expect("SELECT 1\r\n", "+OK")
	r.expect("TTL k\r\n", ":100")
	r.expect("SET k2 other\r\n", "+OK")
	r.expect("SELECT 0\r\n", "+OK")
	r.expect("SET k2 mine\r\n", "+OK")
	r.expect("MOVE k2 1\r\n", ":0") // exists in the target

	r.expect("COPY k2 k2\r\n", "-ERR source and destination objects are the same")
	r.expect("COPY nope x\r\n", ":0")
	r.expect("COPY k2 k3\r\n", ":1")
	r.expect("APPEND k3 !\r\n", ":5")
	expectLines(t, r, "GET k2\r\n", "$4", "mine") // independent copy
	r.expect("COPY k2 k3\r\n", ":0")
	r.expect("COPY k2 k3 REPLACE\r\n", ":1")
	r.expect("COPY k2 k2 DB 1\r\n", ":0")
	r.expect("COPY k2 k2 DB 1 REPLACE\r\n", ":1")
	r.expect("COPY k2 x DB 99\r\n", "-ERR DB index is out of range")
	r.expect("COPY k2 x DB\r\n", "-ERR syntax error")
	r.expect("SADD s a b c\r\n", ":3")
	r.expect("PEXPIRE s 100000\r\n", ":1")
	r.expect("COPY s s2\r\n", ":1")
	r.expect("SREM s a\r\n", ":1")
	r.expect("SCARD s2\r\n", ":3")
	r.expect("TTL s2\r\n", ":100")
}

func TestObject(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("SET i 12\r\n", "+OK")
	expectLines(t, r, "OBJECT ENCODING i\r\n", "$3", "int")
	r.expect("SET s hello\r\n", "+OK")
	expectLines(t, r, "OBJECT ENCODING s\r\n", "$6", "embstr")
	r.expect("OBJECT ENCODING nope\r\n", "$-1")
	r.expect("OBJECT REFCOUNT s\r\n", ":1")
	r.expect("OBJECT REFCOUNT i\r\n", ":2147483647")
	r.expect("OBJECT IDLETIME s\r\n", ":0")
	r.expect("OBJECT FREQ s\r\n", "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	r.expect("OBJECT FOO s\r\n", "-ERR unknown subcommand 'FOO'. Try OBJECT HELP.")
	r.expect("OBJECT ENCODING\r\n", "-ERR wrong number of arguments for 'object|encoding' command")
	r.send("OBJECT HELP\r\n")
	if got := r.readLine(); got != "*15" {
		t.Fatalf("OBJECT HELP: %q", got)
	}
	for i := 0; i < 15; i++ {
		r.readLine()
	}
}

func TestRandomKey(t *testing.T) {
	ts, m := startManual(t)
	rc := ts.client(t)
	c := ctx(t)
	if err := rc.RandomKey(c).Err(); err != redis.Nil {
		t.Fatalf("RANDOMKEY on empty DB: %v", err)
	}
	rc.Set(c, "foo", 1, 0)
	rc.Set(c, "bar", 1, 0)
	seen := map[string]bool{}
	for i := 0; i < 200 && len(seen) < 2; i++ {
		seen[rc.RandomKey(c).Val()] = true
	}
	if !seen["foo"] || !seen["bar"] || len(seen) != 2 {
		t.Fatalf("RANDOMKEY saw %v", seen)
	}
	// Expired keys are never returned.
	rc.FlushDB(c)
	for i := 0; i < 20; i++ {
		rc.Set(c, "gone"+strconv.Itoa(i), 1, time.Millisecond)
	}
	m.Advance(time.Millisecond)
	if err := rc.RandomKey(c).Err(); err != redis.Nil {
		t.Fatalf("RANDOMKEY with only expired keys: %v", err)
	}
}

func TestScan(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	t.Run("Errors", func(t *testing.T) {
		r := ts.raw(t)
		r.expect("SCAN x\r\n", "-ERR invalid cursor")
		r.expect("SCAN 0 COUNT 0\r\n", "-ERR syntax error")
		r.expect("SCAN 0 COUNT x\r\n", "-"+errNotInt)
		r.expect("SCAN 0 MATCH\r\n", "-ERR syntax error")
		r.expect("SCAN 0 FOO bar\r\n", "-ERR syntax error")
	})
	t.Run("Options", func(t *testing.T) {
		rc.FlushDB(c)
		for i := 0; i < 300; i++ {
			rc.Set(c, "s:"+strconv.Itoa(i), i, 0)
		}
		for i := 0; i < 50; i++ {
			rc.RPush(c, "l:"+strconv.Itoa(i), "x")
		}
		all := scanAll(t, rc, "", 0, "")
		if len(all) != 350 {
			t.Fatalf("SCAN returned %d distinct keys, want 350", len(all))
		}
		if got := scanAll(t, rc, "l:*", 7, ""); len(got) != 50 {
			t.Fatalf("SCAN MATCH l:* = %d keys", len(got))
		}
		if got := scanAll(t, rc, "", 100, "list"); len(got) != 50 {
			t.Fatalf("SCAN TYPE list = %d keys", len(got))
		}
		if got := scanAll(t, rc, "", 100, "LIST"); len(got) != 50 {
			t.Fatalf("SCAN TYPE LIST = %d keys", len(got))
		}
		// RESP3 has the same shape.
		r3 := ts.client(t, 3)
		keys, cur, err := r3.Scan(c, 0, "s:1", 1000).Result()
		if err != nil || cur != 0 || len(keys) != 1 || keys[0] != "s:1" {
			t.Fatalf("RESP3 SCAN = %v %d %v", keys, cur, err)
		}
	})
	t.Run("NeverMissesDuringResize", func(t *testing.T) {
		// Keys present for the whole scan must be returned while other
		// keys are added and removed concurrently (so shards grow and
		// shrink between SCAN calls).
		rc.FlushDB(c)
		const stable = 2000
		pipe := rc.Pipeline()
		for i := 0; i < stable; i++ {
			pipe.Set(c, "stable:"+strconv.Itoa(i), 1, 0)
		}
		if _, err := pipe.Exec(c); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				wc := ts.client(t)
				deadline := time.Now().Add(5 * time.Second)
				for round := 0; time.Now().Before(deadline); round++ {
					select {
					case <-stop:
						return
					default:
					}
					p := wc.Pipeline()
					for i := 0; i < 5000; i++ {
						k := fmt.Sprintf("churn:%d:%d", w, i)
						if round%2 == 0 {
							p.Set(c, k, 1, 0)
						} else {
							p.Del(c, k)
						}
					}
					if _, err := p.Exec(c); err != nil {
						return
					}
				}
			}(w)
		}
		for pass := 0; pass < 3; pass++ {
			seen := scanAll(t, rc, "stable:*", 20, "")
			if len(seen) != stable {
				close(stop)
				wg.Wait()
				t.Fatalf("pass %d: SCAN saw %d of %d stable keys", pass, len(seen), stable)
			}
		}
		close(stop)
		wg.Wait()
	})
}

// scanAll runs a full SCAN and returns the distinct keys (bounded).
func scanAll(t *testing.T, rc *redis.Client, match string, count int64, typ string) map[string]bool {
	t.Helper()
	c := ctx(t)
	seen := map[string]bool{}
	var cursor uint64
	for i := 0; i < 100000; i++ {
		var keys []string
		var err error
		if typ != "" {
			keys, cursor, err = rc.ScanType(c, cursor, match, count, typ).Result()
		} else {
			keys, cursor, err = rc.Scan(c, cursor, match, count).Result()
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cursor == 0 {
			return seen
		}
	}
	t.Fatal("SCAN did not finish")
	return nil
}

func TestObjectIdletime(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("SET k v\r\n", "+OK")
	age := func(secs uint32) {
		db := ts.srv.dbs[0]
		sh := db.KeyShard("k")
		sh.Mu.Lock()
		db.GetEntry("k").LRU = uint32(time.Now().Unix()) - secs
		sh.Mu.Unlock()
	}
	age(100)
	// OBJECT, TYPE, TTL and EXISTS do not touch the key.
	r.expect("TYPE k\r\n", "+string")
	r.expect("TTL k\r\n", ":-1")
	r.expect("EXISTS k\r\n", ":1")
	r.send("OBJECT IDLETIME k\r\n")
	if n, _ := strconv.Atoi(strings.TrimPrefix(r.readLine(), ":")); n < 99 || n > 102 {
		t.Fatalf("OBJECT IDLETIME after aging = %d", n)
	}
	expectLines(t, r, "GET k\r\n", "$1", "v")
	r.expect("OBJECT IDLETIME k\r\n", ":0")
	age(50)
	r.expect("TOUCH k\r\n", ":1")
	r.expect("OBJECT IDLETIME k\r\n", ":0")
	r.expect("OBJECT IDLETIME nope\r\n", "$-1")
}

// TestScanInMulti runs the self-locking commands inside EXEC next to
// commands whose shard locks EXEC already holds (no self-deadlock).
func TestScanInMulti(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	for i := 0; i < 100; i++ {
		rc.Set(c, "k"+strconv.Itoa(i), i, 0)
	}
	cmds, err := rc.TxPipelined(c, func(p redis.Pipeliner) error {
		p.Set(c, "k1", "x", 0)
		p.Scan(c, 0, "", 1000)
		p.RandomKey(c)
		p.Keys(c, "k1*")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys, _ := cmds[1].(*redis.ScanCmd).Val(); len(keys) != 100 {
		t.Fatalf("SCAN in MULTI = %d keys", len(keys))
	}
	if cmds[2].(*redis.StringCmd).Val() == "" {
		t.Fatal("RANDOMKEY in MULTI returned nothing")
	}
}

func TestNewKeyNotification(t *testing.T) {
	ts := startServer(t, "notify-keyspace-events", "En")
	rc := ts.client(t)
	c := ctx(t)
	sub := rc.PSubscribe(c, "*")
	defer sub.Close()
	if _, err := sub.Receive(c); err != nil {
		t.Fatal(err)
	}
	rc.Set(c, "foo", "bar", 0)
	rc.Set(c, "foo", "baz", 0) // not new
	rc.Rename(c, "foo", "moved")
	rc.Set(c, "bar", "bar", 0)
	for _, want := range []string{"moved", "bar"} {
		m, err := sub.ReceiveMessage(c)
		if err == nil && m.Channel == "__keyevent@0__:new" && m.Payload == "foo" {
			m, err = sub.ReceiveMessage(c)
		}
		if err != nil || m.Channel != "__keyevent@0__:new" || m.Payload != want {
			t.Fatalf("got %+v %v, want new %s", m, err, want)
		}
	}
}
