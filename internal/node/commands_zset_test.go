package node

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/value"
)

func mustZ(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func zWantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestZAdd(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	n, err := rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Result()
	mustZ(t, err)
	if n != 2 {
		t.Fatalf("ZADD = %d", n)
	}
	t.Run("NX", func(t *testing.T) {
		n, err := rc.ZAddNX(c, "z", redis.Z{Score: 5, Member: "a"}, redis.Z{Score: 3, Member: "c"}).Result()
		mustZ(t, err)
		if s := rc.ZScore(c, "z", "a").Val(); n != 1 || s != 1 {
			t.Fatalf("NX: %d, a=%v", n, s)
		}
	})
	t.Run("XX CH", func(t *testing.T) {
		n, err := rc.Do(c, "zadd", "z", "xx", "ch", 7, "a", 1, "nope").Int()
		mustZ(t, err)
		if n != 1 || rc.Exists(c, "nope").Val() != 0 || rc.ZScore(c, "z", "nope").Err() != redis.Nil {
			t.Fatalf("XX CH = %d", n)
		}
	})
	t.Run("GT LT", func(t *testing.T) {
		n, err := rc.Do(c, "zadd", "z", "gt", "ch", 1, "a", 10, "b").Int()
		mustZ(t, err)
		if n != 1 || rc.ZScore(c, "z", "a").Val() != 7 || rc.ZScore(c, "z", "b").Val() != 10 {
			t.Fatalf("GT: %d", n)
		}
		n, err = rc.Do(c, "zadd", "z", "lt", "ch", 1, "a", 20, "b", 0, "new").Int()
		mustZ(t, err)
		if n != 2 || rc.ZScore(c, "z", "a").Val() != 1 || rc.ZScore(c, "z", "b").Val() != 10 {
			t.Fatalf("LT: %d", n)
		}
	})
	t.Run("INCR", func(t *testing.T) {
		f, err := rc.ZAddArgsIncr(c, "z", redis.ZAddArgs{Members: []redis.Z{{Score: 2.5, Member: "a"}}}).Result()
		mustZ(t, err)
		if f != 3.5 {
			t.Fatalf("INCR = %v", f)
		}
		err = rc.Do(c, "zadd", "z", "nx", "incr", 1, "a").Err()
		if err != redis.Nil {
			t.Fatalf("NX INCR on existing: %v", err)
		}
		f, err = rc.ZIncrBy(c, "z", -1.5, "a").Result()
		mustZ(t, err)
		if f != 2 {
			t.Fatalf("ZINCRBY = %v", f)
		}
		mustZ(t, rc.ZAdd(c, "inf", redis.Z{Score: math.Inf(1), Member: "x"}).Err())
		zWantErr(t, rc.ZIncrBy(c, "inf", math.Inf(-1), "x").Err(), "ERR resulting score is not a number (NaN)")
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			args []any
			want string
		}{
			{[]any{"zadd", "z", "nx", "xx", 1, "a"}, "ERR XX and NX options at the same time are not compatible"},
			{[]any{"zadd", "z", "gt", "lt", 1, "a"}, "ERR GT, LT, and/or NX options at the same time are not compatible"},
			{[]any{"zadd", "z", "nx", "gt", 1, "a"}, "ERR GT, LT, and/or NX options at the same time are not compatible"},
			{[]any{"zadd", "z", "incr", 1, "a", 2, "b"}, "ERR INCR option supports a single increment-element pair"},
			{[]any{"zadd", "z", 1, "a", 2}, "ERR syntax error"},
			{[]any{"zadd", "z", "abc", "a"}, "ERR value is not a valid float"},
			{[]any{"zadd", "z", "nan", "a"}, "ERR value is not a valid float"},
			{[]any{"zincrby", "z", "x", "a"}, "ERR value is not a valid float"},
			{[]any{"zadd", "z"}, "ERR wrong number of arguments for 'zadd' command"},
		} {
			zWantErr(t, rc.Do(c, tc.args...).Err(), tc.want)
		}
	})
	t.Run("WRONGTYPE", func(t *testing.T) {
		mustZ(t, rc.Set(c, "str", "v", 0).Err())
		const wt = "WRONGTYPE Operation against a key holding the wrong kind of value"
		for _, args := range [][]any{
			{"zadd", "str", 1, "a"}, {"zincrby", "str", 1, "a"}, {"zrem", "str", "a"}, {"zcard", "str"},
			{"zscore", "str", "a"}, {"zrange", "str", 0, -1}, {"zrank", "str", "a"}, {"zpopmin", "str"},
			{"zunion", 1, "str"}, {"zcount", "str", 0, 1}, {"zrangestore", "d", "str", 0, -1},
			{"zremrangebyrank", "str", 0, 1}, {"zscan", "str", 0}, {"zrandmember", "str"}, {"zmpop", 1, "str", "min"},
		} {
			zWantErr(t, rc.Do(c, args...).Err(), wt)
		}
	})
}

