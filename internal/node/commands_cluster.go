package node

import (
	"errors"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/keyspace"
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
	sub("meet", -4, admin, "3.0.0", cmdClusterMeet)
	sub("forget", 3, admin, "3.0.0", cmdClusterForget)
	sub("addslots", -3, admin, "3.0.0", cmdClusterAddSlots)
	sub("delslots", -3, admin, "3.0.0", cmdClusterDelSlots)
	sub("addslotsrange", -4, admin, "7.0.0", cmdClusterAddSlotsRange)
	sub("delslotsrange", -4, admin, "7.0.0", cmdClusterDelSlotsRange)
	sub("flushslots", 2, admin, "3.0.0", cmdClusterFlushSlots)
	sub("setslot", -4, admin, "3.0.0", cmdClusterSetSlot)
	sub("replicate", 3, admin, "3.0.0", cmdClusterReplicate)
	sub("failover", -2, admin, "3.0.0", cmdClusterFailover)
	sub("reset", -2, admin|flagNoScript, "3.0.0", cmdClusterReset)
	sub("set-config-epoch", 3, admin, "3.0.0", cmdClusterSetConfigEpoch)
	sub("bumpepoch", 2, admin, "3.0.0", cmdClusterBumpEpoch)
	sub("saveconfig", 2, admin, "3.0.0", cmdClusterSaveConfig)
	sub("count-failure-reports", 3, admin, "3.0.0", cmdClusterCountFailureReports)
	sub("keyslot", 3, flagStale, "3.0.0", cmdClusterKeySlot)
	sub("countkeysinslot", 3, flagStale, "3.0.0", cmdClusterCountKeysInSlot)
	sub("getkeysinslot", 4, flagStale, "3.0.0", cmdClusterGetKeysInSlot)
	sub("replicas", 3, admin, "5.0.0", cmdClusterReplicas)
	sub("slaves", 3, admin, "3.0.0", cmdClusterReplicas)
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

// clusterHelpLines are Redis 7.0's CLUSTER HELP lines, in its order.
var clusterHelpLines = []string{
	"ADDSLOTS <slot> [<slot> ...]",
	"    Assign slots to current node.",
	"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Assign slots which are between <start-slot> and <end-slot> to current node.",
	"BUMPEPOCH",
	"    Advance the cluster config epoch.",
	"COUNT-FAILURE-REPORTS <node-id>",
	"    Return number of failure reports for <node-id>.",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"DELSLOTS <slot> [<slot> ...]",
	"    Delete slots information from current node.",
	"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Delete slots information which are between <start-slot> and <end-slot> from current node.",
	"FAILOVER [FORCE|TAKEOVER]",
	"    Promote current replica node to being a master.",
	"FORGET <node-id>",
	"    Remove a node from the cluster.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"FLUSHSLOTS",
	"    Delete current node own slots information.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MEET <ip> <port> [<bus-port>]",
	"    Connect nodes into a working cluster.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"REPLICATE <node-id>",
	"    Configure current node as replica to <node-id>.",
	"RESET [HARD|SOFT]",
	"    Reset current node (default: soft).",
	"SET-CONFIG-EPOCH <epoch>",
	"    Set config epoch of current node.",
	"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
	"    Set slot state.",
	"REPLICAS <node-id>",
	"    Return <node-id> replicas.",
	"SAVECONFIG",
	"    Force saving cluster configuration on disk.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"LINKS",
	"    Return information about all network links between this node and its peers.",
	"    Output format is an array where each array element is a map containing attributes of a link",
}

// CLUSTER HELP
func cmdClusterHelp(c *Client, args [][]byte) { c.addHelp("CLUSTER", clusterHelpLines) }

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

// machineOK is machineDo replying +OK on success.
func (c *Client) machineOK(fn func(m *cluster.Machine, now time.Time) error) {
	if c.machineDo(fn) {
		c.addOK()
	}
}

func argsStrings(args [][]byte) []string { return argStrings(args) }

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
	c.addArrayLen(len(ranges))
	for _, r := range ranges {
		c.addArrayLen(3 + len(r.Replicas))
		c.addInt(int64(r.Start))
		c.addInt(int64(r.End))
		c.addClusterNode(r.Master)
		for _, rep := range r.Replicas {
			c.addClusterNode(rep)
		}
	}
}

// CLUSTER SHARDS: per master, a map of its slot ranges (flat start, end
// pairs) and its nodes, master first, each a map in Redis's key order.
func cmdClusterShards(c *Client, args [][]byte) {
	var shards []cluster.Shard
	c.machineDo(func(m *cluster.Machine, _ time.Time) error { shards = m.Shards(); return nil })
	typ := c.srv.cfg.Get(DirClusterPreferredEndpointType)
	c.addArrayLen(len(shards))
	for _, sh := range shards {
		c.addMapLen(2)
		c.addBulkString("slots")
		c.addArrayLen(2 * len(sh.Slots))
		for _, r := range sh.Slots {
			c.addInt(int64(r[0]))
			c.addInt(int64(r[1]))
		}
		c.addBulkString("nodes")
		c.addArrayLen(len(sh.Nodes))
		for _, n := range sh.Nodes {
			c.addShardNode(n, typ)
		}
	}
}

