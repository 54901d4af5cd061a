package node

import (
	"fmt"
	"github.com/shardis/shardis/internal/node/keyspace"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestSetGet(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		c := ctx(t)
		if err := rc.Set(c, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := rc.Get(c, "k").Result(); err != nil || v != "v" {
			t.Fatalf("GET = %q, %v", v, err)
		}
		if err := rc.Get(c, "missing").Err(); err != redis.Nil {
			t.Fatalf("GET missing: %v", err)
		}
	}
}

func TestSetOptions(t *testing.T) {
	ts, m := startManual(t)
	rc := ts.client(t)
	c := ctx(t)
	t.Run("NX", func(t *testing.T) {
		ok, err := rc.SetNX(c, "nx", "1", 0).Result()
		if err != nil || !ok {
			t.Fatalf("first SET NX: %v %v", ok, err)
		}
		ok, err = rc.SetNX(c, "nx", "2", 0).Result()
		if err != nil || ok {
			t.Fatalf("second SET NX: %v %v", ok, err)
		}
	})
	t.Run("XX", func(t *testing.T) {
		ok, err := rc.SetXX(c, "xx", "1", 0).Result()
		if err != nil || ok {
			t.Fatalf("SET XX missing: %v %v", ok, err)
		}
	})
	t.Run("PX", func(t *testing.T) {
		rc.Set(c, "px", "1", 50*time.Millisecond)
		if rc.Exists(c, "px").Val() != 1 {
			t.Fatal("key missing right after SET PX")
		}
		m.Advance(49 * time.Millisecond)
		if rc.Exists(c, "px").Val() != 1 {
			t.Fatal("key gone 1 ms before its PX")
		}
		m.Advance(time.Millisecond)
		if rc.Exists(c, "px").Val() != 0 {
			t.Fatal("expired key still visible")
		}
	})
	t.Run("Errors", func(t *testing.T) {
		r := ts.raw(t)
		r.expect("SET a b NX XX\r\n", "-ERR syntax error")
		r.expect("SET a b EX 0\r\n", "-ERR invalid expire time in 'set' command")
		r.expect("SET a b EX x\r\n", "-ERR value is not an integer or out of range")
		r.expect("SET a\r\n", "-ERR wrong number of arguments for 'set' command")
	})
}

func TestIncr(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("INCR n\r\n", ":1")
	r.expect("INCRBY n 10\r\n", ":11")
	r.expect("SET n 9223372036854775807\r\n", "+OK")
	r.expect("INCR n\r\n", "-ERR increment or decrement would overflow")
	r.expect("SET s abc\r\n", "+OK")
	r.expect("INCR s\r\n", "-ERR value is not an integer or out of range")
}

func TestMultiExec(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("MULTI\r\n", "+OK")
	r.expect("SET a 1\r\n", "+QUEUED")
	r.expect("INCR a\r\n", "+QUEUED")
	r.send("EXEC\r\n")
	for _, want := range []string{"*2", "+OK", ":2"} {
		if got := r.readLine(); got != want {
			t.Fatalf("EXEC reply: got %q want %q", got, want)
		}
	}
	r.expect("MULTI\r\n", "+OK")
	r.expect("NOSUCH\r\n", "-ERR unknown command 'NOSUCH', with args beginning with: ")
	r.expect("EXEC\r\n", "-EXECABORT Transaction discarded because of previous errors.")

	// WATCH broken by another client's write.
	other := ts.raw(t)
	r.expect("WATCH w\r\n", "+OK")
	other.expect("SET w x\r\n", "+OK")
	r.expect("MULTI\r\n", "+OK")
	r.expect("SET w y\r\n", "+QUEUED")
	r.expect("EXEC\r\n", "*-1")
}

func TestPubSub(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	sub := rc.Subscribe(c, "ch")
	defer sub.Close()
	if _, err := sub.Receive(c); err != nil {
		t.Fatal(err)
	}
	if n := rc.Publish(c, "ch", "hello").Val(); n != 1 {
		t.Fatalf("PUBLISH receivers = %d", n)
	}
	msg, err := sub.ReceiveMessage(c)
	if err != nil || msg.Payload != "hello" || msg.Channel != "ch" {
		t.Fatalf("message %+v %v", msg, err)
	}
}

// expectLines sends req on r and checks the next len(want) reply lines.
func expectLines(t *testing.T, r *rawConn, req string, want ...string) {
	t.Helper()
	r.send(req)
	for i, w := range want {
		if got := r.readLine(); got != w {
			t.Fatalf("%q line %d: got %q, want %q", req, i, got, w)
		}
	}
}

func TestSetExtended(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	t.Run("GET", func(t *testing.T) {
		r.expect("SET g 1 GET\r\n", "$-1")
		expectLines(t, r, "SET g 2 GET\r\n", "$1", "1")
		expectLines(t, r, "SET g 3 NX GET\r\n", "$1", "2")
		expectLines(t, r, "GET g\r\n", "$1", "2")
		r.expect("SET gx 1 XX GET\r\n", "$-1")
		r.expect("EXISTS gx\r\n", ":0")
		r.expect("HSET h f v\r\n", ":1")
		r.expect("SET h v GET\r\n", "-"+errWrongType)
	})
	t.Run("KEEPTTL", func(t *testing.T) {
		r.expect("SET k v EX 100\r\n", "+OK")
		r.expect("SET k v2 KEEPTTL\r\n", "+OK")
		r.expect("TTL k\r\n", ":100")
		r.expect("SET k v3\r\n", "+OK")
		r.expect("TTL k\r\n", ":-1")
	})
	t.Run("Errors", func(t *testing.T) {
		r.expect("SET a b EX 10 PX 10\r\n", "-ERR syntax error")
		r.expect("SET a b KEEPTTL EX 10\r\n", "-ERR syntax error")
		r.expect("SET a b EX\r\n", "-ERR syntax error")
		r.expect("SET a b PERSIST\r\n", "-ERR syntax error")
		r.expect("SET a b EX 9223372036854775807\r\n", "-ERR invalid expire time in 'set' command")
		r.expect("SET a b PX 9223372036854775807\r\n", "-ERR invalid expire time in 'set' command")
		r.expect("SET a b PXAT -1\r\n", "-ERR invalid expire time in 'set' command")
		r.expect("SETEX a 0 v\r\n", "-ERR invalid expire time in 'setex' command")
		r.expect("PSETEX a -5 v\r\n", "-ERR invalid expire time in 'psetex' command")
	})
	t.Run("EXAT", func(t *testing.T) {
		at := time.Now().Add(time.Hour).Unix()
		r.expect(fmt.Sprintf("SET e v EXAT %d\r\n", at), "+OK")
		r.expect("EXPIRETIME e\r\n", fmt.Sprintf(":%d", at))
		r.expect(fmt.Sprintf("SET e v PXAT %d\r\n", at*1000+5), "+OK")
		r.expect("PEXPIRETIME e\r\n", fmt.Sprintf(":%d", at*1000+5))
	})
}

func TestStringVariants(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	r := ts.raw(t)
	t.Run("SETNX", func(t *testing.T) {
		r.expect("SETNX n 1\r\n", ":1")
		r.expect("SETNX n 2\r\n", ":0")
	})
	t.Run("SETEX", func(t *testing.T) {
		r.expect("SETEX s 100 v\r\n", "+OK")
		if d := rc.TTL(c, "s").Val(); d != 100*time.Second {
			t.Fatalf("TTL = %v", d)
		}
		r.expect("PSETEX p 100000 v\r\n", "+OK")
		if d := rc.PTTL(c, "p").Val(); d <= 99*time.Second || d > 100*time.Second {
			t.Fatalf("PTTL = %v", d)
		}
	})
	t.Run("GETSET", func(t *testing.T) {
		r.expect("GETSET gs a\r\n", "$-1")
		r.expect("SETEX gs 100 b\r\n", "+OK")
		expectLines(t, r, "GETSET gs c\r\n", "$1", "b")
		r.expect("TTL gs\r\n", ":-1")
	})
	t.Run("GETDEL", func(t *testing.T) {
		r.expect("SET gd v\r\n", "+OK")
		expectLines(t, r, "GETDEL gd\r\n", "$1", "v")
		r.expect("GETDEL gd\r\n", "$-1")
		r.expect("RPUSH gdl a\r\n", ":1")
		r.expect("GETDEL gdl\r\n", "-"+errWrongType)
	})
	t.Run("MSETNX", func(t *testing.T) {
		r.expect("MSETNX m1 a m2 b\r\n", ":1")
		r.expect("MSETNX m2 x m3 y\r\n", ":0")
		r.expect("EXISTS m3\r\n", ":0")
		r.expect("MSETNX m1 a m2\r\n", "-ERR wrong number of arguments for 'msetnx' command")
		r.expect("MSET m1 a m2\r\n", "-ERR wrong number of arguments for 'mset' command")
		if v := rc.MGet(c, "m1", "m2", "nope").Val(); len(v) != 3 || v[0] != "a" || v[1] != "b" || v[2] != nil {
			t.Fatalf("MGET = %v", v)
		}
	})
	t.Run("APPEND", func(t *testing.T) {
		r.expect("APPEND ap foo\r\n", ":3")
		r.expect("APPEND ap bar\r\n", ":6")
		expectLines(t, r, "GET ap\r\n", "$6", "foobar")
		r.expect("STRLEN ap\r\n", ":6")
		r.expect("STRLEN nope\r\n", ":0")
	})
	t.Run("GETRANGE", func(t *testing.T) {
		r.expect("SET gr Hello\r\n", "+OK")
		expectLines(t, r, "GETRANGE gr 0 -1\r\n", "$5", "Hello")
		expectLines(t, r, "GETRANGE gr -3 -1\r\n", "$3", "llo")
		expectLines(t, r, "GETRANGE gr 1 100\r\n", "$4", "ello")
		expectLines(t, r, "GETRANGE gr -1 -3\r\n", "$0", "")
		expectLines(t, r, "SUBSTR gr 0 0\r\n", "$1", "H")
		expectLines(t, r, "GETRANGE missing 0 5\r\n", "$0", "")
		r.expect("GETRANGE gr a 1\r\n", "-"+errNotInt)
	})
	t.Run("SETRANGE", func(t *testing.T) {
		r.expect("SETRANGE sr 3 ab\r\n", ":5")
		expectLines(t, r, "GET sr\r\n", "$5", "\x00\x00\x00ab")
		r.expect("SETRANGE sr 0 Z\r\n", ":5")
		r.expect("SETRANGE sr 0 \"\"\r\n", ":5")
		r.expect("SETRANGE srmissing 10 \"\"\r\n", ":0")
		r.expect("EXISTS srmissing\r\n", ":0")
		r.expect("SETRANGE sr -1 x\r\n", "-ERR offset is out of range")
		r.expect("SETRANGE sr 536870911 xx\r\n", "-ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	})
}

func TestGetEx(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("SET k v\r\n", "+OK")
	t.Run("EX", func(t *testing.T) {
		expectLines(t, r, "GETEX k EX 100\r\n", "$1", "v")
		r.expect("TTL k\r\n", ":100")
	})
	t.Run("PX", func(t *testing.T) {
		expectLines(t, r, "GETEX k PX 50000\r\n", "$1", "v")
		r.expect("TTL k\r\n", ":50")
	})
	t.Run("EXAT", func(t *testing.T) {
		at := time.Now().Add(time.Hour).Unix()
		expectLines(t, r, fmt.Sprintf("GETEX k EXAT %d\r\n", at), "$1", "v")
		r.expect("EXPIRETIME k\r\n", fmt.Sprintf(":%d", at))
	})
	t.Run("PERSIST", func(t *testing.T) {
		expectLines(t, r, "GETEX k PERSIST\r\n", "$1", "v")
		r.expect("TTL k\r\n", ":-1")
	})
	t.Run("NoOption", func(t *testing.T) {
		r.expect("EXPIRE k 100\r\n", ":1")
		expectLines(t, r, "GETEX k\r\n", "$1", "v")
		r.expect("TTL k\r\n", ":100")
	})
	t.Run("PastPXATDeletes", func(t *testing.T) {
		expectLines(t, r, "GETEX k PXAT 1\r\n", "$1", "v")
		r.expect("EXISTS k\r\n", ":0")
	})
	t.Run("Errors", func(t *testing.T) {
		r.expect("SET k v\r\n", "+OK")
		r.expect("GETEX k EX 10 PX 10\r\n", "-ERR syntax error")
		r.expect("GETEX k PERSIST EX 10\r\n", "-ERR syntax error")
		r.expect("GETEX k KEEPTTL\r\n", "-ERR syntax error")
		r.expect("GETEX k NX\r\n", "-ERR syntax error")
		r.expect("GETEX k EX -1\r\n", "-ERR invalid expire time in 'getex' command")
		r.expect("GETEX k EX 9223372036854775807\r\n", "-ERR invalid expire time in 'getex' command")
		r.expect("GETEX k EX abc\r\n", "-"+errNotInt)
		r.expect("GETEX\r\n", "-ERR wrong number of arguments for 'getex' command")
		r.expect("GETEX missing EX 10\r\n", "$-1")
	})
}

func TestIncrByFloat(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	cases := []struct{ set, by, want string }{
		{"", "10.5", "10.5"},
		{"10.5", "0.1", "10.6"},
		{"0.1", "0.2", "0.3"},
		{"1", "-1.1", "-0.1"},
		{"5.0e3", "2.0e2", "5200"},
		{"17179869184", "1.5", "17179869185.5"},
		{"1", "1e20", "100000000000000000000"}, {"0", "0x10", "16"},
		{"0", "3.0e-5", "0.00003"},
	}
	for _, tc := range cases {
		if tc.set == "" {
			r.expect("DEL f\r\n", ":0")
		} else {
			r.expect("SET f "+tc.set+"\r\n", "+OK")
		}
		expectLines(t, r, "INCRBYFLOAT f "+tc.by+"\r\n", fmt.Sprintf("$%d", len(tc.want)), tc.want)
	}
	r.expect("SET f 0\r\n", "+OK")
	r.expect("INCRBYFLOAT f +inf\r\n", "-ERR increment would produce NaN or Infinity")
	r.expect("INCRBYFLOAT f abc\r\n", "-"+errNotFloat)
	r.expect("INCRBYFLOAT f \" 1\"\r\n", "-"+errNotFloat)
	r.expect("SET f \" 11\"\r\n", "+OK")
	r.expect("INCRBYFLOAT f 1\r\n", "-"+errNotFloat)
	r.expect("LPUSH fl a\r\n", ":1")
	r.expect("INCRBYFLOAT fl 1\r\n", "-"+errWrongType)
	// RESP3 replies with a bulk string too.
	rc := ts.client(t, 3)
	c := ctx(t)
	rc.Set(c, "f3", "1", 0)
	if v, err := rc.IncrByFloat(c, "f3", 0.5).Result(); err != nil || v != 1.5 {
		t.Fatalf("INCRBYFLOAT RESP3 = %v, %v", v, err)
	}
}

func TestIncrDecr(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("DECR d\r\n", ":-1")
	r.expect("DECRBY d 10\r\n", ":-11")
	r.expect("DECRBY d -9223372036854775808\r\n", "-ERR decrement would overflow")
	r.expect("SET d -9223372036854775808\r\n", "+OK")
	r.expect("DECR d\r\n", "-ERR increment or decrement would overflow")
	r.expect("SET d \" 1\"\r\n", "+OK")
	r.expect("INCR d\r\n", "-"+errNotInt)
	r.expect("INCRBY d x\r\n", "-"+errNotInt)
	r.expect("SADD ds a\r\n", ":1")
	r.expect("INCR ds\r\n", "-"+errWrongType)
	r.expect("SETEX ttl 100 5\r\n", "+OK")
	r.expect("INCR ttl\r\n", ":6")
	r.expect("TTL ttl\r\n", ":100")
}

func TestLCS(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("MSET a ohmytext b mynewtext\r\n", "+OK")
	expectLines(t, r, "LCS a b\r\n", "$6", "mytext")
	r.expect("LCS a b LEN\r\n", ":6")
	expectLines(t, r, "LCS a b IDX\r\n",
		"*4", "$7", "matches", "*2",
		"*2", "*2", ":4", ":7", "*2", ":5", ":8",
		"*2", "*2", ":2", ":3", "*2", ":0", ":1",
		"$3", "len", ":6")
	expectLines(t, r, "LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN\r\n",
		"*4", "$7", "matches", "*1",
		"*3", "*2", ":4", ":7", "*2", ":5", ":8", ":4",
		"$3", "len", ":6")
	r.expect("LCS a b LEN IDX\r\n", "-ERR If you want both the length and indexes, please just use IDX.")
	r.expect("LCS a b FOO\r\n", "-ERR syntax error")
	r.expect("LCS a b MINMATCHLEN x\r\n", "-"+errNotInt)
	r.expect("LCS a nope LEN\r\n", ":0")
	r.expect("LPUSH l x\r\n", ":1")
	r.expect("LCS a l\r\n", "-ERR The specified keys must contain string values")
	// RESP3: IDX is a map.
	r3 := ts.raw(t)
	r3.expect("HELLO 3\r\n", "%7")
	for i := 0; i < 100 && r3.readLine() != "*0"; i++ { // up to the empty modules array
	}
	expectLines(t, r3, "LCS a b IDX MINMATCHLEN 4\r\n", "%2", "$7", "matches", "*1")
}

// TestSetBigValueTrimmed: a value stored after a larger request does not
// keep the larger buffer (MEMORY USAGE counts the real allocation), as
// string.tcl's "trim on SET with big value" checks.
func TestSetBigValueTrimmed(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	if err := rc.Set(ctx(t), "key", strings.Repeat("A", 100000), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx(t), "key", strings.Repeat("A", 33000), 0).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := rc.MemoryUsage(ctx(t), "key").Result()
	if err != nil || n < 33000 || n >= 42000 {
		t.Fatalf("MEMORY USAGE %d %v, want in [33000, 42000)", n, err)
	}
	info, err := rc.Info(ctx(t), "memory").Result()
	if err != nil || !strings.Contains(info, "\r\nmem_allocator:jemalloc-5.3.0\r\n") {
		t.Fatalf("mem_allocator: %v\n%s", err, info)
	}
}

// TestMemoryUsageCollections: MEMORY USAGE counts a collection's elements
// (each encoding estimates its own size), not a fixed object size.
func TestMemoryUsageCollections(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	big := strings.Repeat("v", 100)
	for _, cmd := range [][]any{
		{"HSET", "h"}, {"RPUSH", "l"}, {"SADD", "s"}, {"ZADD", "z"},
	} {
		args := cmd
		for i := 0; i < 1000; i++ {
			switch cmd[0] {
			case "HSET":
				args = append(args, fmt.Sprint("f", i), big)
			case "ZADD":
				args = append(args, i, fmt.Sprint(big, i))
			default:
				args = append(args, fmt.Sprint(big, i))
			}
		}
		if err := rc.Do(ctx(t), args...).Err(); err != nil {
			t.Fatal(err)
		}
		n, err := rc.MemoryUsage(ctx(t), cmd[1].(string)).Result()
		if err != nil || n < 100000 {
			t.Errorf("MEMORY USAGE %s = %d %v, want at least 1000 elements of 100 bytes", cmd[1], n, err)
		}
	}
}

// TestWrongTypeText: the keyspace's ErrWrongType carries the reply text
// the handlers write.
func TestWrongTypeText(t *testing.T) {
	if keyspace.ErrWrongType.Error() != errWrongType {
		t.Fatalf("keyspace.ErrWrongType = %q, handlers write %q", keyspace.ErrWrongType, errWrongType)
	}
}
