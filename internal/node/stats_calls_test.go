package node

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/testutil"
)

// cmdstat returns the calls/rejected_calls/failed_calls part of a
// command's INFO commandstats line.
func cmdstat(t *testing.T, ts *testServer, name string) string {
	t.Helper()
	c := ts.client(t)
	defer c.Close()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	l := cmdstatLine(info, name)
	if l == "" {
		return ""
	}
	fields := strings.Split(strings.TrimPrefix(l, "cmdstat_"+name+":"), ",")
	return fields[0] + "," + fields[len(fields)-2] + "," + fields[len(fields)-1]
}

// Rejected and failed calls are counted as Redis 7 counts them
// (tests/unit/info.tcl "errorstats: ..."): a command refused before it
// runs is rejected, one that replies an error is failed, and EXEC fails
// only for its own errors, not its queued commands'.
func TestRejectedAndFailedCalls(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	c := ts.client(t)
	defer c.Close()

	// Wrong arity: rejected, not called.
	if err := c.Do(ctx, "set", "k").Err(); err == nil || !strings.Contains(err.Error(), "wrong number of arguments") {
		t.Fatalf("SET k: %v", err)
	}
	if got := cmdstat(t, ts, "set"); got != "calls=0,rejected_calls=1,failed_calls=0" {
		t.Fatalf("after a wrong-arity SET: %q", got)
	}
	c.Set(ctx, "k1", "v1", 0)
	c.Set(ctx, "k2", "v2", 0)
	if got := cmdstat(t, ts, "set"); got != "calls=2,rejected_calls=1,failed_calls=0" {
		t.Fatalf("after two SETs: %q", got)
	}

	// A failed call inside EXEC counts on the command, not on EXEC.
	c.ConfigResetStat(ctx)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	send := func(line string) resp.Value {
		t.Helper()
		if _, err := nc.Write([]byte(line + "\r\n")); err != nil {
			t.Fatal(err)
		}
		v, err := resp.ReadValue(br)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	send("MULTI")
	send("SET a b")
	send("AUTH a")
	if v := send("EXEC"); len(v.Elems) != 2 || !v.Elems[1].IsError() {
		t.Fatalf("EXEC: %+v", v)
	}
	for name, want := range map[string]string{
		"set":  "calls=1,rejected_calls=0,failed_calls=0",
		"auth": "calls=1,rejected_calls=0,failed_calls=1",
		"exec": "calls=1,rejected_calls=0,failed_calls=0",
	} {
		if got := cmdstat(t, ts, name); got != want {
			t.Errorf("%s after MULTI/SET/AUTH/EXEC: %q, want %q", name, got, want)
		}
	}
	if v := send("EXEC"); !v.IsError() || v.Str != "ERR EXEC without MULTI" {
		t.Fatalf("EXEC without MULTI: %+v", v)
	}
	if got := cmdstat(t, ts, "exec"); got != "calls=2,rejected_calls=0,failed_calls=1" {
		t.Fatalf("exec after EXEC without MULTI: %q", got)
	}

	// A queuing error: the command is rejected, EXEC fails with EXECABORT.
	c.ConfigResetStat(ctx)
	send("MULTI")
	if v := send("SET"); !v.IsError() {
		t.Fatalf("SET with no args in MULTI: %+v", v)
	}
	if v := send("EXEC"); !v.IsError() || !strings.HasPrefix(v.Str, "EXECABORT") {
		t.Fatalf("EXEC after a queuing error: %+v", v)
	}
	for name, want := range map[string]string{
		"set":   "calls=0,rejected_calls=1,failed_calls=0",
		"multi": "calls=1,rejected_calls=0,failed_calls=0",
		"exec":  "calls=1,rejected_calls=0,failed_calls=1",
	} {
		if got := cmdstat(t, ts, name); got != want {
			t.Errorf("%s after MULTI/SET/EXEC (EXECABORT): %q, want %q", name, got, want)
		}
	}

	// OOM: rejected.
	c.ConfigResetStat(ctx)
	c.ConfigSet(ctx, "maxmemory", "1")
	if err := c.Set(ctx, "a", "b", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("SET over maxmemory: %v", err)
	}
	c.ConfigSet(ctx, "maxmemory", "0")
	if got := cmdstat(t, ts, "set"); got != "calls=0,rejected_calls=1,failed_calls=0" {
		t.Fatalf("after an OOM SET: %q", got)
	}
}

// MONITOR shows a command after it ran, and not a command refused before
// running; EXEC's queued commands appear before EXEC itself, as in Redis 7.
func TestMonitorAfterExecution(t *testing.T) {
	ts := startServer(t)
	mon, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	_ = mon.SetDeadline(time.Now().Add(5 * time.Second))
	mbr := bufio.NewReader(mon)
	if _, err := mon.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if v, err := resp.ReadValue(mbr); err != nil || v.Str != "OK" {
		t.Fatalf("MONITOR: %+v %v", v, err)
	}
	ctx := context.Background()
	c := ts.client(t)
	defer c.Close()
	_ = c.Do(ctx, "set", "k").Err() // rejected: not shown
	c.Set(ctx, "k", "v", 0)
	p := c.TxPipeline()
	p.Incr(ctx, "n")
	p.Get(ctx, "k")
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	c.Echo(ctx, "last")
	var got []string
	for len(got) == 0 || !strings.Contains(got[len(got)-1], `"echo"`) {
		v, err := resp.ReadValue(mbr)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		line := v.Str
		if i := strings.Index(line, "] "); i >= 0 {
			line = line[i+2:]
		}
		if strings.HasPrefix(line, `"hello"`) || strings.HasPrefix(line, `"client"`) || strings.HasPrefix(line, `"ping"`) {
			continue // go-redis's connection set-up
		}
		got = append(got, line)
	}
	want := []string{`"set" "k" "v"`, `"multi"`, `"incr" "n"`, `"get" "k"`, `"exec"`, `"echo" "last"`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("MONITOR lines:\n got %q\nwant %q", got, want)
	}
}

// TestNetInputBytesPartialRequest: a request that arrives in two reads is
// counted once: total_net_input_bytes is the bytes the client sent, not
// the bytes left in the buffer counted again at the next read.
func TestNetInputBytesPartialRequest(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	first, rest := "*1\r\n$4\r\nPI", "NG\r\n"
	r.send(first)
	testutil.WaitFor(t, 5*time.Second, "the first part read", func() bool {
		return ts.srv.stats.netInput.Load() >= int64(len(first))
	})
	r.send(rest)
	if got := r.readLine(); got != "+PONG" {
		t.Fatalf("PING split in two reads: %q", got)
	}
	if got, want := ts.srv.stats.netInput.Load(), int64(len(first)+len(rest)); got != want {
		t.Errorf("total_net_input_bytes = %d, want %d (the bytes sent)", got, want)
	}
}