// addShardNode is Redis's addNodeDetailsToShardReply (no TLS: the port is
// the plaintext one and tls-port is never shown).
func (c *Client) addShardNode(n cluster.ShardNode, endpointType string) {
	fields := 6 // id, ip, endpoint, role, replication-offset, health
	if n.Port != 0 {
		fields++
	}
	if n.Hostname != "" {
		fields++
	}
	c.addMapLen(fields)
	c.addBulkString("id")
	c.addBulkString(n.ID)
	if n.Port != 0 {
		c.addBulkString("port")
		c.addInt(int64(n.Port))
	}
	c.addBulkString("ip")
	c.addBulkString(n.IP)
	c.addBulkString("endpoint")
	c.addBulkString(preferredEndpoint(n.NodeInfo, endpointType))
	if n.Hostname != "" {
		c.addBulkString("hostname")
		c.addBulkString(n.Hostname)
	}
	c.addBulkString("role")
	c.addBulkString(n.Role)
	c.addBulkString("replication-offset")
	c.addInt(n.ReplOffset)
	c.addBulkString("health")
	c.addBulkString(n.Health)
}

// preferredEndpoint is Redis's getPreferredEndpoint.
func preferredEndpoint(n cluster.NodeInfo, typ string) string {
	switch typ {
	case "hostname":
		if n.Hostname != "" {
			return n.Hostname
		}
		return "?"
	case "unknown-endpoint":
		return ""
	}
	return n.IP
}

// CLUSTER LINKS: every link bound to a node, a map each. The machine
// knows the links; the runner owns their send buffers.
func cmdClusterLinks(c *Client, args [][]byte) {
	var links []cluster.LinkInfo
	if !c.machineDo(func(m *cluster.Machine, _ time.Time) error { links = m.Links(); return nil }) {
		return
	}
	bufs := c.srv.cluster.r.LinkBuffers()
	c.addArrayLen(len(links))
	for _, l := range links {
		b := bufs[l.ID]
		// A connected link always reads; it writes while its buffer
		// holds data (Redis installs the write handler then); a link
		// still connecting has neither.
		events := ""
		if b.Connected {
			events = "r"
			if b.Used > 0 {
				events = "rw"
			}
		}
		c.addMapLen(6)
		c.addBulkString("direction")
		c.addBulkString(l.Direction)
		c.addBulkString("node")
		c.addBulkString(l.Node)
		c.addBulkString("create-time")
		c.addInt(l.CreateTime)
		c.addBulkString("events")
		c.addBulkString(events)
		c.addBulkString("send-buffer-allocated")
		c.addInt(int64(b.Allocated))
		c.addBulkString("send-buffer-used")
		c.addInt(int64(b.Used))
	}
}

// CLUSTER FAILOVER [FORCE|TAKEOVER]: a replica starts a manual failover
// of its master (the machine's Failover: the MFSTART handshake, or FORCE
// without the offset wait, or TAKEOVER without votes).
func cmdClusterFailover(c *Client, args [][]byte) {
	if len(args) > 3 {
		clusterSubSyntaxError(c, args)
		return
	}
	mode := ""
	if len(args) == 3 {
		mode = string(args[2])
	}
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.Failover(now, mode) })
}

// addClusterNode is Redis's addNodeToNodeReply: endpoint, port, id and a
// map of the networking metadata that is not the preferred endpoint.
func (c *Client) addClusterNode(n cluster.NodeInfo) {
	typ := c.srv.cfg.Get(DirClusterPreferredEndpointType)
	c.addArrayLen(4)
	switch typ {
	case "hostname":
		if n.Hostname != "" {
			c.addBulkString(n.Hostname)
		} else {
			c.addBulkString("?")
		}
	case "unknown-endpoint":
		c.addNull()
	default:
		c.addBulkString(n.IP)
	}
	c.addInt(int64(n.Port))
	c.addBulkString(n.ID)
	length := 0
	if typ != "ip" {
		length++
	}
	if typ != "hostname" && n.Hostname != "" {
		length++
	}
	c.addMapLen(length)
	if typ != "ip" {
		c.addBulkString("ip")
		c.addBulkString(n.IP)
	}
	if typ != "hostname" && n.Hostname != "" {
		c.addBulkString("hostname")
		c.addBulkString(n.Hostname)
	}
}

// CLUSTER MEET ip port [cport]
func cmdClusterMeet(c *Client, args [][]byte) {
	if len(args) > 5 {
		clusterSubSyntaxError(c, args)
		return
	}
	ip, port, cport := string(args[2]), string(args[3]), ""
	if len(args) == 5 {
		cport = string(args[4])
	}
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.Meet(now, ip, port, cport) })
}

