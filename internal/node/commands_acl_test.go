package node

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/acl"
	"github.com/shardis/shardis/internal/testutil"
)

// userClient returns a go-redis client authenticated as user.
func (ts *testServer) userClient(t *testing.T, user, pass string) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: ts.addr, Username: user, Password: pass, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
	t.Cleanup(func() { rc.Close() })
	if err := rc.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("AUTH %s: %v", user, err)
	}
	return rc
}

func mustDo(t *testing.T, rc *redis.Client, args ...any) any {
	t.Helper()
	v, err := rc.Do(ctx(t), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func wantACLErr(t *testing.T, rc *redis.Client, want string, args ...any) {
	t.Helper()
	err := rc.Do(ctx(t), args...).Err()
	if err == nil || err.Error() != want {
		t.Fatalf("%v: got %v, want %q", args, err, want)
	}
}

// A restricted user is refused commands, keys and channels with Redis's
// NOPERM texts, and each refusal is in ACL LOG.
func TestACLNoPermAndLog(t *testing.T) {
	ts := startServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "ACL", "SETUSER", "app", "on", ">pw", "+get", "+set", "+publish", "+ping", "~app:*", "&news")
	app := ts.userClient(t, "app", "pw")
	if got := mustDo(t, app, "SET", "app:1", "v"); got != "OK" {
		t.Fatalf("SET: %v", got)
	}
	wantACLErr(t, app, "NOPERM this user has no permissions to run the 'del' command", "DEL", "app:1")
	wantACLErr(t, app, "NOPERM this user has no permissions to access one of the keys used as arguments", "GET", "other")
	wantACLErr(t, app, "NOPERM this user has no permissions to access one of the channels used as arguments", "PUBLISH", "sports", "x")
	mustDo(t, app, "PUBLISH", "news", "x")
	entries := mustDo(t, admin, "ACL", "LOG").([]any)
	if len(entries) != 3 {
		t.Fatalf("ACL LOG: %d entries, want 3: %v", len(entries), entries)
	}
	want := [][2]string{{"channel", "sports"}, {"key", "other"}, {"command", "del"}}
	for i, e := range entries {
		m := map[string]any{}
		kv := e.([]any)
		for j := 0; j+1 < len(kv); j += 2 {
			m[kv[j].(string)] = kv[j+1]
		}
		if m["reason"] != want[i][0] || m["object"] != want[i][1] || m["username"] != "app" || m["context"] != "toplevel" {
			t.Errorf("entry %d: %v, want reason %s object %s", i, m, want[i][0], want[i][1])
		}
		if ci, _ := m["client-info"].(string); !strings.Contains(ci, "user=app") {
			t.Errorf("entry %d client-info %q lacks user=app", i, ci)
		}
	}
}

// readUntilClosed reads from nc until the server closes it, failing the
// test if it stays open for 5 s.
func readUntilClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("connection not closed: %v", err)
	}
}

// Deleting a user disconnects its clients; the deleting client, if it is
// one of them, gets its reply first.
func TestACLDelUserDisconnects(t *testing.T) {
	ts := startServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "ACL", "SETUSER", "gone", "on", "nopass", "+@all", "~*")
	r := ts.raw(t)
	r.expect("*3\r\n$4\r\nAUTH\r\n$4\r\ngone\r\n$1\r\nx\r\n", "+OK")
	r.expect("*2\r\n$3\r\nACL\r\n$6\r\nWHOAMI\r\n", "$4")
	r.readLine()
	self := ts.raw(t)
	self.expect("*3\r\n$4\r\nAUTH\r\n$4\r\ngone\r\n$1\r\nx\r\n", "+OK")
	self.expect("*3\r\n$3\r\nACL\r\n$7\r\nDELUSER\r\n$4\r\ngone\r\n", ":1")
	readUntilClosed(t, r.nc)
	readUntilClosed(t, self.nc)
	if got := mustDo(t, admin, "ACL", "USERS"); len(got.([]any)) != 1 {
		t.Fatalf("ACL USERS: %v", got)
	}
}

