// Command difffuzz sends the same random command sequences to a real
// redis-server and to shardnode and reports every reply that differs.
//
// The commands come from redis-server's own COMMAND DOCS: each argument
// is filled by its documented type (key, string, integer, double,
// pattern, unix-time, pure-token, oneof, block; optional and multiple
// flags honoured) from small pools, so keys collide across types and
// values hit the edges (empty, negative, int64 limits, inf, junk). A
// share of the commands is mutated (an argument dropped or a junk one
// added) to exercise the error paths. Commands whose replies legitimately
// differ (INFO, CLIENT, time, randomness, cursors, encodings) are left
// out; replies of unordered collections are compared sorted.
//
// A divergence is shrunk (commands removed while it persists) and
// printed as a redis-cli-quoted sequence with both replies. The same seed
// gives the same sequences.
//
// With -resp3 both connections send HELLO 3 first, so the replies
// compared are RESP3's (maps, sets, doubles, nulls, verbatim strings:
// the type byte is part of the comparison). With -multi P, P percent of
// the sequences are sent inside MULTI ... EXEC: the queueing replies and
// each element of EXEC's reply are compared, and a divergence is shrunk
// inside its transaction (a seed's sequences do not change with -multi).
//
//	difffuzz -redis 127.0.0.1:6379 -shardnode 127.0.0.1:6380 [-seed N] [-cases N] [-len N] [-resp3] [-multi P]
//
// scripts/difffuzz.sh starts both servers on loopback and runs it. Never
// point it at a server holding data: every case begins with FLUSHALL.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// arg is one documented argument of a command (COMMAND DOCS).
type arg struct {
	name, typ, token string
	optional         bool
	multiple         bool
	multipleToken    bool
	children         []*arg
}

// cmdDoc is one command or subcommand: its words ("xgroup", "create")
// and arguments.
type cmdDoc struct {
	words []string
	args  []*arg
}

// skip lists the commands left out, lower-case, with "|sub" for one
// subcommand; the value says why.
var skip = map[string]string{
	"acl": "changes users", "auth": "", "bgrewriteaof": "background", "bgsave": "background",
	"client": "connection ids and timings", "cluster": "cluster mode", "command": "large, covered by its own tests",
	"config": "server-specific values", "debug": "disabled by default", "dump": "encoding-specific payloads",
	"eval": "Lua texts", "eval_ro": "Lua texts", "evalsha": "Lua", "evalsha_ro": "Lua", "fcall": "Lua", "fcall_ro": "Lua",
	"function": "Lua", "script": "Lua", "failover": "replication", "hello": "server info", "info": "server info",
	"lastsave": "time", "latency": "timings", "lolwut": "version text", "memory": "allocator figures",
	"migrate": "network", "module": "modules", "monitor": "stream of commands", "object": "encodings and clocks",
	"psync": "replication", "replconf": "replication", "replicaof": "replication", "slaveof": "replication",
	"role": "replication offsets", "save": "disk", "shutdown": "stops the server", "slowlog": "timings",
	"sync": "replication", "time": "clock", "wait": "replication", "waitaof": "7.2", "quit": "closes the connection",
	"randomkey": "random", "spop": "random", "srandmember": "random", "hrandfield": "random", "zrandmember": "random",
	"scan": "cursors", "sscan": "cursors", "hscan": "cursors", "zscan": "cursors",
	"subscribe": "pub/sub mode", "psubscribe": "pub/sub mode", "ssubscribe": "pub/sub mode",
	"unsubscribe": "pub/sub mode", "punsubscribe": "pub/sub mode", "sunsubscribe": "pub/sub mode",
	"readonly": "cluster mode", "readwrite": "cluster mode", "asking": "cluster mode",
	"xinfo": "idle times and internals", "xpending": "idle times", "xclaim": "idle times", "xautoclaim": "idle times",
	"pfdebug": "debug", "pfselftest": "slow", "reset": "resets the connection", "select": "fine, but splits the keyspace",
	"swapdb": "", "move": "", "flushall": "run by the harness", "flushdb": "run by the harness",
	"discard": "", "watch": "", "unwatch": "", "multi": "", "exec": "",
}