// CLUSTER FORGET node-id
func cmdClusterForget(c *Client, args [][]byte) {
	id := string(args[2])
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.Forget(now, id) })
}

// CLUSTER ADDSLOTS slot [slot ...]
func cmdClusterAddSlots(c *Client, args [][]byte) {
	s := argsStrings(args[2:])
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.AddSlots(now, s...) })
}

// CLUSTER DELSLOTS slot [slot ...]
func cmdClusterDelSlots(c *Client, args [][]byte) {
	s := argsStrings(args[2:])
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.DelSlots(now, s...) })
}

// CLUSTER ADDSLOTSRANGE start end [start end ...]
func cmdClusterAddSlotsRange(c *Client, args [][]byte) {
	if len(args)%2 == 1 {
		c.addError(errWrongArgs("cluster|addslotsrange"))
		return
	}
	s := argsStrings(args[2:])
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.AddSlotsRange(now, s...) })
}

// CLUSTER DELSLOTSRANGE start end [start end ...]
func cmdClusterDelSlotsRange(c *Client, args [][]byte) {
	if len(args)%2 == 1 {
		c.addError(errWrongArgs("cluster|delslotsrange"))
		return
	}
	s := argsStrings(args[2:])
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.DelSlotsRange(now, s...) })
}

// CLUSTER FLUSHSLOTS
func cmdClusterFlushSlots(c *Client, args [][]byte) {
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.FlushSlots(now) })
}

// CLUSTER SETSLOT slot IMPORTING|MIGRATING|NODE id | STABLE
func cmdClusterSetSlot(c *Client, args [][]byte) {
	slot, action, rest := string(args[2]), string(args[3]), argsStrings(args[4:])
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.SetSlot(now, slot, action, rest...) })
}

// CLUSTER REPLICATE node-id
func cmdClusterReplicate(c *Client, args [][]byte) {
	id := string(args[2])
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.Replicate(now, id) })
}

// CLUSTER RESET [HARD|SOFT]
func cmdClusterReset(c *Client, args [][]byte) {
	hard := false
	if len(args) == 3 {
		switch lowerASCII(args[2]) {
		case "hard":
			hard = true
		case "soft":
		default:
			c.addError(errSyntax)
			return
		}
	} else if len(args) > 3 {
		clusterSubSyntaxError(c, args)
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

// CLUSTER SET-CONFIG-EPOCH epoch
func cmdClusterSetConfigEpoch(c *Client, args [][]byte) {
	e := string(args[2])
	c.machineOK(func(m *cluster.Machine, now time.Time) error { return m.SetConfigEpoch(now, e) })
}

// CLUSTER BUMPEPOCH
func cmdClusterBumpEpoch(c *Client, args [][]byte) {
	var s string
	c.machineDo(func(m *cluster.Machine, now time.Time) error { s = m.BumpEpoch(now); return nil })
	c.addSimple(s)
}

// CLUSTER SAVECONFIG
func cmdClusterSaveConfig(c *Client, args [][]byte) {
	c.machineOK(func(m *cluster.Machine, now time.Time) error { m.SaveConfig(); return nil })
}

// CLUSTER COUNT-FAILURE-REPORTS node-id
func cmdClusterCountFailureReports(c *Client, args [][]byte) {
	id := string(args[2])
	var n int
	if c.machineDo(func(m *cluster.Machine, now time.Time) error {
		var err error
		n, err = m.CountFailureReports(now, id)
		return err
	}) {
		c.addInt(int64(n))
	}
}

// CLUSTER KEYSLOT key
func cmdClusterKeySlot(c *Client, args [][]byte) {
	c.addInt(int64(keySlot(bstr(args[2]))))
}

// CLUSTER COUNTKEYSINSLOT slot
func cmdClusterCountKeysInSlot(c *Client, args [][]byte) {
	slot, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if slot < 0 || slot >= keyspace.NumSlots {
		c.addError("ERR Invalid slot")
		return
	}
	c.addInt(int64(c.srv.dbs[0].CountKeysInSlot(int(slot))))
}

// CLUSTER GETKEYSINSLOT slot count
func cmdClusterGetKeysInSlot(c *Client, args [][]byte) {
	slot, ok1 := parseInt(args[2])
	if !ok1 {
		c.addError(errNotInt)
		return
	}
	n, ok2 := parseInt(args[3])
	if !ok2 {
		c.addError(errNotInt)
		return
	}
	if slot < 0 || slot >= keyspace.NumSlots || n < 0 {
		c.addError("ERR Invalid slot or number of keys")
		return
	}
	keys := c.srv.keysInSlot(int(slot), int(min(n, 1<<30)))
	c.addStrings(keys)
}

// CLUSTER REPLICAS node-id
func cmdClusterReplicas(c *Client, args [][]byte) {
	id := string(args[2])
	var lines []string
	if c.machineDo(func(m *cluster.Machine, _ time.Time) error {
		var err error
		lines, err = m.Replicas(id, false)
		return err
	}) {
		c.addStrings(lines)
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