// A subscriber whose channel rights are revoked is disconnected; one
// whose rights are kept stays.
func TestACLSubscriberKilledOnRevoke(t *testing.T) {
	ts := startServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "ACL", "SETUSER", "sub", "on", "nopass", "+@all", "~*", "resetchannels", "&a", "&b")
	subA := ts.raw(t)
	subA.expect("*3\r\n$4\r\nAUTH\r\n$3\r\nsub\r\n$1\r\nx\r\n", "+OK")
	subA.expect("*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n", "*3")
	for range 5 { // $9 subscribe $1 <ch> :1
		subA.readLine()
	}
	subB := ts.raw(t)
	subB.expect("*3\r\n$4\r\nAUTH\r\n$3\r\nsub\r\n$1\r\nx\r\n", "+OK")
	subB.expect("*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nb\r\n", "*3")
	for range 5 { // $9 subscribe $1 <ch> :1
		subB.readLine()
	}
	mustDo(t, admin, "ACL", "SETUSER", "sub", "resetchannels", "&b")
	readUntilClosed(t, subA.nc)
	// subB keeps &b: it still receives messages.
	if n := mustDo(t, admin, "PUBLISH", "b", "hi"); n != int64(1) {
		t.Fatalf("PUBLISH b reached %v subscribers, want 1", n)
	}
	if got := subB.readLine(); got != "*3" {
		t.Fatalf("subscriber b: %q", got)
	}
}

// Commands a script calls are checked for the caller's user, logged with
// the lua context; redis.acl_check_cmd answers for the same user.
func TestACLScripts(t *testing.T) {
	ts := startServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "ACL", "SETUSER", "lua", "on", "nopass", "+eval", "+get", "+ping", "~*")
	u := ts.userClient(t, "lua", "x")
	err := u.Do(ctx(t), "EVAL", "return redis.call('set','k','v')", "0").Err()
	if err == nil || !strings.Contains(err.Error(), "The user executing the script can't run this command or subcommand") {
		t.Fatalf("EVAL set: %v", err)
	}
	if v := mustDo(t, u, "EVAL", "return {redis.acl_check_cmd('get','k') and 1 or 0, redis.acl_check_cmd('set','k','v') and 1 or 0}", "0"); v.([]any)[0] != int64(1) || v.([]any)[1] != int64(0) {
		t.Fatalf("acl_check_cmd: %v", v)
	}
	entry := mustDo(t, admin, "ACL", "LOG", "1").([]any)[0].([]any)
	if entry[5] != "lua" || entry[7] != "set" {
		t.Fatalf("ACL LOG entry: %v", entry)
	}
}

// EXEC re-checks the queued commands: a right revoked after queueing
// fails that command with Redis's text.
func TestACLExecRechecks(t *testing.T) {
	ts := startServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "ACL", "SETUSER", "tx", "on", "nopass", "+@all", "~*")
	r := ts.raw(t)
	r.expect("*3\r\n$4\r\nAUTH\r\n$2\r\ntx\r\n$1\r\nx\r\n", "+OK")
	r.expect("*1\r\n$5\r\nMULTI\r\n", "+OK")
	r.expect("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "+QUEUED")
	mustDo(t, admin, "ACL", "SETUSER", "tx", "-set")
	r.expect("*1\r\n$4\r\nEXEC\r\n", "*1")
	want := "-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand"
	if got := r.readLine(); got != want {
		t.Fatalf("EXEC: %q", got)
	}
}

// startFromFile starts a node from a config file (for CONFIG REWRITE and
// the user directive).
func startFromFile(t *testing.T, path string) *testServer {
	t.Helper()
	cfg := NewConfig()
	if err := cfg.ParseFile(path); err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(c) }()
	t.Cleanup(func() { cancel(); <-done })
	return &testServer{srv: srv, addr: srv.Addr().String()}
}

