package node

import (
	"io"
	"strconv"
	"strings"
	"testing"
)

// readBulk reads one bulk string reply from r.
func readBulk(t *testing.T, r *rawConn) string {
	t.Helper()
	line := r.readLine()
	n, err := strconv.Atoi(strings.TrimPrefix(line, "$"))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 {
		t.Fatalf("want a bulk reply, got %q", line)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r.br, buf); err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// cmdstatLine returns INFO commandstats' line for name ("" if absent).
func cmdstatLine(info, name string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, "cmdstat_"+name+":") {
			return l
		}
	}
	return ""
}

// Counts a client accumulates during a pipeline (perf_hot.go) are visible
// to an INFO later in the same pipeline, CONFIG RESETSTAT drops them, and a
// call is failed only when it replied with an error itself.
func TestCommandStatsInPipeline(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	expect := func(lines ...string) {
		t.Helper()
		for _, want := range lines {
			if got := r.readLine(); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	}
	r.send("SET a 1\r\nSET b 2\r\nGET a\r\nINFO commandstats\r\n")
	expect("+OK", "+OK", "$1", "1")
	info := readBulk(t, r)
	if !strings.HasPrefix(cmdstatLine(info, "set"), "cmdstat_set:calls=2,") || !strings.HasPrefix(cmdstatLine(info, "get"), "cmdstat_get:calls=1,") {
		t.Fatalf("INFO commandstats after 2 SETs and a GET:\n%s", info)
	}
	r.send("SET a 1\r\nINCR a\r\nINCR a\r\nCONFIG RESETSTAT\r\nINFO commandstats\r\n")
	expect("+OK", ":2", ":3", "+OK")
	info = readBulk(t, r)
	if cmdstatLine(info, "set") != "" || cmdstatLine(info, "incr") != "" {
		t.Fatalf("commands before CONFIG RESETSTAT still counted:\n%s", info)
	}
	r.send("LPUSH a x\r\nINCR a\r\nINCR a\r\nINFO commandstats\r\n")
	expect("-"+errWrongType, ":4", ":5")
	info = readBulk(t, r)
	if l := cmdstatLine(info, "lpush"); !strings.HasPrefix(l, "cmdstat_lpush:calls=1,") || !strings.Contains(l, "failed_calls=1") {
		t.Fatalf("LPUSH on a string: %q", l)
	}
	if l := cmdstatLine(info, "incr"); !strings.HasPrefix(l, "cmdstat_incr:calls=2,") || !strings.Contains(l, "failed_calls=0") {
		t.Fatalf("INCR after a failed LPUSH: %q", l)
	}
	r.send("INFO stats\r\n")
	if info := readBulk(t, r); !strings.Contains(info, "total_commands_processed:") {
		t.Fatalf("INFO stats: %s", info)
	}
}
