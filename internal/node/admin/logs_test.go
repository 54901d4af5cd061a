package admin

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// MonitorLine: seconds, six digits of microseconds, [db source], each
// argument quoted as sdscatrepr quotes it.
func TestMonitorLine(t *testing.T) {
	now := time.Unix(1339518083, 7412000)
	got := MonitorLine(now, 3, "127.0.0.1:60866", [][]byte{[]byte("set"), []byte("a\"b\\\n\x01\xff")})
	want := `1339518083.007412 [3 127.0.0.1:60866] "set" "a\"b\\\n\x01\xff"`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// SlowlogArgs keeps 32 arguments at most (the last says how many more),
// cuts each at 128 bytes and redacts from redactFrom on; Slowlog keeps
// the newest max entries, newest first, with increasing IDs.
func TestSlowlog(t *testing.T) {
	var args [][]byte
	for i := 0; i < 40; i++ {
		args = append(args, []byte("a"+strconv.Itoa(i)))
	}
	args[1] = []byte(strings.Repeat("x", 130))
	got := SlowlogArgs(args, 5)
	if len(got) != 32 || got[0] != "a0" || got[1] != strings.Repeat("x", 128)+"... (2 more bytes)" ||
		got[4] != "a4" || got[5] != "(redacted)" || got[31] != "... (9 more arguments)" {
		t.Fatalf("SlowlogArgs: %q", got)
	}
	var l Slowlog
	for i := 0; i < 4; i++ {
		l.Add(SlowlogEntry{Duration: int64(i)}, 3)
	}
	e := l.Entries(-1)
	if l.Len() != 3 || len(e) != 3 || e[0].ID != 3 || e[0].Duration != 3 || e[2].ID != 1 {
		t.Fatalf("entries %+v", e)
	}
	if e := l.Entries(1); len(e) != 1 || e[0].ID != 3 {
		t.Fatalf("Entries(1) = %+v", e)
	}
	l.Reset()
	l.Add(SlowlogEntry{}, 3)
	if e := l.Entries(-1); len(e) != 1 || e[0].ID != 4 {
		t.Fatalf("after Reset: %+v", e)
	}
}
