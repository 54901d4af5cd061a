package node

import (
	"strings"
	"sync/atomic"

	"github.com/shardis/shardis/internal/node/clients"
	"github.com/shardis/shardis/internal/node/netio"
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

// clientType is Redis's getClientType: MONITOR clients count as normal.
func (c *Client) clientType() clients.Type {
	switch {
	case c.hasFlag(clientMaster):
		return clients.Master
	case c.hasFlag(clientReplica) && !c.hasFlag(clientMonitor):
		return clients.Slave
	case c.hasFlag(clientPubSub):
		return clients.PubSub
	}
	return clients.Normal
}

// infoString renders one CLIENT LIST line (without the newline; package
// clients has the fields). self is the client running CLIENT LIST: its
// own qbuf and argv are those of the running command.
func (c *Client) infoString(self *Client) string {
	fl := c.flags.Load()
	has := func(f int64) bool { return fl&f != 0 }
	l := clients.Line{
		ID: c.id, Addr: c.addr, LAddr: c.laddr, FD: netio.FD(c.conn), Multi: -1, DB: c.db, Resp: c.proto,
		Flags: clients.Flags{Monitor: has(clientMonitor), Replica: has(clientReplica), Master: has(clientMaster),
			PubSub: has(clientPubSub), Multi: has(clientMulti), Blocked: has(clientBlocked), DirtyCAS: has(clientDirtyCAS),
			CloseAfterReply: has(clientCloseAfterReply), ReadOnly: has(clientReadOnly), NoEvict: has(clientNoEvict)},
	}
	c.infoMu.Lock()
	l.Name, l.User, l.Cmd = c.name, c.user, c.lastCmd
	c.infoMu.Unlock()
	if c == self && c.cmd != nil {
		l.Cmd = c.cmd.fullName()
	}
	now := c.srv.now()
	l.Age = int64(now.Sub(c.created).Seconds())
	l.Idle = (now.UnixMilli() - c.lastIO.Load()) / 1000
	if c == self {
		if has(clientMulti) {
			l.Multi = len(c.multi)
			for _, q := range c.multi {
				for _, a := range q {
					l.MultiMem += len(a)
				}
			}
		}
		// Redis trims the query buffer after the commands of a read
		// run: the running command is still in it.
		l.QBuf = len(c.rd.LastRaw()) + c.rd.Buffered()
		l.QBufFree = max(c.rd.BufferCap()-l.QBuf, 0)
	} else if has(clientMulti) {
		l.Multi = int(c.info.multi.Load())
	}
	c.pmu.Lock()
	l.OMem = len(c.pending)
	c.pmu.Unlock()
	l.Sub, l.PSub = c.srv.pubsub.Count(subscriber{c}, pubsub.Channel), c.srv.pubsub.Count(subscriber{c}, pubsub.Pattern)
	if c != self {
		l.DB, l.Resp = int(c.info.db.Load()), int(c.info.proto.Load())
		if l.Resp == 0 {
			l.Resp = 2
		}
	}
	return l.String()
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
	f, err := clients.ParseList(args[2:])
	if err != nil {
		c.addError(err.Error())
		return
	}
	var list []*Client
	if !f.ByIDs {
		list = c.srv.sortedClients()
	} else {
		for _, id := range f.IDs {
			if cl := c.srv.lookupClient(id); cl != nil {
				list = append(list, cl)
			}
		}
	}
	var b strings.Builder
	for _, cl := range list {
		if f.Type == nil || cl.clientType() == *f.Type {
			b.WriteString(cl.infoString(c))
			b.WriteByte('\n')
		}
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
	f, err := clients.ParseKill(args[2:], func(user string) bool { return user == "default" })
	if err != nil {
		c.addError(err.Error())
		return
	}
	killed := 0
	closeSelf := false
	now := c.srv.now()
	for _, cl := range c.srv.sortedClients() {
		if !f.Match(clients.Candidate{ID: cl.id, Addr: cl.addr, LAddr: cl.laddr, Type: cl.clientType(),
			User: cl.user, Age: now.Sub(cl.created), Self: cl == c}) {
			continue
		}
		if cl == c {
			closeSelf = true
		} else {
			cl.close()
		}
		killed++
	}
	switch {
	case !f.Legacy:
		c.addInt(int64(killed))
	case killed == 0:
		c.addError("ERR No such client")
	default:
		c.addOK()
	}
	if closeSelf {
		c.setFlag(clientCloseAfterReply, true)
	}
}

// CLIENT PAUSE timeout [WRITE|ALL]
func cmdClientPause(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.addError(errWrongArgs("client|pause"))
		return
	}
	all, err := clients.ParsePauseMode(optArg(args, 3))
	if err != nil {
		c.addError(err.Error())
		return
	}
	d, err := clients.ParseTimeoutMS(args[2])
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.srv.pause.Set(c.srv.now().Add(d), all)
	// Redis runs CLIENT PAUSE between two commands, so when it replies
	// every write that started before it has run and is in the
	// replication stream: migrate-to-cluster and manual failovers read
	// master_repl_offset next and take it as final. Here writes run in
	// parallel: wait for those already past the pause check (parked
	// meanwhile, so sequenced commands do not wait for this client), at
	// most for the pause's length, after which writes flow again anyway.
	// Inside EXEC the transaction holds every lock those writes may wait
	// for: EXEC paused and waited before taking them (pauseBeforeExec).
	if !c.inExec {
		c.parkStart()
		c.srv.drainWrites(d)
		c.parkEnd()
	}
	c.addOK()
}

// optArg is args[i], or nil when absent.
func optArg(args [][]byte, i int) []byte {
	if i < len(args) {
		return args[i]
	}
	return nil
}

// CLIENT UNPAUSE
func cmdClientUnpause(c *Client, args [][]byte) {
	c.srv.pause.Unpause()
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

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
func cmdClientUnblock(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.addError(errWrongArgs("client|unblock"))
		return
	}
	withErr, err := clients.ParseUnblockReason(optArg(args, 3))
	if err != nil {
		c.addError(err.Error())
		return
	}
	id, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if c.srv.unblockClient(id, withErr) {
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
func cmdClientHelp(c *Client, args [][]byte) { c.addHelp("CLIENT", clients.Help) }