// user lines in the config file create users; CONFIG REWRITE writes every
// user back as "user <name> <rules>", replacing the old lines.
func TestACLUserDirectiveAndRewrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "node.conf")
	conf := "port 0\nbind 127.0.0.1\nsave \"\"\ndir " + dir + "\nuser alice on >secret ~* &* +@all\nrequirepass dpw\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startFromFile(t, path)
	alice := ts.userClient(t, "alice", "secret")
	mustDo(t, alice, "ACL", "SETUSER", "bob", "on", "#"+strings.Repeat("a", 64), "+get", "~b*")
	mustDo(t, alice, "CONFIG", "REWRITE")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "user ") {
			users = append(users, l)
		}
	}
	want := []string{
		"user alice on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~* &* +@all",
		"user bob on #" + strings.Repeat("a", 64) + " ~b* resetchannels -@all +get",
		"user default on #" + hashHex("dpw") + " ~* &* +@all",
	}
	if strings.Join(users, "\n") != strings.Join(want, "\n") {
		t.Fatalf("user lines:\n%s\nwant:\n%s", strings.Join(users, "\n"), strings.Join(want, "\n"))
	}
	// The rewritten file starts the same users (on a port of its own:
	// the rewrite wrote the one the first node bound).
	ts.srv.Shutdown(context.Background())
	var kept []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "port ") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(path, []byte("port 0\n"+strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ts2 := startFromFile(t, path)
	ts2.userClient(t, "alice", "secret")
	ts2.userClient(t, "default", "dpw")
}

// ACL SAVE writes the aclfile; ACL LOAD replaces the users from it, and a
// broken file changes nothing.
func TestACLFileSaveLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser carol on >c +@all ~*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "aclfile", file)
	admin := ts.client(t)
	ts.userClient(t, "carol", "c")
	mustDo(t, admin, "ACL", "SETUSER", "dave", "on", "nopass", "+ping")
	mustDo(t, admin, "ACL", "SAVE")
	data, _ := os.ReadFile(file)
	if !strings.Contains(string(data), "user dave on nopass resetchannels -@all +ping\n") {
		t.Fatalf("saved file:\n%s", data)
	}
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser erin on nopass +nosuch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := admin.Do(ctx(t), "ACL", "LOAD").Err()
	if err == nil || !strings.Contains(err.Error(), "Error in applying operation '+nosuch'") || !strings.Contains(err.Error(), "no change to the previously active ACL rules was performed") {
		t.Fatalf("ACL LOAD of a broken file: %v", err)
	}
	if got := mustDo(t, admin, "ACL", "USERS"); len(got.([]any)) != 3 {
		t.Fatalf("users after a failed load: %v", got)
	}
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser erin on nopass +@all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustDo(t, admin, "ACL", "LOAD")
	got := mustDo(t, admin, "ACL", "USERS").([]any)
	if len(got) != 2 || got[0] != "default" || got[1] != "erin" {
		t.Fatalf("users after load: %v", got)
	}
}

// A replica authenticates to its master with masteruser and masterauth
// as a user that may only replicate.
func TestACLMasterUser(t *testing.T) {
	master := startServer(t, "requirepass", "adminpw")
	mc := redis.NewClient(&redis.Options{Addr: master.addr, Password: "adminpw", DisableIdentity: true})
	t.Cleanup(func() { mc.Close() })
	mustDo(t, mc, "ACL", "SETUSER", "repl", "on", ">rpw", "+psync", "+replconf", "+ping")
	h, p := hostPort(master.addr)
	replica := startServer(t, "masteruser", "repl", "masterauth", "rpw", "replicaof", h+" "+p)
	rc := replica.client(t)
	waitLinkUp(t, rc)
	mustDo(t, mc, "SET", "k", "v")
	testutil.WaitFor(t, 10*time.Second, "k on the replica", func() bool { return rc.Get(ctx(t), "k").Val() == "v" })
}

// Protected mode looks at the default user: a password given to it by
// ACL SETUSER lets a non-local client in (to be asked to authenticate),
// as from redis-server.
func TestACLProtectedModeDefaultUser(t *testing.T) {
	node, red := bothServers(t, "protected-mode", "yes", "bind", "127.0.0.1")
	set := cmdReq("ACL", "SETUSER", "default", ">pw")
	for _, addr := range []string{node, red} {
		if got := exchange(t, net.ParseIP("127.0.0.1"), addr, set)[0]; string(got) != "+OK\r\n" {
			t.Fatalf("%s: ACL SETUSER default: %q", addr, got)
		}
	}
	n := exchange(t, notLocalIP, node, cmdReq("PING"))[0]
	r := exchange(t, notLocalIP, red, cmdReq("PING"))[0]
	sameBytes(t, "from 127.0.0.2", n, r, "-NOAUTH Authentication required.\r\n")
}

func hashHex(pass string) string { return acl.HashPassword(pass) }

