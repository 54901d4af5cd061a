package node

import (
	"errors"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/reply"
)

const errClusterDisabled = "ERR This instance has cluster support disabled"

func registerClusterCommands(t *commandTable) {
	t.add(&command{name: "cluster", arity: -2, fn: cmdHelpDispatch, group: "cluster", since: "3.0.0"})
	sub := func(name string, arity int, flags cmdFlag, since string, fn handlerFunc) {
		t.addSub("cluster", &command{name: name, arity: arity, flags: flags, fn: clusterOnly(fn), since: since})
	}
	// Flags and arities as in Redis 7.0's commands/cluster-*.json
	// (NO_ASYNC_LOADING has no counterpart here).
	admin := flagAdmin | flagStale
	sub("help", 2, flagLoading|flagStale, "5.0.0", cmdClusterHelp)
	sub("info", 2, flagStale, "3.0.0", cmdClusterInfo)
	sub("myid", 2, flagStale, "3.0.0", cmdClusterMyID)
	sub("nodes", 2, flagStale, "3.0.0", cmdClusterNodes)
	sub("slots", 2, flagStale, "3.0.0", cmdClusterSlots)
	sub("shards", 2, flagStale, "7.0.0", cmdClusterShards)
	sub("links", 2, flagStale, "7.0.0", cmdClusterLinks)
	sub("meet", -4, admin, "3.0.0", cmdClusterAdmin)
	sub("forget", 3, admin, "3.0.0", cmdClusterAdmin)
	sub("addslots", -3, admin, "3.0.0", cmdClusterAdmin)
	sub("delslots", -3, admin, "3.0.0", cmdClusterAdmin)
	sub("addslotsrange", -4, admin, "7.0.0", cmdClusterAdmin)
	sub("delslotsrange", -4, admin, "7.0.0", cmdClusterAdmin)
	sub("flushslots", 2, admin, "3.0.0", cmdClusterAdmin)
	sub("setslot", -4, admin, "3.0.0", cmdClusterAdmin)
	sub("replicate", 3, admin, "3.0.0", cmdClusterAdmin)
	sub("failover", -2, admin, "3.0.0", cmdClusterAdmin)
	sub("reset", -2, admin|flagNoScript, "3.0.0", cmdClusterReset)
	sub("set-config-epoch", 3, admin, "3.0.0", cmdClusterAdmin)
	sub("bumpepoch", 2, admin, "3.0.0", cmdClusterBumpEpoch)
	sub("saveconfig", 2, admin, "3.0.0", cmdClusterAdmin)
	sub("count-failure-reports", 3, admin, "3.0.0", cmdClusterAdmin)
	sub("keyslot", 3, flagStale, "3.0.0", cmdClusterKeySlot)
	sub("countkeysinslot", 3, flagStale, "3.0.0", cmdClusterCountKeysInSlot)
	sub("getkeysinslot", 4, flagStale, "3.0.0", cmdClusterGetKeysInSlot)
	sub("replicas", 3, admin, "5.0.0", cmdClusterAdmin)
	sub("slaves", 3, admin, "3.0.0", cmdClusterAdmin)
	// Redis 8.4's atomic slot migration, and its internal protocol command
	// (commands_cluster_migration.go).
	sub("migration", -3, admin, "8.4.0", cmdClusterMigration)
	sub("syncslots", -3, admin, "8.4.0", cmdClusterSyncSlots)
	t.add(&command{name: "asking", arity: 1, flags: flagFast, fn: clusterOnly(cmdAsking), group: "cluster", since: "3.0.0"})
	t.add(&command{name: "readonly", arity: 1, flags: flagFast | flagLoading | flagStale, fn: clusterOnly(cmdReadOnly), group: "cluster", since: "3.0.0"})
	t.add(&command{name: "readwrite", arity: 1, flags: flagFast | flagLoading | flagStale, fn: clusterOnly(cmdReadWrite), group: "cluster", since: "3.0.0"})
}

