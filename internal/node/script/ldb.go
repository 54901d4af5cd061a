package script

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/resp"
	lua "github.com/yuin/gopher-lua"
)

// This file is the Lua debugger of SCRIPT DEBUG YES|SYNC, Redis 7.0's
// LDB: an EVAL run under it stops before a line (step mode, a breakpoint,
// redis.breakpoint(), or a run past the time limit) and reads debugger
// commands from the client's connection (step, continue, list, print,
// break, eval, redis, maxlen, trace, abort, help) until one resumes the
// script. Replies are arrays of status lines, as Redis sends them.

// DebugConn is the debugging client's connection, which the debugger
// reads and writes directly while the script is stopped.
type DebugConn interface {
	// ReadCommand blocks for the client's next request. An error ends
	// the dialogue (the client is gone): the script runs to its end
	// without stopping.
	ReadCommand() ([][]byte, error)
	// Write sends raw protocol bytes to the client.
	Write(b []byte) error
}

// Debugger limits and texts, Redis's.
const (
	ldbMaxBreakpoints = 64
	ldbMaxLenDefault  = 256
	ldbMaxValueDepth  = 10 // LUA_MINSTACK/2
	ldbMaxCommandArgs = 1024
	ldbMaxArgLen      = 1024
	ldbDefaultTimeout = 5 * time.Second
)

// Debugger is one client's debugging session state (Redis's ldbState),
// created by SCRIPT DEBUG YES|SYNC and used by the EVAL that follows.
type Debugger struct {
	conn DebugConn
	// TimeLimit is how long the script may run without a stop before
	// the debugger stops it ("timeout reached"); 0 is Redis's 5 s.
	TimeLimit time.Duration

	active   bool
	src      []string
	bp       []int
	step     bool
	luabp    bool
	line     int
	maxlen   int
	hintSent bool
	logs     []string
	start    time.Time
	gone     bool
	st       *state
	// lastHook is the number of the hook call that ran last.
	lastHook int
}

// NewDebugger returns a session on conn in step mode with no
// breakpoints (Redis's ldbEnable).
func NewDebugger(conn DebugConn) *Debugger {
	return &Debugger{conn: conn, step: true, maxlen: ldbMaxLenDefault}
}

// Start begins the session on an EVAL of body: its source lines are
// what list and the stop lines show (Redis's ldbStartSession).
func (d *Debugger) Start(body []byte) {
	src := strings.TrimRight(string(body), "\r\n")
	d.src = strings.Split(src, "\n")
	d.active = true
}

// End logs "<endsession>" and sends the remaining logs; the EVAL's reply
// follows (Redis's ldbEndSession).
func (d *Debugger) End() {
	d.log("<endsession>")
	d.sendLogs()
	d.active = false
}

func (d *Debugger) log(s string) { d.logs = append(d.logs, s) }

// logMax is ldbLogWithMaxLen: a log trimmed to maxlen, with a hint the
// first time.
func (d *Debugger) logMax(s string) {
	trimmed := false
	if d.maxlen > 0 && len(s) > d.maxlen {
		s = s[:d.maxlen] + " ..."
		trimmed = true
	}
	d.log(s)
	if trimmed && !d.hintSent {
		d.hintSent = true
		d.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.")
	}
}

// sendLogs writes the logs as an array of status replies, line breaks
// turned to spaces.
func (d *Debugger) sendLogs() {
	b := resp.AppendArrayLen(make([]byte, 0, 64), len(d.logs))
	for _, l := range d.logs {
		b = resp.AppendSimple(b, strings.ReplaceAll(strings.ReplaceAll(l, "\r", " "), "\n", " "))
	}
	d.logs = d.logs[:0]
	if !d.gone {
		// A failed write is seen by the next read.
		_ = d.conn.Write(b)
	}
}

// logging reports whether redis.call logs its commands and replies
// (Redis's ldbIsEnabled: stepping).
func (d *Debugger) logging() bool { return d != nil && d.active && d.step }

func (d *Debugger) sourceLine(n int) string {
	if n < 1 || n > len(d.src) {
		return "<out of range source code line>"
	}
	return d.src[n-1]
}

func (d *Debugger) isBreakpoint(n int) bool {
	for _, b := range d.bp {
		if b == n {
			return true
		}
	}
	return false
}

func (d *Debugger) logSourceLine(n int) {
	bp, cur := d.isBreakpoint(n), d.line == n
	prefix := "   "
	switch {
	case cur && bp:
		prefix = "->#"
	case cur:
		prefix = "-> "
	case bp:
		prefix = "  #"
	}
	d.log(fmt.Sprintf("%s%-3d %s", prefix, n, d.sourceLine(n)))
}

