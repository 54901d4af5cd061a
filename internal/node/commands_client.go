package node

import (
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardis/shardis/internal/node/pubsub"
)

func registerClientCommands(t *commandTable) {
	f := flagAdmin | flagNoScript | flagLoading | flagStale
	conn := flagNoScript | flagLoading | flagStale
	t.add(&command{name: "client", arity: -2, fn: cmdHelpDispatch, group: "connection", since: "2.4.0"})
	t.addSub("client", &command{name: "id", arity: 2, flags: conn, fn: cmdClientID, since: "5.0.0"})
	t.addSub("client", &command{name: "info", arity: 2, flags: conn, fn: cmdClientInfo, since: "6.2.0"})
	t.addSub("client", &command{name: "list", arity: -2, flags: f, fn: cmdClientList, since: "2.4.0"})
	t.addSub("client", &command{name: "setname", arity: 3, flags: conn, fn: cmdClientSetName, since: "2.6.9"})
	t.addSub("client", &command{name: "getname", arity: 2, flags: conn, fn: cmdClientGetName, since: "2.6.9"})
	t.addSub("client", &command{name: "kill", arity: -3, flags: f, fn: cmdClientKill, since: "2.4.0"})
	t.addSub("client", &command{name: "pause", arity: -3, flags: f, fn: cmdClientPause, since: "3.0.0"})
	t.addSub("client", &command{name: "unpause", arity: 2, flags: f, fn: cmdClientUnpause, since: "6.2.0"})
	t.addSub("client", &command{name: "reply", arity: 3, flags: conn, fn: cmdClientReply, since: "3.2.0"})
	t.addSub("client", &command{name: "no-evict", arity: 3, flags: f, fn: cmdClientNoEvict, since: "7.0.0"})
	t.addSub("client", &command{name: "unblock", arity: -3, flags: f, fn: cmdClientUnblock, since: "5.0.0"})
	t.addSub("client", &command{name: "tracking", arity: -3, flags: conn, fn: cmdClientTracking, since: "6.0.0"})
	t.addSub("client", &command{name: "caching", arity: 3, flags: conn, fn: cmdClientCaching, since: "6.0.0"})
	t.addSub("client", &command{name: "getredir", arity: 2, flags: conn, fn: cmdClientGetRedir, since: "6.0.0"})
	t.addSub("client", &command{name: "trackinginfo", arity: 2, flags: conn, fn: cmdClientTrackingInfo, since: "6.2.0"})
	t.addSub("client", &command{name: "setinfo", arity: 4, flags: conn, fn: cmdClientSetInfo, since: "7.2.0"})
	t.addSub("client", &command{name: "maint_notifications", arity: -3, flags: conn, fn: cmdClientMaintNotifications, since: "8.2.0"})
	t.addSub("client", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdClientHelp, since: "5.0.0"})
}

// Client types, as CLIENT LIST TYPE and client-output-buffer-limit name them.
const (
	clientTypeNormal = iota
	clientTypeSlave
	clientTypePubSub
	clientTypeMaster
)

func clientTypeByName(name []byte) int {
	switch strings.ToLower(string(name)) {
	case "normal":
		return clientTypeNormal
	case "slave", "replica":
		return clientTypeSlave
	case "pubsub":
		return clientTypePubSub
	case "master":
		return clientTypeMaster
	}
	return -1
}

// clientType is Redis's getClientType: MONITOR clients count as normal.
func (c *Client) clientType() int {
	switch {
	case c.hasFlag(clientMaster):
		return clientTypeMaster
	case c.hasFlag(clientReplica) && !c.hasFlag(clientMonitor):
		return clientTypeSlave
	case c.hasFlag(clientPubSub):
		return clientTypePubSub
	}
	return clientTypeNormal
}