// ACL CAT lists, per category, the same commands as redis-server 7.0.15
// (order aside: Redis's follows a seeded hash), apart from the
// documented extensions.
func TestACLCatVsRedis(t *testing.T) {
	bin := testutil.LookPath(t, "redis-server")
	red := redis.NewClient(&redis.Options{Addr: startRedisServer(t, bin), DisableIdentity: true})
	t.Cleanup(func() { red.Close() })
	node := startServer(t).client(t)
	cats, err := red.Do(ctx(t), "ACL", "CAT").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := node.Do(ctx(t), "ACL", "CAT").StringSlice(); strings.Join(got, " ") != strings.Join(cats, " ") {
		t.Fatalf("ACL CAT: %v, want %v", got, cats)
	}
	for _, cat := range cats {
		want, _ := red.Do(ctx(t), "ACL", "CAT", cat).StringSlice()
		got, _ := node.Do(ctx(t), "ACL", "CAT", cat).StringSlice()
		set := map[string]int{}
		for _, n := range want {
			set[n]++
		}
		for _, n := range got {
			if !slices.Contains(commandExtensions, n) {
				set[n]--
			}
		}
		for n, d := range set {
			if d > 0 {
				t.Errorf("@%s lacks %s", cat, n)
			} else if d < 0 {
				t.Errorf("@%s has %s, which redis-server's does not", cat, n)
			}
		}
	}
}

// The ACL check of a restricted user allocates nothing on the command
// path (a command bit, the key positions into a reused buffer, a glob).
func TestACLCheckNoAlloc(t *testing.T) {
	ts := startServer(t)
	c := newClient(ts.srv, nopConn{})
	c.execute(toArgs([]string{"ACL", "SETUSER", "bench", "on", ">pw", "~key:*", "+get", "+set"}))
	c.execute(toArgs([]string{"AUTH", "bench", "pw"}))
	if !strings.HasSuffix(string(c.out), "+OK\r\n+OK\r\n") || c.aclFree {
		t.Fatalf("setup: %q (unrestricted %v)", c.out, c.aclFree)
	}
	get := ts.srv.table.lookup([]byte("get"))
	args := toArgs([]string{"GET", "key:000000012345"})
	if res, _ := c.aclCheck(get, args); res != acl.OK {
		t.Fatalf("GET key:...: %v", res)
	}
	if n := testing.AllocsPerRun(100, func() { c.aclCheck(get, args) }); n != 0 {
		t.Fatalf("aclCheck(GET) allocates %v times per call", n)
	}
	set := ts.srv.table.lookup([]byte("set"))
	sargs := toArgs([]string{"SET", "key:000000012345", "v"})
	if n := testing.AllocsPerRun(100, func() { c.aclCheck(set, sargs) }); n != 0 {
		t.Fatalf("aclCheck(SET) allocates %v times per call", n)
	}
	if res, _ := c.aclCheck(get, toArgs([]string{"GET", "other"})); res != acl.DeniedKey {
		t.Fatalf("GET other: %v", res)
	}
}

// SLOWLOG shows ACL SETUSER's username and rules redacted, as Redis.
func TestACLSetUserRedactedInSlowlog(t *testing.T) {
	ts := startServer(t, "slowlog-log-slower-than", "0")
	rc := ts.client(t)
	mustDo(t, rc, "ACL", "SETUSER", "secretive", "on", ">hunter2")
	entries := mustDo(t, rc, "SLOWLOG", "GET").([]any)
	for _, e := range entries {
		args := e.([]any)[3].([]any)
		if strings.EqualFold(args[0].(string), "acl") && strings.EqualFold(args[1].(string), "setuser") {
			for _, a := range args[2:] {
				if a != "(redacted)" {
					t.Fatalf("SLOWLOG shows %v", args)
				}
			}
			return
		}
	}
	t.Fatalf("no ACL SETUSER in SLOWLOG: %v", entries)
}

// BenchmarkExecACL is GET and SET as the default user and as a user whose
// check runs (a command bitmap and a key pattern): the ACL check's cost
// on the command path, in process (no network).
func BenchmarkExecACL(b *testing.B) {
	for _, user := range []string{"default", "restricted"} {
		for _, cmd := range []string{"GET", "SET"} {
			b.Run(user+"/"+cmd, func(b *testing.B) {
				var setup [][]string
				if user == "restricted" {
					setup = append(setup, []string{"ACL", "SETUSER", "bench", "on", ">pw", "~key:*", "+get", "+set"}, []string{"AUTH", "bench", "pw"})
				}
				for i := 0; i < 4096; i++ {
					setup = append(setup, []string{"SET", randKey("key:", i), "xxx"})
				}
				benchExecute(b, setup, func(i int) []string {
					if cmd == "GET" {
						return []string{"GET", randKey("key:", i)}
					}
					return []string{"SET", randKey("key:", i), "xxx"}
				})
			})
		}
	}
}