func (d *Debugger) list(around, context int) {
	for j := 1; j <= len(d.src); j++ {
		if around != 0 && abs(around-j) > context {
			continue
		}
		d.logSourceLine(j)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// hook is the function the instrumented script calls before each line.
func (d *Debugger) hook(L *lua.LState) int {
	line := int(L.CheckNumber(1))
	id, after := int(L.CheckNumber(2)), int(L.CheckNumber(3))
	// The line just stopped at, entered again without any other hook
	// between (see hookCall): no second stop.
	again := after != 0 && d.lastHook == after
	d.lastHook = id
	d.line = line
	bp := !again && (d.isBreakpoint(line) || d.luabp)
	timeout := false
	if again || !d.step && !bp {
		limit := d.TimeLimit
		if limit <= 0 {
			limit = ldbDefaultTimeout
		}
		if time.Since(d.start) < limit {
			return 0
		}
		timeout = true
	}
	reason := "step over"
	switch {
	case bp && d.luabp:
		reason = "redis.breakpoint() called"
	case bp:
		reason = "break point"
	case timeout:
		reason = "timeout reached, infinite loop?"
	}
	d.step, d.luabp = false, false
	d.log(fmt.Sprintf("* Stopped at %d, stop reason = %s", line, reason))
	d.logSourceLine(line)
	d.sendLogs()
	if !d.repl(L) && timeout {
		// The client left a script that does not end: kill it, or the
		// server would wait for it forever.
		return raise(L, "timeout during Lua debugging with client closing connection")
	}
	d.start = time.Now()
	return 0
}

// errProtocol is the debugger's own request parser's refusal.
var errProtocol = errors.New("protocol error")

// readCommand reads the next request, with Redis's debugger limits
// (1 to 1024 arguments of 1 to 1024 bytes).
func (d *Debugger) readCommand() ([]string, error) {
	args, err := d.conn.ReadCommand()
	if err != nil {
		return nil, err
	}
	if len(args) == 0 || len(args) > ldbMaxCommandArgs {
		return nil, errProtocol
	}
	out := make([]string, len(args))
	for i, a := range args {
		if len(a) == 0 || len(a) > ldbMaxArgLen {
			return nil, errProtocol
		}
		out[i] = string(a)
	}
	return out, nil
}

// repl reads and runs debugger commands until one resumes the script. It
// returns false when the client is gone (the script then runs without
// stopping).
func (d *Debugger) repl(L *lua.LState) bool {
	if d.gone {
		d.step, d.bp = false, nil
		return false
	}
	for {
		argv, err := d.readCommand()
		if err == errProtocol {
			raise(L, "protocol error")
			return true
		}
		if err != nil {
			d.gone = true
			d.step, d.bp = false, nil
			return false
		}
		switch name := strings.ToLower(argv[0]); {
		case name == "h" || name == "help":
			for _, l := range ldbHelp {
				d.log(l)
			}
		case name == "s" || name == "step" || name == "n" || name == "next":
			d.step = true
			return true
		case name == "c" || name == "continue":
			return true
		case name == "t" || name == "trace":
			d.trace(L)
		case name == "m" || name == "maxlen":
			d.maxlenCmd(argv)
		case name == "b" || name == "break":
			d.breakCmd(argv)
		case name == "e" || name == "eval":
			d.eval(L, argv)
		case name == "a" || name == "abort":
			raise(L, "script aborted for user request")
			return true
		case len(argv) > 1 && (name == "r" || name == "redis"):
			d.redis(L, argv)
		case name == "p" || name == "print":
			if len(argv) == 2 {
				d.print(L, argv[1])
			} else {
				d.printAll(L)
			}
		case name == "l" || name == "list":
			around, ctx := d.line, 5
			if len(argv) > 1 {
				if n := atoi(argv[1]); n > 0 {
					around = n
				}
			}
			if len(argv) > 2 {
				ctx = atoi(argv[2])
			}
			d.list(around, ctx)
		case name == "w" || name == "whole":
			d.list(1, 1000000)
		default:
			d.log("<error> Unknown Redis Lua debugger command or wrong number of arguments.")
		}
		d.sendLogs()
	}
}

// atoi is C's atoi: the leading digits, 0 without any.
func atoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	i, neg := 0, false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	n := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
		if n > 1<<31 {
			break
		}
	}
	if neg {
		return -n
	}
	return n
}