func TestZRangeFamily(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			rc := ts.client(t, proto)
			c := ctx(t)
			mustZ(t, rc.Del(c, "z", "lex", "dst").Err()) // (FLUSHALL is slow under -race)
			mustZ(t, rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"},
				redis.Z{Score: 3, Member: "c"}, redis.Z{Score: math.Inf(1), Member: "d"}).Err())
			zs, err := rc.ZRangeWithScores(c, "z", 0, -1).Result()
			mustZ(t, err)
			want := []redis.Z{{Score: 1, Member: "a"}, {Score: 2, Member: "b"}, {Score: 3, Member: "c"}, {Score: math.Inf(1), Member: "d"}}
			if !slices.Equal(zs, want) {
				t.Fatalf("ZRANGE WITHSCORES = %v", zs)
			}
			got := rc.ZRangeArgs(c, redis.ZRangeArgs{Key: "z", Start: "(1", Stop: "+inf", ByScore: true, Rev: false, Offset: 1, Count: 2}).Val()
			if !slices.Equal(got, []string{"c", "d"}) {
				t.Fatalf("BYSCORE LIMIT = %v", got)
			}
			got = rc.ZRangeArgs(c, redis.ZRangeArgs{Key: "z", Start: "+inf", Stop: "(1", ByScore: true, Rev: true}).Val()
			if !slices.Equal(got, []string{"d", "c", "b"}) {
				t.Fatalf("BYSCORE REV = %v", got)
			}
			got = rc.ZRevRange(c, "z", 0, 1).Val()
			if !slices.Equal(got, []string{"d", "c"}) {
				t.Fatalf("ZREVRANGE = %v", got)
			}
			got = rc.ZRangeByScore(c, "z", &redis.ZRangeBy{Min: "-inf", Max: "(3"}).Val()
			if !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("ZRANGEBYSCORE = %v", got)
			}
			if n := rc.ZCount(c, "z", "(1", "3").Val(); n != 2 {
				t.Fatalf("ZCOUNT = %d", n)
			}
			if r := rc.ZRank(c, "z", "c").Val(); r != 2 {
				t.Fatalf("ZRANK = %d", r)
			}
			if r := rc.ZRevRank(c, "z", "c").Val(); r != 1 {
				t.Fatalf("ZREVRANK = %d", r)
			}
			if err := rc.ZRank(c, "z", "nope").Err(); err != redis.Nil {
				t.Fatalf("ZRANK missing: %v", err)
			}
			ms := rc.ZMScore(c, "z", "a", "nope", "d").Val()
			if len(ms) != 3 || ms[0] != 1 || ms[1] != 0 || !math.IsInf(ms[2], 1) {
				t.Fatalf("ZMSCORE = %v", ms)
			}
			// Lex ranges.
			mustZ(t, rc.ZAdd(c, "lex", redis.Z{Member: "a"}, redis.Z{Member: "b"}, redis.Z{Member: "c"}, redis.Z{Member: "d"}).Err())
			got = rc.ZRangeByLex(c, "lex", &redis.ZRangeBy{Min: "(a", Max: "[c"}).Val()
			if !slices.Equal(got, []string{"b", "c"}) {
				t.Fatalf("ZRANGEBYLEX = %v", got)
			}
			got = rc.ZRevRangeByLex(c, "lex", &redis.ZRangeBy{Max: "+", Min: "-", Offset: 1, Count: 2}).Val()
			if !slices.Equal(got, []string{"c", "b"}) {
				t.Fatalf("ZREVRANGEBYLEX = %v", got)
			}
			if n := rc.ZLexCount(c, "lex", "-", "(c").Val(); n != 2 {
				t.Fatalf("ZLEXCOUNT = %d", n)
			}
			zWantErr(t, rc.ZRangeByLex(c, "lex", &redis.ZRangeBy{Min: "a", Max: "c"}).Err(), "ERR min or max not valid string range item")
			zWantErr(t, rc.ZRangeByScore(c, "z", &redis.ZRangeBy{Min: "x", Max: "1"}).Err(), "ERR min or max is not a float")
			zWantErr(t, rc.Do(c, "zrange", "z", 0, -1, "limit", 0, 1).Err(), "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
			zWantErr(t, rc.Do(c, "zrange", "lex", "-", "+", "bylex", "withscores").Err(), "ERR syntax error, WITHSCORES not supported in combination with BYLEX")
			zWantErr(t, rc.Do(c, "zrange", "z", 0, -1, "bogus").Err(), "ERR syntax error")
			// ZRANGESTORE.
			n, err := rc.ZRangeStore(c, "dst", redis.ZRangeArgs{Key: "z", Start: 1, Stop: 2}).Result()
			mustZ(t, err)
			if n != 2 || !slices.Equal(rc.ZRange(c, "dst", 0, -1).Val(), []string{"b", "c"}) {
				t.Fatalf("ZRANGESTORE = %d", n)
			}
			n, err = rc.ZRangeStore(c, "dst", redis.ZRangeArgs{Key: "nokey", Start: 0, Stop: -1}).Result()
			mustZ(t, err)
			if n != 0 || rc.Exists(c, "dst").Val() != 0 {
				t.Fatalf("ZRANGESTORE empty: %d, dst exists %d", n, rc.Exists(c, "dst").Val())
			}
			// Raw reply shapes differ between protocols.
			v, err := rc.Do(c, "zrange", "z", 0, 0, "withscores").Result()
			mustZ(t, err)
			if proto == 2 {
				if fmt.Sprint(v) != "[a 1]" {
					t.Fatalf("RESP2 WITHSCORES raw = %#v", v)
				}
			} else if fmt.Sprint(v) != "[[a 1]]" {
				t.Fatalf("RESP3 WITHSCORES raw = %#v", v)
			}
		})
	}
}