// clusterSubSyntaxError is Redis's addReplySubcommandSyntaxError for a
// known subcommand given the wrong arguments.
func clusterSubSyntaxError(c *Client, args [][]byte) {
	c.addError("ERR unknown subcommand or wrong number of arguments for '" + truncArg(args[1]) + "'. Try " + upper(string(args[0])) + " HELP.")
}

// addClusterArgError replies a package reply grammar error.
func (c *Client) addClusterArgError(msg string, args [][]byte) {
	if msg == reply.ErrSubSyntax {
		clusterSubSyntaxError(c, args)
		return
	}
	c.addError(msg)
}

// CLUSTER HELP
func cmdClusterHelp(c *Client, args [][]byte) { c.addHelp("CLUSTER", reply.HelpLines) }

// clusterOnly refuses fn outside cluster mode, as Redis's clusterCommand.
func clusterOnly(fn handlerFunc) handlerFunc {
	return func(c *Client, args [][]byte) {
		if c.srv.cluster == nil {
			c.addError(errClusterDisabled)
			return
		}
		fn(c, args)
	}
}

// machineDo runs fn on the cluster machine and replies its error, if any,
// with Redis's text; it reports whether fn succeeded.
func (c *Client) machineDo(fn func(m *cluster.Machine, now time.Time) error) bool {
	var err error
	if !c.srv.cluster.do(func(m *cluster.Machine, now time.Time) { err = fn(m, now) }) {
		c.addError("ERR cluster bus is shutting down")
		return false
	}
	if err != nil {
		var ce *cluster.Error
		if errors.As(err, &ce) {
			c.addError(ce.Text)
		} else {
			c.addError("ERR " + err.Error())
		}
		return false
	}
	return true
}

// CLUSTER INFO
func cmdClusterInfo(c *Client, args [][]byte) {
	var text string
	exceeded := uint64(c.srv.cluster.r.Stats().BufferLimitExceeded)
	c.machineDo(func(m *cluster.Machine, _ time.Time) error { text = m.Info(exceeded); return nil })
	c.addVerbatim(text)
}

// CLUSTER MYID
func cmdClusterMyID(c *Client, args [][]byte) {
	var id string
	c.machineDo(func(m *cluster.Machine, _ time.Time) error { id = m.MyID(); return nil })
	c.addBulkString(id)
}

// CLUSTER NODES
func cmdClusterNodes(c *Client, args [][]byte) {
	var text string
	c.machineDo(func(m *cluster.Machine, _ time.Time) error { text = m.Nodes(false); return nil })
	c.addVerbatim(text)
}

// CLUSTER SLOTS
func cmdClusterSlots(c *Client, args [][]byte) {
	var ranges []cluster.SlotRange
	c.machineDo(func(m *cluster.Machine, _ time.Time) error { ranges = m.Slots(); return nil })
	reply.Slots(replyWriter{c}, ranges, c.srv.cfg.Get(DirClusterPreferredEndpointType))
}

// CLUSTER SHARDS
func cmdClusterShards(c *Client, args [][]byte) {
	var shards []cluster.Shard
	c.machineDo(func(m *cluster.Machine, _ time.Time) error { shards = m.Shards(); return nil })
	reply.Shards(replyWriter{c}, shards, c.srv.cfg.Get(DirClusterPreferredEndpointType))
}

// CLUSTER LINKS: the machine knows the links; the runner owns their send
// buffers.
func cmdClusterLinks(c *Client, args [][]byte) {
	var links []cluster.LinkInfo
	if c.machineDo(func(m *cluster.Machine, _ time.Time) error { links = m.Links(); return nil }) {
		reply.Links(replyWriter{c}, links, c.srv.cluster.r.LinkBuffers())
	}
}

// replyWriter is the client's reply as a reply.Writer.
type replyWriter struct{ c *Client }

