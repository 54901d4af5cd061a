package repl

import (
	"testing"
	"time"
)

func TestParsePSync(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want PSyncArgs
		err  string
	}{
		{"PSYNC ? -1", PSyncArgs{ReplID: "?", Offset: -1}, ""},
		{"PSYNC abc 100 failover", PSyncArgs{ReplID: "abc", Offset: 100, Failover: true}, ""},
		{"PSYNC abc x", PSyncArgs{}, ErrNotInt},
		{"PSYNC abc 1 OTHER", PSyncArgs{}, errSyntax},
		{"PSYNC abc 1 FAILOVER x", PSyncArgs{}, errSyntax},
	} {
		got, err := ParsePSync(failoverArgs(tc.in))
		if got != tc.want || err != tc.err {
			t.Errorf("%q: %+v %q, want %+v %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseWait(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		timeout time.Duration
		err     string
	}{
		{"WAIT 2 100", 2, 100 * time.Millisecond, ""},
		{"WAIT 0 0", 0, 0, ""},
		{"WAIT x 0", 0, 0, ErrNotInt},
		{"WAIT 1 x", 0, 0, "ERR timeout is not an integer or out of range"},
		{"WAIT 1 -1", 0, 0, "ERR timeout is negative"},
	} {
		want, timeout, err := ParseWait(failoverArgs(tc.in))
		if want != tc.want || timeout != tc.timeout || err != tc.err {
			t.Errorf("%q: %d %v %q", tc.in, want, timeout, err)
		}
	}
}

func TestParseReplicaOf(t *testing.T) {
	for _, tc := range []struct {
		in    string
		host  string
		port  int
		noOne bool
		err   string
	}{
		{"REPLICAOF no one", "", 0, true, ""},
		{"REPLICAOF 10.0.0.1 6379", "10.0.0.1", 6379, false, ""},
		{"REPLICAOF h 65536", "", 0, false, "ERR Invalid master port"},
		{"REPLICAOF h -1", "", 0, false, "ERR Invalid master port"},
		{"REPLICAOF h x", "", 0, false, "ERR Invalid master port"},
	} {
		host, port, noOne, err := ParseReplicaOf(failoverArgs(tc.in))
		if host != tc.host || port != tc.port || noOne != tc.noOne || err != tc.err {
			t.Errorf("%q: %q %d %v %q", tc.in, host, port, noOne, err)
		}
	}
}

func TestParsePopulate(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   Populate
		err    string
		syntax bool
	}{
		{"DEBUG POPULATE 10", Populate{Count: 10, Prefix: "key"}, "", false},
		{"DEBUG POPULATE 3 k 8", Populate{Count: 3, Prefix: "k", Size: 8}, "", false},
		{"DEBUG POPULATE", Populate{}, "", true},
		{"DEBUG POPULATE 1 k 1 x", Populate{}, "", true},
		{"DEBUG POPULATE x", Populate{}, ErrNotInt, false},
		{"DEBUG POPULATE -1", Populate{}, "ERR count must be greater than or equal to 0", false},
		{"DEBUG POPULATE 1 k -1", Populate{}, ErrNotInt, false},
	} {
		got, err, syntax := ParsePopulate(failoverArgs(tc.in))
		if got != tc.want || err != tc.err || syntax != tc.syntax {
			t.Errorf("%q: %+v %q %v", tc.in, got, err, syntax)
		}
	}
	p := Populate{Count: 1, Prefix: "p", Size: 10}
	if k := p.Key([]byte("junk"), 12); string(k) != "p:12" {
		t.Fatalf("key %q", k)
	}
	if v := p.Value(12); string(v) != "value:12\x00\x00" {
		t.Fatalf("padded value %q", v)
	}
	if v := (Populate{Size: 3}).Value(12); string(v) != "val" {
		t.Fatalf("cut value %q", v)
	}
	if v := (Populate{}).Value(7); string(v) != "value:7" {
		t.Fatalf("value %q", v)
	}
}
