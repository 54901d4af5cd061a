package node

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shardis/shardis/internal/node/clients"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/testutil"
)

var clientLineRE = regexp.MustCompile(`^id=\d+ addr=\S+ laddr=\S+ fd=-?\d+ name=\S* age=\d+ idle=\d+ flags=\S+ db=\d+ sub=\d+ psub=\d+ ssub=\d+ multi=-?\d+ qbuf=\d+ qbuf-free=\d+ argv-mem=\d+ multi-mem=\d+ rbs=\d+ rbp=\d+ obl=\d+ oll=\d+ omem=\d+ tot-mem=\d+ events=\S* cmd=\S+ user=\S+ redir=-?\d+ resp=[23]$`)

func TestClientListAndInfo(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			rc := ts.client(t, proto)
			if err := rc.Do(ctx(t), "CLIENT", "SETNAME", "me"+strconv.Itoa(proto)).Err(); err != nil {
				t.Fatal(err)
			}
			if n, err := rc.Do(ctx(t), "CLIENT", "GETNAME").Text(); err != nil || n != "me"+strconv.Itoa(proto) {
				t.Fatalf("GETNAME %q %v", n, err)
			}
			id, err := rc.Do(ctx(t), "CLIENT", "ID").Int64()
			if err != nil {
				t.Fatal(err)
			}
			list, err := rc.Do(ctx(t), "CLIENT", "LIST").Text()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, l := range strings.Split(strings.TrimSuffix(list, "\n"), "\n") {
				if !clientLineRE.MatchString(l) {
					t.Fatalf("bad CLIENT LIST line %q", l)
				}
				if strings.HasPrefix(l, "id="+strconv.FormatInt(id, 10)+" ") {
					found = true
					if !strings.Contains(l, " name=me"+strconv.Itoa(proto)+" ") || !strings.Contains(l, " cmd=client|list ") || !strings.Contains(l, " resp="+strconv.Itoa(proto)) {
						t.Fatalf("own line %q", l)
					}
				}
			}
			if !found {
				t.Fatalf("own id %d not in %q", id, list)
			}
			info, err := rc.Do(ctx(t), "CLIENT", "INFO").Text()
			if err != nil || !clientLineRE.MatchString(strings.TrimSuffix(info, "\n")) || !strings.HasSuffix(info, "\n") {
				t.Fatalf("CLIENT INFO %q %v", info, err)
			}
			byID, err := rc.Do(ctx(t), "CLIENT", "LIST", "ID", id, 999999).Text()
			if err != nil || strings.Count(byID, "\n") != 1 {
				t.Fatalf("LIST ID: %q %v", byID, err)
			}
			if err := rc.Do(ctx(t), "CLIENT", "LIST", "TYPE", "bogus").Err(); err == nil || err.Error() != "ERR Unknown client type 'bogus'" {
				t.Fatalf("LIST TYPE bogus: %v", err)
			}
			if err := rc.Do(ctx(t), "CLIENT", "SETNAME", "a b").Err(); err == nil || err.Error() != "ERR Client names cannot contain spaces, newlines or special characters." {
				t.Fatalf("SETNAME with space: %v", err)
			}
		})
	}
}

