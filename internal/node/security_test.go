package node

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// A peer address that is loopback but not local for Redis 7.0: Linux routes
// all of 127/8 to lo, so a client can bind it as its source address.
var notLocalIP = net.ParseIP("127.0.0.2")

// dialFrom connects to addr from the source address src (nil: any).
func dialFrom(t *testing.T, src net.IP, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if src != nil {
		d.LocalAddr = &net.TCPAddr{IP: src}
	}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %v: %v", addr, src, err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// exchange sends each request on one connection from src and returns the
// raw bytes of each reply.
func exchange(t *testing.T, src net.IP, addr string, reqs ...string) [][]byte {
	t.Helper()
	nc := dialFrom(t, src, addr)
	br := bufio.NewReader(nc)
	var out [][]byte
	for _, req := range reqs {
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write([]byte(req)); err != nil {
			t.Fatalf("%q: write: %v", req, err)
		}
		r, err := readReplyRaw(br)
		if err != nil {
			t.Fatalf("%q: read: %v (got %q)", req, err, r)
		}
		out = append(out, r)
	}
	return out
}

// untilClose connects from src, sends req (if any) and returns every byte
// the server writes until it closes the connection.
func untilClose(t *testing.T, src net.IP, addr, req string) []byte {
	t.Helper()
	nc := dialFrom(t, src, addr)
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if req != "" {
		_, _ = nc.Write([]byte(req))
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("read until close: %v (got %q)", err, b)
	}
	return b
}

// redisArgs turns directive pairs into redis-server flags (a value of
// several words, as bind's, as separate arguments).
func redisArgs(directives ...string) []string {
	var out []string
	for i := 0; i+1 < len(directives); i += 2 {
		out = append(out, "--"+directives[i])
		if f := strings.Fields(directives[i+1]); len(f) > 1 {
			out = append(out, f...)
		} else {
			out = append(out, directives[i+1])
		}
	}
	return out
}

// bothServers starts a shardnode and a redis-server 7.0 with the same
// directives and returns their addresses (both dialled on 127.0.0.1).
//
// requirepass is set with CONFIG SET once both answer PING (the start-up
// check of testutil sends an unauthenticated PING).
func bothServers(t *testing.T, directives ...string) (node, redis string) {
	t.Helper()
	var start []string
	pass := ""
	for i := 0; i+1 < len(directives); i += 2 {
		if directives[i] == "requirepass" {
			pass = directives[i+1]
			continue
		}
		start = append(start, directives[i], directives[i+1])
	}
	r := testutil.StartRedis(t, redisArgs(start...)...)
	ts := startServer(t, start...)
	_, port, _ := net.SplitHostPort(ts.addr)
	node, redis = net.JoinHostPort("127.0.0.1", port), r.Addr
	if pass != "" {
		for _, addr := range []string{node, redis} {
			if got := exchange(t, nil, addr, cmdReq("CONFIG", "SET", "requirepass", pass))[0]; string(got) != "+OK\r\n" {
				t.Fatalf("%s: CONFIG SET requirepass: %q", addr, got)
			}
		}
	}
	return node, redis
}

func cmdReq(args ...string) string {
	var b bytes.Buffer
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// sameBytes checks that shardnode's and redis-server's replies are equal
// and equal to want ("" to skip that check).
func sameBytes(t *testing.T, what string, node, redis []byte, want string) {
	t.Helper()
	if !bytes.Equal(node, redis) {
		t.Fatalf("%s: shardnode %q, redis-server %q", what, node, redis)
	}
	if want != "" && string(node) != want {
		t.Fatalf("%s: got %q, want %q", what, node, want)
	}
}

const debugRefused = "-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n"

// TestDebugCommandProtected: DEBUG runs only where enable-debug-command
// allows it, with Redis 7.0's refusal text, compared byte for byte with a
// redis-server given the same settings.
func TestDebugCommandProtected(t *testing.T) {
	debug := cmdReq("DEBUG", "SET-ACTIVE-EXPIRE", "1")
	cases := []struct {
		name       string
		setting    string // "" leaves the default
		local, far string // expected reply from 127.0.0.1 and from 127.0.0.2
	}{
		{"default", "", debugRefused, debugRefused},
		{"no", "no", debugRefused, debugRefused},
		{"yes", "yes", "+OK\r\n", "+OK\r\n"},
		{"local", "local", "+OK\r\n", debugRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dirs := []string{"protected-mode", "no"} // so that 127.0.0.2 may connect
			if tc.setting != "" {
				dirs = append(dirs, "enable-debug-command", tc.setting)
			}
			node, redis := bothServers(t, dirs...)
			for _, from := range []struct {
				ip   net.IP
				want string
			}{{net.ParseIP("127.0.0.1"), tc.local}, {notLocalIP, tc.far}} {
				n := exchange(t, from.ip, node, debug)[0]
				r := exchange(t, from.ip, redis, debug)[0]
				sameBytes(t, "DEBUG from "+from.ip.String(), n, r, from.want)
			}
		})
	}

	t.Run("before AUTH and in MULTI", func(t *testing.T) {
		node, redis := bothServers(t, "requirepass", "secret")
		reqs := []string{debug, cmdReq("AUTH", "secret"), cmdReq("MULTI"), debug, cmdReq("EXEC"), cmdReq("DEBUG")}
		n := exchange(t, nil, node, reqs...)
		r := exchange(t, nil, redis, reqs...)
		for i := range reqs {
			sameBytes(t, strconv.Quote(reqs[i]), n[i], r[i], "")
		}
		if string(n[0]) != debugRefused || string(n[3]) != debugRefused {
			t.Fatalf("DEBUG not refused: %q, %q", n[0], n[3])
		}
	})

	t.Run("TRACE START writes nothing", func(t *testing.T) {
		ts := startServer(t)
		path := filepath.Join(t.TempDir(), "trace.out")
		r := ts.raw(t)
		r.expect(cmdReq("DEBUG", "TRACE", "START", path), debugRefused[:len(debugRefused)-2])
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("DEBUG TRACE START refused but %s exists (%v)", path, err)
		}
	})
}

