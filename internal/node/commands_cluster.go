package node

import (
	"github.com/shardis/shardis/internal/node/clusternode"
	"github.com/shardis/shardis/internal/node/slotmig"
)

func registerClusterCommands(t *commandTable) {
	t.add(&command{name: "cluster", arity: -2, fn: cmdHelpDispatch, group: "cluster", since: "3.0.0"})
	sub := func(name string, arity int, flags cmdFlag, since string, fn clusternode.Handler) {
		t.addSub("cluster", &command{name: name, arity: arity, flags: flags, fn: clusterOnly(fn), since: since})
	}
	// Flags and arities as in Redis 7.0's commands/cluster-*.json
	// (NO_ASYNC_LOADING has no counterpart here); the handlers are
	// package clusternode's.
	admin := flagAdmin | flagStale
	sub("help", 2, flagLoading|flagStale, "5.0.0", clusternode.Help)
	sub("info", 2, flagStale, "3.0.0", clusternode.Info)
	sub("myid", 2, flagStale, "3.0.0", clusternode.MyID)
	sub("nodes", 2, flagStale, "3.0.0", clusternode.Nodes)
	sub("slots", 2, flagStale, "3.0.0", clusternode.Slots)
	sub("shards", 2, flagStale, "7.0.0", clusternode.Shards)
	sub("links", 2, flagStale, "7.0.0", clusternode.Links)
	sub("meet", -4, admin, "3.0.0", clusternode.Admin)
	sub("forget", 3, admin, "3.0.0", clusternode.Admin)
	sub("addslots", -3, admin, "3.0.0", clusternode.Admin)
	sub("delslots", -3, admin, "3.0.0", clusternode.Admin)
	sub("addslotsrange", -4, admin, "7.0.0", clusternode.Admin)
	sub("delslotsrange", -4, admin, "7.0.0", clusternode.Admin)
	sub("flushslots", 2, admin, "3.0.0", clusternode.Admin)
	t.addSub("cluster", &command{name: "setslot", arity: -4, flags: admin, fn: clusterOnlyReplyFirst(clusternode.Admin), since: "3.0.0"})
	sub("replicate", 3, admin, "3.0.0", clusternode.Admin)
	sub("failover", -2, admin, "3.0.0", clusternode.Admin)
	sub("reset", -2, admin|flagNoScript, "3.0.0", clusternode.Reset)
	sub("set-config-epoch", 3, admin, "3.0.0", clusternode.Admin)
	sub("bumpepoch", 2, admin, "3.0.0", clusternode.BumpEpoch)
	sub("saveconfig", 2, admin, "3.0.0", clusternode.Admin)
	sub("count-failure-reports", 3, admin, "3.0.0", clusternode.Admin)
	sub("keyslot", 3, flagStale, "3.0.0", clusternode.KeySlot)
	sub("countkeysinslot", 3, flagStale, "3.0.0", clusternode.CountKeysInSlot)
	sub("getkeysinslot", 4, flagStale, "3.0.0", clusternode.GetKeysInSlot)
	sub("replicas", 3, admin, "5.0.0", clusternode.Admin)
	sub("slaves", 3, admin, "3.0.0", clusternode.Admin)
	// Redis 8.4's atomic slot migration, and its internal protocol command.
	sub("migration", -3, admin, "8.4.0", clusternode.Migration)
	sub("syncslots", -3, admin, "8.4.0", clusternode.SyncSlots)
	t.add(&command{name: "asking", arity: 1, flags: flagFast, fn: clusterOnlyClient(cmdAsking), group: "cluster", since: "3.0.0"})
	t.add(&command{name: "readonly", arity: 1, flags: flagFast | flagLoading | flagStale, fn: clusterOnlyClient(cmdReadOnly), group: "cluster", since: "3.0.0"})
	t.add(&command{name: "readwrite", arity: 1, flags: flagFast | flagLoading | flagStale, fn: clusterOnlyClient(cmdReadWrite), group: "cluster", since: "3.0.0"})
}

// registerClusterDebug registers the DEBUG subcommands of cluster mode
// through RegisterDebug, so behind enable-debug-command like every DEBUG
// subcommand: the packet filter and the link killer that Redis's cluster
// tests use (package clusternode's; they answer outside cluster mode
// too).
func registerClusterDebug(s *Server) {
	s.RegisterDebug("drop-cluster-packet-filter", clusterHandler(clusternode.DebugDropPacketFilter))
	s.RegisterDebug("clusterlink", clusterHandler(clusternode.DebugClusterLink))
}

// clusterSubSyntaxError is Redis's addReplySubcommandSyntaxError for a
// known subcommand given the wrong arguments.
func clusterSubSyntaxError(c *Client, args [][]byte) {
	c.addError("ERR unknown subcommand or wrong number of arguments for '" + truncArg(args[1]) + "'. Try " + upper(string(args[0])) + " HELP.")
}