func TestClientListPubSubType(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	sub := ts.raw(t)
	sub.send("SUBSCRIBE ch\r\n")
	for i := 0; i < 3; i++ {
		sub.readLine()
	}
	list, err := rc.Do(ctx(t), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil || strings.Count(list, "\n") != 1 || !strings.Contains(list, " flags=P ") || !strings.Contains(list, " sub=1 ") {
		t.Fatalf("TYPE pubsub: %q %v", list, err)
	}
	normal, _ := rc.Do(ctx(t), "CLIENT", "LIST", "TYPE", "normal").Text()
	if strings.Contains(normal, "flags=P") {
		t.Fatalf("pubsub client listed as normal: %q", normal)
	}
}

func TestClientKill(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	victim := ts.raw(t)
	victim.expect("CLIENT ID\r\n", victim.readIDLine(t, rc))

	// Old form, by address.
	addr := victim.nc.LocalAddr().String()
	if err := rc.Do(ctx(t), "CLIENT", "KILL", addr).Err(); err != nil {
		t.Fatal(err)
	}
	victim.expectClosed(t)
	if err := rc.Do(ctx(t), "CLIENT", "KILL", addr).Err(); err == nil || err.Error() != "ERR No such client" {
		t.Fatalf("second kill: %v", err)
	}

	// New form: ID, and SKIPME.
	v2 := ts.raw(t)
	v2.send("CLIENT ID\r\n")
	id := strings.TrimPrefix(v2.readLine(), ":")
	if n, err := rc.Do(ctx(t), "CLIENT", "KILL", "ID", id).Int(); err != nil || n != 1 {
		t.Fatalf("KILL ID: %d %v", n, err)
	}
	v2.expectClosed(t)
	if n, err := rc.Do(ctx(t), "CLIENT", "KILL", "TYPE", "normal").Int(); err != nil || n != 0 {
		t.Fatalf("KILL TYPE normal skips me: %d %v", n, err)
	}
	for _, tc := range []struct {
		args []any
		err  string
	}{
		{[]any{"CLIENT", "KILL", "ID", "0"}, "ERR client-id should be greater than 0"},
		{[]any{"CLIENT", "KILL", "TYPE", "x"}, "ERR Unknown client type 'x'"},
		{[]any{"CLIENT", "KILL", "SKIPME", "x"}, "ERR syntax error"},
		{[]any{"CLIENT", "KILL", "USER", "nobody"}, "ERR No such user 'nobody'"},
		{[]any{"CLIENT", "KILL", "ID"}, "ERR No such client"},
	} {
		if err := rc.Do(ctx(t), tc.args...).Err(); err == nil || err.Error() != tc.err {
			t.Fatalf("%v: %v, want %s", tc.args, err, tc.err)
		}
	}
}

// readIDLine returns the expected reply line of CLIENT ID for r.
func (r *rawConn) readIDLine(t *testing.T, rc *redis.Client) string {
	t.Helper()
	list, err := rc.Do(ctx(t), "CLIENT", "LIST").Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(list, "\n") {
		if strings.Contains(l, " addr="+r.nc.LocalAddr().String()+" ") {
			return ":" + strings.TrimPrefix(strings.Fields(l)[0], "id=")
		}
	}
	t.Fatalf("raw connection not listed in %q", list)
	return ""
}

func (r *rawConn) expectClosed(t *testing.T) {
	t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.br.ReadByte(); err == nil {
		t.Fatal("connection still open")
	}
}

func TestClientPause(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	other := ts.client(t)
	if err := rc.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx(t), "CLIENT", "PAUSE", 5000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	// Reads go on, writes wait.
	if v, err := other.Get(ctx(t), "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET while paused: %q %v", v, err)
	}
	done := make(chan error, 1)
	go func() { done <- other.Set(ctx(t), "k", "v2", 0).Err() }()
	select {
	case err := <-done:
		t.Fatalf("SET returned during PAUSE WRITE: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SET still blocked after UNPAUSE")
	}
	for _, tc := range []struct {
		args []any
		err  string
	}{
		{[]any{"CLIENT", "PAUSE", "abc"}, "ERR timeout is not an integer or out of range"},
		{[]any{"CLIENT", "PAUSE", "-1"}, "ERR timeout is negative"},
		{[]any{"CLIENT", "PAUSE", "10", "READ"}, "ERR CLIENT PAUSE mode must be WRITE or ALL"},
	} {
		if err := rc.Do(ctx(t), tc.args...).Err(); err == nil || err.Error() != tc.err {
			t.Fatalf("%v: %v, want %s", tc.args, err, tc.err)
		}
	}
}

