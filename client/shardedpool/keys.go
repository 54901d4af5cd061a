package shardedpool

import (
	"fmt"
	"strconv"
	"strings"
)

// keySpec says where a command's keys are, as Redis's legacy key
// specification does: the keys are the arguments first, first+step, ...
// up to last (negative counts from the end: -1 is the last argument).
// keys, when set, replaces the range for commands whose keys move.
type keySpec struct {
	first, last, step int
	keys              func(args []interface{}) []string
}

func (s keySpec) singleKey() bool { return s.keys == nil && s.first == 1 && s.last == 1 }

// keyless marks commands that have no key: the pool cannot route them.
var keyless = keySpec{}

func span(first, last, step int) keySpec { return keySpec{first: first, last: last, step: step} }

var one = span(1, 1, 1)

// commandKeys is the pool's command table. Commands not listed route by
// their first argument, as go-redis's own key-position fallback does.
var commandKeys = map[string]keySpec{}

func init() {
	for _, names := range []struct {
		spec  keySpec
		names string
	}{
		{one, `get set setnx setex psetex append strlen incr decr incrby decrby incrbyfloat
			getset getdel getex getrange setrange substr getbit setbit bitcount bitpos bitfield
			bitfield_ro type ttl pttl expire pexpire expireat pexpireat expiretime pexpiretime
			persist dump restore restore-asking move
			lpush rpush lpushx rpushx lpop rpop llen lrange lindex lset lrem ltrim linsert lpos
			sadd srem smembers sismember smismember scard spop srandmember sscan
			hset hsetnx hget hmset hmget hdel hlen hstrlen hkeys hvals hgetall hexists hincrby
			hincrbyfloat hscan hrandfield hexpire hpexpire hexpireat hpexpireat httl hpttl
			hexpiretime hpexpiretime hpersist hgetdel hgetex hsetex
			zadd zincrby zrem zcard zcount zlexcount zscore zmscore zrank zrevrank zrange
			zrangebyscore zrevrangebyscore zrangebylex zrevrangebylex zrevrange zremrangebyrank
			zremrangebyscore zremrangebylex zpopmin zpopmax zscan zrandmember
			pfadd geoadd geodist geohash geopos georadius_ro georadiusbymember_ro geosearch
			xadd xlen xrange xrevrange xdel xtrim xack xclaim xautoclaim xpending xsetid
			sort_ro publish spublish`},
		{span(1, 2, 1), `rename renamenx copy smove rpoplpush lmove blmove brpoplpush lcs
			geosearchstore zrangestore`},
		{span(1, -1, 1), `del exists unlink touch mget watch sunion sinter sdiff sunionstore
			sinterstore sdiffstore pfcount pfmerge`},
		{span(1, -2, 1), `blpop brpop bzpopmin bzpopmax`},
		{span(1, -1, 2), `mset msetnx`},
		{span(2, -1, 1), `bitop`},
		{keySpec{keys: numKeysAt(2)}, `eval evalsha eval_ro evalsha_ro fcall fcall_ro`},
		{keySpec{keys: storeNumKeysAt2}, `zunionstore zinterstore zdiffstore`},
		{keySpec{keys: numKeysAt(1)}, `zunion zinter zdiff zintercard sintercard lmpop zmpop`},
		{keySpec{keys: numKeysAt(2)}, `blmpop bzmpop`},
		{keySpec{keys: streamKeys}, `xread xreadgroup`},
		{keySpec{keys: keyWithStore("store", "storedist")}, `georadius georadiusbymember`},
		{keySpec{keys: keyWithStore("store")}, `sort`},
		{keySpec{keys: subcommandKey}, `object xinfo xgroup memory`},
		{keyless, `ping echo auth hello select quit info config client cluster command debug
			dbsize flushdb flushall save bgsave bgrewriteaof lastsave shutdown slaveof replicaof
			role monitor sync psync replconf slowlog latency lolwut time randomkey keys scan
			multi exec discard unwatch script function wait waitaof subscribe unsubscribe
			psubscribe punsubscribe ssubscribe sunsubscribe pubsub acl module failover swapdb
			readonly readwrite asking reset migrate`},
	} {
		for _, n := range strings.Fields(names.names) {
			if _, dup := commandKeys[n]; dup {
				panic("shardedpool: command listed twice in the key table: " + n)
			}
			commandKeys[n] = names.spec
		}
	}
}

// lookupSpec returns the key spec of the command named name (lower case),
// defaulting to "the first argument is the key".
func lookupSpec(name string) keySpec {
	if s, ok := commandKeys[name]; ok {
		return s
	}
	return one
}

// extractKeys returns the keys of a command given its spec and its full
// argument list (args[0] is the command name).
func extractKeys(spec keySpec, args []interface{}) []string {
	if spec.keys != nil {
		return spec.keys(args)
	}
	if spec.step == 0 {
		return nil
	}
	last := spec.last
	if last < 0 {
		last += len(args)
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	var keys []string
	for i := spec.first; i <= last; i += spec.step {
		keys = append(keys, argString(args[i]))
	}
	return keys
}

// numKeysAt returns a key extractor for "numkeys at pos, then numkeys keys".
func numKeysAt(pos int) func([]interface{}) []string {
	return func(args []interface{}) []string {
		if pos >= len(args) {
			return nil
		}
		n, err := strconv.Atoi(argString(args[pos]))
		if err != nil || n <= 0 {
			return nil
		}
		end := pos + 1 + n
		if end > len(args) {
			end = len(args)
		}
		keys := make([]string, 0, n)
		for _, a := range args[pos+1 : end] {
			keys = append(keys, argString(a))
		}
		return keys
	}
}

// storeNumKeysAt2: ZUNIONSTORE destination numkeys key...
func storeNumKeysAt2(args []interface{}) []string {
	if len(args) < 2 {
		return nil
	}
	return append([]string{argString(args[1])}, numKeysAt(2)(args)...)
}

// streamKeys: XREAD/XREADGROUP ... STREAMS key... id..., as many ids as keys.
func streamKeys(args []interface{}) []string {
	for i := 1; i < len(args); i++ {
		if strings.EqualFold(argString(args[i]), "streams") {
			rest := args[i+1:]
			keys := make([]string, 0, len(rest)/2)
			for _, a := range rest[:len(rest)/2] {
				keys = append(keys, argString(a))
			}
			return keys
		}
	}
	return nil
}

// keyWithStore: the key at 1 plus the argument after any of the tokens.
func keyWithStore(tokens ...string) func([]interface{}) []string {
	return func(args []interface{}) []string {
		if len(args) < 2 {
			return nil
		}
		keys := []string{argString(args[1])}
		for i := 2; i < len(args)-1; i++ {
			s := argString(args[i])
			for _, tok := range tokens {
				if strings.EqualFold(s, tok) {
					keys = append(keys, argString(args[i+1]))
				}
			}
		}
		return keys
	}
}

// subcommandKey: OBJECT ENCODING key, XINFO STREAM key, MEMORY USAGE key.
func subcommandKey(args []interface{}) []string {
	if len(args) < 3 {
		return nil
	}
	return []string{argString(args[2])}
}

// argString renders an argument as go-redis writes it on the wire.
func argString(a interface{}) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case nil:
		return ""
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}