// unordered names the commands whose array replies are sets: compared
// sorted (pairs, for the *pairs ones).
var unordered = map[string]bool{
	"keys": true, "smembers": true, "sinter": true, "sunion": true, "sdiff": true,
	"hkeys": true, "hvals": true,
}
var unorderedPairs = map[string]bool{"hgetall": true}

// lastTimeout names the blocking commands whose last argument is the
// timeout.
var lastTimeout = map[string]bool{
	"blpop": true, "brpop": true, "brpoplpush": true, "blmove": true, "bzpopmin": true, "bzpopmax": true,
}

// ttlLike replies hold clock-dependent figures: a positive integer is
// compared as "positive".
var ttlLike = map[string]bool{"ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true}

var (
	keys    = []string{"k1", "k2", "k3", "{t}a", "{t}b"}
	strs    = []string{"", "a", "b", "foo", "bar", "1", "0", "-1", "3.5", "10", "+inf", "-inf", "x y", "abc"}
	ints    = []string{"0", "1", "2", "3", "5", "-1", "-2", "10", "100", "9223372036854775807", "-9223372036854775808", "abc", "1.5", ""}
	doubles = []string{"0", "1", "1.5", "-2.5", "10", "+inf", "-inf", "inf", "nan", "abc", "1e3", "-0", "0x10", "3"}
	pats    = []string{"*", "k*", "?", "{t}*", "[a-k]*", "\\*", "x"}
	times   = []string{"0", "1", "2000000000", "-1", "abc", "4102444800"}
	ids     = []string{"1-1", "2-0", "5", "5-*", "0-1", "3-3", "9999999999999-1", "0", "-", "+", "$", ">", "abc", "1-0"}
	// small bounds the numbers a few arguments get, so no case asks for
	// gigabytes (SETRANGE offsets, BITFIELD offsets, counts).
	small = []string{"0", "1", "2", "3", "7", "-1", "abc", "100"}
)

// gen generates one case's commands.
type gen struct {
	r    *rand.Rand
	cmds []*cmdDoc
}

func (g *gen) pick(p []string) string { return p[g.r.Intn(len(p))] }

func (g *gen) value(c *cmdDoc, a *arg) string {
	n := strings.ToLower(a.name)
	cmd := c.words[0]
	switch {
	case n == "milliseconds" && (cmd == "xread" || cmd == "xreadgroup"):
		return g.pick([]string{"10", "-1", "abc"})
	case n == "milliseconds" || n == "seconds" || n == "unix-time-seconds" || n == "unix-time-milliseconds":
		// Long enough that no key expires during a case (a 1 ms TTL
		// races the two servers' clocks).
		return g.pick([]string{"100000", "5000000", "0", "-1", "abc", "9223372036854775807"})
	case strings.Contains(n, "timeout"):
		return g.pick([]string{"0.01", "0.02", "-1", "abc"})
	case n == "id" || strings.HasSuffix(n, "-id") || n == "start" && strings.HasPrefix(cmd, "x") || n == "end" && strings.HasPrefix(cmd, "x") || n == "threshold" && cmd == "xadd" || n == "threshold" && cmd == "xtrim":
		if n == "threshold" {
			return g.pick(append([]string{"0", "1", "2", "10"}, ids[:6]...))
		}
		return g.pick(ids)
	case n == "offset" && (cmd == "setrange" || cmd == "setbit" || cmd == "getbit" || strings.HasPrefix(cmd, "bitfield")):
		return g.pick(append([]string{"#1", "u8"}, small...))
	case n == "count" || n == "numkeys" || n == "len" || n == "bit" || n == "num":
		return g.pick(small)
	case n == "encoding" && strings.HasPrefix(cmd, "bitfield"):
		return g.pick([]string{"u8", "i8", "u1", "i64", "u63", "u64", "x8", "i5"})
	case strings.Contains(n, "latitude"):
		return g.pick([]string{"0", "45", "-85.05112878", "86", "abc", "10.5"})
	case strings.Contains(n, "longitude"):
		return g.pick([]string{"0", "13.361389", "-180", "181", "abc"})
	case n == "unit":
		return g.pick([]string{"m", "km", "mi", "ft", "xx"})
	case n == "serialized-value":
		return g.pick([]string{"", "abc", "\x00\x01"})
	case n == "channel" || n == "shardchannel" || n == "message":
		return g.pick(strs)
	}
	switch a.typ {
	case "key":
		return g.pick(keys)
	case "integer":
		return g.pick(ints)
	case "double":
		return g.pick(doubles)
	case "pattern":
		return g.pick(pats)
	case "unix-time":
		return g.pick(times)
	default:
		return g.pick(strs)
	}
}

// emit appends the words of argument a (and its token) to out.
func (g *gen) emit(c *cmdDoc, a *arg, out []string) []string {
	if a.optional && g.r.Intn(100) < 55 {
		return out
	}
	n := 1
	if a.multiple {
		n = 1 + g.r.Intn(3)
	}
	for i := 0; i < n; i++ {
		if a.token != "" && a.typ != "pure-token" && (i == 0 || a.multipleToken) {
			out = append(out, a.token)
		}
		switch a.typ {
		case "pure-token":
			out = append(out, a.token)
		case "oneof":
			if len(a.children) > 0 {
				ch := *a.children[g.r.Intn(len(a.children))]
				ch.optional = false
				out = g.emit(c, &ch, out)
			}
		case "block":
			for _, ch := range a.children {
				out = g.emit(c, ch, out)
			}
		default:
			out = append(out, g.value(c, a))
		}
	}
	return out
}

func (g *gen) command() []string {
	c := g.cmds[g.r.Intn(len(g.cmds))]
	out := append([]string(nil), c.words...)
	for _, a := range c.args {
		out = g.emit(c, a, out)
	}
	// XADD's auto id is the clock: give it an explicit one.
	if out[0] == "xadd" {
		for i := 2; i < len(out); i++ {
			if out[i] == "*" {
				out[i] = g.pick(ids[:7])
				break
			}
		}
	}
	switch m := g.r.Intn(100); {
	case m < 5 && len(out) > 1:
		out = out[:len(out)-1]
	case m < 10:
		out = append(out, g.pick(strs))
		// The last argument of BLPOP and its kin is the timeout: a
		// junk "0" or "10" there blocks both servers for good or for
		// 10 s, past the read deadline. Make it a short one.
		if lastTimeout[out[0]] {
			if _, err := strconv.ParseFloat(out[len(out)-1], 64); err == nil {
				out[len(out)-1] = "0.01"
			}
		}
	}
	return out
}

// conn is one RESP2 connection.
type conn struct {
	c  net.Conn
	br *bufio.Reader
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("difffuzz: %w", err)
	}
	return &conn{c: c, br: bufio.NewReader(c)}, nil
}