func TestClientReply(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.send("CLIENT REPLY OFF\r\nSET a 1\r\nGET a\r\nCLIENT REPLY ON\r\n")
	if got := r.readLine(); got != "+OK" {
		t.Fatalf("after REPLY OFF/ON: %q", got)
	}
	r.send("CLIENT REPLY SKIP\r\nGET a\r\nGET a\r\n")
	if got := r.readLine(); got != "$1" {
		t.Fatalf("after REPLY SKIP: %q", got)
	}
	r.expect("", "1")
	r.expect("CLIENT REPLY MAYBE\r\n", "-ERR syntax error")
}

func TestInfoSections(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	rc.Set(ctx(t), "a", "1", 0)
	rc.Set(ctx(t), "b", "1", time.Hour)
	rc.Do(ctx(t), "NOSUCH")
	def, err := rc.Info(ctx(t)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Server\r\n", "redis_version:7.0.15\r\n", "# Clients\r\nconnected_clients:", "# Memory\r\nused_memory:",
		"maxmemory_policy:noeviction\r\n", "# Persistence\r\nloading:0\r\n", "# Stats\r\n", "total_commands_processed:",
		"# Replication\r\nrole:master\r\n", "# CPU\r\nused_cpu_sys:", "# Errorstats\r\nerrorstat_ERR:count=1\r\n",
		"# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl="} {
		if !strings.Contains(def, want) {
			t.Fatalf("INFO lacks %q:\n%s", want, def)
		}
	}
	if strings.Contains(def, "cmdstat_") {
		t.Fatal("default INFO shows commandstats")
	}
	cs, _ := rc.Info(ctx(t), "commandstats").Result()
	if !strings.Contains(cs, "cmdstat_set:calls=2,usec=") || strings.Contains(cs, "# Server") {
		t.Fatalf("INFO commandstats:\n%s", cs)
	}
	multi, _ := rc.Info(ctx(t), "cpu", "keyspace").Result()
	if !strings.HasPrefix(multi, "# CPU\r\n") || !strings.Contains(multi, "\r\n\r\n# Keyspace\r\n") || strings.Contains(multi, "# Server") {
		t.Fatalf("INFO cpu keyspace:\n%s", multi)
	}
	all, _ := rc.Info(ctx(t), "all").Result()
	if !strings.Contains(all, "cmdstat_info:") || strings.Count(all, "# CPU") != 1 {
		t.Fatalf("INFO all:\n%s", all)
	}
	if err := rc.ConfigResetStat(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	cs, _ = rc.Info(ctx(t), "commandstats", "errorstats").Result()
	if strings.Contains(cs, "cmdstat_set") || strings.Contains(cs, "errorstat_ERR") {
		t.Fatalf("after RESETSTAT:\n%s", cs)
	}
}

func TestCommandIntrospection(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		n, err := rc.Do(ctx(t), "COMMAND", "COUNT").Int()
		if err != nil || n < 20 {
			t.Fatalf("COMMAND COUNT %d %v", n, err)
		}
		infos, err := rc.Command(ctx(t)).Result()
		if err != nil || len(infos) != n {
			t.Fatalf("COMMAND: %d entries, %v (count %d)", len(infos), err, n)
		}
		get := infos["get"]
		if get == nil || get.Arity != 2 || get.FirstKeyPos != 1 || get.LastKeyPos != 1 || get.StepCount != 1 || !get.ReadOnly {
			t.Fatalf("COMMAND INFO get: %+v", get)
		}
		keys, err := rc.Do(ctx(t), "COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2").StringSlice()
		if err != nil || strings.Join(keys, ",") != "a,b" {
			t.Fatalf("GETKEYS MSET: %v %v", keys, err)
		}
		if err := rc.Do(ctx(t), "COMMAND", "GETKEYS", "PING", "x").Err(); err == nil || err.Error() != "ERR The command has no key arguments" {
			t.Fatalf("GETKEYS PING: %v", err)
		}
		if err := rc.Do(ctx(t), "COMMAND", "GETKEYS", "NOSUCH", "x").Err(); err == nil || err.Error() != "ERR Invalid command specified" {
			t.Fatalf("GETKEYS NOSUCH: %v", err)
		}
		list, err := rc.Do(ctx(t), "COMMAND", "LIST", "FILTERBY", "PATTERN", "client|*").StringSlice()
		if err != nil || len(list) < 10 {
			t.Fatalf("COMMAND LIST FILTERBY PATTERN: %v %v", list, err)
		}
		docs, err := rc.Do(ctx(t), "COMMAND", "DOCS", "get").Result()
		if err != nil || docs == nil {
			t.Fatalf("COMMAND DOCS get: %v %v", docs, err)
		}
	}
}

