package node

import (
	"fmt"
	"sort"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// encodingOfKey reads a key's OBJECT ENCODING from inside the server.
func encodingOfKey(ts *testServer, key string) string {
	db := ts.srv.dbs[0]
	sh := db.KeyShard(key)
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	e := db.GetEntry(key)
	if e == nil {
		return ""
	}
	return encodingOf(e)
}

func TestHashBasic(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc := ts.client(t, proto)
			c := ctx(t)
			rc.FlushAll(c)
			if n, err := rc.HSet(c, "h", "a", "1", "b", "2").Result(); err != nil || n != 2 {
				t.Fatalf("HSET = %d, %v", n, err)
			}
			if n := rc.HSet(c, "h", "a", "10", "c", "3").Val(); n != 1 {
				t.Fatalf("HSET overwrite+new = %d, want 1", n)
			}
			if err := rc.HMSet(c, "h", "d", "4").Err(); err != nil {
				t.Fatal(err)
			}
			if v := rc.HGet(c, "h", "a").Val(); v != "10" {
				t.Fatalf("HGET = %q", v)
			}
			if err := rc.HGet(c, "h", "zz").Err(); err != redis.Nil {
				t.Fatalf("HGET missing field: %v", err)
			}
			if v := rc.HMGet(c, "h", "a", "zz", "d").Val(); len(v) != 3 || v[0] != "10" || v[1] != nil || v[2] != "4" {
				t.Fatalf("HMGET = %v", v)
			}
			if v := rc.HMGet(c, "nokey", "a").Val(); len(v) != 1 || v[0] != nil {
				t.Fatalf("HMGET on missing key = %v", v)
			}
			if n := rc.HLen(c, "h").Val(); n != 4 {
				t.Fatalf("HLEN = %d", n)
			}
			if n := rc.HStrLen(c, "h", "a").Val(); n != 2 {
				t.Fatalf("HSTRLEN = %d", n)
			}
			if !rc.HExists(c, "h", "a").Val() || rc.HExists(c, "h", "zz").Val() {
				t.Fatal("HEXISTS")
			}
			keys := rc.HKeys(c, "h").Val()
			if fmt.Sprint(keys) != "[a b c d]" {
				t.Fatalf("HKEYS = %v (listpack keeps insertion order)", keys)
			}
			if vals := rc.HVals(c, "h").Val(); fmt.Sprint(vals) != "[10 2 3 4]" {
				t.Fatalf("HVALS = %v", vals)
			}
			all := rc.HGetAll(c, "h").Val()
			if len(all) != 4 || all["b"] != "2" {
				t.Fatalf("HGETALL = %v", all)
			}
			if ok := rc.HSetNX(c, "h", "a", "x").Val(); ok {
				t.Fatal("HSETNX on existing field")
			}
			if ok := rc.HSetNX(c, "h", "e", "5").Val(); !ok {
				t.Fatal("HSETNX on new field")
			}
			if n := rc.HDel(c, "h", "a", "b", "zz").Val(); n != 2 {
				t.Fatalf("HDEL = %d", n)
			}
			rc.HDel(c, "h", "c", "d", "e")
			if rc.Exists(c, "h").Val() != 0 {
				t.Fatal("emptied hash still exists")
			}
		})
	}
}

func TestHashReplyTypes(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("HSET h f v\r\n", ":1")
	r.expect("HGETALL h\r\n", "*2")
	r.expect("", "$1")
	r.readLine()
	r.readLine()
	r.readLine()
	r.expect("HGETALL nokey\r\n", "*0")
	r.expect("HRANDFIELD h 1 WITHVALUES\r\n", "*2")
	rc3 := ts.client(t, 3)
	c := ctx(t)
	if v, err := rc3.Do(c, "HGETALL", "h").Result(); err != nil {
		t.Fatal(err)
	} else if m, ok := v.(map[any]any); !ok || m["f"] != "v" {
		t.Fatalf("RESP3 HGETALL = %T %v, want a map", v, v)
	}
	if v, _ := rc3.Do(c, "HGETALL", "nokey").Result(); fmt.Sprintf("%T", v) != "map[interface {}]interface {}" {
		t.Fatalf("RESP3 HGETALL missing key = %T", v)
	}
	if err := rc3.Do(c, "HGET", "h", "nofield").Err(); err != redis.Nil {
		t.Fatalf("RESP3 HGET missing: %v", err)
	}
}