// TestConfigSetProtected: CONFIG SET of Redis 7.0's PROTECTED_CONFIG
// directives (dir, dbfilename) only where enable-protected-configs allows
// it, compared byte for byte with redis-server.
func TestConfigSetProtected(t *testing.T) {
	const refusedDir = "-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config\r\n"
	const refusedFile = "-ERR CONFIG SET failed (possibly related to argument 'dbfilename') - can't set protected config\r\n"
	cases := []struct {
		name       string
		setting    string
		local, far [2]string // replies to SET dir and SET dbfilename
	}{
		{"default", "", [2]string{refusedDir, refusedFile}, [2]string{refusedDir, refusedFile}},
		{"yes", "yes", [2]string{"+OK\r\n", "+OK\r\n"}, [2]string{"+OK\r\n", "+OK\r\n"}},
		{"local", "local", [2]string{"+OK\r\n", "+OK\r\n"}, [2]string{refusedDir, refusedFile}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dirs := []string{"protected-mode", "no"}
			if tc.setting != "" {
				dirs = append(dirs, "enable-protected-configs", tc.setting)
			}
			node, redis := bothServers(t, dirs...)
			target := t.TempDir()
			for _, from := range []struct {
				ip   net.IP
				want [2]string
			}{{net.ParseIP("127.0.0.1"), tc.local}, {notLocalIP, tc.far}} {
				reqs := []string{cmdReq("CONFIG", "SET", "dir", target), cmdReq("CONFIG", "SET", "dbfilename", "other.rdb")}
				n := exchange(t, from.ip, node, reqs...)
				r := exchange(t, from.ip, redis, reqs...)
				for i := range reqs {
					sameBytes(t, strconv.Quote(reqs[i])+" from "+from.ip.String(), n[i], r[i], from.want[i])
				}
			}
		})
	}

	t.Run("dir /tmp refused, value kept", func(t *testing.T) {
		node, redis := bothServers(t)
		reqs := []string{cmdReq("CONFIG", "SET", "dir", "/tmp"), cmdReq("CONFIG", "SET", "enable-protected-configs", "yes")}
		n := exchange(t, nil, node, reqs...)
		r := exchange(t, nil, redis, reqs...)
		sameBytes(t, "CONFIG SET dir /tmp", n[0], r[0], refusedDir)
		sameBytes(t, "CONFIG SET enable-protected-configs", n[1], r[1], "-ERR CONFIG SET failed (possibly related to argument 'enable-protected-configs') - can't set immutable config\r\n")
		got := exchange(t, nil, node, cmdReq("CONFIG", "GET", "dir"))[0]
		if bytes.Contains(got, []byte("/tmp\r\n")) {
			t.Fatalf("dir changed: %q", got)
		}
	})
}

