package script

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/resp"
)

// scriptedConn is a DebugConn that answers the debugger's reads with
// fixed commands and records what it is sent, one reply per array.
type scriptedConn struct {
	cmds [][]string
	sent [][]string
}

func (c *scriptedConn) ReadCommand() ([][]byte, error) {
	if len(c.cmds) == 0 {
		return nil, errors.New("client gone")
	}
	cmd := c.cmds[0]
	c.cmds = c.cmds[1:]
	out := make([][]byte, len(cmd))
	for i, a := range cmd {
		out[i] = []byte(a)
	}
	return out, nil
}

func (c *scriptedConn) Write(b []byte) error {
	br := bufio.NewReader(bytes.NewReader(b))
	head, _ := br.ReadString('\n')
	var lines []string
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			break
		}
		lines = append(lines, strings.TrimSuffix(strings.TrimPrefix(l, "+"), "\r\n"))
	}
	if !strings.HasPrefix(head, "*") {
		lines = append([]string{"bad head " + head}, lines...)
	}
	c.sent = append(c.sent, lines)
	return nil
}

// debugRun runs body under a debugger answering with cmds, and returns
// the stop lines ("* Stopped at ...") it sent, and the reply.
func debugRun(t *testing.T, body string, cmds ...string) (stops []string, conn *scriptedConn, reply string) {
	t.Helper()
	e := NewEngine()
	sc, err := e.Load([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	conn = &scriptedConn{}
	for _, c := range cmds {
		conn.cmds = append(conn.cmds, strings.Fields(c))
	}
	d := NewDebugger(conn)
	d.Start([]byte(body))
	out := e.ExecDebug(sc, d, &Run{Host: &fakeHost{}, Proto: 2}, nil)
	d.End()
	for _, logs := range conn.sent {
		for _, l := range logs {
			if strings.HasPrefix(l, "* Stopped at ") {
				stops = append(stops, strings.TrimPrefix(l, "* Stopped at "))
			}
		}
	}
	return stops, conn, string(out)
}

func TestDebugStepsThroughEveryStatement(t *testing.T) {
	body := `local function f(n)
  if n > 1 then
    return n
  elseif n == 1 then
    return 1
  end
  return 0
end
local s = 0
for i = 1, 2 do s = s + f(i) end
while s > 100 do end
return s`
	var steps []string
	for range 40 {
		steps = append(steps, "s")
	}
	stops, _, reply := debugRun(t, body, steps...)
	want := []string{"1", "9", "10", "2", "4", "5", "10", "2", "3", "11", "12"}
	for i := range stops {
		stops[i] = strings.TrimSuffix(stops[i], ", stop reason = step over")
	}
	if strings.Join(stops, " ") != strings.Join(want, " ") {
		t.Fatalf("stops: %v, want %v", stops, want)
	}
	if reply != ":3\r\n" {
		t.Fatalf("reply %q", reply)
	}
}

func TestDebugContinueBreakpointsAndGone(t *testing.T) {
	body := "local a = 1\nlocal b = 2\nlocal c = 3\nreturn a + b + c"
	stops, conn, reply := debugRun(t, body, "b 3", "c", "print", "c")
	if strings.Join(stops, "|") != "1, stop reason = step over|3, stop reason = break point" || reply != ":6\r\n" {
		t.Fatalf("stops %q reply %q", stops, reply)
	}
	if got := strings.Join(conn.sent[3], "|"); got != `<value> a = 1|<value> b = 2` {
		t.Fatalf("print at line 3: %q", got)
	}
	if last := conn.sent[len(conn.sent)-1]; len(last) != 1 || last[0] != "<endsession>" {
		t.Fatalf("end: %q", last)
	}
	// With no client the script runs to its end.
	stops, _, reply = debugRun(t, body)
	if len(stops) != 1 || reply != ":6\r\n" {
		t.Fatalf("client gone: stops %q reply %q", stops, reply)
	}
}

func TestDebugHookIsHidden(t *testing.T) {
	// The hook's local cannot be named by a script, and the script
	// sees no vararg from it in its globals.
	_, _, reply := debugRun(t, "local x = 1\nreturn type(_G['(ldb)'])", "c")
	if !strings.Contains(reply, "nonexistent global variable") {
		t.Fatalf("reply %q", reply)
	}
}

func TestLdbRepr(t *testing.T) {
	e := NewEngine()
	st := newState(e, false)
	if err := st.L.DoString(`return {1, "a\n", true, {x = 0.5}}`); err != nil {
		t.Fatal(err)
	}
	if got := ldbRepr(st.L.Get(-1), 0); got != `{1; "a\n"; true; {["x"]=0.5}}` {
		t.Fatalf("repr: %s", got)
	}
	for reply, want := range map[string]string{
		"$-1\r\n":                            "NULL",
		"*2\r\n:1\r\n$2\r\nab\r\n":           `[1,"ab"]`,
		"-ERR x\r\n":                         `"-ERR x"`,
		"%1\r\n+k\r\n,1.5\r\n":               `{"+k" => (double) 1.5}`,
		"~1\r\n#t\r\n":                       "~(#true)",
		"_\r\n":                              "(null)",
		string(resp.AppendSimple(nil, "OK")): `"+OK"`,
	} {
		if got, _ := replyToHuman(nil, []byte(reply)); string(got) != want {
			t.Errorf("%q: got %s, want %s", reply, got, want)
		}
	}
}

func TestDebugOneStopPerLine(t *testing.T) {
	// Two statements on a line stop once; a loop on one line stops at
	// every iteration (Lua's hook fires on the jump back), and abort
	// ends one that never would.
	stops, _, reply := debugRun(t, "local a = 1 local b = 2\nreturn a + b", "s", "s", "s")
	if len(stops) != 2 || reply != ":3\r\n" {
		t.Fatalf("stops %q reply %q", stops, reply)
	}
	stops, _, reply = debugRun(t, "while true do end", "s", "s", "s", "abort")
	if len(stops) != 4 || !strings.HasPrefix(reply, "-ERR script aborted for user request") {
		t.Fatalf("stops %q reply %q", stops, reply)
	}
}