func TestHashErrors(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("SET s x\r\n", "+OK")
	wrong := "-" + errWrongType
	for _, cmd := range []string{"HSET s a b", "HGET s a", "HMGET s a", "HDEL s a", "HLEN s", "HGETALL s",
		"HINCRBY s a 1", "HINCRBYFLOAT s a 1", "HRANDFIELD s", "HRANDFIELD s 2", "HSCAN s 0", "HEXISTS s a", "HSTRLEN s a", "HKEYS s", "HVALS s", "HSETNX s a b"} {
		r.expect(cmd+"\r\n", wrong)
	}
	r.expect("HSET h a\r\n", "-ERR wrong number of arguments for 'hset' command")
	r.expect("HSET h a b c\r\n", "-ERR wrong number of arguments for 'hset' command")
	r.expect("HMSET h a b c\r\n", "-ERR wrong number of arguments for 'hmset' command")
	r.expect("HSET h n 1 s abc\r\n", ":2")
	r.expect("HINCRBY h s 1\r\n", "-ERR hash value is not an integer")
	r.expect("HINCRBY h n x\r\n", "-ERR value is not an integer or out of range")
	r.expect("HINCRBY h n 9223372036854775807\r\n", "-ERR increment or decrement would overflow")
	r.expect("HINCRBYFLOAT h s 1\r\n", "-ERR hash value is not a float")
	r.expect("HINCRBYFLOAT h n x\r\n", "-ERR value is not a valid float")
	r.expect("HINCRBYFLOAT h n inf\r\n", "-ERR value is NaN or Infinity")
	r.expect("HRANDFIELD h 1 foo\r\n", "-ERR syntax error")
	r.expect("HRANDFIELD h 1 WITHVALUES x\r\n", "-ERR syntax error")
	r.expect("HRANDFIELD h -9223372036854770000 WITHVALUES\r\n", "-ERR value is out of range")
	r.expect("HRANDFIELD h -9223372036854775808\r\n", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	r.expect("HSCAN h x\r\n", "-ERR invalid cursor")
	r.expect("HSCAN h 0 COUNT 0\r\n", "-ERR syntax error")
	r.expect("HSCAN h 0 TYPE string\r\n", "-ERR syntax error")
	r.expect("HSCAN h 0 MATCH\r\n", "-ERR syntax error")
}

func TestHashIncr(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	if v := rc.HIncrBy(c, "h", "n", 5).Val(); v != 5 {
		t.Fatalf("HINCRBY new = %d", v)
	}
	if v := rc.HIncrBy(c, "h", "n", -7).Val(); v != -2 {
		t.Fatalf("HINCRBY = %d", v)
	}
	for _, tc := range []struct {
		field, incr, want string
	}{
		{"f", "10.5", "10.5"},
		{"f", "0.1", "10.6"},
		{"g", "0.1", "0.1"},
		{"g", "0.2", "0.3"}, // long double arithmetic, as Redis
		{"h", "3.0e3", "3000"},
		{"h", "-3000", "0"},
		{"n", "1.5", "-0.5"},
	} {
		v, err := rc.Do(c, "HINCRBYFLOAT", "h", tc.field, tc.incr).Text()
		if err != nil || v != tc.want {
			t.Fatalf("HINCRBYFLOAT %s %s = %q, %v; want %q", tc.field, tc.incr, v, err, tc.want)
		}
	}
	if v := rc.HGet(c, "h", "g").Val(); v != "0.3" {
		t.Fatalf("stored value %q", v)
	}
}

func TestHashEncodingConversion(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	for i := 0; i < 128; i++ {
		rc.HSet(c, "big", "f"+strconv.Itoa(i), "v")
	}
	if e := encodingOfKey(ts, "big"); e != "listpack" {
		t.Fatalf("128 fields: %s", e)
	}
	rc.HSet(c, "big", "f128", "v")
	if e := encodingOfKey(ts, "big"); e != "hashtable" {
		t.Fatalf("129 fields: %s", e)
	}
	if n := rc.HLen(c, "big").Val(); n != 129 {
		t.Fatalf("HLEN %d", n)
	}
	rc.HSet(c, "long", "f", string(make([]byte, 65)))
	if e := encodingOfKey(ts, "long"); e != "hashtable" {
		t.Fatalf("65-byte value: %s", e)
	}
	rc.ConfigSet(c, "hash-max-listpack-entries", "2")
	rc.HSet(c, "cfg", "a", "1", "b", "2")
	if e := encodingOfKey(ts, "cfg"); e != "listpack" {
		t.Fatalf("2 fields with limit 2: %s", e)
	}
	rc.HSet(c, "cfg", "c", "3")
	if e := encodingOfKey(ts, "cfg"); e != "hashtable" {
		t.Fatalf("3 fields with limit 2: %s", e)
	}
}

func TestHashRandField(t *testing.T) {
	ts := startServer(t)
	for _, n := range []int{5, 300} { // listpack and hashtable
		rc := ts.client(t)
		c := ctx(t)
		key := "h" + strconv.Itoa(n)
		for i := 0; i < n; i++ {
			rc.HSet(c, key, "f"+strconv.Itoa(i), "v"+strconv.Itoa(i))
		}
		got := rc.HRandFieldWithValues(c, key, 3).Val()
		if len(got) != 3 || got[0].Key == got[1].Key || got[0].Value != "v"+got[0].Key[1:] {
			t.Fatalf("%s: HRANDFIELD 3 WITHVALUES = %v", key, got)
		}
		all := rc.HRandField(c, key, n+10).Val()
		sort.Strings(all)
		if len(all) != n {
			t.Fatalf("%s: count > size returned %d", key, len(all))
		}
		rep := rc.HRandField(c, key, -2000).Val()
		if len(rep) != 2000 {
			t.Fatalf("%s: negative count returned %d", key, len(rep))
		}
		hits := map[string]int{}
		for _, f := range rep {
			hits[f]++
		}
		if n == 5 {
			for f, k := range hits {
				if k < 250 || k > 550 { // expected 400 each
					t.Fatalf("%s: field %s drawn %d of 2000", key, f, k)
				}
			}
		} else if len(hits) < 250 {
			t.Fatalf("%s: only %d distinct of 300 in 2000 draws", key, len(hits))
		}
		rc3 := ts.client(t, 3)
		v, err := rc3.Do(c, "HRANDFIELD", key, 2, "WITHVALUES").Slice()
		if err != nil || len(v) != 2 {
			t.Fatalf("RESP3 WITHVALUES: %v %v", v, err)
		}
		if p, ok := v[0].([]any); !ok || len(p) != 2 {
			t.Fatalf("RESP3 WITHVALUES element %T %v, want a pair", v[0], v[0])
		}
	}
}

func TestHScan(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.HSet(c, "small", "a", "1", "b", "2", "ab", "3")
	keys, cur, err := rc.HScan(c, "small", 0, "", 1).Result()
	if err != nil || cur != 0 || len(keys) != 6 {
		t.Fatalf("small HSCAN: %v %d %v", keys, cur, err)
	}
	keys, _, _ = rc.HScan(c, "small", 0, "a*", 10).Result()
	if fmt.Sprint(keys) != "[a 1 ab 3]" {
		t.Fatalf("MATCH a*: %v", keys)
	}
	for i := 0; i < 1000; i++ {
		rc.HSet(c, "big", "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	seen := map[string]bool{}
	cur = 0
	for calls := 0; ; calls++ {
		if calls > 2000 {
			t.Fatal("HSCAN does not terminate")
		}
		keys, cur, err = rc.HScan(c, "big", cur, "", 20).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(keys); i += 2 {
			if "f"+keys[i+1] != keys[i] {
				t.Fatalf("pair %s=%s", keys[i], keys[i+1])
			}
			seen[keys[i]] = true
		}
		if calls == 5 { // shrink the table mid-scan
			for i := 500; i < 1000; i++ {
				rc.HDel(c, "big", "f"+strconv.Itoa(i))
			}
		}
		if cur == 0 {
			break
		}
	}
	for i := 0; i < 500; i++ {
		if !seen["f"+strconv.Itoa(i)] {
			t.Fatalf("HSCAN missed f%d", i)
		}
	}
}

func TestHashNotifications(t *testing.T) {
	ts := startServer(t, "notify-keyspace-events", "KEA")
	rc := ts.client(t)
	c := ctx(t)
	next := ts.keyEvents(t)
	rc.HSet(c, "h", "a", "1")
	rc.HIncrBy(c, "h", "a", 1)
	rc.HIncrByFloat(c, "h", "a", 1)
	rc.HDel(c, "h", "a")
	expectKeyEvents(t, next, "hset h", "hincrby h", "hincrbyfloat h", "hdel h", "del h")
}

// TestHashPropagation checks that HINCRBYFLOAT reaches replicas and the
// AOF as HSET with the resulting value.
func TestHashPropagation(t *testing.T) {
	ts := startServer(t)
	prop := ts.capturePropagation()
	r := ts.raw(t)
	r.expect("HSET h f 1.5\r\n", ":1")
	r.expect("HINCRBYFLOAT h f 0x10\r\n", "$4")
	r.expect("", "17.5")
	r.expect("HINCRBYFLOAT h f 1e-5000\r\n", "-ERR value is not a valid float")
	// strtold reads no 0b/0o prefixes and no bare binary exponent.
	r.expect("HINCRBYFLOAT h f 0b101\r\n", "-ERR value is not a valid float")
	r.expect("HINCRBYFLOAT h f 0o17\r\n", "-ERR value is not a valid float")
	r.expect("HINCRBYFLOAT h f 1p3\r\n", "-ERR value is not a valid float")
	r.expect("HINCRBY h n 2\r\n", ":2")
	r.expect("HDEL h nothere\r\n", ":0")
	prop.expect(t, "HSET h f 1.5", "HSET h f 17.5", "HINCRBY h n 2")
}