// TestProtectedMode: with protected-mode on and no password for the
// default user, a connection from a non-local address (127.0.0.2) gets
// Redis 7.0.15's DENIED line and is closed, whatever the bind; 127.0.0.1
// is served; a password or protected-mode no lets 127.0.0.2 in. Each
// answer is compared byte for byte with redis-server.
func TestProtectedMode(t *testing.T) {
	denied := "-" + protectedModeError + "\r\n"
	ping := cmdReq("PING")
	cases := []struct {
		name string
		dirs []string
		far  string // what 127.0.0.2 receives for PING, up to the close when denied
	}{
		{"explicit bind", []string{"protected-mode", "yes", "bind", "127.0.0.1"}, denied},
		{"default bind", []string{"protected-mode", "yes", "bind", "* -::*"}, denied},
		{"password", []string{"protected-mode", "yes", "bind", "127.0.0.1", "requirepass", "secret"}, "-NOAUTH Authentication required.\r\n"},
		{"protected-mode no", []string{"protected-mode", "no", "bind", "* -::*"}, "+PONG\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node, redis := bothServers(t, tc.dirs...)
			var n, r []byte
			if tc.far == denied {
				n = untilClose(t, notLocalIP, node, "")
				r = untilClose(t, notLocalIP, redis, "")
			} else {
				n = exchange(t, notLocalIP, node, ping)[0]
				r = exchange(t, notLocalIP, redis, ping)[0]
			}
			sameBytes(t, "from 127.0.0.2", n, r, tc.far)
			// 127.0.0.1 is local: served.
			want := "+PONG\r\n"
			if tc.name == "password" {
				want = "-NOAUTH Authentication required.\r\n"
			}
			n = exchange(t, net.ParseIP("127.0.0.1"), node, ping)[0]
			r = exchange(t, net.ParseIP("127.0.0.1"), redis, ping)[0]
			sameBytes(t, "from 127.0.0.1", n, r, want)
		})
	}
}

// TestIsLocalAddr: only 127.0.0.1, ::1 and unix sockets are local.
func TestIsLocalAddr(t *testing.T) {
	cases := []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("::1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, false},
		{&net.TCPAddr{IP: net.ParseIP("127.1.2.3")}, false},
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.1")}, false},
		{&net.UnixAddr{Name: "/tmp/x.sock", Net: "unix"}, true},
	}
	for _, tc := range cases {
		if got := isLocalAddr(tc.addr); got != tc.want {
			t.Errorf("isLocalAddr(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// TestModuleCommandProtected: MODULE LOAD is refused with Redis's text
// unless enable-module-command allows it; MODULE LIST is not protected.
func TestModuleCommandProtected(t *testing.T) {
	const refused = "-ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n"
	reqs := []string{cmdReq("MODULE", "LOAD", "/nonexistent/mod.so"), cmdReq("MODULE", "UNLOAD", "nosuch"), cmdReq("MODULE", "LIST"), cmdReq("MODULE", "LOADEX", "/nonexistent/mod.so")}
	for _, setting := range []string{"no", "yes", "local"} {
		t.Run(setting, func(t *testing.T) {
			node, redis := bothServers(t, "protected-mode", "no", "enable-module-command", setting)
			for _, ip := range []net.IP{net.ParseIP("127.0.0.1"), notLocalIP} {
				n := exchange(t, ip, node, reqs...)
				r := exchange(t, ip, redis, reqs...)
				for i := range reqs {
					sameBytes(t, strconv.Quote(reqs[i])+" from "+ip.String(), n[i], r[i], "")
				}
				if allowed := setting == "yes" || (setting == "local" && ip.Equal(net.ParseIP("127.0.0.1"))); allowed == (string(n[0]) == refused) {
					t.Fatalf("MODULE LOAD from %s with %s: %q", ip, setting, n[0])
				}
			}
		})
	}
}

// TestProtectedModeUnixSocket: a unix socket client is local, so protected
// mode serves it (and DEBUG with enable-debug-command local runs for it),
// as Redis's islocalClient.
func TestProtectedModeUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "node.sock")
	startServer(t, "protected-mode", "yes", "unixsocket", sock, "enable-debug-command", "local")
	nc, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	for _, tc := range []struct{ req, want string }{
		{cmdReq("PING"), "+PONG\r\n"},
		{cmdReq("DEBUG", "SET-ACTIVE-EXPIRE", "1"), "+OK\r\n"},
	} {
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write([]byte(tc.req)); err != nil {
			t.Fatal(err)
		}
		got, err := readReplyRaw(br)
		if err != nil || string(got) != tc.want {
			t.Fatalf("%q over the unix socket: %q %v, want %q", tc.req, got, err, tc.want)
		}
	}
}