func TestZRawReplies(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("ZADD z 1.5 a 0.1 b\r\n", ":2")
	r.expect("ZSCORE z b\r\n", "$19")
	if got := r.readLine(); got != "0.10000000000000001" {
		t.Fatalf("score text %q", got)
	}
	r.expect("ZSCORE z nope\r\n", "$-1")
	r.expect("ZPOPMIN nokey\r\n", "*0")
	r.expect("ZMPOP 1 nokey MIN\r\n", "*-1")
	r.send("HELLO 3\r\nPING\r\n")
	for i := 0; i < 100 && r.readLine() != "+PONG"; i++ {
	}
	r.expect("ZSCORE z a\r\n", ",1.5")
	r.expect("ZSCORE z nope\r\n", "_")
	r.expect("ZMPOP 1 nokey MIN\r\n", "_")
	r.expect("ZPOPMIN z 1\r\n", "*1")
	r.expect("", "*2")
	r.expect("", "$1")
	r.expect("", "b")
	r.expect("", ",0.10000000000000001")
	r.expect("ZPOPMIN z\r\n", "*2")
	r.expect("", "$1")
	r.expect("", "a")
	r.expect("", ",1.5")
	r.expect("EXISTS z\r\n", ":0")
}

func TestZRemAndRanges(t *testing.T) {
	ts := startServer(t, "notify-keyspace-events", "KEA")
	rc := ts.client(t)
	c := ctx(t)
	sub := ts.client(t).PSubscribe(c, "__keyevent@0__:*")
	defer sub.Close()
	_, err := sub.Receive(c)
	mustZ(t, err)
	mustZ(t, rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"},
		redis.Z{Score: 4, Member: "d"}, redis.Z{Score: 5, Member: "e"}).Err())
	if n := rc.ZRem(c, "z", "a", "nope").Val(); n != 1 {
		t.Fatalf("ZREM = %d", n)
	}
	if n := rc.ZRemRangeByRank(c, "z", 0, 0).Val(); n != 1 {
		t.Fatalf("ZREMRANGEBYRANK = %d", n)
	}
	if n := rc.ZRemRangeByScore(c, "z", "(3", "4").Val(); n != 1 {
		t.Fatalf("ZREMRANGEBYSCORE = %d", n)
	}
	if n := rc.ZRemRangeByLex(c, "z", "-", "+").Val(); n != 2 {
		t.Fatalf("ZREMRANGEBYLEX = %d", n)
	}
	if rc.Exists(c, "z").Val() != 0 {
		t.Fatal("emptied zset still exists")
	}
	var events []string
	for len(events) < 6 {
		m, err := sub.ReceiveMessage(c)
		mustZ(t, err)
		events = append(events, m.Channel[len("__keyevent@0__:"):])
	}
	want := []string{"zadd", "zrem", "zremrangebyrank", "zremrangebyscore", "zremrangebylex", "del"}
	if !slices.Equal(events, want) {
		t.Fatalf("events %v, want %v", events, want)
	}
}