// clusterHandler runs a package clusternode handler on c's reply (its
// Mode nil outside cluster mode).
func clusterHandler(fn clusternode.Handler) handlerFunc {
	return func(c *Client, args [][]byte) {
		var m *clusternode.Mode
		if cm := c.srv.cluster; cm != nil {
			m = &cm.Mode
		}
		fn(m, clusterReply{c}, args)
	}
}

// clusterOnly refuses fn outside cluster mode, as Redis's clusterCommand.
func clusterOnly(fn clusternode.Handler) handlerFunc {
	return func(c *Client, args [][]byte) {
		if c.srv.cluster == nil {
			c.addError(clusternode.ErrClusterDisabled)
			return
		}
		fn(&c.srv.cluster.Mode, clusterReply{c}, args)
	}
}

// clusterOnlyClient is clusterOnly for a handler of the client's state.
func clusterOnlyClient(fn handlerFunc) handlerFunc {
	return func(c *Client, args [][]byte) {
		if c.srv.cluster == nil {
			c.addError(clusternode.ErrClusterDisabled)
			return
		}
		fn(c, args)
	}
}

// clusterReply is the client's reply as a clusternode.Reply.
type clusterReply struct{ c *Client }

func (w clusterReply) ArrayLen(n int)                   { w.c.addArrayLen(n) }
func (w clusterReply) MapLen(n int)                     { w.c.addMapLen(n) }
func (w clusterReply) Int(n int64)                      { w.c.addInt(n) }
func (w clusterReply) Bulk(s string)                    { w.c.addBulkString(s) }
func (w clusterReply) Null()                            { w.c.addNull() }
func (w clusterReply) Help(name string, lines []string) { w.c.addHelp(name, lines) }
func (w clusterReply) Error(msg string)                 { w.c.addError(msg) }
func (w clusterReply) Simple(s string)                  { w.c.addSimple(s) }
func (w clusterReply) OK()                              { w.c.addOK() }
func (w clusterReply) Verbatim(text string)             { w.c.addVerbatim(text) }
func (w clusterReply) Strings(items []string)           { w.c.addStrings(items) }
func (w clusterReply) SubSyntaxError(args [][]byte)     { clusterSubSyntaxError(w.c, args) }
func (w clusterReply) SourceConn() slotmig.SourceConn   { return migConn{w.c} }
func (w clusterReply) StopReplies()                     { w.c.replyMode = replyOff }

// ASKING
func cmdAsking(c *Client, args [][]byte) {
	c.setFlag(clientAsking, true)
	c.addOK()
}

// READONLY
func cmdReadOnly(c *Client, args [][]byte) {
	c.setFlag(clientReadOnly, true)
	c.addOK()
}

// READWRITE
func cmdReadWrite(c *Client, args [][]byte) {
	c.setFlag(clientReadOnly, false)
	c.addOK()
}

// clusterConnections is INFO's cluster_connections (clusternode.Mode.Connections).
func (s *Server) clusterConnections() int {
	if cm := s.cluster; cm != nil {
		return cm.Connections()
	}
	return 0
}

// clusterLinksMemory is INFO's mem_cluster_links (clusternode.Mode.LinksMemory).
func (s *Server) clusterLinksMemory() int {
	if cm := s.cluster; cm != nil {
		return cm.LinksMemory()
	}
	return 0
}

// clusterOnlyReplyFirst is clusterOnly for a command whose packets leave
// after its reply, as in Redis (CLUSTER SETSLOT): Redis writes a
// command's reply in beforeSleep and the cluster link output of the same
// event-loop iteration after it, so SETSLOT NODE's broadcast PONG reaches
// the other masters after redis-cli had the reply. The bus's output is
// held (Runner.Hold) from before fn until fn's reply has been handed to
// the socket as far as it takes it without waiting (tryWriteReplies), so
// a client that does not read never holds the bus back.
func clusterOnlyReplyFirst(fn clusternode.Handler) handlerFunc {
	return func(c *Client, args [][]byte) {
		cm := c.srv.cluster
		if cm == nil || cm.Runner() == nil || c.raw == nil || c.inExec || c.inScript {
			clusterOnly(fn)(c, args)
			return
		}
		release := cm.Runner().Hold()
		defer release()
		fn(&cm.Mode, clusterReply{c}, args)
		c.tryWriteReplies()
	}
}

// tryWriteReplies writes the replies gathered so far with one
// non-blocking write, as far as the socket takes them, when nothing
// must go before them (min-replicas acknowledgements, the replication
// streams, pushed output); what is left goes with the batch's flush.
func (c *Client) tryWriteReplies() {
	if len(c.out) == 0 || len(c.ack.segs) > 0 || (c.srv.repl != nil && c.srv.repl.StreamDirty()) ||
		c.hasFlag(clientPubSub|clientMonitor|clientReplica) || c.pendingLen() > 0 {
		return
	}
	c.wmu.Lock()
	n, err := c.raw.TryWrite(c.out)
	c.wmu.Unlock()
	c.srv.stats.netOutput.Add(int64(n))
	c.out = c.out[:copy(c.out, c.out[n:])]
	_ = err // a broken connection: the batch's flush meets the error
}