func (c *conn) do(args []string) (resp.Value, error) {
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(resp.AppendCommandStrings(nil, args...)); err != nil {
		return resp.Value{}, fmt.Errorf("difffuzz: %w", err)
	}
	v, err := resp.ReadValue(c.br)
	if err != nil {
		return v, fmt.Errorf("difffuzz: %w", err)
	}
	return v, nil
}

// sortUnordered reports whether a SORT or SORT_RO's reply may follow the
// key's own order, which for a set is its hash table's: BY a pattern
// without '*' skips sorting (Redis's dontsort; redis-server 7.0 forces
// ALPHA only with STORE or inside a script), and ALPHA BY a pattern
// leaves elements with equal (or missing) BY values in the order they
// came (sortCompare has no tie-break there, unlike the numeric sort).
// The reply is then compared sorted, which for a list or a sorted set
// loses the order check of these cases.
func sortUnordered(args []string) bool {
	if args[0] != "sort" && args[0] != "sort_ro" {
		return false
	}
	dontsort, alpha, by := false, false, false
	for i := 2; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "store":
			return false
		case "alpha":
			alpha = true
		case "by":
			if i+1 < len(args) {
				by = true
				if !strings.Contains(args[i+1], "*") {
					dontsort = true
				}
			}
		}
	}
	return dontsort || alpha && by
}