func TestZSetOps(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		c := ctx(t)
		mustZ(t, rc.Del(c, "z1", "z2", "out", "s").Err())
		mustZ(t, rc.ZAdd(c, "z1", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"}).Err())
		mustZ(t, rc.ZAdd(c, "z2", redis.Z{Score: 1, Member: "b"}, redis.Z{Score: 2, Member: "c"}, redis.Z{Score: 3, Member: "d"}).Err())
		got := rc.ZUnionWithScores(c, redis.ZStore{Keys: []string{"z1", "z2"}, Weights: []float64{2, 3}, Aggregate: "MAX"}).Val()
		want := []redis.Z{{Score: 2, Member: "a"}, {Score: 4, Member: "b"}, {Score: 6, Member: "c"}, {Score: 9, Member: "d"}}
		if !slices.Equal(got, want) {
			t.Fatalf("ZUNION = %v", got)
		}
		got = rc.ZInterWithScores(c, &redis.ZStore{Keys: []string{"z1", "z2"}}).Val()
		want = []redis.Z{{Score: 3, Member: "b"}, {Score: 5, Member: "c"}}
		if !slices.Equal(got, want) {
			t.Fatalf("ZINTER = %v", got)
		}
		got = rc.ZDiffWithScores(c, "z1", "z2").Val()
		if !slices.Equal(got, []redis.Z{{Score: 1, Member: "a"}}) {
			t.Fatalf("ZDIFF = %v", got)
		}
		if n := rc.ZInterCard(c, 1, "z1", "z2").Val(); n != 1 {
			t.Fatalf("ZINTERCARD LIMIT 1 = %d", n)
		}
		if n := rc.ZUnionStore(c, "out", &redis.ZStore{Keys: []string{"z1", "z2"}}).Val(); n != 4 {
			t.Fatalf("ZUNIONSTORE = %d", n)
		}
		if enc := zsetEncodingOf(ts, "out"); enc != "listpack" {
			t.Fatalf("ZUNIONSTORE encoding %s", enc)
		}
		if n := rc.ZInterStore(c, "out", &redis.ZStore{Keys: []string{"z1", "nokey"}}).Val(); n != 0 || rc.Exists(c, "out").Val() != 0 {
			t.Fatalf("ZINTERSTORE with a missing key = %d", n)
		}
		if n := rc.ZDiffStore(c, "out", "z1", "z2").Val(); n != 1 {
			t.Fatalf("ZDIFFSTORE = %d", n)
		}
		zWantErr(t, rc.Do(c, "zunion", 0, "z1").Err(), "ERR at least 1 input key is needed for 'zunion' command")
		zWantErr(t, rc.Do(c, "zunionstore", "o", 0, "z1").Err(), "ERR at least 1 input key is needed for 'zunionstore' command")
		zWantErr(t, rc.Do(c, "zunion", 3, "z1", "z2").Err(), "ERR syntax error")
		zWantErr(t, rc.Do(c, "zunion", 2, "z1", "z2", "weights", 1, "x").Err(), "ERR weight value is not a float")
		zWantErr(t, rc.Do(c, "zdiff", 2, "z1", "z2", "weights", 1, 2).Err(), "ERR syntax error")
		zWantErr(t, rc.Do(c, "zintercard", 2, "z1", "z2", "limit", -1).Err(), "ERR LIMIT can't be negative")
		// Sets count as score 1 (when the set family is present).
		if rc.SAdd(c, "s", "a", "x").Err() == nil {
			got = rc.ZUnionWithScores(c, redis.ZStore{Keys: []string{"z1", "s"}}).Val()
			want = []redis.Z{{Score: 1, Member: "x"}, {Score: 2, Member: "a"}, {Score: 2, Member: "b"}, {Score: 3, Member: "c"}}
			if !slices.Equal(got, want) {
				t.Fatalf("ZUNION with a set = %v", got)
			}
		}
	}
}

func TestZPops(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	mustZ(t, rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"}).Err())
	got := rc.ZPopMax(c, "z", 2).Val()
	if !slices.Equal(got, []redis.Z{{Score: 3, Member: "c"}, {Score: 2, Member: "b"}}) {
		t.Fatalf("ZPOPMAX 2 = %v", got)
	}
	zWantErr(t, rc.Do(c, "zpopmin", "z", -1).Err(), "ERR value is out of range, must be positive")
	zWantErr(t, rc.Do(c, "zpopmin", "z", 1, 2).Err(), "ERR syntax error")
	key, zs, err := rc.ZMPop(c, "min", 5, "nokey", "z").Result()
	mustZ(t, err)
	if key != "z" || !slices.Equal(zs, []redis.Z{{Score: 1, Member: "a"}}) {
		t.Fatalf("ZMPOP = %s %v", key, zs)
	}
	if rc.Exists(c, "z").Val() != 0 {
		t.Fatal("popped-empty zset exists")
	}
	if err := rc.ZMPop(c, "min", 1, "z").Err(); err != redis.Nil {
		t.Fatalf("ZMPOP on nothing: %v", err)
	}
	zWantErr(t, rc.Do(c, "zmpop", 0, "z", "min").Err(), "ERR numkeys should be greater than 0")
	zWantErr(t, rc.Do(c, "zmpop", 1, "z", "min", "count", 0).Err(), "ERR count should be greater than 0")
	zWantErr(t, rc.Do(c, "zmpop", 1, "z", "middle").Err(), "ERR syntax error")
}

func TestZRandMemberAndScan(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	var zs []redis.Z
	for i := 0; i < 300; i++ {
		zs = append(zs, redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)})
	}
	mustZ(t, rc.ZAdd(c, "big", zs...).Err())
	mustZ(t, rc.ZAdd(c, "small", zs[:5]...).Err())
	for _, key := range []string{"big", "small"} {
		got := rc.ZRandMember(c, key, 4).Val()
		seen := map[string]bool{}
		for _, m := range got {
			seen[m] = true
		}
		if len(got) != 4 || len(seen) != 4 {
			t.Fatalf("%s ZRANDMEMBER 4 = %v", key, got)
		}
		if got := rc.ZRandMember(c, key, -10).Val(); len(got) != 10 {
			t.Fatalf("%s ZRANDMEMBER -10 = %v", key, got)
		}
		// ZSCAN returns every member with its score exactly once.
		found := map[string]float64{}
		var cursor uint64
		for i := 0; i < 1000; i++ {
			keys, next, err := rc.ZScan(c, key, cursor, "", 17).Result()
			mustZ(t, err)
			for j := 0; j+1 < len(keys); j += 2 {
				f, _ := strconv.ParseFloat(keys[j+1], 64)
				found[keys[j]] = f
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
		want := 300
		if key == "small" {
			want = 5
		}
		if len(found) != want || found["m3"] != 3 {
			t.Fatalf("%s ZSCAN found %d members", key, len(found))
		}
	}
	keys, _, err := rc.ZScan(c, "big", 0, "m29*", 1000).Result()
	mustZ(t, err)
	if len(keys) != 22 {
		t.Fatalf("ZSCAN MATCH = %d items", len(keys))
	}
	zWantErr(t, rc.Do(c, "zscan", "big", "x").Err(), "ERR invalid cursor")
	zWantErr(t, rc.Do(c, "zscan", "big", 0, "count", 0).Err(), "ERR syntax error")
	zWantErr(t, rc.Do(c, "zrandmember", "big", 1, "foo").Err(), "ERR syntax error")
}

func TestZSetEncoding(t *testing.T) {
	ts := startServer(t, "zset-max-listpack-entries", "4", "zset-max-listpack-value", "8")
	rc := ts.client(t)
	c := ctx(t)
	for i := 0; i < 4; i++ {
		mustZ(t, rc.ZAdd(c, "z", redis.Z{Score: float64(i), Member: strconv.Itoa(i)}).Err())
	}
	if enc := zsetEncodingOf(ts, "z"); enc != "listpack" {
		t.Fatalf("4 members: %s", enc)
	}
	mustZ(t, rc.ZAdd(c, "z", redis.Z{Score: 9, Member: "x"}).Err())
	if enc := zsetEncodingOf(ts, "z"); enc != "skiplist" {
		t.Fatalf("5 members: %s", enc)
	}
	mustZ(t, rc.ZAdd(c, "long", redis.Z{Score: 1, Member: "123456789"}).Err())
	if enc := zsetEncodingOf(ts, "long"); enc != "skiplist" {
		t.Fatalf("long member: %s", enc)
	}
	if typ := rc.Type(c, "z").Val(); typ != "zset" && rc.Type(c, "z").Err() == nil {
		t.Fatalf("TYPE %s", typ)
	}
}

// TestZSetRandomizedAgainstModel drives both encodings with random ZADD,
// ZREM and ZREMRANGEBYSCORE and compares every read with a sorted slice.
func TestZSetRandomizedAgainstModel(t *testing.T) {
	ts := startServer(t, "zset-max-listpack-entries", "16")
	rc := ts.client(t)
	c := ctx(t)
	ref := map[string]float64{}
	model := func() []redis.Z {
		var out []redis.Z
		for m, s := range ref {
			out = append(out, redis.Z{Score: s, Member: m})
		}
		slices.SortFunc(out, func(a, b redis.Z) int {
			if value.Zless(a.Score, a.Member.(string), b.Score, b.Member.(string)) {
				return -1
			}
			return 1
		})
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := 0; step < 400; step++ {
		m := "m" + strconv.Itoa(rng.IntN(60))
		switch op := rng.IntN(10); {
		case op < 6:
			s := float64(rng.IntN(20) - 10)
			mustZ(t, rc.ZAdd(c, "z", redis.Z{Score: s, Member: m}).Err())
			ref[m] = s
		case op < 9:
			mustZ(t, rc.ZRem(c, "z", m).Err())
			delete(ref, m)
		default:
			lo := rng.IntN(20) - 10
			mustZ(t, rc.ZRemRangeByScore(c, "z", strconv.Itoa(lo), "("+strconv.Itoa(lo+3)).Err())
			for k, s := range ref {
				if s >= float64(lo) && s < float64(lo+3) {
					delete(ref, k)
				}
			}
		}
		want := model()
		if len(want) == 0 {
			if rc.Exists(c, "z").Val() != 0 {
				t.Fatal("empty zset exists")
			}
			continue
		}
		a, b := rng.IntN(len(want)), rng.IntN(len(want))
		if a > b {
			a, b = b, a
		}
		got := rc.ZRangeWithScores(c, "z", int64(a), int64(b)).Val()
		if !slices.Equal(got, want[a:b+1]) {
			t.Fatalf("step %d ZRANGE %d %d = %v, want %v", step, a, b, got, want[a:b+1])
		}
		got = rc.ZRevRangeWithScores(c, "z", int64(a), int64(b)).Val()
		rev := slices.Clone(want)
		slices.Reverse(rev)
		if !slices.Equal(got, rev[a:b+1]) {
			t.Fatalf("step %d ZREVRANGE = %v", step, got)
		}
		pick := want[rng.IntN(len(want))]
		if r := rc.ZRank(c, "z", pick.Member.(string)).Val(); want[r].Member != pick.Member {
			t.Fatalf("step %d ZRANK %v = %d", step, pick.Member, r)
		}
		lo, hi := rng.IntN(20)-10, rng.IntN(20)-10
		n := rc.ZCount(c, "z", strconv.Itoa(lo), "("+strconv.Itoa(hi)).Val()
		var wantN int64
		for _, z := range want {
			if z.Score >= float64(lo) && z.Score < float64(hi) {
				wantN++
			}
		}
		if n != wantN {
			t.Fatalf("step %d ZCOUNT %d (%d = %d, want %d", step, lo, hi, n, wantN)
		}
		off := rng.IntN(4)
		gotS := rc.ZRangeByScore(c, "z", &redis.ZRangeBy{Min: strconv.Itoa(lo), Max: "+inf", Offset: int64(off), Count: 3}).Val()
		var wantS []string
		for _, z := range want {
			if z.Score >= float64(lo) {
				wantS = append(wantS, z.Member.(string))
			}
		}
		wantS = wantS[min(off, len(wantS)):]
		wantS = wantS[:min(3, len(wantS))]
		if !slices.Equal(gotS, wantS) && !(len(gotS) == 0 && len(wantS) == 0) {
			t.Fatalf("step %d ZRANGEBYSCORE LIMIT = %v, want %v", step, gotS, wantS)
		}
	}
}

// zsetEncodingOf returns the encoding of key in DB 0 (what OBJECT ENCODING
// answers), read directly so the test does not depend on OBJECT.
func zsetEncodingOf(ts *testServer, key string) string {
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

func TestZBlockingPops(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	t.Run("immediate and timeout", func(t *testing.T) {
		mustZ(t, rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err())
		kz, err := rc.BZPopMax(c, time.Second, "nokey", "z").Result()
		mustZ(t, err)
		if kz.Key != "z" || kz.Member != "b" || kz.Score != 2 {
			t.Fatalf("BZPOPMAX = %+v", kz)
		}
		if err := rc.BZPopMin(c, 20*time.Millisecond, "nokey").Err(); err != redis.Nil {
			t.Fatalf("BZPOPMIN timeout: %v", err)
		}
		r := ts.raw(t)
		r.expect("BZPOPMIN nokey 0.01\r\n", "*-1")
		r.expect("BZMPOP 0.01 1 nokey MIN\r\n", "*-1")
		zWantErr(t, rc.Do(c, "bzpopmin", "z", -1).Err(), "ERR timeout is negative")
		zWantErr(t, rc.Do(c, "bzmpop", 0, 0, "z", "min").Err(), "ERR numkeys should be greater than 0")
		mustZ(t, rc.Set(c, "str", "x", 0).Err())
		zWantErr(t, rc.Do(c, "bzpopmin", "str", 0).Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
	})
	t.Run("FIFO waiters", func(t *testing.T) {
		type result struct {
			i   int
			val string
			err error
		}
		results := make(chan result, 3)
		for i := 0; i < 3; i++ {
			cl := ts.client(t)
			go func(i int) {
				if i < 2 {
					kz, err := cl.BZPopMin(c, 5*time.Second, "bz").Result()
					if err == nil {
						results <- result{i, kz.Member.(string), nil}
						return
					}
					results <- result{i, "", err}
					return
				}
				key, zs, err := cl.BZMPop(c, 5*time.Second, "max", 5, "other", "bz").Result()
				if err == nil {
					results <- result{i, key + ":" + fmt.Sprint(len(zs)), nil}
					return
				}
				results <- result{i, "", err}
			}(i)
			// Wait until this client is blocked so the order is known.
			deadline := time.Now().Add(5 * time.Second)
			for ts.srv.blockedOnKeys() < int64(i+1) {
				if time.Now().After(deadline) {
					t.Fatal("client did not block")
				}
				time.Sleep(time.Millisecond)
			}
		}
		// One ZADD of four members serves the waiters in arrival order.
		mustZ(t, rc.ZAdd(c, "bz", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"},
			redis.Z{Score: 3, Member: "c"}, redis.Z{Score: 4, Member: "d"}).Err())
		got := map[int]string{}
		for k := 0; k < 3; k++ {
			select {
			case r := <-results:
				mustZ(t, r.err)
				got[r.i] = r.val
			case <-time.After(5 * time.Second):
				t.Fatal("waiter not served")
			}
		}
		if got[0] != "a" || got[1] != "b" || got[2] != "bz:2" {
			t.Fatalf("served %v", got)
		}
		if rc.Exists(c, "bz").Val() != 0 {
			t.Fatal("key emptied by waiters still exists")
		}
	})
	t.Run("inside MULTI does not block", func(t *testing.T) {
		cmds, err := rc.TxPipelined(c, func(p redis.Pipeliner) error {
			p.BZPopMin(c, 0, "nokey")
			return nil
		})
		if err != redis.Nil || len(cmds) != 1 {
			t.Fatalf("MULTI BZPOPMIN: %v", err)
		}
	})
	t.Run("woken by ZUNIONSTORE", func(t *testing.T) {
		mustZ(t, rc.ZAdd(c, "src", redis.Z{Score: 7, Member: "x"}).Err())
		done := make(chan redis.ZWithKey, 1)
		cl := ts.client(t)
		go func() {
			kz, _ := cl.BZPopMin(c, 5*time.Second, "dst").Result()
			if kz != nil {
				done <- *kz
			}
			close(done)
		}()
		deadline := time.Now().Add(5 * time.Second)
		for ts.srv.blockedOnKeys() < 1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		mustZ(t, rc.ZUnionStore(c, "dst", &redis.ZStore{Keys: []string{"src"}}).Err())
		select {
		case kz := <-done:
			if kz.Member != "x" || kz.Score != 7 {
				t.Fatalf("served %+v", kz)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("not woken by ZUNIONSTORE")
		}
	})
}

// TestZScanUnderWrites checks SCAN's guarantee on a large sorted set: a
// member present for the whole scan is returned although other members
// are removed and added (shrinking and growing the table) meanwhile.
func TestZScanUnderWrites(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	var zs []redis.Z
	for i := 0; i < 2000; i++ {
		zs = append(zs, redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)})
	}
	mustZ(t, rc.ZAdd(c, "z", zs...).Err())
	found := map[string]bool{}
	var cursor uint64
	for i := 0; i < 10000; i++ {
		keys, next, err := rc.ZScan(c, "z", cursor, "", 20).Result()
		mustZ(t, err)
		for j := 0; j < len(keys); j += 2 {
			found[keys[j]] = true
		}
		// Churn: drop a batch of odd members, then add new ones.
		if i == 5 {
			var odd []any
			for k := 1; k < 2000; k += 2 {
				odd = append(odd, "m"+strconv.Itoa(k))
			}
			mustZ(t, rc.ZRem(c, "z", odd...).Err())
		}
		if i == 10 {
			var more []redis.Z
			for k := 0; k < 3000; k++ {
				more = append(more, redis.Z{Score: 1, Member: "n" + strconv.Itoa(k)})
			}
			mustZ(t, rc.ZAdd(c, "z", more...).Err())
		}
		cursor = next
		if cursor == 0 {
			break
		}
	}
	if cursor != 0 {
		t.Fatal("ZSCAN did not finish")
	}
	for k := 0; k < 2000; k += 2 {
		if !found["m"+strconv.Itoa(k)] {
			t.Fatalf("ZSCAN missed m%d, present for the whole scan", k)
		}
	}
}

// TestZSetPropagation checks what replicas and the AOF receive: pops as
// ZPOPMIN/ZPOPMAX with the popped count, failed or no-op writes nothing.
func TestZSetPropagation(t *testing.T) {
	ts := startServer(t)
	prop := ts.capturePropagation()
	rc := ts.client(t)
	c := ctx(t)
	rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"})
	rc.ZAddNX(c, "z", redis.Z{Score: 9, Member: "a"}) // no-op: not propagated
	rc.ZMPop(c, "max", 5, "nokey", "z")               // pops 3
	rc.ZMPop(c, "min", 1, "z")                        // nothing
	rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "a"})
	rc.BZPopMin(c, time.Second, "z")
	rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"})
	rc.BZMPop(c, time.Second, "min", 1, "z")
	rc.ZPopMax(c, "z")
	rc.ZRem(c, "nokey", "x")
	prop.expect(t,
		"zadd z 1 a 2 b 3 c",
		"ZPOPMAX z 3",
		"zadd z 1 a",
		"ZPOPMIN z",
		"zadd z 1 a 2 b",
		"ZPOPMIN z 1",
		"zpopmax z",
	)
}