// connFD returns the connection's file descriptor for CLIENT LIST (fd=),
// or -1.
func connFD(nc net.Conn) int {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	_ = rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// clientFlagLetters are CLIENT LIST's flags= letters after the replica
// or monitor one, in Redis's order.
var clientFlagLetters = []struct {
	flag   int64
	letter string
}{
	{clientMaster, "M"},
	{clientPubSub, "P"},
	{clientMulti, "x"},
	{clientBlocked, "b"},
	{clientDirtyCAS, "d"},
	{clientCloseAfterReply, "c"},
	{clientReadOnly, "r"}, // READONLY, cluster mode
	{clientNoEvict, "e"},
}

// infoString renders one CLIENT LIST line (without the newline), field by
// field as Redis 7.0 prints them. self is the client running CLIENT LIST:
// its own qbuf and argv are those of the running command.
func (c *Client) infoString(self *Client) string {
	fl := c.flags.Load()
	flags := ""
	switch {
	case fl&clientMonitor != 0:
		flags = "O"
	case fl&clientReplica != 0:
		flags = "S"
	}
	for _, f := range clientFlagLetters {
		if fl&f.flag != 0 {
			flags += f.letter
		}
	}
	if flags == "" {
		flags = "N"
	}
	c.infoMu.Lock()
	name, user, lastCmd := c.name, c.user, c.lastCmd
	c.infoMu.Unlock()
	if c == self && c.cmd != nil {
		lastCmd = c.cmd.fullName()
	}
	if lastCmd == "" {
		lastCmd = "NULL"
	}
	now := time.Now()
	age := int64(now.Sub(c.created).Seconds())
	idle := (now.UnixMilli() - c.lastIO.Load()) / 1000
	if idle < 0 {
		idle = 0
	}
	multi := -1
	var argvMem, multiMem, qbuf, qfree int
	if c == self {
		if fl&clientMulti != 0 {
			multi = len(c.multi)
			for _, q := range c.multi {
				for _, a := range q {
					multiMem += len(a)
				}
			}
		}
		// Redis trims the query buffer after the commands of a read
		// run: the running command is still in it.
		qbuf = len(c.rd.LastRaw()) + c.rd.Buffered()
		qfree = max(c.rd.BufferCap()-qbuf, 0)
	} else if fl&clientMulti != 0 {
		multi = int(c.info.multi.Load())
	}
	c.pmu.Lock()
	omem := len(c.pending)
	c.pmu.Unlock()
	sub, psub := c.srv.pubsub.Count(subscriber{c}, pubsub.Channel), c.srv.pubsub.Count(subscriber{c}, pubsub.Pattern)
	db, proto := c.db, c.proto
	if c != self {
		db, proto = int(c.info.db.Load()), int(c.info.proto.Load())
		if proto == 0 {
			proto = 2
		}
	}
	totMem := 1024 + qbuf + qfree + omem + argvMem + multiMem
	var b strings.Builder
	b.Grow(300)
	w := func(k string, v string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	itoa := strconv.Itoa
	w("id", strconv.FormatInt(c.id, 10))
	w("addr", c.addr)
	w("laddr", c.laddr)
	w("fd", itoa(connFD(c.conn)))
	w("name", name)
	w("age", strconv.FormatInt(age, 10))
	w("idle", strconv.FormatInt(idle, 10))
	w("flags", flags)
	w("db", itoa(db))
	w("sub", itoa(sub))
	w("psub", itoa(psub))
	w("ssub", "0")
	w("multi", itoa(multi))
	w("qbuf", itoa(qbuf))
	w("qbuf-free", itoa(qfree))
	w("argv-mem", itoa(argvMem))
	w("multi-mem", itoa(multiMem))
	w("rbs", "1024")
	w("rbp", "0")
	w("obl", "0")
	w("oll", "0")
	w("omem", itoa(omem))
	w("tot-mem", itoa(totMem))
	w("events", "r")
	w("cmd", lastCmd)
	w("user", user)
	w("redir", "-1")
	w("resp", itoa(proto))
	return b.String()
}

// clientInfo is what other goroutines read of a client for CLIENT LIST:
// copies of fields its own goroutine owns, updated by the commands that
// change them (SELECT, HELLO, RESET, MULTI, EXEC, DISCARD).
type clientInfo struct {
	db    atomic.Int32
	proto atomic.Int32 // 0 means RESP2
	multi atomic.Int32
}

// publishInfo refreshes c.info from the fields c's goroutine owns.
func (c *Client) publishInfo() {
	c.info.db.Store(int32(c.db))
	c.info.proto.Store(int32(c.proto))
	c.info.multi.Store(int32(len(c.multi)))
}

// lookupClient returns the connected client with the given id.
func (s *Server) lookupClient(id int64) *Client {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	return s.clients[id]
}

// sortedClients returns the connected clients ordered by id (connection
// order, as Redis's client list).
func (s *Server) sortedClients() []*Client {
	s.clientsMu.Lock()
	list := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		list = append(list, c)
	}
	s.clientsMu.Unlock()
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j].id < list[j-1].id; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	return list
}

// CLIENT ID
func cmdClientID(c *Client, args [][]byte) { c.addInt(c.id) }

