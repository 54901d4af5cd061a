package node

import (
	"fmt"
	"sort"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

func sorted(v []string) string {
	v = append([]string(nil), v...)
	sort.Strings(v)
	return fmt.Sprint(v)
}

func TestSetBasic(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc := ts.client(t, proto)
			c := ctx(t)
			rc.FlushAll(c)
			if n, err := rc.SAdd(c, "s", "1", "2", "3", "2").Result(); err != nil || n != 3 {
				t.Fatalf("SADD = %d, %v", n, err)
			}
			if e := encodingOfKey(ts, "s"); e != "intset" {
				t.Fatalf("encoding %s", e)
			}
			if n := rc.SAdd(c, "s", "a", "1").Val(); n != 1 {
				t.Fatalf("SADD a = %d", n)
			}
			if e := encodingOfKey(ts, "s"); e != "hashtable" {
				t.Fatalf("encoding after non-integer %s", e)
			}
			if n := rc.SCard(c, "s").Val(); n != 4 {
				t.Fatalf("SCARD %d", n)
			}
			if !rc.SIsMember(c, "s", "a").Val() || rc.SIsMember(c, "s", "z").Val() {
				t.Fatal("SISMEMBER")
			}
			if v := rc.SMIsMember(c, "s", "a", "z", "1").Val(); fmt.Sprint(v) != "[true false true]" {
				t.Fatalf("SMISMEMBER %v", v)
			}
			if v := rc.SMIsMember(c, "nokey", "a").Val(); fmt.Sprint(v) != "[false]" {
				t.Fatalf("SMISMEMBER missing key %v", v)
			}
			if v := rc.SMembers(c, "s").Val(); sorted(v) != "[1 2 3 a]" {
				t.Fatalf("SMEMBERS %v", v)
			}
			rc.SAdd(c, "s2", "2", "3", "4")
			if v := rc.SInter(c, "s", "s2").Val(); sorted(v) != "[2 3]" {
				t.Fatalf("SINTER %v", v)
			}
			if v := rc.SInter(c, "s", "nokey").Val(); len(v) != 0 {
				t.Fatalf("SINTER with missing key %v", v)
			}
			if v := rc.SUnion(c, "s", "s2", "nokey").Val(); sorted(v) != "[1 2 3 4 a]" {
				t.Fatalf("SUNION %v", v)
			}
			if v := rc.SDiff(c, "s", "s2").Val(); sorted(v) != "[1 a]" {
				t.Fatalf("SDIFF %v", v)
			}
			if v := rc.SDiff(c, "s", "s").Val(); len(v) != 0 {
				t.Fatalf("SDIFF same key %v", v)
			}
			if n := rc.SInterCard(c, 0, "s", "s2").Val(); n != 2 {
				t.Fatalf("SINTERCARD %d", n)
			}
			if n := rc.SInterCard(c, 1, "s", "s2").Val(); n != 1 {
				t.Fatalf("SINTERCARD LIMIT 1 = %d", n)
			}
			if n := rc.SInterStore(c, "d", "s", "s2").Val(); n != 2 {
				t.Fatalf("SINTERSTORE %d", n)
			}
			if e := encodingOfKey(ts, "d"); e != "intset" {
				t.Fatalf("SINTERSTORE result encoding %s", e)
			}
			if n := rc.SUnionStore(c, "d", "s", "s2").Val(); n != 5 {
				t.Fatalf("SUNIONSTORE %d", n)
			}
			if n := rc.SDiffStore(c, "d", "nokey", "s").Val(); n != 0 || rc.Exists(c, "d").Val() != 0 {
				t.Fatalf("SDIFFSTORE empty result = %d, key kept", n)
			}
			if ok := rc.SMove(c, "s", "m", "a").Val(); !ok {
				t.Fatal("SMOVE")
			}
			if ok := rc.SMove(c, "s", "m", "zz").Val(); ok {
				t.Fatal("SMOVE missing member")
			}
			if v := rc.SMembers(c, "m").Val(); fmt.Sprint(v) != "[a]" {
				t.Fatalf("SMOVE destination %v", v)
			}
			if n := rc.SRem(c, "s", "1", "2", "3", "zz").Val(); n != 3 || rc.Exists(c, "s").Val() != 0 {
				t.Fatalf("SREM = %d; emptied set must be removed", n)
			}
		})
	}
}