func (w replyWriter) ArrayLen(n int) { w.c.addArrayLen(n) }
func (w replyWriter) MapLen(n int)   { w.c.addMapLen(n) }
func (w replyWriter) Int(n int64)    { w.c.addInt(n) }
func (w replyWriter) Bulk(s string)  { w.c.addBulkString(s) }
func (w replyWriter) Null()          { w.c.addNull() }

// CLUSTER MEET, FORGET, ADDSLOTS[RANGE], DELSLOTS[RANGE], FLUSHSLOTS,
// SETSLOT, REPLICATE, FAILOVER, SET-CONFIG-EPOCH, SAVECONFIG,
// COUNT-FAILURE-REPORTS, REPLICAS: machine operations (reply.Admin).
func cmdClusterAdmin(c *Client, args [][]byte) {
	a, rest := reply.AdminCommand(lowerASCII(args[1])), argStrings(args[2:])
	if msg := a.Check(rest); msg != "" {
		c.addClusterArgError(msg, args)
		return
	}
	var res reply.Result
	if !c.machineDo(func(m *cluster.Machine, now time.Time) (err error) { res, err = a.Run(m, now, rest); return err }) {
		return
	}
	switch res.Kind {
	case reply.Integer:
		c.addInt(res.Int)
	case reply.Strings:
		c.addStrings(res.Strings)
	default:
		c.addOK()
	}
}

// CLUSTER RESET [HARD|SOFT]
func cmdClusterReset(c *Client, args [][]byte) {
	hard, msg := reply.ParseReset(args[2:])
	if msg != "" {
		c.addClusterArgError(msg, args)
		return
	}
	wasReplica := c.srv.replicaMode.Load()
	if !c.machineDo(func(m *cluster.Machine, now time.Time) error { return m.Reset(now, hard) }) {
		return
	}
	if wasReplica {
		// A replica that is reset becomes an empty master.
		c.srv.flushAllData()
	}
	c.addOK()
}

// CLUSTER BUMPEPOCH
func cmdClusterBumpEpoch(c *Client, args [][]byte) {
	var s string
	c.machineDo(func(m *cluster.Machine, now time.Time) error { s = m.BumpEpoch(now); return nil })
	c.addSimple(s)
}

// CLUSTER KEYSLOT key
func cmdClusterKeySlot(c *Client, args [][]byte) {
	c.addInt(int64(keySlot(bstr(args[2]))))
}

// CLUSTER COUNTKEYSINSLOT slot
func cmdClusterCountKeysInSlot(c *Client, args [][]byte) {
	if slot, msg := reply.ParseCountKeysInSlot(args[2]); msg != "" {
		c.addError(msg)
	} else {
		c.addInt(int64(c.srv.dbs[0].CountKeysInSlot(slot)))
	}
}

// CLUSTER GETKEYSINSLOT slot count
func cmdClusterGetKeysInSlot(c *Client, args [][]byte) {
	if slot, n, msg := reply.ParseGetKeysInSlot(args[2], args[3]); msg != "" {
		c.addError(msg)
	} else {
		c.addStrings(c.srv.keysInSlot(slot, n))
	}
}

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

// clusterConnections is INFO's cluster_connections: as Redis's
// getClusterConnectionsCount, two links per known node other than myself.
func (s *Server) clusterConnections() int {
	cm := s.cluster
	if cm == nil || cm.r == nil {
		return 0
	}
	n := 0
	cm.do(func(m *cluster.Machine, _ time.Time) { n = len(m.KnownNodes()) })
	if n == 0 {
		return 0
	}
	return (n - 1) * 2
}

// clusterLinksMemory is INFO's mem_cluster_links: the bytes allocated for
// the links' send buffers (Redis adds each link's struct and receive
// buffer; the runner reports what it owns).
func (s *Server) clusterLinksMemory() int {
	cm := s.cluster
	if cm == nil || cm.r == nil {
		return 0
	}
	total := 0
	for _, b := range cm.r.LinkBuffers() {
		total += b.Allocated
	}
	return total
}
