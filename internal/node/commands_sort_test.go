package node

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestSort(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		c := ctx(t)
		mustZ(t, rc.Del(c, "n", "w_1", "w_2", "w_3", "h_1", "h_3", "dst", "s", "z", "str").Err())
		mustZ(t, rc.RPush(c, "n", 3, 1, 2, 10, -5, 1.5).Err())
		check := func(name string, got []string, err error, want ...string) {
			t.Helper()
			mustZ(t, err)
			if !slices.Equal(got, want) {
				t.Fatalf("RESP%d %s = %q, want %q", proto, name, got, want)
			}
		}
		got, err := rc.Sort(c, "n", &redis.Sort{}).Result()
		check("numeric", got, err, "-5", "1", "1.5", "2", "3", "10")
		got, err = rc.Sort(c, "n", &redis.Sort{Order: "DESC", Offset: 1, Count: 2}).Result()
		check("DESC LIMIT", got, err, "3", "2")
		got, err = rc.Sort(c, "n", &redis.Sort{Alpha: true}).Result()
		check("ALPHA", got, err, "-5", "1", "1.5", "10", "2", "3")
		got, err = rc.Sort(c, "n", &redis.Sort{By: "nosort", Order: "DESC"}).Result()
		check("BY nosort DESC", got, err, "1.5", "-5", "10", "2", "1", "3")
		mustZ(t, rc.MSet(c, "w_3", 30, "w_1", 10, "w_2", 20).Err())
		mustZ(t, rc.HSet(c, "h_3", "f", "c").Err())
		mustZ(t, rc.HSet(c, "h_1", "f", "a").Err())
		mustZ(t, rc.Del(c, "n").Err())
		mustZ(t, rc.RPush(c, "n", 3, 1, 2).Err())
		got, err = rc.Sort(c, "n", &redis.Sort{By: "w_*", Order: "DESC"}).Result()
		check("BY weights", got, err, "3", "2", "1")
		got, err = rc.Sort(c, "n", &redis.Sort{By: "h_*->f", Alpha: true}).Result()
		check("BY hash field (missing sorts first)", got, err, "2", "1", "3")
		vals, err := rc.SortInterfaces(c, "n", &redis.Sort{Get: []string{"#", "h_*->f"}}).Result()
		mustZ(t, err)
		if len(vals) != 6 || vals[0] != "1" || vals[1] != "a" || vals[2] != "2" || vals[3] != nil || vals[5] != "c" {
			t.Fatalf("GET # GET h_*->f = %#v", vals)
		}
		n, err := rc.SortStore(c, "n", "dst", &redis.Sort{Get: []string{"w_*"}}).Result()
		mustZ(t, err)
		if n != 3 || !slices.Equal(rc.LRange(c, "dst", 0, -1).Val(), []string{"10", "20", "30"}) {
			t.Fatalf("STORE = %d %v", n, rc.LRange(c, "dst", 0, -1).Val())
		}
		n, err = rc.SortStore(c, "nokey", "dst", &redis.Sort{}).Result()
		mustZ(t, err)
		if n != 0 || rc.Exists(c, "dst").Val() != 0 {
			t.Fatalf("STORE of nothing = %d, dst kept", n)
		}
		// Sets and sorted sets.
		mustZ(t, rc.SAdd(c, "s", 5, 2, 9).Err())
		got, err = rc.Sort(c, "s", &redis.Sort{}).Result()
		check("set", got, err, "2", "5", "9")
		mustZ(t, rc.ZAdd(c, "z", redis.Z{Score: 1, Member: "c"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "a"}).Err())
		got, err = rc.Sort(c, "z", &redis.Sort{By: "nosort", Order: "DESC", Offset: 1, Count: 1}).Result()
		check("zset BY nosort", got, err, "b")
		got, err = rc.Sort(c, "z", &redis.Sort{Alpha: true}).Result()
		check("zset ALPHA", got, err, "a", "b", "c")
		got, err = rc.SortRO(c, "z", &redis.Sort{Alpha: true, Order: "DESC"}).Result()
		check("SORT_RO", got, err, "c", "b", "a")
		// Errors.
		zWantErr(t, rc.Sort(c, "z", &redis.Sort{}).Err(), "ERR One or more scores can't be converted into double")
		mustZ(t, rc.Set(c, "str", "x", 0).Err())
		zWantErr(t, rc.Sort(c, "str", &redis.Sort{}).Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
		zWantErr(t, rc.Do(c, "sort", "n", "bogus").Err(), "ERR syntax error")
		zWantErr(t, rc.Do(c, "sort", "n", "limit", "a", 1).Err(), "ERR value is not an integer or out of range")
		zWantErr(t, rc.Do(c, "sort_ro", "n", "store", "x").Err(), "ERR syntax error")
	}
}
