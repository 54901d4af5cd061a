package keyopts

import (
	"bytes"
	"testing"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
)

func args(s string) [][]byte { return bytes.Fields([]byte(s)) }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestExpire(t *testing.T) {
	for _, tc := range []struct {
		opts  string
		flags int
		err   string
	}{
		{"", 0, ""}, {"nx", ExpireNX, ""}, {"XX GT", ExpireXX | ExpireGT, ""},
		{"NX XX", 0, ErrNXAndOthers.Error()}, {"GT LT", 0, ErrGTAndLT.Error()}, {"FOO", 0, "ERR Unsupported option FOO"},
	} {
		flags, err := ParseExpireFlags(args(tc.opts))
		if flags != tc.flags || errText(err) != tc.err {
			t.Errorf("%q: %d, %v", tc.opts, flags, err)
		}
	}
	for _, tc := range []struct {
		arg     string
		base    int64
		seconds bool
		want    int64
		err     string
	}{
		{"10", 1000, true, 11000, ""}, {"10", 1000, false, 1010, ""}, {"-5", 0, false, -5, ""},
		{"9223372036854776", 0, true, 0, "ERR invalid expire time in 'expire' command"},
		{"9223372036854775807", 1, false, 0, "ERR invalid expire time in 'expire' command"},
		{"x", 0, true, 0, ErrNotInt.Error()},
	} {
		got, err := ExpireTime([]byte(tc.arg), tc.base, tc.seconds, "expire")
		if got != tc.want || errText(err) != tc.err {
			t.Errorf("ExpireTime(%s, %d, %v) = %d, %v", tc.arg, tc.base, tc.seconds, got, err)
		}
	}
	for _, tc := range []struct {
		flags     int
		cur, when int64
		skipped   bool
	}{
		{ExpireNX, 5, 9, true}, {ExpireNX, 0, 9, false}, {ExpireXX, 0, 9, true}, {ExpireGT, 0, 9, true},
		{ExpireGT, 5, 9, false}, {ExpireGT, 9, 9, true}, {ExpireLT, 0, 9, false}, {ExpireLT, 5, 9, true}, {0, 5, 9, false},
	} {
		if got := ExpireSkipped(tc.flags, tc.cur, tc.when); got != tc.skipped {
			t.Errorf("ExpireSkipped(%d, %d, %d) = %v", tc.flags, tc.cur, tc.when, got)
		}
	}
	for _, tc := range []struct {
		expire, now int64
		ms, abs     bool
		want        int64
	}{
		{0, 5, false, false, -1}, {10_400, 0, false, false, 10}, {10_500, 0, false, false, 11}, {10_500, 0, true, false, 10_500},
		{100, 200, true, false, 0}, {10_500, 9_000, false, true, 11}, {10_500, 9_000, true, true, 10_500},
	} {
		if got := TTL(tc.expire, tc.now, tc.ms, tc.abs); got != tc.want {
			t.Errorf("TTL(%d, %d, %v, %v) = %d, want %d", tc.expire, tc.now, tc.ms, tc.abs, got, tc.want)
		}
	}
}

