package runner

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/sentinel"
)

var clientIDs atomic.Int64

// client is a connection to our Sentinel port.
type client struct {
	conn   net.Conn
	id     int64
	wmu    sync.Mutex    // guards w; taken after Runner.mu, never before
	w      *bufio.Writer // buffered replies
	authed bool          // AUTH done (or no requirepass)
	user   string        // authenticated user
	// closeAfterReply: CLIENT KILL matched this client itself.
	closeAfterReply bool
	name            string // CLIENT SETNAME
	// Guarded by Runner.mu: read by publishers.
	proto int             // 2 or 3 (HELLO)
	subs  map[string]bool // SUBSCRIBE channels
	psubs map[string]bool // PSUBSCRIBE patterns
}

// subCount needs Runner.mu.
func (c *client) subCount() int { return len(c.subs) + len(c.psubs) }

// state returns proto and subscription count.
func (r *Runner) state(c *client) (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return c.proto, c.subCount()
}

func (r *Runner) acceptLoop(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		c := &client{conn: conn, id: clientIDs.Add(1), w: bufio.NewWriter(conn), proto: 2,
			authed: r.defaultAuthed(), user: "default", subs: map[string]bool{}, psubs: map[string]bool{}}
		r.mu.Lock()
		r.clients[c] = true
		r.mu.Unlock()
		go r.serve(c)
	}
}

func (r *Runner) serve(c *client) {
	defer func() {
		r.mu.Lock()
		delete(r.clients, c)
		r.mu.Unlock()
		c.conn.Close()
	}()
	rd := resp.NewReader(c.conn, resp.ReaderOptions{})
	for {
		args, err := rd.Next()
		if err == resp.ErrIncomplete {
			// Flush replies before blocking for more input.
			c.wmu.Lock()
			ferr := c.w.Flush()
			c.wmu.Unlock()
			if ferr != nil {
				return
			}
			if err = rd.Fill(); err == nil {
				continue
			}
		}
		if err != nil {
			if pe, ok := err.(*resp.ProtocolError); ok {
				c.wmu.Lock()
				c.w.Write(resp.AppendError(nil, pe.Error()))
				c.w.Flush()
				c.wmu.Unlock()
			}
			return
		}
		if len(args) == 0 {
			continue
		}
		sargs := make([]string, len(args))
		for i, a := range args {
			sargs[i] = string(a)
		}
		b, quit := r.dispatch(c, sargs)
		quit = quit || c.closeAfterReply
		c.wmu.Lock()
		c.w.Write(b)
		if quit {
			c.w.Flush()
		}
		c.wmu.Unlock()
		if quit {
			return
		}
	}
}

// publishLocked delivers a message to subscribed clients (r.mu held).
func (r *Runner) publishLocked(channel, msg string) int {
	n := 0
	for c := range r.clients {
		c.wmu.Lock()
		var b []byte
		if c.subs[channel] {
			b = resp.AppendPushLen(b, c.proto, 3)
			b = resp.AppendBulkString(b, "message")
			b = resp.AppendBulkString(b, channel)
			b = resp.AppendBulkString(b, msg)
			n++
		}
		for p := range c.psubs {
			if ok, _ := path.Match(p, channel); ok {
				b = resp.AppendPushLen(b, c.proto, 4)
				b = resp.AppendBulkString(b, "pmessage")
				b = resp.AppendBulkString(b, p)
				b = resp.AppendBulkString(b, channel)
				b = resp.AppendBulkString(b, msg)
				n++
			}
		}
		if len(b) > 0 {
			c.w.Write(b)
			c.w.Flush()
		}
		c.wmu.Unlock()
	}
	return n
}

func errArity(cmd string) string {
	return fmt.Sprintf("ERR wrong number of arguments for '%s' command", strings.ToLower(cmd))
}