var ldbHelp = []string{
	"Redis Lua debugger help:",
	"[h]elp               Show this help.",
	"[s]tep               Run current line and stop again.",
	"[n]ext               Alias for step.",
	"[c]ontinue           Run till next breakpoint.",
	"[l]ist               List source code around current line.",
	"[l]ist [line]        List source code around [line].",
	"                     line = 0 means: current position.",
	"[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
	"                     to show before/after [line].",
	"[w]hole              List all source code. Alias for 'list 1 1000000'.",
	"[p]rint              Show all the local variables.",
	"[p]rint <var>        Show the value of the specified variable.",
	"                     Can also show global vars KEYS and ARGV.",
	"[b]reak              Show all breakpoints.",
	"[b]reak <line>       Add a breakpoint to the specified line.",
	"[b]reak -<line>      Remove breakpoint from the specified line.",
	"[b]reak 0            Remove all breakpoints.",
	"[t]race              Show a backtrace.",
	"[e]val <code>        Execute some Lua code (in a different callframe).",
	"[r]edis <cmd>        Execute a Redis command.",
	"[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
	"                     Specifying zero as <len> means unlimited.",
	"[a]bort              Stop the execution of the script. In sync",
	"                     mode dataset changes will be retained.",
	"",
	"Debugger functions you can call from Lua scripts:",
	"redis.debug()        Produce logs in the debugger console.",
	"redis.breakpoint()   Stop execution like if there was a breakpoint in the",
	"                     next line of code.",
}

func (d *Debugger) breakCmd(argv []string) {
	if len(argv) == 1 {
		if len(d.bp) == 0 {
			d.log("No breakpoints set. Use 'b <line>' to add one.")
			return
		}
		d.log(fmt.Sprintf("%d breakpoints set:", len(d.bp)))
		for _, b := range d.bp {
			d.logSourceLine(b)
		}
		return
	}
	for _, arg := range argv[1:] {
		line, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || strconv.FormatInt(line, 10) != arg {
			d.log(fmt.Sprintf("Invalid argument:'%s'", arg))
			continue
		}
		switch {
		case line == 0:
			d.bp = d.bp[:0]
			d.log("All breakpoints removed.")
		case line > 0:
			switch {
			case len(d.bp) == ldbMaxBreakpoints:
				d.log("Too many breakpoints set.")
			case line <= int64(len(d.src)) && !d.isBreakpoint(int(line)):
				d.bp = append(d.bp, int(line))
				d.list(int(line), 1)
			default:
				d.log("Wrong line number.")
			}
		default:
			removed := false
			for i, b := range d.bp {
				if int64(b) == -line {
					d.bp = append(d.bp[:i], d.bp[i+1:]...)
					removed = true
					break
				}
			}
			if removed {
				d.log("Breakpoint removed.")
			} else {
				d.log("No breakpoint in the specified line.")
			}
		}
	}
}

func (d *Debugger) maxlenCmd(argv []string) {
	if len(argv) == 2 {
		n := atoi(argv[1])
		d.hintSent = true // the user knows about the command
		if n != 0 && n <= 60 {
			n = 60
		}
		d.maxlen = n
	}
	if d.maxlen > 0 {
		d.log(fmt.Sprintf("<value> replies are truncated at %d bytes.", d.maxlen))
	} else {
		d.log("<value> replies are unlimited.")
	}
}

// scriptFrames calls fn for each frame of the script's own code, from the
// innermost (the one that called the hook) out, with its level.
func scriptFrames(L *lua.LState, fn func(level int, dbg *lua.Debug) bool) {
	for level := 0; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return
		}
		if _, err := L.GetInfo("Snl", dbg, lua.LNil); err != nil {
			return
		}
		if dbg.What == "G" || !strings.Contains(dbg.Source, "user_script") {
			continue
		}
		if !fn(level, dbg) {
			return
		}
	}
}

// locals calls fn for each named local of the frame, the debugger's
// hidden one excepted, until fn returns false.
func locals(L *lua.LState, dbg *lua.Debug, fn func(name string, v lua.LValue) bool) {
	for i := 1; ; i++ {
		name, v := L.GetLocal(dbg, i)
		if name == "" {
			return
		}
		if name == hookLocal || strings.HasPrefix(name, "(") {
			continue
		}
		if !fn(name, v) {
			return
		}
	}
}

func (d *Debugger) print(L *lua.LState, name string) {
	found := false
	scriptFrames(L, func(_ int, dbg *lua.Debug) bool {
		locals(L, dbg, func(n string, v lua.LValue) bool {
			if n == name {
				d.logMax("<value> " + ldbRepr(v, 0))
				found = true
				return false
			}
			return true
		})
		return !found
	})
	if found {
		return
	}
	if name == "ARGV" || name == "KEYS" {
		d.logMax("<value> " + ldbRepr(d.st.real.RawGetString(name), 0))
		return
	}
	d.log("No such variable.")
}

