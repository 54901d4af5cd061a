package admin

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/shardis/shardis/internal/resp"
)

func bs(s string) [][]byte { return bytes.Fields([]byte(s)) }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestGrammars(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"shutdown nosave now", func() error {
			o, err := ParseShutdown(bs("NOSAVE now"))
			if !o.NoSave || !o.Now {
				t.Error("flags")
			}
			return err
		}(), ""},
		{"shutdown abort", func() error {
			o, err := ParseShutdown(bs("abort"))
			if !o.Abort {
				t.Error("abort")
			}
			return err
		}(), ""},
		{"shutdown abort now", func() error { _, err := ParseShutdown(bs("abort now")); return err }(), "ERR syntax error"},
		{"shutdown save nosave", func() error { _, err := ParseShutdown(bs("save nosave")); return err }(), "ERR syntax error"},
		{"shutdown x", func() error { _, err := ParseShutdown(bs("x")); return err }(), "ERR syntax error"},
		{"flush", ParseFlush(nil), ""},
		{"flush async", ParseFlush(bs("Async")), ""},
		{"flush x", ParseFlush(bs("x")), "ERR syntax error"},
		{"flush sync sync", ParseFlush(bs("sync sync")), "ERR syntax error"},
		{"memory usage", ParseMemoryUsage(nil), ""},
		{"memory usage samples 5", ParseMemoryUsage(bs("SAMPLES 5")), ""},
		{"memory usage samples", ParseMemoryUsage(bs("samples")), "ERR syntax error"},
		{"memory usage samples x", ParseMemoryUsage(bs("samples x")), "ERR value is not an integer or out of range"},
		{"memory usage samples -1", ParseMemoryUsage(bs("samples -1")), "ERR syntax error"},
		{"memory usage foo", ParseMemoryUsage(bs("foo 1")), "ERR syntax error"},
	} {
		if got := errText(tt.err); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b string
		x, y int
		err  string
	}{
		{"0", "3", 0, 3, ""},
		{"x", "0", 0, 0, "ERR invalid first DB index"},
		{"0", "4294967296", 0, 0, "ERR invalid second DB index"},
		{"0", "16", 0, 0, "ERR DB index is out of range"},
		{"-1", "0", 0, 0, "ERR DB index is out of range"},
	} {
		x, y, err := ParseSwapDB([]byte(tt.a), []byte(tt.b), 16)
		if x != tt.x || y != tt.y || errText(err) != tt.err {
			t.Errorf("SWAPDB %s %s: %d %d %v", tt.a, tt.b, x, y, err)
		}
	}
	for args, want := range map[string]int64{"": 10, "3": 3, "-1": -1} {
		if n, err := ParseSlowlogCount(bs(args)); n != want || err != nil {
			t.Errorf("SLOWLOG GET %s: %d %v", args, n, err)
		}
	}
	if _, err := ParseSlowlogCount(bs("-2")); err != ErrSlowlogCount {
		t.Error("SLOWLOG GET -2")
	}
	if _, err := ParseSlowlogCount(bs("1 2")); err != ErrSlowlogArgs {
		t.Error("SLOWLOG GET 1 2")
	}
}

func TestReplies(t *testing.T) {
	read := func(b []byte) resp.Value {
		v, err := resp.ReadValue(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := read(AppendHelp(nil, "X", []string{"A", "    a"}))
	if len(v.Elems) != 5 || v.Elems[0].Str != "X <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" || v.Elems[3].Str != "HELP" {
		t.Fatalf("help: %+v", v)
	}
	for _, proto := range []int{2, 3} {
		v = read(AppendMemoryStats(nil, proto, 100, 200, []DBStat{{ID: 0, Keys: 2, Expires: 1}, {ID: 5, Keys: 3}}))
		if len(v.Elems) != 2*11 || v.Elems[1].Int != 200 || v.Elems[16].Str != "db.5" || v.Elems[19].Int != 5 || v.Elems[21].Int != 100 {
			t.Fatalf("RESP%d memory stats: %+v", proto, v)
		}
	}
}