// canon renders v, the reply to args, for comparison, normalised for the
// command.
func canon(args []string, v resp.Value) string {
	cmd := args[0]
	if ttlLike[cmd] && v.Type == ':' && v.Int > 0 {
		return ":positive"
	}
	if (v.Type == '*' || v.Type == '~' || v.Type == '%') && !v.Null && (unordered[cmd] || unorderedPairs[cmd] || sortUnordered(args)) {
		var parts []string
		step := 1
		if unorderedPairs[cmd] {
			step = 2
		}
		for i := 0; i+step <= len(v.Elems); i += step {
			s := ""
			for j := 0; j < step; j++ {
				s += render(v.Elems[i+j]) + " "
			}
			parts = append(parts, s)
		}
		sort.Strings(parts)
		return string(v.Type) + "sorted[" + strings.Join(parts, ",") + "]"
	}
	return render(v)
}

func render(v resp.Value) string {
	switch {
	case v.Null:
		return string(v.Type) + "nil"
	case v.Type == ':':
		return ":" + strconv.FormatInt(v.Int, 10)
	case v.Type == '*' || v.Type == '%' || v.Type == '~' || v.Type == '>':
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = render(e)
		}
		return string(v.Type) + "[" + strings.Join(parts, ",") + "]"
	default:
		return string(v.Type) + strconv.Quote(v.Str)
	}
}

// pair holds one connection to each server; broken is set when
// shardnode's connection failed (a hang or a crash), and the next run
// reconnects first. With resp3 set every connection starts with HELLO 3.
type pair struct {
	a, b              *conn
	broken            bool
	resp3             bool
	redisAddr, snAddr string
}

// run replays seq on both after a FLUSHALL and returns the index of the
// first differing reply (-1: none) and both replies there. With multi
// set the sequence is sent inside MULTI ... EXEC: a differing queueing
// reply is reported at its command, and a differing element of EXEC's
// reply at the command it answers (a differing EXEC reply of another
// shape at the last command).
func (p *pair) run(seq [][]string, multi bool) (int, string, string, error) {
	if p.broken {
		p.reconnect()
		p.broken = false
	}
	for _, c := range []*conn{p.a, p.b} {
		if _, err := c.do([]string{"flushall"}); err != nil {
			return -1, "", "", err
		}
	}
	if multi {
		for _, c := range []*conn{p.a, p.b} {
			if _, err := c.do([]string{"multi"}); err != nil {
				return -1, "", "", err
			}
		}
	}
	// queued lists the commands a MULTI queued, in EXEC's reply order.
	var queued []int
	for i, args := range seq {
		va, err := p.a.do(args)
		if err != nil {
			return -1, "", "", fmt.Errorf("%s: %w", quote(args), err)
		}
		vb, err := p.b.do(args)
		if err != nil {
			p.broken = true
			return i, canon(args, va), "connection error: " + err.Error(), nil
		}
		ca, cb := canon(args, va), canon(args, vb)
		if ca != cb {
			if multi {
				p.broken = true // leave no transaction open
			}
			return i, ca, cb, nil
		}
		if multi && va.Type == '+' && va.Str == "QUEUED" {
			queued = append(queued, i)
		}
	}
	if !multi {
		return -1, "", "", nil
	}
	va, err := p.a.do([]string{"exec"})
	if err != nil {
		return -1, "", "", err
	}
	vb, err := p.b.do([]string{"exec"})
	if err != nil {
		p.broken = true
		return len(seq) - 1, render(va), "connection error: " + err.Error(), nil
	}
	if va.Type == '*' && vb.Type == '*' && !va.Null && !vb.Null && len(va.Elems) == len(queued) && len(vb.Elems) == len(queued) {
		for j, i := range queued {
			ca, cb := canon(seq[i], va.Elems[j]), canon(seq[i], vb.Elems[j])
			if ca != cb {
				return i, "EXEC element " + ca, "EXEC element " + cb, nil
			}
		}
		return -1, "", "", nil
	}
	if ca, cb := render(va), render(vb); ca != cb {
		return len(seq) - 1, "EXEC " + ca, "EXEC " + cb, nil
	}
	return -1, "", "", nil
}

