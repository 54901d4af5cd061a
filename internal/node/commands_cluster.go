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
	sub := func(name string, arity int, flags cmdFlag, fn handlerFunc) {
		t.addSub("cluster", &command{name: name, arity: arity, flags: flags, fn: clusterOnly(fn)})
	}
	admin := flagAdmin | flagStale | flagNoScript
	sub("info", 2, flagStale, cmdClusterInfo)
	sub("myid", 2, flagStale, cmdClusterMyID)
	sub("nodes", 2, flagStale, cmdClusterNodes)
	sub("slots", 2, flagStale|flagLoading, cmdClusterSlots)
	sub("meet", -4, admin, cmdClusterMeet)
	sub("forget", 3, admin, cmdClusterForget)
	sub("addslots", -3, admin, cmdClusterAddSlots)
	sub("delslots", -3, admin, cmdClusterDelSlots)
	sub("addslotsrange", -4, admin, cmdClusterAddSlotsRange)
	sub("delslotsrange", -4, admin, cmdClusterDelSlotsRange)
	sub("flushslots", 2, admin, cmdClusterFlushSlots)
	sub("setslot", -4, admin, cmdClusterSetSlot)
	sub("replicate", 3, admin, cmdClusterReplicate)
	sub("reset", -2, admin, cmdClusterReset)
	sub("set-config-epoch", 3, admin, cmdClusterSetConfigEpoch)
	sub("bumpepoch", 2, admin, cmdClusterBumpEpoch)
	sub("saveconfig", 2, admin, cmdClusterSaveConfig)
	sub("count-failure-reports", 3, admin, cmdClusterCountFailureReports)
	sub("keyslot", 3, flagStale, cmdClusterKeySlot)
	sub("countkeysinslot", 3, flagStale, cmdClusterCountKeysInSlot)
	sub("getkeysinslot", 4, flagStale, cmdClusterGetKeysInSlot)
	sub("replicas", 3, admin, cmdClusterReplicas)
	sub("slaves", 3, admin, cmdClusterReplicas)
	t.add(&command{name: "asking", arity: 1, flags: flagFast, fn: clusterOnly(cmdAsking), group: "cluster", since: "3.0.0"})
	t.add(&command{name: "readonly", arity: 1, flags: flagFast | flagLoading | flagStale, fn: clusterOnly(cmdReadOnly), group: "cluster", since: "3.0.0"})
	t.add(&command{name: "readwrite", arity: 1, flags: flagFast | flagLoading | flagStale, fn: clusterOnly(cmdReadWrite), group: "cluster", since: "3.0.0"})
}

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
		c.addError("ERR unknown subcommand or wrong number of arguments for 'meet'. Try CLUSTER HELP.")
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
		c.addError(errSyntax)
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
	if !ok || slot < 0 || slot >= keyspace.NumSlots {
		c.addError("ERR Invalid slot")
		return
	}
	c.addInt(int64(c.srv.dbs[0].CountKeysInSlot(int(slot))))
}

// CLUSTER GETKEYSINSLOT slot count
func cmdClusterGetKeysInSlot(c *Client, args [][]byte) {
	slot, ok1 := parseInt(args[2])
	n, ok2 := parseInt(args[3])
	if !ok1 || !ok2 || slot < 0 || slot >= keyspace.NumSlots || n < 0 {
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