// dispatch runs one command and returns the reply.
func (r *Runner) dispatch(c *client, args []string) ([]byte, bool) {
	cmd := strings.ToUpper(args[0])
	var b []byte
	if !c.authed && cmd != "AUTH" && cmd != "HELLO" && cmd != "QUIT" {
		return resp.AppendError(b, "NOAUTH Authentication required."), false
	}
	proto, nsubs := r.state(c)
	if nsubs > 0 && proto == 2 {
		switch cmd {
		case "SUBSCRIBE", "PSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "PING", "QUIT", "RESET":
		default:
			return resp.AppendError(b, fmt.Sprintf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", strings.ToLower(args[0]))), false
		}
	}
	switch cmd {
	case "PING":
		if nsubs > 0 && proto == 2 {
			b = resp.AppendArrayLen(b, 2)
			b = resp.AppendBulkString(b, "pong")
			if len(args) > 1 {
				return resp.AppendBulkString(b, args[1]), false
			}
			return resp.AppendBulkString(b, ""), false
		}
		if len(args) > 2 {
			return resp.AppendError(b, errArity(cmd)), false
		}
		if len(args) == 2 {
			return resp.AppendBulkString(b, args[1]), false
		}
		return resp.AppendSimple(b, "PONG"), false
	case "ECHO":
		if len(args) != 2 {
			return resp.AppendError(b, errArity(cmd)), false
		}
		return resp.AppendBulkString(b, args[1]), false
	case "QUIT":
		return resp.AppendOK(b), true
	case "AUTH":
		return r.cmdAuth(c, args), false
	case "HELLO":
		return r.cmdHello(c, args), false
	case "CLIENT":
		return r.cmdClient(c, args), false
	case "INFO":
		return r.cmdInfo(c, args), false
	case "ROLE":
		r.mu.Lock()
		names := r.m.MasterNames()
		r.mu.Unlock()
		b = resp.AppendArrayLen(b, 2)
		b = resp.AppendBulkString(b, "sentinel")
		b = resp.AppendArrayLen(b, len(names))
		for _, n := range names {
			b = resp.AppendBulkString(b, n)
		}
		return b, false
	case "SUBSCRIBE", "PSUBSCRIBE":
		if len(args) < 2 {
			return resp.AppendError(b, errArity(cmd)), false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		set, kind := c.subs, "subscribe"
		if cmd == "PSUBSCRIBE" {
			set, kind = c.psubs, "psubscribe"
		}
		for _, ch := range args[1:] {
			set[ch] = true
			b = resp.AppendPushLen(b, c.proto, 3)
			b = resp.AppendBulkString(b, kind)
			b = resp.AppendBulkString(b, ch)
			b = resp.AppendInt(b, int64(c.subCount()))
		}
		c.wmu.Lock() // written under Runner.mu so no message overtakes it
		c.w.Write(b)
		c.wmu.Unlock()
		return nil, false
	case "UNSUBSCRIBE", "PUNSUBSCRIBE":
		r.mu.Lock()
		defer r.mu.Unlock()
		set, kind := c.subs, "unsubscribe"
		if cmd == "PUNSUBSCRIBE" {
			set, kind = c.psubs, "punsubscribe"
		}
		chans := args[1:]
		if len(chans) == 0 {
			for ch := range set {
				chans = append(chans, ch)
			}
		}
		if len(chans) == 0 {
			b = resp.AppendPushLen(b, c.proto, 3)
			b = resp.AppendBulkString(b, kind)
			b = resp.AppendNull(b, c.proto)
			return resp.AppendInt(b, 0), false
		}
		for _, ch := range chans {
			delete(set, ch)
			b = resp.AppendPushLen(b, c.proto, 3)
			b = resp.AppendBulkString(b, kind)
			b = resp.AppendBulkString(b, ch)
			b = resp.AppendInt(b, int64(c.subCount()))
		}
		return b, false
	case "PUBLISH":
		if len(args) != 3 {
			return resp.AppendError(b, errArity(cmd)), false
		}
		if args[1] != helloChannel {
			return resp.AppendError(b, "ERR Only HELLO messages are accepted by Sentinel instances."), false
		}
		r.step(sentinel.HelloReceived{Payload: args[2]})
		return resp.AppendInt(b, 1), false
	case "SENTINEL":
		return r.cmdSentinel(c, args), false
	case "ACL":
		return r.cmdACL(c, args), false
	case "SHUTDOWN":
		r.log.Warn("sentinel: SHUTDOWN requested")
		r.flushConfig()
		go r.stop()
		return resp.AppendOK(b), true
	case "COMMAND":
		return cmdCommand(args), false
	}
	return resp.AppendError(b, fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", args[0], quoteArgs(args[1:]))), false
}

func quoteArgs(a []string) string {
	var s strings.Builder
	for _, x := range a {
		fmt.Fprintf(&s, "'%s' ", x)
	}
	return s.String()
}

func (r *Runner) cmdAuth(c *client, args []string) []byte {
	var user, pass string
	switch len(args) {
	case 2:
		pass = args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		return resp.AppendError(nil, errArity("auth"))
	}
	if len(args) == 2 && r.defaultAuthed() && r.file.RequirePass == "" {
		return resp.AppendError(nil, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	}
	if !r.checkPass(user, pass) {
		return resp.AppendError(nil, "WRONGPASS invalid username-password pair or user is disabled.")
	}
	c.authed = true
	c.user = user
	if user == "" {
		c.user = "default"
	}
	return resp.AppendOK(nil)
}

func (r *Runner) cmdHello(c *client, args []string) []byte {
	proto := c.proto
	if len(args) > 1 {
		p, err := strconv.Atoi(args[1])
		if err != nil {
			return resp.AppendError(nil, "ERR Protocol version is not an integer or out of range")
		}
		if p != 2 && p != 3 {
			return resp.AppendError(nil, "NOPROTO unsupported protocol version")
		}
		proto = p
		for i := 2; i < len(args); i++ {
			switch strings.ToUpper(args[i]) {
			case "AUTH":
				if i+2 >= len(args) {
					return resp.AppendError(nil, "ERR Syntax error in HELLO option 'auth'")
				}
				if !r.checkPass(args[i+1], args[i+2]) {
					return resp.AppendError(nil, "WRONGPASS invalid username-password pair or user is disabled.")
				}
				c.authed, c.user = true, args[i+1]
				i += 2
			case "SETNAME":
				if i+1 >= len(args) {
					return resp.AppendError(nil, "ERR Syntax error in HELLO option 'setname'")
				}
				c.name = args[i+1]
				i++
			default:
				return resp.AppendError(nil, fmt.Sprintf("ERR Syntax error in HELLO option '%s'", args[i]))
			}
		}
	}
	if !c.authed {
		return resp.AppendError(nil, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	}
	r.mu.Lock()
	c.proto = proto
	r.mu.Unlock()
	b := resp.AppendMapLen(nil, proto, 7)
	b = resp.AppendBulkString(b, "server")
	b = resp.AppendBulkString(b, "redis")
	b = resp.AppendBulkString(b, "version")
	b = resp.AppendBulkString(b, redisVersion)
	b = resp.AppendBulkString(b, "proto")
	b = resp.AppendInt(b, int64(proto))
	b = resp.AppendBulkString(b, "id")
	b = resp.AppendInt(b, c.id)
	b = resp.AppendBulkString(b, "mode")
	b = resp.AppendBulkString(b, "sentinel")
	b = resp.AppendBulkString(b, "role")
	b = resp.AppendBulkString(b, "sentinel")
	b = resp.AppendBulkString(b, "modules")
	return resp.AppendArrayLen(b, 0)
}

const redisVersion = "7.0.15"

func (r *Runner) cmdClient(c *client, args []string) []byte {
	if len(args) < 2 {
		return resp.AppendError(nil, errArity("client"))
	}
	switch strings.ToUpper(args[1]) {
	case "SETNAME":
		if len(args) != 3 {
			return resp.AppendError(nil, errArity("client|setname"))
		}
		c.name = args[2]
		return resp.AppendOK(nil)
	case "GETNAME":
		if c.name == "" {
			proto, _ := r.state(c)
			return resp.AppendNull(nil, proto)
		}
		return resp.AppendBulkString(nil, c.name)
	case "ID":
		return resp.AppendInt(nil, c.id)
	case "SETINFO":
		return resp.AppendOK(nil)
	case "INFO":
		return resp.AppendBulkString(nil, r.clientLine(c)+"\n")
	case "LIST":
		r.mu.Lock()
		var s strings.Builder
		for o := range r.clients {
			s.WriteString(r.clientLine(o) + "\n")
		}
		r.mu.Unlock()
		return resp.AppendBulkString(nil, s.String())
	case "KILL":
		if len(args) >= 4 {
			b, self := r.clientKillFilter(c, args[2:])
			if self {
				c.closeAfterReply = true
			}
			return b
		}
		if len(args) == 3 {
			r.mu.Lock()
			defer r.mu.Unlock()
			for o := range r.clients {
				if o.conn.RemoteAddr().String() == args[2] {
					o.conn.Close()
					return resp.AppendOK(nil)
				}
			}
			return resp.AppendError(nil, "ERR No such client")
		}
		return resp.AppendInt(nil, 0)
	}
	return resp.AppendError(nil, fmt.Sprintf("ERR unknown subcommand '%s'. Try CLIENT HELP.", args[1]))
}

// clientKillFilter is CLIENT KILL <filter> <value> ... (USER, ADDR, ID,
// TYPE, SKIPME). The calling client, if it matches, is closed after the
// reply (reported by the second result).
func (r *Runner) clientKillFilter(self *client, f []string) ([]byte, bool) {
	if len(f)%2 != 0 {
		return resp.AppendError(nil, "ERR syntax error"), false
	}
	skipMe := true
	match := func(o *client) bool {
		for i := 0; i < len(f); i += 2 {
			v := f[i+1]
			switch strings.ToUpper(f[i]) {
			case "USER":
				if o.user != v {
					return false
				}
			case "ADDR":
				if o.conn.RemoteAddr().String() != v {
					return false
				}
			case "ID":
				if strconv.FormatInt(o.id, 10) != v {
					return false
				}
			case "TYPE":
				pub := len(o.subs)+len(o.psubs) > 0
				if (strings.EqualFold(v, "pubsub") && !pub) || (strings.EqualFold(v, "normal") && pub) {
					return false
				}
			}
		}
		return true
	}
	for i := 0; i < len(f); i += 2 {
		if strings.EqualFold(f[i], "SKIPME") {
			skipMe = !strings.EqualFold(f[i+1], "no")
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n, killSelf := 0, false
	for o := range r.clients {
		if (o == self && skipMe) || !match(o) {
			continue
		}
		if o == self {
			killSelf = true
		} else {
			o.conn.Close()
		}
		n++
	}
	return resp.AppendInt(nil, int64(n)), killSelf
}

func (r *Runner) clientLine(c *client) string {
	return fmt.Sprintf("id=%d addr=%s laddr=%s name=%s resp=%d sub=%d psub=%d cmd=client", c.id,
		c.conn.RemoteAddr(), c.conn.LocalAddr(), c.name, c.proto, len(c.subs), len(c.psubs))
}

func (r *Runner) cmdInfo(c *client, args []string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	sections := []string{"server", "clients", "stats", "cpu", "sentinel"}
	want := map[string]bool{}
	if len(args) == 1 {
		for _, sec := range sections {
			want[sec] = true
		}
	}
	for _, a := range args[1:] {
		a = strings.ToLower(a)
		if a == "all" || a == "default" || a == "everything" {
			for _, sec := range sections {
				want[sec] = true
			}
		}
		want[a] = true
	}
	var parts []string
	if want["server"] {
		exe, _ := os.Executable()
		parts = append(parts, fmt.Sprintf("# Server\r\nredis_version:%s\r\nredis_mode:sentinel\r\nos:%s %s\r\narch_bits:64\r\n"+
			"process_id:%d\r\nrun_id:%s\r\ntcp_port:%d\r\nserver_time_usec:%d\r\nuptime_in_seconds:%d\r\n"+
			"uptime_in_days:%d\r\nhz:10\r\nconfigured_hz:10\r\nexecutable:%s\r\nconfig_file:%s\r\n",
			redisVersion, runtime.GOOS, runtime.GOARCH, os.Getpid(), r.m.MyID(), r.file.Port, now.UnixMicro(),
			int64(now.Sub(r.started).Seconds()), int64(now.Sub(r.started).Hours()/24), exe, r.opt.ConfigPath))
	}
	if want["clients"] {
		parts = append(parts, fmt.Sprintf("# Clients\r\nconnected_clients:%d\r\ncluster_connections:0\r\nmaxclients:10000\r\n"+
			"blocked_clients:0\r\ntracking_clients:0\r\n", len(r.clients)))
	}
	if want["stats"] {
		parts = append(parts, fmt.Sprintf("# Stats\r\ntotal_connections_received:%d\r\nrejected_connections:0\r\n", clientIDs.Load()))
	}
	if want["cpu"] {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
		parts = append(parts, fmt.Sprintf("# CPU\r\nused_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\n", tv(ru.Stime), tv(ru.Utime)))
	}
	if want["sentinel"] {
		var s strings.Builder
		tilt, masters := r.m.Summary(now)
		tiltFlag, tiltSecs := 0, int64(-1)
		if tilt >= 0 {
			tiltFlag, tiltSecs = 1, int64(tilt.Seconds())
		}
		fmt.Fprintf(&s, "# Sentinel\r\nsentinel_masters:%d\r\nsentinel_tilt:%d\r\nsentinel_tilt_since_seconds:%d\r\n"+
			"sentinel_running_scripts:0\r\nsentinel_scripts_queue_length:0\r\nsentinel_simulate_failure_flags:%d\r\n",
			len(masters), tiltFlag, tiltSecs, r.m.SimFailure())
		for i, mi := range masters {
			fmt.Fprintf(&s, "master%d:name=%s,status=%s,address=%s,slaves=%d,sentinels=%d\r\n",
				i, mi.Name, mi.Status, mi.Addr, mi.Replicas, mi.Sentinels)
		}
		parts = append(parts, s.String())
	}
	return resp.AppendVerbatim(nil, c.proto, "txt", strings.Join(parts, "\r\n"))
}