func TestScanCopyRestore(t *testing.T) {
	o, err := ParseScan(args("MATCH k* COUNT 5 TYPE String"))
	if err != nil || o.Count != 5 || !o.Match || o.Pattern != "k*" || !o.TypeMatches("string") || o.TypeMatches("hash") {
		t.Errorf("%+v, %v", o, err)
	}
	if o, _ := ParseScan(args("match *")); o.Match || o.Count != 10 || !o.TypeMatches("zset") {
		t.Errorf("MATCH *: %+v", o)
	}
	for _, s := range []string{"COUNT 0", "COUNT", "FOO 1"} {
		if _, err := ParseScan(args(s)); err != ErrSyntax {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseScan(args("COUNT x")); err != ErrNotInt {
		t.Errorf("COUNT x: %v", err)
	}
	for _, tc := range []struct {
		opts string
		db   int
		err  string
	}{
		{"", -1, ""}, {"DB 3 REPLACE", 3, ""}, {"DB 16", -1, ErrDBIndex.Error()}, {"DB 16 FOO", -1, ErrDBIndex.Error()},
		{"FOO DB 16", -1, ErrSyntax.Error()}, {"DB 4294967296", -1, ErrDBRange.Error()}, {"DB", -1, ErrSyntax.Error()},
	} {
		o, err := ParseCopy(args(tc.opts), 16)
		if errText(err) != tc.err || (err == nil && o.DB != tc.db) {
			t.Errorf("COPY %q: %+v, %v", tc.opts, o, err)
		}
	}
	for _, tc := range []struct {
		opts string
		err  error
	}{
		{"REPLACE ABSTTL IDLETIME 5", nil}, {"FREQ 256", ErrFreq}, {"IDLETIME -1", ErrIdleTime},
		{"IDLETIME 1 FREQ 1", ErrSyntax}, {"FREQ x", ErrNotInt}, {"BAR", ErrSyntax},
	} {
		if _, err := ParseRestore(args(tc.opts)); err != tc.err {
			t.Errorf("RESTORE %q: %v", tc.opts, err)
		}
	}
	if _, err := ParseRestoreTTL([]byte("-1")); err != ErrTTL {
		t.Errorf("TTL -1: %v", err)
	}
}

func TestObject(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int64
	}{{"0", 1<<31 - 1}, {"9999", 1<<31 - 1}, {"10000", 1}, {"-1", 1}, {"abc", 1}, {"01", 1}} {
		if got := Refcount([]byte(tc.s)); got != tc.want {
			t.Errorf("Refcount(%q) = %d", tc.s, got)
		}
	}
	if IdleTime(100, 150) != 50 || IdleTime(0, 150) != 0 || IdleTime(200, 150) != 0 {
		t.Error("IdleTime")
	}
}

func TestRestoreLRUAndExpire(t *testing.T) {
	for _, tc := range []struct {
		idle, freq int64
		lfu        bool
		want       uint32
	}{{-1, -1, false, 1000}, {10, -1, false, 990}, {-1, -1, true, 5}, {-1, 200, true, 200}} {
		o := RestoreOptions{Idle: tc.idle, Freq: tc.freq}
		if got := o.LRU(tc.lfu, 1000); got != tc.want {
			t.Errorf("%+v lfu=%v: %d, want %d", o, tc.lfu, got, tc.want)
		}
	}
	for _, tc := range []struct {
		abs          bool
		ttl, now, at int64
		expired      bool
	}{{false, 0, 100, 0, false}, {false, 50, 100, 150, false}, {true, 50, 100, 50, true}, {true, 150, 100, 150, false}} {
		o := RestoreOptions{AbsTTL: tc.abs}
		if at, expired := o.ExpireAt(tc.ttl, tc.now); at != tc.at || expired != tc.expired {
			t.Errorf("%+v ttl %d now %d: %d %v", o, tc.ttl, tc.now, at, expired)
		}
	}
}

func TestCopyEntry(t *testing.T) {
	e := &keyspace.Entry{Str: []byte("v"), Expire: 9, LRU: 7}
	ne := CopyEntry(e)
	ne.Str[0] = 'w'
	if string(e.Str) != "v" || ne.Expire != 9 || ne.LRU != 0 {
		t.Errorf("string copy: %+v", ne)
	}
	if ne := CopyEntry(&keyspace.Entry{}); ne.Str == nil || ne.Obj != nil {
		t.Errorf("empty string copy: %+v", ne)
	}
	s := value.NewSet()
	s.Add("a")
	ns := CopyEntry(&keyspace.Entry{Obj: s}).Obj.(*value.Set)
	ns.Add("b")
	if s.Len() != 1 || ns.Len() != 2 {
		t.Errorf("set clone shares: %d %d", s.Len(), ns.Len())
	}
}