// CLIENT INFO
func cmdClientInfo(c *Client, args [][]byte) { c.addVerbatim(c.infoString(c) + "\n") }

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
func cmdClientList(c *Client, args [][]byte) {
	var b strings.Builder
	switch {
	case len(args) == 2:
		for _, cl := range c.srv.sortedClients() {
			b.WriteString(cl.infoString(c))
			b.WriteByte('\n')
		}
	case len(args) == 4 && eqFold(args[2], "TYPE"):
		typ := clientTypeByName(args[3])
		if typ < 0 {
			c.addError("ERR Unknown client type '" + string(args[3]) + "'")
			return
		}
		for _, cl := range c.srv.sortedClients() {
			if cl.clientType() == typ {
				b.WriteString(cl.infoString(c))
				b.WriteByte('\n')
			}
		}
	case len(args) > 3 && eqFold(args[2], "ID"):
		for _, a := range args[3:] {
			id, ok := parseInt(a)
			if !ok {
				c.addError("ERR Invalid client ID")
				return
			}
			if cl := c.srv.lookupClient(id); cl != nil {
				b.WriteString(cl.infoString(c))
				b.WriteByte('\n')
			}
		}
	default:
		c.addError(errSyntax)
		return
	}
	c.addVerbatim(b.String())
}

// CLIENT SETNAME connection-name
func cmdClientSetName(c *Client, args [][]byte) {
	n := string(args[2])
	if !validClientName(n) {
		c.addError("ERR Client names cannot contain spaces, newlines or special characters.")
		return
	}
	c.infoMu.Lock()
	c.name = n
	c.infoMu.Unlock()
	c.addOK()
}

// CLIENT GETNAME
func cmdClientGetName(c *Client, args [][]byte) {
	c.infoMu.Lock()
	n := c.name
	c.infoMu.Unlock()
	if n == "" {
		c.addNull()
		return
	}
	c.addBulkString(n)
}

// CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2; clients such as
// go-redis v9 send it on connect).
func cmdClientSetInfo(c *Client, args [][]byte) {
	v := string(args[3])
	for i := 0; i < len(v); i++ {
		if v[i] < '!' || v[i] > '~' {
			c.addError("ERR " + strings.ToUpper(string(args[2])) + " cannot contain spaces, newlines or special characters.")
			return
		}
	}
	c.infoMu.Lock()
	defer c.infoMu.Unlock()
	switch {
	case eqFold(args[2], "lib-name"):
		c.libName = v
	case eqFold(args[2], "lib-ver"):
		c.libVer = v
	default:
		c.addError("ERR Unrecognized option '" + string(args[2]) + "'")
		return
	}
	c.addOK()
}

// CLIENT KILL ip:port | CLIENT KILL [ID id] [TYPE type] [ADDR ip:port]
// [LADDR ip:port] [USER name] [SKIPME yes|no] [MAXAGE secs]
func cmdClientKill(c *Client, args [][]byte) {
	var addr, laddr, user *string
	typ := -1
	var id, maxAge int64
	skipMe := true
	if len(args) == 3 {
		a := string(args[2])
		addr = &a
		skipMe = false
	} else {
		if len(args)%2 != 0 {
			c.addError(errSyntax)
			return
		}
		for i := 2; i+1 < len(args); i += 2 {
			v := string(args[i+1])
			switch strings.ToLower(string(args[i])) {
			case "id":
				n, ok := parseInt(args[i+1])
				if !ok || n < 1 {
					c.addError("ERR client-id should be greater than 0")
					return
				}
				id = n
			case "type":
				typ = clientTypeByName(args[i+1])
				if typ < 0 {
					c.addError("ERR Unknown client type '" + v + "'")
					return
				}
			case "addr":
				addr = &v
			case "laddr":
				laddr = &v
			case "user":
				if v != "default" {
					c.addError("ERR No such user '" + v + "'")
					return
				}
				user = &v
			case "skipme":
				switch {
				case eqFold(args[i+1], "yes"):
					skipMe = true
				case eqFold(args[i+1], "no"):
					skipMe = false
				default:
					c.addError(errSyntax)
					return
				}
			case "maxage":
				n, ok := parseInt(args[i+1])
				if !ok {
					c.addError(errNotInt)
					return
				}
				maxAge = n
			default:
				c.addError(errSyntax)
				return
			}
		}
	}
	killed := 0
	closeSelf := false
	now := time.Now()
	for _, cl := range c.srv.sortedClients() {
		if addr != nil && cl.addr != *addr {
			continue
		}
		if laddr != nil && cl.laddr != *laddr {
			continue
		}
		if typ >= 0 && cl.clientType() != typ {
			continue
		}
		if id != 0 && cl.id != id {
			continue
		}
		if user != nil && cl.user != *user {
			continue
		}
		if maxAge > 0 && now.Sub(cl.created) < time.Duration(maxAge)*time.Second {
			continue
		}
		if cl == c && skipMe {
			continue
		}
		if cl == c {
			closeSelf = true
		} else {
			cl.close()
		}
		killed++
	}
	if len(args) == 3 {
		if killed == 0 {
			c.addError("ERR No such client")
		} else {
			c.addOK()
		}
	} else {
		c.addInt(int64(killed))
	}
	if closeSelf {
		c.setFlag(clientCloseAfterReply, true)
	}
}

