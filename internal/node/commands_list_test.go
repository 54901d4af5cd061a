package node

import (
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"
)

// wantErr asserts that err is a Redis error with exactly msg.
func wantErr(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil || err.Error() != msg {
		t.Fatalf("error = %v, want %q", err, msg)
	}
}

func wantListElems(t *testing.T, got []string, err error, want ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("error %v", err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestListPushPop(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		c := ctx(t)
		rc.Del(c, "l")
		if n, err := rc.LPush(c, "l", "a", "b").Result(); err != nil || n != 2 {
			t.Fatalf("LPUSH = %d %v", n, err)
		}
		if n, err := rc.RPush(c, "l", "c", "d").Result(); err != nil || n != 4 {
			t.Fatalf("RPUSH = %d %v", n, err)
		}
		v, err := rc.LRange(c, "l", 0, -1).Result()
		wantListElems(t, v, err, "b", "a", "c", "d")
		if n := rc.LPushX(c, "nokey", "x").Val(); n != 0 {
			t.Fatalf("LPUSHX missing = %d", n)
		}
		if n := rc.RPushX(c, "l", "e").Val(); n != 5 {
			t.Fatalf("RPUSHX = %d", n)
		}
		if n := rc.Exists(c, "nokey").Val(); n != 0 {
			t.Fatal("LPUSHX created the key")
		}
		if s := rc.LPop(c, "l").Val(); s != "b" {
			t.Fatalf("LPOP = %q", s)
		}
		if s := rc.RPop(c, "l").Val(); s != "e" {
			t.Fatalf("RPOP = %q", s)
		}
		v, err = rc.LPopCount(c, "l", 2).Result()
		wantListElems(t, v, err, "a", "c")
		v, err = rc.RPopCount(c, "l", 5).Result()
		wantListElems(t, v, err, "d")
		if rc.Exists(c, "l").Val() != 0 {
			t.Fatal("emptied list not removed")
		}
		if err := rc.LPop(c, "l").Err(); err != redis.Nil {
			t.Fatalf("LPOP missing: %v", err)
		}
		if err := rc.LPopCount(c, "l", 2).Err(); err != redis.Nil {
			t.Fatalf("LPOP count missing: %v", err)
		}
		rc.RPush(c, "l", "x")
		v, err = rc.LPopCount(c, "l", 0).Result()
		wantListElems(t, v, err)
		wantErr(t, rc.LPopCount(c, "l", -1).Err(), "ERR value is out of range, must be positive")
		wantErr(t, rc.Do(c, "lpop", "l", "1", "2").Err(), "ERR wrong number of arguments for 'lpop' command")
		if n := rc.LLen(c, "l").Val(); n != 1 {
			t.Fatalf("LLEN = %d", n)
		}
		if n := rc.LLen(c, "missing").Val(); n != 0 {
			t.Fatalf("LLEN missing = %d", n)
		}
	}
}

func TestListRawReplies(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("LPOP nokey\r\n", "$-1")
	r.expect("LPOP nokey 1\r\n", "*-1")
	r.expect("LINDEX nokey 0\r\n", "$-1")
	r.expect("LRANGE nokey 0 -1\r\n", "*0")
	r.expect("LPOS nokey a\r\n", "$-1")
	r.expect("LPOS nokey a COUNT 0\r\n", "*0")
	r.expect("LMPOP 1 nokey LEFT\r\n", "*-1")
	r.expect("BLPOP nokey 0.01\r\n", "*-1")
	r.expect("BLMOVE nokey dst LEFT LEFT 0.01\r\n", "*-1")
	r.send("HELLO 3\r\n")
	skipRawReply(r)
	r.expect("LPOP nokey\r\n", "_")
	r.expect("LPOP nokey 1\r\n", "_")
	r.expect("BLPOP nokey 0.01\r\n", "_")
	r.expect("RPUSH l a b\r\n", ":2")
	r.expect("LPOP l 0\r\n", "*0")
}

func TestListErrors(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.Set(c, "s", "x", 0)
	rc.RPush(c, "l", "a", "b", "c")
	const wt = "WRONGTYPE Operation against a key holding the wrong kind of value"
	for _, args := range [][]any{
		{"lpush", "s", "a"}, {"rpush", "s", "a"}, {"lpushx", "s", "a"}, {"rpushx", "s", "a"},
		{"lpop", "s"}, {"rpop", "s", "2"}, {"llen", "s"}, {"lindex", "s", "0"},
		{"lset", "s", "0", "x"}, {"lrange", "s", "0", "1"}, {"ltrim", "s", "0", "1"},
		{"lpos", "s", "a"}, {"lrem", "s", "0", "a"}, {"linsert", "s", "before", "a", "b"},
		{"rpoplpush", "s", "l"}, {"rpoplpush", "l", "s"}, {"lmove", "l", "s", "left", "right"},
		{"lmpop", "2", "nokey", "s", "left"}, {"blpop", "nokey", "s", "0"}, {"brpop", "s", "0"},
		{"blmove", "s", "d", "left", "left", "0"}, {"brpoplpush", "l", "s", "0"},
		{"blmpop", "0", "1", "s", "right"},
	} {
		wantErr(t, rc.Do(c, args...).Err(), wt)
	}
	// The failed moves left the source intact.
	v, err := rc.LRange(c, "l", 0, -1).Result()
	wantListElems(t, v, err, "a", "b", "c")
	for _, tc := range []struct {
		args []any
		msg  string
	}{
		{[]any{"lset", "nokey", "0", "x"}, "ERR no such key"},
		{[]any{"lset", "l", "3", "x"}, "ERR index out of range"},
		{[]any{"lset", "l", "-4", "x"}, "ERR index out of range"},
		{[]any{"lset", "l", "x", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"lindex", "l", "1.5"}, "ERR value is not an integer or out of range"},
		{[]any{"lrange", "l", "a", "1"}, "ERR value is not an integer or out of range"},
		{[]any{"ltrim", "l", "0", "b"}, "ERR value is not an integer or out of range"},
		{[]any{"lrem", "l", "x", "a"}, "ERR value is not an integer or out of range"},
		{[]any{"linsert", "l", "middle", "a", "b"}, "ERR syntax error"},
		{[]any{"lmove", "l", "d", "up", "left"}, "ERR syntax error"},
		{[]any{"lpos", "l", "a", "rank", "0"}, "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"},
		{[]any{"lpos", "l", "a", "count", "-1"}, "ERR COUNT can't be negative"},
		{[]any{"lpos", "l", "a", "maxlen", "-1"}, "ERR MAXLEN can't be negative"},
		{[]any{"lpos", "l", "a", "rank"}, "ERR syntax error"},
		{[]any{"lpos", "l", "a", "foo", "1"}, "ERR syntax error"},
		{[]any{"lmpop", "0", "l", "left"}, "ERR numkeys should be greater than 0"},
		{[]any{"lmpop", "x", "l", "left"}, "ERR numkeys should be greater than 0"},
		{[]any{"lmpop", "2", "l", "left"}, "ERR syntax error"},
		{[]any{"lmpop", "1", "l", "up"}, "ERR syntax error"},
		{[]any{"lmpop", "1", "l", "left", "count", "0"}, "ERR count should be greater than 0"},
		{[]any{"lmpop", "1", "l", "left", "count", "1", "count", "1"}, "ERR syntax error"},
		{[]any{"lmpop", "1", "l", "left", "count"}, "ERR syntax error"},
		{[]any{"blpop", "l", "-1"}, "ERR timeout is negative"},
		{[]any{"blpop", "l", "abc"}, "ERR timeout is not a float or out of range"},
		{[]any{"brpoplpush", "l", "d", "nan"}, "ERR timeout is not a float or out of range"},
		{[]any{"blmove", "l", "d", "left", "left", "-0.5"}, "ERR timeout is negative"},
		{[]any{"blmpop", "x", "1", "l", "left"}, "ERR timeout is not a float or out of range"},
		{[]any{"blmpop", "0", "0", "l", "left"}, "ERR numkeys should be greater than 0"},
		{[]any{"lpush", "l"}, "ERR wrong number of arguments for 'lpush' command"},
		{[]any{"blpop", "l"}, "ERR wrong number of arguments for 'blpop' command"},
	} {
		wantErr(t, rc.Do(c, tc.args...).Err(), tc.msg)
	}
}

func TestListIndexSetInsertRange(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.RPush(c, "l", "a", "b", "c", "d")
	for i, want := range map[int64]string{0: "a", 3: "d", -1: "d", -4: "a"} {
		if v := rc.LIndex(c, "l", i).Val(); v != want {
			t.Fatalf("LINDEX %d = %q", i, v)
		}
	}
	if err := rc.LIndex(c, "l", 4).Err(); err != redis.Nil {
		t.Fatalf("LINDEX out of range: %v", err)
	}
	if err := rc.LIndex(c, "l", -5).Err(); err != redis.Nil {
		t.Fatalf("LINDEX out of range: %v", err)
	}
	if err := rc.LSet(c, "l", -1, "D").Err(); err != nil {
		t.Fatal(err)
	}
	if n := rc.LInsertBefore(c, "l", "a", "0").Val(); n != 5 {
		t.Fatalf("LINSERT BEFORE = %d", n)
	}
	if n := rc.LInsertAfter(c, "l", "D", "E").Val(); n != 6 {
		t.Fatalf("LINSERT AFTER = %d", n)
	}
	if n := rc.LInsertAfter(c, "l", "zz", "E").Val(); n != -1 {
		t.Fatalf("LINSERT missing pivot = %d", n)
	}
	if n := rc.LInsertAfter(c, "nokey", "a", "E").Val(); n != 0 {
		t.Fatalf("LINSERT missing key = %d", n)
	}
	v, err := rc.LRange(c, "l", 0, -1).Result()
	wantListElems(t, v, err, "0", "a", "b", "c", "D", "E")
	v, err = rc.LRange(c, "l", -100, 1).Result()
	wantListElems(t, v, err, "0", "a")
	v, err = rc.LRange(c, "l", 4, 100).Result()
	wantListElems(t, v, err, "D", "E")
	v, err = rc.LRange(c, "l", 3, 1).Result()
	wantListElems(t, v, err)
	v, err = rc.LRange(c, "l", 6, 10).Result()
	wantListElems(t, v, err)

	if err := rc.LTrim(c, "l", 1, -2).Err(); err != nil {
		t.Fatal(err)
	}
	v, err = rc.LRange(c, "l", 0, -1).Result()
	wantListElems(t, v, err, "a", "b", "c", "D")
	rc.LTrim(c, "l", 5, 10)
	if rc.Exists(c, "l").Val() != 0 {
		t.Fatal("LTRIM to empty kept the key")
	}
	if err := rc.LTrim(c, "nokey", 0, 1).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestListPosRem(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rc.RPush(c, "l", "a", "b", "c", "1", "2", "3", "c", "c")
	if n := rc.LPos(c, "l", "c", redis.LPosArgs{}).Val(); n != 2 {
		t.Fatalf("LPOS = %d", n)
	}
	if n := rc.LPos(c, "l", "c", redis.LPosArgs{Rank: 2}).Val(); n != 6 {
		t.Fatalf("LPOS RANK 2 = %d", n)
	}
	if n := rc.LPos(c, "l", "c", redis.LPosArgs{Rank: -1}).Val(); n != 7 {
		t.Fatalf("LPOS RANK -1 = %d", n)
	}
	if err := rc.LPos(c, "l", "c", redis.LPosArgs{Rank: 4}).Err(); err != redis.Nil {
		t.Fatalf("LPOS RANK 4: %v", err)
	}
	ns, err := rc.LPosCount(c, "l", "c", 0, redis.LPosArgs{}).Result()
	if err != nil || !reflect.DeepEqual(ns, []int64{2, 6, 7}) {
		t.Fatalf("LPOS COUNT 0 = %v %v", ns, err)
	}
	ns, err = rc.LPosCount(c, "l", "c", 2, redis.LPosArgs{Rank: -1}).Result()
	if err != nil || !reflect.DeepEqual(ns, []int64{7, 6}) {
		t.Fatalf("LPOS COUNT 2 RANK -1 = %v %v", ns, err)
	}
	if err := rc.LPos(c, "l", "c", redis.LPosArgs{MaxLen: 2}).Err(); err != redis.Nil {
		t.Fatalf("LPOS MAXLEN 2: %v", err)
	}
	if n := rc.LPos(c, "l", "c", redis.LPosArgs{MaxLen: 3}).Val(); n != 2 {
		t.Fatalf("LPOS MAXLEN 3 = %d", n)
	}

	rc.Del(c, "r")
	rc.RPush(c, "r", "x", "a", "x", "b", "x", "c", "x")
	if n := rc.LRem(c, "r", 2, "x").Val(); n != 2 {
		t.Fatalf("LREM 2 = %d", n)
	}
	v, err := rc.LRange(c, "r", 0, -1).Result()
	wantListElems(t, v, err, "a", "b", "x", "c", "x")
	if n := rc.LRem(c, "r", -1, "x").Val(); n != 1 {
		t.Fatalf("LREM -1 = %d", n)
	}
	v, err = rc.LRange(c, "r", 0, -1).Result()
	wantListElems(t, v, err, "a", "b", "x", "c")
	if n := rc.LRem(c, "r", 0, "zz").Val(); n != 0 {
		t.Fatalf("LREM none = %d", n)
	}
	rc.Del(c, "r")
	rc.RPush(c, "r", "x", "x")
	if n := rc.LRem(c, "r", 0, "x").Val(); n != 2 || rc.Exists(c, "r").Val() != 0 {
		t.Fatalf("LREM all = %d, key kept", n)
	}
}

func TestListMove(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		c := ctx(t)
		rc.Del(c, "src", "dst")
		rc.RPush(c, "src", "a", "b", "c")
		if v := rc.RPopLPush(c, "src", "dst").Val(); v != "c" {
			t.Fatalf("RPOPLPUSH = %q", v)
		}
		if v := rc.LMove(c, "src", "dst", "LEFT", "RIGHT").Val(); v != "a" {
			t.Fatalf("LMOVE = %q", v)
		}
		v, err := rc.LRange(c, "dst", 0, -1).Result()
		wantListElems(t, v, err, "c", "a")
		// Same list as source and destination rotates it.
		if v := rc.LMove(c, "dst", "dst", "LEFT", "RIGHT").Val(); v != "c" {
			t.Fatalf("LMOVE rotate = %q", v)
		}
		v, err = rc.LRange(c, "dst", 0, -1).Result()
		wantListElems(t, v, err, "a", "c")
		if v := rc.LMove(c, "src", "dst", "LEFT", "LEFT").Val(); v != "b" {
			t.Fatalf("LMOVE last = %q", v)
		}
		if rc.Exists(c, "src").Val() != 0 {
			t.Fatal("emptied source kept")
		}
		if err := rc.RPopLPush(c, "src", "dst").Err(); err != redis.Nil {
			t.Fatalf("RPOPLPUSH missing: %v", err)
		}
		if err := rc.LMove(c, "src", "dst", "RIGHT", "LEFT").Err(); err != redis.Nil {
			t.Fatalf("LMOVE missing: %v", err)
		}
	}
}

func TestListMPop(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		c := ctx(t)
		rc.Del(c, "a", "b")
		rc.RPush(c, "b", "1", "2", "3")
		key, vals, err := rc.LMPop(c, "left", 2, "a", "b").Result()
		if err != nil || key != "b" || !reflect.DeepEqual(vals, []string{"1", "2"}) {
			t.Fatalf("LMPOP = %q %q %v", key, vals, err)
		}
		key, vals, err = rc.LMPop(c, "right", 10, "a", "b").Result()
		if err != nil || key != "b" || !reflect.DeepEqual(vals, []string{"3"}) {
			t.Fatalf("LMPOP right = %q %q %v", key, vals, err)
		}
		if err := rc.LMPop(c, "left", 1, "a", "b").Err(); err != redis.Nil {
			t.Fatalf("LMPOP empty: %v", err)
		}
		rc.RPush(c, "a", "x")
		key, vals, err = rc.BLMPop(c, 0, "right", 5, "b", "a").Result()
		if err != nil || key != "a" || !reflect.DeepEqual(vals, []string{"x"}) {
			t.Fatalf("BLMPOP with data = %q %q %v", key, vals, err)
		}
	}
}

