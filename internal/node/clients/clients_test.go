package clients

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func bs(s string) [][]byte { return bytes.Fields([]byte(s)) }

func TestFlags(t *testing.T) {
	for _, tt := range []struct {
		f    Flags
		want string
	}{
		{Flags{}, "N"},
		{Flags{Monitor: true, Replica: true}, "O"},
		{Flags{Replica: true, NoEvict: true}, "Se"},
		{Flags{Master: true, PubSub: true, Multi: true, Blocked: true, DirtyCAS: true, CloseAfterReply: true, ReadOnly: true, NoEvict: true}, "MPxbdcre"},
	} {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestLine(t *testing.T) {
	l := Line{ID: 7, Addr: "127.0.0.1:5000", LAddr: "127.0.0.1:6379", FD: 9, Age: 3, Idle: -1, Multi: -1,
		QBuf: 26, QBufFree: 100, OMem: 4, User: "default", Resp: 2}
	want := "id=7 addr=127.0.0.1:5000 laddr=127.0.0.1:6379 fd=9 name= age=3 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 " +
		"multi=-1 qbuf=26 qbuf-free=100 argv-mem=0 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=4 tot-mem=1154 " +
		"events=r cmd=NULL user=default redir=-1 resp=2"
	if got := l.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseList(t *testing.T) {
	for _, tt := range []struct {
		args, err string
		typ       Type
		ids       int
	}{
		{"", "", -1, 0},
		{"TYPE replica", "", Slave, 0},
		{"type PUBSUB", "", PubSub, 0},
		{"TYPE nosuch", "ERR Unknown client type 'nosuch'", -1, 0},
		{"ID 1 2 3", "", -1, 3},
		{"ID 1 x", "ERR Invalid client ID", -1, 0},
		{"ID", "ERR syntax error", -1, 0},
		{"TYPE normal extra", "ERR syntax error", -1, 0},
		{"FOO bar", "ERR syntax error", -1, 0},
	} {
		f, err := ParseList(bs(tt.args))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: err %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || (tt.typ >= 0) != (f.Type != nil) || (f.Type != nil && *f.Type != tt.typ) || len(f.IDs) != tt.ids {
			t.Errorf("%q: %+v, %v", tt.args, f, err)
		}
	}
}

func TestKill(t *testing.T) {
	known := func(u string) bool { return u == "default" }
	errs := map[string]string{
		"a b c":        "ERR syntax error",
		"ID 0":         "ERR client-id should be greater than 0",
		"ID x":         "ERR client-id should be greater than 0",
		"TYPE x":       "ERR Unknown client type 'x'",
		"USER bob":     "ERR No such user 'bob'",
		"SKIPME maybe": "ERR syntax error",
		"MAXAGE x":     "ERR value is not an integer or out of range",
		"NOPE 1":       "ERR syntax error",
	}
	for args, want := range errs {
		if _, err := ParseKill(bs(args), known); err == nil || err.Error() != want {
			t.Errorf("%q: err %v, want %q", args, err, want)
		}
	}
	self := Candidate{ID: 1, Addr: "a:1", LAddr: "l:1", Type: Normal, User: "default", Age: time.Minute, Self: true}
	other := Candidate{ID: 2, Addr: "a:2", LAddr: "l:1", Type: PubSub, User: "default", Age: time.Second}
	for _, tt := range []struct {
		args             string
		killSelf, killOt bool
		legacy           bool
	}{
		{"a:1", true, false, true}, // the old form kills the caller too
		{"a:2", false, true, true},
		{"LADDR l:1", false, true, false},
		{"LADDR l:1 SKIPME no", true, true, false},
		{"TYPE pubsub", false, true, false},
		{"ID 1 SKIPME NO", true, false, false},
		{"MAXAGE 30 SKIPME no", true, false, false},
		{"USER default ADDR a:2", false, true, false},
	} {
		f, err := ParseKill(bs(tt.args), known)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if f.Legacy != tt.legacy || f.Match(self) != tt.killSelf || f.Match(other) != tt.killOt {
			t.Errorf("%q: legacy %v self %v other %v", tt.args, f.Legacy, f.Match(self), f.Match(other))
		}
	}
}

func TestSmallGrammars(t *testing.T) {
	if d, err := ParseTimeoutMS([]byte("1500")); err != nil || d != 1500*time.Millisecond {
		t.Errorf("timeout: %v %v", d, err)
	}
	for arg, want := range map[string]error{"-1": ErrTimeoutNeg, "x": ErrTimeoutNotInt, "1.5": ErrTimeoutNotInt} {
		if _, err := ParseTimeoutMS([]byte(arg)); !errors.Is(err, want) {
			t.Errorf("timeout %q: %v", arg, err)
		}
	}
	if all, err := ParsePauseMode(nil); !all || err != nil {
		t.Error("PAUSE default is ALL")
	}
	if all, err := ParsePauseMode([]byte("Write")); all || err != nil {
		t.Error("PAUSE WRITE")
	}
	if _, err := ParsePauseMode([]byte("x")); err != ErrPauseMode {
		t.Error("PAUSE x")
	}
	if e, err := ParseUnblockReason([]byte("ERROR")); !e || err != nil {
		t.Error("UNBLOCK ERROR")
	}
	if e, err := ParseUnblockReason(nil); e || err != nil {
		t.Error("UNBLOCK default")
	}
	if _, err := ParseUnblockReason([]byte("x")); err != ErrUnblockReason {
		t.Error("UNBLOCK x")
	}
	if _, ok := TypeByName([]byte("x")); ok {
		t.Error("type x")
	}
}

// FuzzParse: the grammars take client input and never panic.
func FuzzParse(f *testing.F) {
	f.Add("ID 1 TYPE normal SKIPME no MAXAGE 3")
	f.Add("TYPE pubsub")
	f.Fuzz(func(t *testing.T, s string) {
		args := bs(s)
		if k, err := ParseKill(args, func(string) bool { return true }); err == nil {
			k.Match(Candidate{})
		}
		_, _ = ParseList(args)
	})
}
