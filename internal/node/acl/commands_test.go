package acl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func bargs(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestAppendUser(t *testing.T) {
	r := testRegistry()
	u, _, err := r.SetUser("alice", []string{"on", ">pw", "+get", "~k*", "(+set ~s*)"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(AppendUser(nil, 2, u, r.Selectors(u)))
	for _, want := range []string{
		"*12\r\n$5\r\nflags\r\n*1\r\n$2\r\non\r\n$9\r\npasswords\r\n*1\r\n$64\r\n",
		"$8\r\ncommands\r\n$12\r\n-@all +@read\r\n$4\r\nkeys\r\n$3\r\n~k*\r\n$8\r\nchannels\r\n$0\r\n\r\n$9\r\nselectors\r\n*1\r\n*6\r\n",
		"$8\r\ncommands\r\n$13\r\n-@all +@write\r\n$4\r\nkeys\r\n$3\r\n~s*\r\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("reply %q lacks %q", got, want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	if _, msg := ParseCategory("nosuch"); msg != "ERR Unknown category 'nosuch'" {
		t.Errorf("category: %q", msg)
	}
	if c, msg := ParseCategory("string"); c != CategoryByName("string") || msg != "" {
		t.Errorf("category string: %v %q", c, msg)
	}
	if _, msg := ParseCategory(strings.Repeat("x", 200)); len(msg) != len("ERR Unknown category ''")+128 {
		t.Errorf("long category not cut at 128: %q", msg)
	}
	for _, tc := range []struct {
		args string
		bits int
		msg  string
	}{
		{"acl genpass", 256, ""},
		{"acl genpass 5", 5, ""},
		{"acl genpass 0", 0, "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"},
		{"acl genpass 4097", 0, "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"},
		{"acl genpass x", 0, errNotInt},
	} {
		if bits, msg := ParseGenPassBits(bargs(tc.args)); bits != tc.bits || msg != tc.msg {
			t.Errorf("%q: got %d %q", tc.args, bits, msg)
		}
	}
	for _, tc := range []struct {
		args  string
		count int
		reset bool
		msg   string
	}{
		{"acl log", 10, false, ""},
		{"acl log Reset", 0, true, ""},
		{"acl log 3", 3, false, ""},
		{"acl log -3", 0, false, ""},
		{"acl log x", 0, false, errNotInt},
	} {
		if n, reset, msg := ParseLog(bargs(tc.args)); n != tc.count || reset != tc.reset || msg != tc.msg {
			t.Errorf("%q: got %d %v %q", tc.args, n, reset, msg)
		}
	}
}

func TestAppendLog(t *testing.T) {
	e := LogEntry{Count: 2, Reason: "key", Context: CtxLua, Object: "k", Username: "u", CTime: 1000, ClientInfo: "id=1"}
	got := string(AppendLog(nil, 3, []LogEntry{e}, 3500))
	want := "*1\r\n%7\r\n$5\r\ncount\r\n:2\r\n$6\r\nreason\r\n$3\r\nkey\r\n$7\r\ncontext\r\n$3\r\nlua\r\n$6\r\nobject\r\n$1\r\nk\r\n" +
		"$8\r\nusername\r\n$1\r\nu\r\n$11\r\nage-seconds\r\n,2.5\r\n$11\r\nclient-info\r\n$4\r\nid=1\r\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestRefusalTexts(t *testing.T) {
	for res, want := range map[Result]string{
		OK:            "",
		DeniedCmd:     "This user has no permissions to run the 'get' command",
		DeniedKey:     "This user has no permissions to access the 'k' key",
		DeniedChannel: "This user has no permissions to access the 'k' channel",
	} {
		if got := DryRunText(res, "get", "k"); got != want {
			t.Errorf("dryrun %v: got %q", res, got)
		}
	}
	if got := ExecRefusal(DeniedKey); !strings.HasPrefix(got, "NOPERM ACLs rules changed") || !strings.HasSuffix(got, ": no permission to touch the specified keys") {
		t.Errorf("exec: %q", got)
	}
}

func TestPermAndChannels(t *testing.T) {
	for flags, want := range map[string]int{
		"RO access":        PermRead,
		"RW insert":        PermWrite,
		"RW access delete": PermRead | PermWrite,
		"not_key":          -1,
		"":                 0,
	} {
		if got := PermOfKeyFlags(flags); got != want {
			t.Errorf("%q: got %d, want %d", flags, got, want)
		}
	}
	if got := AppendChannels(nil, "psubscribe", 3); len(got) != 2 || !got[1].Pattern || got[1].Pos != 2 {
		t.Errorf("psubscribe: %+v", got)
	}
	if got := AppendChannels(nil, "publish", 3); len(got) != 1 || got[0].Pos != 1 || got[0].Pattern {
		t.Errorf("publish: %+v", got)
	}
	if got := AppendChannels(nil, "unsubscribe", 3); len(got) != 0 {
		t.Errorf("unsubscribe: %+v", got)
	}
}

func TestFileText(t *testing.T) {
	r := testRegistry()
	lines := r.ConfigLines()
	users, err := r.ParseLines("users.acl", FileLines(FileText(lines)))
	if err != nil || len(users) != 1 || users["default"] == nil {
		t.Fatalf("round trip: %v %v", users, err)
	}
	file := filepath.Join(t.TempDir(), "missing.acl")
	_, rerr := os.ReadFile(file)
	if got, want := OpenError(file, rerr).Error(), "Error loading ACLs, opening file '"+file+"': No such file or directory"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