// shrink removes commands from seq[:upto+1] while the divergence stays at
// the last command.
func (p *pair) shrink(seq [][]string, multi bool) ([][]string, string, string) {
	cur := append([][]string(nil), seq...)
	_, ra, rb, _ := p.run(cur, multi)
	for i := len(cur) - 2; i >= 0; i-- {
		try := append(append([][]string(nil), cur[:i]...), cur[i+1:]...)
		at, a, b, err := p.run(try, multi)
		if err != nil {
			p.reconnect()
			continue
		}
		if at == len(try)-1 {
			cur, ra, rb = try, a, b
		}
	}
	return cur, ra, rb
}

func (p *pair) reconnect() {
	if p.a != nil {
		p.a.c.Close()
	}
	if p.b != nil {
		p.b.c.Close()
	}
	var err error
	if p.a, err = dial(p.redisAddr); err != nil {
		fatal(err)
	}
	if p.b, err = dial(p.snAddr); err != nil {
		fatal(err)
	}
	if !p.resp3 {
		return
	}
	for _, c := range []*conn{p.a, p.b} {
		v, err := c.do([]string{"hello", "3"})
		if err != nil {
			fatal(err)
		}
		if v.IsError() {
			fatal(fmt.Errorf("difffuzz: HELLO 3 at %s: %s", c.c.RemoteAddr(), v.Str))
		}
	}
}