// parseTimeoutMS parses a millisecond timeout as getTimeoutFromObjectOrReply
// does and returns the absolute deadline.
func parseTimeoutMS(c *Client, arg []byte) (time.Time, bool) {
	n, ok := parseInt(arg)
	if !ok {
		c.addError("ERR timeout is not an integer or out of range")
		return time.Time{}, false
	}
	if n < 0 {
		c.addError("ERR timeout is negative")
		return time.Time{}, false
	}
	return time.Now().Add(time.Duration(n) * time.Millisecond), true
}

// CLIENT PAUSE timeout [WRITE|ALL]
func cmdClientPause(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.addError(errWrongArgs("client|pause"))
		return
	}
	all := true
	if len(args) == 4 {
		switch {
		case eqFold(args[3], "write"):
			all = false
		case eqFold(args[3], "all"):
		default:
			c.addError("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	until, ok := parseTimeoutMS(c, args[2])
	if !ok {
		return
	}
	c.srv.pause.set(until, all)
	c.addOK()
}

// CLIENT UNPAUSE
func cmdClientUnpause(c *Client, args [][]byte) {
	c.srv.pause.unpause()
	c.addOK()
}

// CLIENT REPLY ON|OFF|SKIP
func cmdClientReply(c *Client, args [][]byte) {
	switch {
	case eqFold(args[2], "on"):
		c.replyMode = replyOn
		c.addOK()
	case eqFold(args[2], "off"):
		c.replyMode = replyOff
	case eqFold(args[2], "skip"):
		if c.replyMode != replyOff {
			c.replyMode = replySkip
		}
	default:
		c.addError(errSyntax)
	}
}

// CLIENT NO-EVICT ON|OFF
func cmdClientNoEvict(c *Client, args [][]byte) {
	switch {
	case eqFold(args[2], "on"):
		c.setFlag(clientNoEvict, true)
	case eqFold(args[2], "off"):
		c.setFlag(clientNoEvict, false)
	default:
		c.addError(errSyntax)
		return
	}
	c.addOK()
}

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]: blocking commands register an
// unblock hook on the client (unblockHook); without one nothing is
// blocked and the reply is 0.
func cmdClientUnblock(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.addError(errWrongArgs("client|unblock"))
		return
	}
	withErr := false
	if len(args) == 4 {
		switch {
		case eqFold(args[3], "timeout"):
		case eqFold(args[3], "error"):
			withErr = true
		default:
			c.addError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	// The blocking engine (blocking.go) provides unblockClient.
	if u, ok := any(c.srv).(interface{ unblockClient(int64, bool) bool }); ok && u.unblockClient(id, withErr) {
		c.addInt(1)
		return
	}
	c.addInt(0)
}

// CLIENT TRACKING ON|OFF ...: client-side caching is not supported; OFF
// is accepted since it is the default state.
func cmdClientTracking(c *Client, args [][]byte) {
	switch {
	case eqFold(args[2], "off") && len(args) == 3:
		c.addOK()
	case eqFold(args[2], "on") || eqFold(args[2], "off"):
		c.addError("ERR client tracking is not supported by this server")
	default:
		c.addError(errSyntax)
	}
}

// CLIENT CACHING YES|NO
func cmdClientCaching(c *Client, args [][]byte) {
	c.addError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
}

// CLIENT GETREDIR
func cmdClientGetRedir(c *Client, args [][]byte) { c.addInt(-1) }

// CLIENT TRACKINGINFO
func cmdClientTrackingInfo(c *Client, args [][]byte) {
	c.addMapLen(3)
	c.addBulkString("flags")
	c.addSetLen(1)
	c.addBulkString("off")
	c.addBulkString("redirect")
	c.addInt(-1)
	c.addBulkString("prefixes")
	c.addArrayLen(0)
}

// CLIENT HELP
func cmdClientHelp(c *Client, args [][]byte) {
	c.addHelp("CLIENT", []string{
		"CACHING (YES|NO)",
		"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR",
		"    Return the client ID we are redirecting to when tracking is enabled.",
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"UNPAUSE",
		"    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]",
		"    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)",
		"    Control the replies sent to the current connection.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]",
		"    Unblock the specified blocked client.",
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
		"         [OPTIN] [OPTOUT] [NOLOOP]",
		"    Control server assisted client side caching.",
		"TRACKINGINFO",
		"    Report tracking status for the current connection.",
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
	})
}
