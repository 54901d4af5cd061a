package acl

import (
	"path"
	"testing"
)

func testRegistry() *Registry {
	cat := func(names ...string) Category {
		var c Category
		for _, n := range names {
			c |= CategoryByName(n)
		}
		return c
	}
	cfg := &Command{FullName: "config", Categories: cat("slow")}
	cfg.Subs = []*Command{
		{FullName: "config|get", Categories: cat("admin", "slow", "dangerous")},
		{FullName: "config|set", Categories: cat("admin", "slow", "dangerous")},
	}
	t := NewTable([]*Command{
		{FullName: "get", Categories: cat("read", "string", "fast")},
		{FullName: "set", Categories: cat("write", "string", "slow")},
		{FullName: "select", Categories: cat("fast", "connection")},
		{FullName: "publish", Categories: cat("pubsub", "fast")},
		{FullName: "auth", Categories: cat("fast", "connection"), NoAuth: true},
		cfg,
	})
	return NewRegistry(t, func(p, s string) bool { ok, _ := path.Match(p, s); return ok })
}

func TestDefaultUser(t *testing.T) {
	r := testRegistry()
	if got, want := r.ConfigLines()[0], "user default on nopass ~* &* +@all"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if r.AuthRequired() {
		t.Fatal("nopass default user requires auth")
	}
	r.SetDefaultPassword("pw")
	if !r.AuthRequired() || r.Authenticate("default", "pw") == nil || r.Authenticate("default", "x") != nil {
		t.Fatal("requirepass not applied")
	}
}

func TestSetUserDescribe(t *testing.T) {
	r := testRegistry()
	cases := []struct {
		rules []string
		want  string
	}{
		{nil, "off resetchannels -@all"},
		// A category whose every command is allowed is named instead.
		{[]string{"on", "+get", "~k*"}, "on ~k* resetchannels -@all +@read"},
		{[]string{"on", "+@all", "-config|set", "%R~r", "&ch"}, "on %R~r resetchannels &ch +@all -config|set"},
		{[]string{"on", "+@all", "-@string", "+get"}, "on resetchannels +@all -@write"},
		{[]string{"reset", "+select|0", "(~x +set)"}, "off sanitize-payload resetchannels -@all +select|0 (~x resetchannels -@all +@write)"},
	}
	for i, c := range cases {
		u, _, err := r.SetUser(string(rune('a'+i)), c.rules)
		if err != nil {
			t.Fatalf("%v: %v", c.rules, err)
		}
		if got := r.Describe(u); got != c.want {
			t.Errorf("%v: got %q, want %q", c.rules, got, c.want)
		}
	}
	if _, _, err := r.SetUser("u", []string{"+nosuch"}); err == nil || err.Error() != "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL" {
		t.Errorf("unknown command: %v", err)
	}
	if _, _, err := r.SetUser("u", []string{"(~x", "+get"}); err == nil || err.Error() != "Unmatched parenthesis in acl selector starting at '(~x'." {
		t.Errorf("unmatched: %v", err)
	}
}

func TestCheck(t *testing.T) {
	r := testRegistry()
	u, _, _ := r.SetUser("u", []string{"on", "+get", "+set", "+select|0", "%R~r*", "~w*", "&news"})
	get, set, sel, pub := r.table.Lookup("get"), r.table.Lookup("set"), r.table.Lookup("select"), r.table.Lookup("publish")
	check := func(cmd *Command, args []string, keys []KeyRef, chans []ChannelRef, want Result, wantIdx int) {
		t.Helper()
		var a [][]byte
		for _, s := range args {
			a = append(a, []byte(s))
		}
		res, idx := r.Check(u, &Call{Cmd: cmd, Args: a, Keys: keys, Channels: chans})
		if res != want || (res != OK && idx != wantIdx) {
			t.Errorf("%v: got %v at %d, want %v at %d", args, res, idx, want, wantIdx)
		}
	}
	check(get, []string{"get", "r1"}, []KeyRef{{1, PermRead}}, nil, OK, 0)
	check(set, []string{"set", "r1", "v"}, []KeyRef{{1, PermWrite}}, nil, DeniedKey, 1)
	check(set, []string{"set", "w1", "v"}, []KeyRef{{1, PermWrite}}, nil, OK, 0)
	check(sel, []string{"select", "0"}, nil, nil, OK, 0)
	check(sel, []string{"select", "1"}, nil, nil, DeniedCmd, 0)
	check(pub, []string{"publish", "news", "x"}, nil, []ChannelRef{{1, false}}, DeniedCmd, 0)
	u, _, _ = r.SetUser("u", []string{"+publish"})
	check(pub, []string{"publish", "news", "x"}, nil, []ChannelRef{{1, false}}, OK, 0)
	check(pub, []string{"publish", "other", "x"}, nil, []ChannelRef{{1, false}}, DeniedChannel, 1)
}

func TestLogGroups(t *testing.T) {
	var l Log
	e := LogEntry{Reason: "command", Context: CtxToplevel, Object: "get", Username: "u"}
	l.Add(e, 1000, 128)
	l.Add(e, 2000, 128)
	e2 := e
	e2.Object = "set"
	l.Add(e2, 3000, 128)
	got := l.Entries(10)
	if len(got) != 2 || got[0].Object != "set" || got[1].Count != 2 {
		t.Fatalf("log: %+v", got)
	}
	l.Add(e, 2500, 128)
	if got := l.Entries(10); len(got) != 2 || got[0].Object != "get" || got[0].Count != 3 {
		t.Fatalf("regrouped: %+v", got)
	}
	l.Add(e, 2500+groupingWindow+1, 128)
	if got := l.Entries(10); len(got) != 3 || got[0].Count != 1 {
		t.Fatalf("regrouped: %+v", got)
	}
	l.Add(e, 1_000_000, 2)
	l.Add(e2, 1_000_000, 2)
	if got := l.Entries(10); len(got) != 2 {
		t.Fatalf("trim: %+v", got)
	}
}