func TestConfigRewrite(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	if err := rc.ConfigRewrite(ctx(t)).Err(); err == nil || err.Error() != "ERR The server is running without a config file" {
		t.Fatalf("REWRITE without file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "node.conf")
	orig := "# my comment\nmaxmemory-samples 5\nrename-command FOO BAR\nmaxmemory-samples 7\n\n# tail comment\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	ts.srv.cfg.SetPath(path)
	if err := rc.ConfigSet(ctx(t), "maxmemory-samples", "9").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ConfigSet(ctx(t), "slowlog-max-len", "77").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ConfigRewrite(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	got := string(data)
	for _, want := range []string{"# my comment\nmaxmemory-samples 9\nrename-command FOO BAR\n\n# tail comment\n", "# Generated by CONFIG REWRITE\n", "slowlog-max-len 77\n"} {
		if !strings.Contains(got, want) {
			t.Fatalf("rewritten file lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "maxmemory-samples") != 1 {
		t.Fatalf("repeated directive kept:\n%s", got)
	}
	// The rewritten file parses back to the same settings.
	cfg := NewConfig()
	if err := cfg.ParseFile(path); err != nil {
		t.Fatal(err)
	}
	if cfg.Get(config.DirSlowlogMaxLen) != "77" || cfg.Get(config.DirMaxmemorySamples) != "9" || cfg.Get(config.DirSave) != ts.srv.cfg.Get(config.DirSave) {
		t.Fatalf("parsed back: %s %s %q", cfg.Get(config.DirSlowlogMaxLen), cfg.Get(config.DirMaxmemorySamples), cfg.Get(config.DirSave))
	}
}

func TestSlowlogAndTime(t *testing.T) {
	ts := startServer(t, "slowlog-log-slower-than", "0")
	rc := ts.client(t)
	rc.Do(ctx(t), "SLOWLOG", "RESET")
	rc.Set(ctx(t), "k", strings.Repeat("x", 200), 0)
	entries, err := rc.SlowLogGet(ctx(t), -1).Result()
	if err != nil || len(entries) == 0 {
		t.Fatalf("SLOWLOG GET: %v %v", entries, err)
	}
	var e redis.SlowLog
	for _, x := range entries {
		if len(x.Args) > 0 && strings.EqualFold(x.Args[0], "set") {
			e = x
		}
	}
	if len(e.Args) != 3 || e.Args[0] != "set" && e.Args[0] != "SET" || !strings.HasSuffix(e.Args[2], "... (72 more bytes)") {
		t.Fatalf("entry %+v", e)
	}
	if n, err := rc.Do(ctx(t), "SLOWLOG", "LEN").Int(); err != nil || n == 0 {
		t.Fatalf("SLOWLOG LEN %d %v", n, err)
	}
	now, err := rc.Time(ctx(t)).Result()
	if err != nil || time.Since(now).Abs() > time.Minute {
		t.Fatalf("TIME %v %v", now, err)
	}
}

func TestSwapDBWatchAndMemoryUsage(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	rc.Set(ctx(t), "x", "db0", 0)
	r := ts.raw(t)
	r.expect("WATCH x\r\n", "+OK")
	if err := rc.Do(ctx(t), "SWAPDB", 0, 1).Err(); err != nil {
		t.Fatal(err)
	}
	r.expect("MULTI\r\n", "+OK")
	r.expect("PING\r\n", "+QUEUED")
	r.expect("EXEC\r\n", "*-1")
	if n, _ := rc.Exists(ctx(t), "x").Result(); n != 0 {
		t.Fatal("x still in db0 after SWAPDB")
	}
	r.expect("SELECT 1\r\n", "+OK")
	r.expect("MEMORY USAGE x\r\n", r.memLine(t))
	r.expect("MEMORY USAGE nokey\r\n", "$-1")
	if err := rc.Do(ctx(t), "SWAPDB", 0, 16).Err(); err == nil || err.Error() != "ERR DB index is out of range" {
		t.Fatalf("SWAPDB out of range: %v", err)
	}
}

// memLine reads MEMORY USAGE's reply shape: an integer line.
func (r *rawConn) memLine(t *testing.T) string {
	t.Helper()
	r.send("MEMORY USAGE x\r\n")
	l := r.readLine()
	if !strings.HasPrefix(l, ":") {
		t.Fatalf("MEMORY USAGE: %q", l)
	}
	return l
}

// TestSlowSubscriberDisconnected checks client-output-buffer-limit for
// pub/sub clients: a subscriber that never reads is dropped once its
// pending output passes the hard limit, and publishing goes on.
func TestSlowSubscriberDisconnected(t *testing.T) {
	ts := startServer(t, "client-output-buffer-limit", "pubsub 1mb 512kb 60")
	rc := ts.client(t)
	sub := ts.raw(t)
	sub.send("SUBSCRIBE flood\r\n")
	for i := 0; i < 3; i++ {
		sub.readLine()
	}
	msg := strings.Repeat("m", 64*1024)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := rc.Publish(ctx(t), "flood", msg).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break // the subscriber was disconnected
		}
		if time.Now().After(deadline) {
			t.Fatal("slow subscriber never disconnected")
		}
	}
	if n, _ := rc.Do(ctx(t), "PUBSUB", "NUMSUB", "flood").Slice(); len(n) != 2 || n[1] != int64(0) {
		t.Fatalf("NUMSUB after disconnect: %v", n)
	}
	if err := rc.Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestMaxmemoryPolicies checks the OOM error under noeviction and that an
// eviction policy evicts keys before refusing.
func TestMaxmemoryPolicies(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	for i := 0; i < 100; i++ {
		rc.Set(ctx(t), "key:"+strconv.Itoa(i), strings.Repeat("v", 100), 0)
	}
	// Any heap is over a 1-byte limit.
	if err := rc.ConfigSet(ctx(t), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	err := rc.Set(ctx(t), "more", "x", 0).Err()
	if err == nil || err.Error() != "OOM command not allowed when used memory > 'maxmemory'." {
		t.Fatalf("SET over maxmemory with noeviction: %v", err)
	}
	if v, err := rc.Get(ctx(t), "key:1").Result(); err != nil || len(v) != 100 {
		t.Fatalf("reads still served: %v", err)
	}
	if err := rc.ConfigSet(ctx(t), "maxmemory-policy", "allkeys-random").Err(); err != nil {
		t.Fatal(err)
	}
	rc.Set(ctx(t), "more", "x", 0)
	if n, _ := rc.DBSize(ctx(t)).Result(); n >= 100 {
		t.Fatalf("nothing evicted: dbsize %d", n)
	}
	info, _ := rc.Info(ctx(t), "stats").Result()
	if strings.Contains(info, "evicted_keys:0\r\n") {
		t.Fatalf("evicted_keys not counted:\n%s", info)
	}
	rc.ConfigSet(ctx(t), "maxmemory", "0")
	if err := rc.Set(ctx(t), "after", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// infoInt reads one integer field of INFO.
func infoInt(t *testing.T, rc *redis.Client, field string) int64 {
	t.Helper()
	info, err := rc.Info(ctx(t)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("INFO lacks %s", field)
	return 0
}

// TestClientPauseExec: PAUSE WRITE holds an EXEC whose queued commands write.
func TestClientPauseExec(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	// A read-only transaction runs during PAUSE WRITE; one that writes
	// waits, and counts as a blocked client meanwhile.
	ro, w := ts.raw(t), ts.raw(t)
	ro.expect("MULTI\r\n", "+OK")
	ro.expect("GET k\r\n", "+QUEUED")
	w.expect("MULTI\r\n", "+OK")
	w.expect("SET k v\r\n", "+QUEUED")
	if err := rc.Do(ctx(t), "CLIENT", "PAUSE", 5000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	ro.expect("EXEC\r\n", "*1")
	ro.expect("", "$-1")
	w.send("EXEC\r\n")
	deadline := time.Now().Add(5 * time.Second)
	for infoInt(t, rc, "blocked_clients") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("EXEC with a write is not held by PAUSE WRITE")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	w.expect("", "*1")
	w.expect("", "+OK")
	if n := infoInt(t, rc, "blocked_clients"); n != 0 {
		t.Fatalf("blocked_clients %d after UNPAUSE", n)
	}
}

// TestPauseStopsExpiry: during a pause expired keys are hidden but
// neither lazily nor actively deleted; the manual clock runs the cron
// cycles the pause spans.
func TestPauseStopsExpiry(t *testing.T) {
	ts, m := startManual(t)
	rc := ts.client(t)
	if err := rc.Set(ctx(t), "e", "v", 10*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	before := infoInt(t, rc, "expired_keys")
	if err := rc.Do(ctx(t), "CLIENT", "PAUSE", 5000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	m.Advance(250 * time.Millisecond) // two active expiry cycles at hz 10 run
	if err := rc.Get(ctx(t), "e").Err(); err != redis.Nil {
		t.Fatalf("GET expired key during pause: %v", err)
	}
	if n := infoInt(t, rc, "expired_keys"); n != before {
		t.Fatalf("expired_keys %d -> %d during pause", before, n)
	}
	if err := rc.Do(ctx(t), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Get(ctx(t), "e").Err(); err != redis.Nil {
		t.Fatal(err)
	}
	if n := infoInt(t, rc, "expired_keys"); n != before+1 {
		t.Fatalf("expired_keys %d after UNPAUSE, want %d", n, before+1)
	}
}

// TestOutputLimitsFollowConfigSet: client-output-buffer-limit is parsed
// once per configuration change (hotConfig.outLimits), per class, with
// "replica" as Redis's alias of "slave"; a CONFIG SET is seen by the next
// check.
func TestOutputLimitsFollowConfigSet(t *testing.T) {
	l := clients.ParseOutputLimits("normal 0 0 0 replica 100 50 7 pubsub 33554432 8388608 60")
	if l[clients.ClassReplica] != (clients.OutputLimit{Hard: 100, Soft: 50, SoftFor: 7 * time.Second}) ||
		l[clients.ClassNormal] != (clients.OutputLimit{}) || l[clients.ClassPubSub].Hard != 33554432 {
		t.Fatalf("parsed %+v", l)
	}
	ts := startServer(t)
	c := ts.client(t)
	if got := ts.srv.hot().outLimits[clients.ClassPubSub].Hard; got != 32<<20 {
		t.Fatalf("default pubsub hard limit %d", got)
	}
	if err := c.ConfigSet(ctx(t), "client-output-buffer-limit", "pubsub 2mb 1mb 30").Err(); err != nil {
		t.Fatal(err)
	}
	if got := ts.srv.hot().outLimits[clients.ClassPubSub]; got != (clients.OutputLimit{Hard: 2 << 20, Soft: 1 << 20, SoftFor: 30 * time.Second}) {
		t.Fatalf("after CONFIG SET: %+v", got)
	}
}

// TestClientPauseFreezesReplica: a replica under CLIENT PAUSE WRITE applies
// none of its master's writes, as Redis 7.0 postpones its master client
// (tests/unit/pause.tcl "Test when replica paused, offset would not
// grow"): its offset stays, its acknowledgements stay (WAIT on the master
// counts only the other replica), and after REPLICAOF to a replica that
// has the writes, then CLIENT UNPAUSE, in one MULTI (the Sentinel's
// reconfiguration, sentinel/freeze.go), it holds every write. shardnode
// resynchronises partially from the frozen offset; redis-server, whose
// held master client is not cached, fully.
func TestClientPauseFreezesReplica(t *testing.T) {
	for _, kind := range []string{"redis-server", "shardnode"} {
		t.Run(kind, func(t *testing.T) {
			start := func(replicaOf string) *redis.Client {
				var addr string
				if kind == "shardnode" {
					var d []string
					if replicaOf != "" {
						d = []string{"replicaof", strings.Replace(replicaOf, ":", " ", 1)}
					}
					addr = startServer(t, d...).addr
				} else {
					args := []string{"--repl-diskless-sync-delay", "0"}
					if replicaOf != "" {
						args = append(args, "--replicaof", strings.Replace(replicaOf, ":", " ", 1))
					}
					addr = testutil.StartRedis(t, args...).Addr
				}
				rc := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
				t.Cleanup(func() { rc.Close() })
				return rc
			}
			c := ctx(t)
			m := start("")
			maddr := m.Options().Addr
			r1, r2 := start(maddr), start(maddr)
			waitLinkUp(t, r1)
			waitLinkUp(t, r2)
			offset := func(rc *redis.Client) int64 {
				n, _ := strconv.ParseInt(replInfoField(t, rc, "slave_repl_offset"), 10, 64)
				return n
			}
			masterOffset := func() int64 {
				n, _ := strconv.ParseInt(replInfoField(t, m, "master_repl_offset"), 10, 64)
				return n
			}
			if err := m.Set(c, "k0", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			testutil.WaitFor(t, 10*time.Second, "r1 and r2 at the master's offset", func() bool {
				mo := masterOffset()
				return offset(r1) == mo && offset(r2) == mo
			})
			// The freeze, as the Sentinel sends it: CLIENT PAUSE, then INFO.
			if err := r1.Do(c, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
				t.Fatal(err)
			}
			frozen := offset(r1)
			// The master's client writes; WAIT counts the replicas that
			// acknowledged them: r2 only.
			mc := redis.NewClient(&redis.Options{Addr: maddr, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
			t.Cleanup(func() { mc.Close() })
			for i := 1; i <= 20; i++ {
				if err := mc.Set(c, "k"+strconv.Itoa(i), "v", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := mc.Do(c, "WAIT", 2, 300).Int(); err != nil || n != 1 {
				t.Fatalf("WAIT 2 300 = %d %v, want 1 (the paused replica acknowledges nothing new)", n, err)
			}
			testutil.WaitFor(t, 10*time.Second, "r2 at the master's offset", func() bool { return offset(r2) == masterOffset() })
			if got := offset(r1); got != frozen {
				t.Fatalf("paused replica offset %d, frozen at %d: it applied its master's stream", got, frozen)
			}
			if n := r1.DBSize(c).Val(); n != 1 {
				t.Fatalf("paused replica has %d keys, want 1", n)
			}
			// r2 takes over and writes; r1 follows it and is unpaused.
			if err := r2.Do(c, "REPLICAOF", "NO", "ONE").Err(); err != nil {
				t.Fatal(err)
			}
			if err := r2.Set(c, "new", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			h, p := hostPort(r2.Options().Addr)
			if _, err := r1.TxPipelined(c, func(pp redis.Pipeliner) error {
				pp.Do(c, "SLAVEOF", h, p)
				pp.Do(c, "CLIENT", "UNPAUSE")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			waitLinkUp(t, r1)
			testutil.WaitFor(t, 10*time.Second, "r1 with every write", func() bool {
				return r1.DBSize(c).Val() == 22 && r1.Get(c, "new").Val() == "v"
			})
			full, partial := replInfoField(t, r2, "sync_full"), replInfoField(t, r2, "sync_partial_ok")
			want := [2]string{"0", "1"}
			if kind == "redis-server" {
				want = [2]string{"1", "0"}
			}
			if full != want[0] || partial != want[1] {
				t.Fatalf("new master's sync_full %s sync_partial_ok %s, want %s %s", full, partial, want[0], want[1])
			}
		})
	}
}