func (d *Debugger) printAll(L *lua.LState) {
	vars := 0
	scriptFrames(L, func(_ int, dbg *lua.Debug) bool {
		locals(L, dbg, func(n string, v lua.LValue) bool {
			d.logMax("<value> " + n + " = " + ldbRepr(v, 0))
			vars++
			return true
		})
		return false // the current frame only
	})
	if vars == 0 {
		d.log("No local variables in the current context.")
	}
}

func (d *Debugger) trace(L *lua.LState) {
	n := 0
	scriptFrames(L, func(_ int, dbg *lua.Debug) bool {
		where := "From"
		if n == 0 {
			where = "In"
		}
		name := dbg.Name
		if name == "" || name == "main chunk" {
			name = "top level"
		}
		d.log(fmt.Sprintf("%s %s:", where, name))
		// The line the frame is at (the hook's frame shows the line it
		// was called for).
		line := dbg.CurrentLine
		if n == 0 {
			line = d.line
		}
		d.logSourceLine(line)
		n++
		return true
	})
	if n == 0 {
		d.log("<error> Can't retrieve Lua stack.")
	}
}

// eval runs a fragment as an expression ("return " prepended) or else as
// statements, in the script's environment, and logs its first result.
func (d *Debugger) eval(L *lua.LState, argv []string) {
	code := strings.Join(argv[1:], " ")
	proto, err := compile([]byte("return "+code), "@ldb_eval")
	if err != nil {
		proto, err = compile([]byte(code), "@ldb_eval")
		if err != nil {
			d.log("<error> " + compileErrText(err))
			return
		}
	}
	fn := L.NewFunctionFromProto(proto)
	fn.Env = d.st.env
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		d.log("<error> " + luaErrorText(err))
		return
	}
	v := L.Get(-1)
	L.Pop(1)
	d.logMax("<retval> " + ldbRepr(v, 0))
}

// luaErrorText is lua_tostring of an error object: a Redis error table
// shows its err field.
func luaErrorText(err error) string {
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		if t, ok := ae.Object.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				return string(s)
			}
		}
		if ae.Object != nil && ae.Object != lua.LNil {
			return ae.Object.String()
		}
	}
	return err.Error()
}

// redis runs a command as redis.call does from the script, logging it
// and its reply.
func (d *Debugger) redis(L *lua.LState, argv []string) {
	call := d.st.redisTable.RawGetString("call")
	L.Push(call)
	for _, a := range argv[1:] {
		L.Push(lua.LString(a))
	}
	d.step = true // redis.call logs
	_ = L.PCall(len(argv)-1, 1, nil)
	d.step = false
	L.SetTop(L.GetTop() - 1)
}

// logCommand logs a command the script calls (stepping).
func (d *Debugger) logCommand(args [][]byte) {
	var b strings.Builder
	b.WriteString("<redis>")
	for j, a := range args {
		if j == 10 {
			fmt.Fprintf(&b, " ... (%d more)", len(args)-j-1)
			break
		}
		b.WriteByte(' ')
		b.Write(a)
	}
	d.log(b.String())
}

// logReply logs a command's reply in a readable form.
func (d *Debugger) logReply(reply []byte) {
	s, _ := replyToHuman(nil, reply)
	d.logMax("<reply> " + string(s))
}

// logError logs an error the script's redis.call raises (stepping).
func (d *Debugger) logError(msg string) {
	if d.logging() {
		d.log("<error> " + msg)
	}
}

// breakpoint is redis.breakpoint().
func (d *Debugger) breakpoint() bool {
	if d == nil || !d.active {
		return false
	}
	d.luabp = true
	return true
}