func TestSetReplyTypes(t *testing.T) {
	ts := startServer(t)
	rc3 := ts.client(t, 3)
	c := ctx(t)
	rc3.SAdd(c, "s", "a", "b")
	for _, cmd := range [][]any{{"SMEMBERS", "s"}, {"SUNION", "s"}, {"SINTER", "s", "s"}, {"SDIFF", "s", "nokey"}, {"SPOP", "s", 0}, {"SMEMBERS", "nokey"}} {
		v, err := rc3.Do(c, cmd...).Result()
		if err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
		// go-redis returns RESP3 sets as []any like arrays; check on the wire.
		_ = v
	}
	r := ts.raw(t)
	r.expect("HELLO 3\r\n", "%7")
	r.nc.Close()
	r = ts.raw(t)
	r.send("HELLO 3\r\n")
	for {
		l := r.readLine()
		if l == "+master" || l == "$6" {
			// role value; keep reading until modules
		}
		if l == "*0" { // modules: last field of HELLO
			break
		}
	}
	r.expect("SMEMBERS s\r\n", "~2")
	r.readLine()
	r.readLine()
	r.readLine()
	r.readLine()
	r.expect("SMEMBERS nokey\r\n", "~0")
	r.expect("SPOP nokey 2\r\n", "~0")
	r.expect("SPOP nokey\r\n", "_")
	r.expect("SRANDMEMBER nokey 2\r\n", "*0")
	r.expect("SSCAN nokey 0\r\n", "*2")
	r.expect("", "$1")
	r.expect("", "0")
	r.expect("", "*0")
}

