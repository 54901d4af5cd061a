package shardedpool

import (
	"fmt"
	"testing"
)

func TestExtractKeys(t *testing.T) {
	tests := []struct {
		args []interface{}
		want string
	}{
		{[]interface{}{"get", "k"}, "[k]"},
		{[]interface{}{"set", "k", "v", "ex", 10}, "[k]"},
		{[]interface{}{"mset", "a", 1, "b", 2}, "[a b]"},
		{[]interface{}{"rename", "a", "b"}, "[a b]"},
		{[]interface{}{"blpop", "a", "b", 0}, "[a b]"},
		{[]interface{}{"bitop", "and", "d", "a", "b"}, "[d a b]"},
		{[]interface{}{"eval", "return 1", 2, "a", "b", "arg"}, "[a b]"},
		{[]interface{}{"eval", "return 1", 0}, "[]"},
		{[]interface{}{"zunionstore", "d", 2, "a", "b", "weights", 1, 2}, "[d a b]"},
		{[]interface{}{"zunion", 2, "a", "b"}, "[a b]"},
		{[]interface{}{"blmpop", 0, 2, "a", "b", "left"}, "[a b]"},
		{[]interface{}{"xread", "count", 1, "streams", "s1", "s2", "0", "0"}, "[s1 s2]"},
		{[]interface{}{"xreadgroup", "group", "g", "c", "streams", "s1", ">"}, "[s1]"},
		{[]interface{}{"sort", "k", "by", "w", "store", "d"}, "[k d]"},
		{[]interface{}{"georadius", "k", 1, 2, 3, "km", "store", "d"}, "[k d]"},
		{[]interface{}{"object", "encoding", "k"}, "[k]"},
		{[]interface{}{"ping"}, "[]"},
		{[]interface{}{"dbsize"}, "[]"},
		{[]interface{}{"get", []byte("bin")}, "[bin]"},
		{[]interface{}{"get", 42}, "[42]"},
		{[]interface{}{"somemodule.cmd", "k", "x"}, "[k]"}, // unknown: first argument
		{[]interface{}{"publish", "ch", "msg"}, "[ch]"},
		{[]interface{}{"spublish", "ch", "msg"}, "[ch]"},
		{[]interface{}{"waitaof", 1, 0, 0}, "[]"},
		{[]interface{}{"sort", "k", "limit", 0, 1, "get", "store", "store", "d"}, "[k d]"},
		{[]interface{}{"sort_ro", "k", "store", "d"}, "[k]"},
		{[]interface{}{"migrate", "h", 6379, "k", 0, 1000}, "[k]"},
		{[]interface{}{"migrate", "h", 6379, "", 0, 1000, "auth", "keys", "keys", "a", "b"}, "[a b]"},
		{[]interface{}{"memory", "usage", "k"}, "[k]"},
		{[]interface{}{"object", "help"}, "[]"},
		{[]interface{}{"xgroup", "create", "s", "g", "$"}, "[s]"},
		{[]interface{}{"zinterstore", "d", 0, "x"}, "[]"},   // numkeys 0: Redis finds no key
		{[]interface{}{"eval", "return 1", "x", "a"}, "[]"}, // bad numkeys
		{[]interface{}{"GET", "k"}, "[k]"},
	}
	for _, tt := range tests {
		got := fmt.Sprint(commandKeys(tt.args[0].(string), tt.args))
		if got != tt.want {
			t.Errorf("keys of %v = %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestCrossShardErrorNamesShards(t *testing.T) {
	p := &Pool{hash: NewJumpHash(3)}
	p.shards = []*shard{{name: "red"}, {name: "green"}, {name: "blue"}}
	keys := map[int]string{}
	for i := 0; len(keys) < 3; i++ {
		k := fmt.Sprint("k", i)
		if _, ok := keys[p.hash.Get(k)]; !ok {
			keys[p.hash.Get(k)] = k
		}
	}
	_, err := p.sameShard("sunion", []string{keys[0], keys[2]})
	want := fmt.Sprintf("shardedpool: SUNION: keys on different shards: red (%s), blue (%s)", keys[0], keys[2])
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}