// debugLog is redis.debug(...).
func (d *Debugger) debugLog(L *lua.LState) {
	if d == nil || !d.active {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<debug> line %d: ", d.line)
	n := L.GetTop()
	for i := 1; i <= n; i++ {
		b.WriteString(ldbRepr(L.Get(i), 0))
		if i != n {
			b.WriteString(", ")
		}
	}
	d.log(b.String())
}

// ldbRepr is a Lua value as the debugger shows it (ldbCatStackValue).
func ldbRepr(v lua.LValue, level int) string {
	if level == ldbMaxValueDepth {
		return "<max recursion level reached! Nested table?>"
	}
	level++
	switch v := v.(type) {
	case lua.LString:
		return string(resp.AppendRepr(nil, []byte(v)))
	case lua.LBool:
		if v {
			return "true"
		}
		return "false"
	case lua.LNumber:
		return strconv.FormatFloat(float64(v), 'g', 6, 64)
	case *lua.LNilType:
		return "nil"
	case *lua.LTable:
		var arr, full strings.Builder
		isArray, expect := true, 1
		k, val := v.Next(lua.LNil)
		for k != lua.LNil {
			if n, ok := k.(lua.LNumber); !ok || float64(n) != float64(expect) {
				isArray = false
			}
			if arr.Len() > 0 {
				arr.WriteString("; ")
				full.WriteString("; ")
			}
			arr.WriteString(ldbRepr(val, level))
			full.WriteString("[" + ldbRepr(k, level) + "]=" + ldbRepr(val, level))
			expect++
			k, val = v.Next(k)
		}
		if isArray {
			return "{" + arr.String() + "}"
		}
		return "{" + full.String() + "}"
	case *lua.LFunction:
		return fmt.Sprintf("\"function@%p\"", v)
	case *lua.LUserData:
		return fmt.Sprintf("\"userdata@%p\"", v)
	case *lua.LState:
		return fmt.Sprintf("\"thread@%p\"", v)
	}
	return "\"<unknown-lua-type>\""
}

// replyToHuman appends the RESP reply at the start of r in the
// debugger's readable form and returns the rest of r
// (ldbRedisProtocolToHuman).
func replyToHuman(o, r []byte) ([]byte, []byte) {
	if len(r) == 0 {
		return o, r
	}
	end := indexCRLF(r)
	if end < 0 {
		return o, nil
	}
	head, rest := r[1:end], r[end+2:]
	switch r[0] {
	case ':':
		return append(o, head...), rest
	case '$':
		n, _ := strconv.Atoi(string(head))
		if n < 0 {
			return append(o, "NULL"...), rest
		}
		if n+2 > len(rest) {
			return resp.AppendRepr(o, rest), nil
		}
		return resp.AppendRepr(o, rest[:n]), rest[n+2:]
	case '+', '-':
		return resp.AppendRepr(o, r[:end]), rest
	case '*', '~':
		n, _ := strconv.Atoi(string(head))
		if r[0] == '*' && n < 0 {
			return append(o, "NULL"...), rest
		}
		open, close := "[", "]"
		if r[0] == '~' {
			open, close = "~(", ")"
		}
		o = append(o, open...)
		for j := 0; j < n; j++ {
			o, rest = replyToHuman(o, rest)
			if j != n-1 {
				o = append(o, ',')
			}
		}
		return append(o, close...), rest
	case '%':
		n, _ := strconv.Atoi(string(head))
		o = append(o, '{')
		for j := 0; j < n; j++ {
			o, rest = replyToHuman(o, rest)
			o = append(o, " => "...)
			o, rest = replyToHuman(o, rest)
			if j != n-1 {
				o = append(o, ',')
			}
		}
		return append(o, '}'), rest
	case '_':
		return append(o, "(null)"...), rest
	case '#':
		if len(head) > 0 && head[0] == 't' {
			return append(o, "#true"...), rest
		}
		return append(o, "#false"...), rest
	case ',':
		return append(append(o, "(double) "...), head...), rest
	}
	return o, rest
}

func indexCRLF(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return i
		}
	}
	return -1
}

// ExecDebug runs s under the debugger d (an EVAL after SCRIPT DEBUG
// YES|SYNC) and appends its reply to out. The caller has started the
// session (Start) and ends it (End).
func (e *Engine) ExecDebug(s *Script, d *Debugger, run *Run, out []byte) []byte {
	_, skip, _ := ParseShebang(s.Body)
	proto, err := compileDebug(s.Body[skip:], "user_script")
	if err != nil {
		// The same source compiled without the hooks (Load).
		return appendErrorReply(out, "ERR Error compiling script (new function): "+compileErrText(err))
	}
	if e.eval == nil {
		e.eval = newState(e, false)
	}
	st := e.eval
	fn := st.L.NewFunctionFromProto(proto)
	fn.Env = st.env
	st.keys.fill(st, run.Keys)
	st.argv.fill(st, run.Args)
	if run.Name == "" {
		run.Name = s.SHA
	}
	d.st = st
	d.start = time.Now()
	st.dbg = d
	out = st.call(fn, run, []lua.LValue{st.L.NewFunction(d.hook)}, out)
	st.dbg = nil
	st.keys.reset(st, len(run.Keys))
	st.argv.reset(st, len(run.Args))
	return out
}