func TestSetErrors(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("SET str x\r\n", "+OK")
	r.expect("SADD s 1\r\n", ":1")
	wrong := "-" + errWrongType
	for _, cmd := range []string{"SADD str a", "SREM str a", "SCARD str", "SISMEMBER str a", "SMISMEMBER str a",
		"SMEMBERS str", "SPOP str", "SPOP str 2", "SRANDMEMBER str", "SRANDMEMBER str 2", "SINTER s str", "SINTER nokey str",
		"SUNION s str", "SDIFF s str", "SINTERSTORE d s str", "SINTERCARD 2 s str", "SMOVE str s a", "SMOVE s str 1", "SSCAN str 0"} {
		r.expect(cmd+"\r\n", wrong)
	}
	r.expect("SMISMEMBER s\r\n", "-ERR wrong number of arguments for 'smismember' command")
	r.expect("SPOP s 1 2\r\n", "-ERR syntax error")
	r.expect("SPOP s -1\r\n", "-ERR value is out of range, must be positive")
	r.expect("SPOP s x\r\n", "-ERR value is out of range, must be positive")
	r.expect("SRANDMEMBER s 1 2\r\n", "-ERR syntax error")
	r.expect("SRANDMEMBER s x\r\n", "-ERR value is not an integer or out of range")
	r.expect("SRANDMEMBER s -9223372036854775808\r\n", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	r.expect("SINTERCARD 0 s\r\n", "-ERR numkeys should be greater than 0")
	r.expect("SINTERCARD x s\r\n", "-ERR numkeys should be greater than 0")
	r.expect("SINTERCARD 3 s s\r\n", "-ERR Number of keys can't be greater than number of args")
	r.expect("SINTERCARD 1 s LIMIT -1\r\n", "-ERR LIMIT can't be negative")
	r.expect("SINTERCARD 1 s FOO\r\n", "-ERR syntax error")
	r.expect("SSCAN s 0 COUNT 0\r\n", "-ERR syntax error")
	r.expect("SSCAN s abc\r\n", "-ERR invalid cursor")
}

func TestSetIntsetLimit(t *testing.T) {
	ts := startServer(t, "set-max-intset-entries", "4")
	rc := ts.client(t)
	c := ctx(t)
	rc.SAdd(c, "s", 1, 2, 3, 4)
	if e := encodingOfKey(ts, "s"); e != "intset" {
		t.Fatalf("4 ints: %s", e)
	}
	rc.SAdd(c, "s", 5)
	if e := encodingOfKey(ts, "s"); e != "hashtable" {
		t.Fatalf("5 ints with limit 4: %s", e)
	}
	rc.SAdd(c, "t", "x")
	if e := encodingOfKey(ts, "t"); e != "hashtable" {
		t.Fatalf("string member: %s", e)
	}
}

func TestSetPopAndRandom(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	for _, n := range []int{10, 1000} {
		key := "s" + strconv.Itoa(n)
		for i := 0; i < n; i++ {
			rc.SAdd(c, key, "m"+strconv.Itoa(i))
		}
		v := rc.SRandMemberN(c, key, 5).Val()
		if len(v) != 5 {
			t.Fatalf("%s: SRANDMEMBER 5 returned %d", key, len(v))
		}
		uniq := map[string]bool{}
		for _, m := range v {
			uniq[m] = true
		}
		if len(uniq) != 5 {
			t.Fatalf("%s: SRANDMEMBER 5 has duplicates: %v", key, v)
		}
		if v := rc.SRandMemberN(c, key, int64(n+5)).Val(); len(v) != n {
			t.Fatalf("%s: count > size returned %d", key, len(v))
		}
		rep := rc.SRandMemberN(c, key, -3000).Val()
		hits := map[string]int{}
		for _, m := range rep {
			hits[m]++
		}
		if n == 10 {
			for m, k := range hits {
				if k < 200 || k > 420 { // expected 300
					t.Fatalf("%s: member %s drawn %d of 3000", key, m, k)
				}
			}
		} else if len(rep) != 3000 || len(hits) < 900 {
			t.Fatalf("%s: %d draws, %d distinct", key, len(rep), len(hits))
		}
		// SPOP with count: the popped members leave the set.
		popped := rc.SPopN(c, key, int64(n/2)).Val()
		if len(popped) != n/2 || rc.SCard(c, key).Val() != int64(n-n/2) {
			t.Fatalf("%s: SPOP %d returned %d, SCARD %d", key, n/2, len(popped), rc.SCard(c, key).Val())
		}
		for _, m := range popped {
			if rc.SIsMember(c, key, m).Val() {
				t.Fatalf("%s: popped %s still a member", key, m)
			}
		}
		// Pop most of what is left (the "keep few" strategy), then all.
		left := int64(n - n/2)
		rc.SPopN(c, key, left-1)
		if rc.SCard(c, key).Val() != 1 {
			t.Fatalf("%s: SCARD after popping all but one = %d", key, rc.SCard(c, key).Val())
		}
		if m := rc.SPop(c, key).Val(); m == "" || rc.Exists(c, key).Val() != 0 {
			t.Fatalf("%s: last SPOP %q, key must be gone", key, m)
		}
	}
	if err := rc.SPop(c, "nokey").Err(); err != redis.Nil {
		t.Fatalf("SPOP missing key: %v", err)
	}
}

func TestSScan(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.SAdd(c, "ints", 1, 2, 10, 11)
	keys, cur, err := rc.SScan(c, "ints", 0, "1*", 1).Result()
	if err != nil || cur != 0 || sorted(keys) != "[1 10 11]" {
		t.Fatalf("intset SSCAN: %v %d %v", keys, cur, err)
	}
	for i := 0; i < 500; i++ {
		rc.SAdd(c, "big", "m"+strconv.Itoa(i))
	}
	seen := map[string]bool{}
	cur = 0
	for calls := 0; ; calls++ {
		if calls > 1000 {
			t.Fatal("SSCAN does not terminate")
		}
		keys, cur, err = rc.SScan(c, "big", cur, "", 10).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if calls == 3 { // grow the table mid-scan
			for i := 500; i < 3000; i++ {
				rc.SAdd(c, "big", "m"+strconv.Itoa(i))
			}
		}
		if cur == 0 {
			break
		}
	}
	for i := 0; i < 500; i++ {
		if !seen["m"+strconv.Itoa(i)] {
			t.Fatalf("SSCAN missed m%d", i)
		}
	}
}

func TestSetNotifications(t *testing.T) {
	ts := startServer(t, "notify-keyspace-events", "KEAm")
	rc := ts.client(t)
	c := ctx(t)
	next := ts.keyEvents(t)
	rc.SIsMember(c, "nokey", "a")
	rc.SAdd(c, "s", "a", "b")
	rc.SRem(c, "s", "a")
	rc.SMove(c, "s", "t", "b")
	rc.SInterStore(c, "d", "t", "t")
	rc.SPop(c, "d")
	expectKeyEvents(t, next, "keymiss nokey", "sadd s", "srem s", "srem s", "del s", "sadd t", "sinterstore d", "spop d", "del d")
}

// TestSetPropagation checks what replicas and the AOF receive: SPOP as
// SREM of each popped member, or DEL when the whole set is popped.
func TestSetPropagation(t *testing.T) {
	ts := startServer(t)
	prop := ts.capturePropagation()
	rc := ts.client(t)
	c := ctx(t)
	rc.SAdd(c, "s", "a")
	m := rc.SPop(c, "s").Val()
	rc.SAdd(c, "t", "x", "y", "z")
	popped := rc.SPopN(c, "t", 2).Val()
	rest := rc.SPopN(c, "t", 5).Val()
	rc.SPopN(c, "nokey", 5)
	rc.SAdd(c, "u", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	many := rc.SPopN(c, "u", 9).Val() // keeps one member: the "new set" strategy
	want := []string{"sadd s a", "SREM s " + m, "sadd t x y z"}
	for _, p := range popped {
		want = append(want, "SREM t "+p)
	}
	if len(rest) != 1 {
		t.Fatalf("second SPOP returned %v", rest)
	}
	want = append(want, "DEL t", "sadd u 1 2 3 4 5 6 7 8 9 10")
	for _, p := range many {
		want = append(want, "SREM u "+p)
	}
	prop.expect(t, want...)
}
