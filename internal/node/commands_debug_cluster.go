package node

import (
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// DEBUG subcommands of cluster mode, registered through RegisterDebug and
// so behind enable-debug-command like every DEBUG subcommand: the packet
// filter and the link killer that Redis's cluster tests use.
func registerClusterDebug(s *Server) {
	s.RegisterDebug("drop-cluster-packet-filter", debugDropClusterPacketFilter)
	s.RegisterDebug("clusterlink", debugClusterLink)
}

// DEBUG DROP-CLUSTER-PACKET-FILTER <type>: drop every received bus packet
// of that type (-1: none). As in Redis it is accepted outside cluster
// mode too, where it has nothing to filter.
func debugDropClusterPacketFilter(c *Client, args [][]byte) {
	if len(args) != 3 {
		debugSyntaxError(c, args)
		return
	}
	t, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if cm := c.srv.cluster; cm != nil {
		if !cm.do(func(m *cluster.Machine, _ time.Time) { m.SetDropFilter(int(t)) }) {
			c.addError("ERR cluster bus is shutting down")
			return
		}
	}
	c.addOK()
}

// DEBUG CLUSTERLINK KILL to|from|all <node-id>: close a node's outbound
// link, inbound link or both; the cron reconnects as after a network
// error.
func debugClusterLink(c *Client, args [][]byte) {
	if len(args) != 5 || !eqFold(args[2], "kill") {
		debugSyntaxError(c, args)
		return
	}
	cm := c.srv.cluster
	if cm == nil {
		c.addError("ERR Debug option only available for cluster mode enabled setup!")
		return
	}
	dir := lowerASCII(args[3])
	id := string(args[4])
	known := false
	if !cm.do(func(m *cluster.Machine, now time.Time) {
		if _, known = m.Node(id); !known {
			return
		}
		if dir == "to" || dir == "from" || dir == "all" {
			m.KillLink(now, dir, id)
		}
	}) {
		c.addError("ERR cluster bus is shutting down")
		return
	}
	switch {
	case !known:
		c.addError("ERR Unknown node " + id)
	case dir != "to" && dir != "from" && dir != "all":
		// Redis 7.0 replies this error and then +OK as well; one reply
		// keeps the connection in step.
		c.addError("ERR Unknown direction " + string(args[3]))
	default:
		c.addOK()
	}
}