func TestListNotificationsAndPropagation(t *testing.T) {
	ts := startServer(t, "notify-keyspace-events", "KEA")
	rc := ts.client(t)
	c := ctx(t)
	next := ts.keyEvents(t)
	rc.RPush(c, "l", "a", "b")
	rc.LPush(c, "l", "z")
	rc.LSet(c, "l", 0, "y")
	rc.LInsertAfter(c, "l", "y", "w")
	rc.LRem(c, "l", 1, "w")
	rc.LTrim(c, "l", 0, 1)
	rc.LMove(c, "l", "m", "LEFT", "RIGHT")
	rc.RPop(c, "l")
	expectKeyEvents(t, next, "rpush l", "lpush l", "lset l", "linsert l", "lrem l", "ltrim l",
		"rpush m", "lpop l", "rpop l", "del l")
}

// skipRawReply reads one whole RESP2/RESP3 reply from r.
func skipRawReply(r *rawConn) {
	r.t.Helper()
	line := r.readLine()
	if line == "" {
		r.t.Fatal("empty reply line")
	}
	n := 0
	for _, ch := range line[1:] {
		if ch < '0' || ch > '9' {
			n = -1
			break
		}
		n = n*10 + int(ch-'0')
	}
	switch line[0] {
	case '$', '=', '!':
		if n >= 0 {
			r.readLine()
		}
	case '*', '~', '>':
		for i := 0; i < n; i++ {
			skipRawReply(r)
		}
	case '%', '|':
		for i := 0; i < 2*n; i++ {
			skipRawReply(r)
		}
	}
}