func quote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"\\\x00") || strings.IndexFunc(a, func(r rune) bool { return r < 32 || r > 126 }) >= 0 {
			q[i] = strconv.Quote(a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

// loadDocs reads COMMAND DOCS from addr.
func loadDocs(c *conn) ([]*cmdDoc, error) {
	v, err := c.do([]string{"command", "docs"})
	if err != nil {
		return nil, err
	}
	var out []*cmdDoc
	for i := 0; i+1 < len(v.Elems); i += 2 {
		name := strings.ToLower(v.Elems[i].Str)
		out = append(out, docsOf(name, v.Elems[i+1])...)
	}
	if len(out) == 0 {
		return nil, errors.New("difffuzz: COMMAND DOCS returned nothing")
	}
	sort.Slice(out, func(i, j int) bool { return strings.Join(out[i].words, " ") < strings.Join(out[j].words, " ") })
	return out, nil
}

func field(m resp.Value, k string) (resp.Value, bool) {
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if m.Elems[i].Str == k {
			return m.Elems[i+1], true
		}
	}
	return resp.Value{}, false
}

func docsOf(name string, doc resp.Value) []*cmdDoc {
	if _, ok := skip[name]; ok {
		return nil
	}
	if subs, ok := field(doc, "subcommands"); ok {
		var out []*cmdDoc
		for i := 0; i+1 < len(subs.Elems); i += 2 {
			full := strings.ToLower(subs.Elems[i].Str)
			if _, ok := skip[full]; ok || strings.HasSuffix(full, "|help") {
				continue
			}
			words := strings.SplitN(full, "|", 2)
			out = append(out, &cmdDoc{words: words, args: argsOf(subs.Elems[i+1])})
		}
		return out
	}
	return []*cmdDoc{{words: []string{name}, args: argsOf(doc)}}
}

func argsOf(doc resp.Value) []*arg {
	av, ok := field(doc, "arguments")
	if !ok {
		return nil
	}
	var out []*arg
	for _, e := range av.Elems {
		a := &arg{}
		if s, ok := field(e, "name"); ok {
			a.name = s.Str
		}
		if s, ok := field(e, "type"); ok {
			a.typ = s.Str
		}
		if s, ok := field(e, "token"); ok {
			a.token = s.Str
		}
		if fl, ok := field(e, "flags"); ok {
			for _, f := range fl.Elems {
				switch f.Str {
				case "optional":
					a.optional = true
				case "multiple":
					a.multiple = true
				case "multiple_token":
					a.multipleToken = true
				}
			}
		}
		a.children = argsOf(e)
		out = append(out, a)
	}
	return out
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

func main() {
	redisAddr := flag.String("redis", "127.0.0.1:6379", "redis-server address (its data is flushed)")
	snAddr := flag.String("shardnode", "127.0.0.1:6380", "shardnode address (its data is flushed)")
	seed := flag.Int64("seed", 1, "random seed")
	cases := flag.Int("cases", 2000, "sequences to run")
	length := flag.Int("len", 25, "commands per sequence")
	only := flag.String("only", "", "comma-separated command names to draw from (default: all documented)")
	maxReports := flag.Int("max", 40, "stop after this many distinct divergences")
	resp3 := flag.Bool("resp3", false, "send HELLO 3 on both connections first (RESP3 replies)")
	multiPct := flag.Int("multi", 0, "percentage of sequences sent inside MULTI ... EXEC")
	flag.Parse()

	p := pair{redisAddr: *redisAddr, snAddr: *snAddr, resp3: *resp3}
	p.reconnect()
	docs, err := loadDocs(p.a)
	if err != nil {
		fatal(err)
	}
	if *only != "" {
		want := map[string]bool{}
		for _, w := range strings.Split(*only, ",") {
			want[strings.ToLower(w)] = true
		}
		var keep []*cmdDoc
		for _, d := range docs {
			if want[d.words[0]] || want[strings.Join(d.words, "|")] {
				keep = append(keep, d)
			}
		}
		docs = keep
	}
	proto := 2
	if *resp3 {
		proto = 3
	}
	fmt.Printf("difffuzz: %d commands and subcommands, seed %d, %d cases of %d, RESP%d, %d%% in MULTI\n", len(docs), *seed, *cases, *length, proto, *multiPct)
	g := &gen{r: rand.New(rand.NewSource(*seed)), cmds: docs}
	// modes draws which sequences go inside MULTI from its own source, so
	// a seed's command sequences are the same with and without -multi.
	modes := rand.New(rand.NewSource(*seed))
	seen := map[string]bool{}
	reports, sent := 0, 0
	start := time.Now()
	for n := 0; n < *cases && reports < *maxReports; n++ {
		seq := make([][]string, *length)
		for i := range seq {
			seq[i] = g.command()
		}
		multi := modes.Intn(100) < *multiPct
		at, _, _, err := p.run(seq, multi)
		sent += *length
		if err != nil {
			fmt.Printf("case %d: %v (reconnecting)\n", n, err)
			p.reconnect()
			continue
		}
		if at < 0 {
			continue
		}
		small, ra, rb := p.shrink(seq[:at+1], multi)
		last := small[len(small)-1]
		sig := strings.Join(last[:min(2, len(last))], " ")
		if multi {
			sig = "(in MULTI) " + sig
		}
		if seen[sig] {
			continue
		}
		seen[sig] = true
		reports++
		fmt.Printf("\n### divergence %d (case %d): %s\n", reports, n, sig)
		if multi {
			fmt.Printf("  MULTI\n")
		}
		for _, c := range small {
			fmt.Printf("  %s\n", quote(c))
		}
		if multi {
			fmt.Printf("  EXEC\n")
		}
		fmt.Printf("  redis-server: %s\n  shardnode:    %s\n", ra, rb)
	}
	fmt.Printf("\ndifffuzz: %d commands sent in %.1f s, %d distinct divergences\n", sent, time.Since(start).Seconds(), reports)
	if reports > 0 {
		os.Exit(1)
	}
}
