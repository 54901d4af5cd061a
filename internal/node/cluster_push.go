package node

import (
	"log/slog"
	"strings"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/push"
)

// The topology push (package cluster/push) tells a node's clients when
// its slot map changes; these are its seams to the node.

// TopologyChannel is the reserved node-local channel of the topology push.
const TopologyChannel = push.Channel

// pushHost is push.Host over the cluster mode.
type pushHost struct{ cm *clusterMode }

func (h pushHost) Routing() *cluster.Routing { return h.cm.Routing() }
func (h pushHost) Publish(channel string, msg []byte) int {
	return h.cm.srv.pubsub.publish(channel, msg)
}
func (h pushHost) Logger() *slog.Logger { return h.cm.srv.log }

// maintClient is push.Client over a client connection.
type maintClient struct{ c *Client }

func (m maintClient) Closed() bool                  { return m.c.closed.Load() }
func (m maintClient) RESP3() bool                   { return m.c.proto >= 3 }
func (m maintClient) Push(fn func(b []byte) []byte) { m.c.push(fn) }

// pusher returns the node's topology pusher, starting it on first use.
func (cm *clusterMode) pusher() *push.Pusher {
	cm.pushOnce.Do(func() { cm.push = push.Start(pushHost{cm}, cm.Stopping()) })
	return cm.push
}

// pushTopology runs in the bus loop after every Ready, once the routing
// has been published.
func (cm *clusterMode) pushTopology(m *cluster.Machine, rd *cluster.Ready) {
	cm.pusher().Hook(m, rd)
}

// CLIENT MAINT_NOTIFICATIONS ON [moving-endpoint-type <type>] | OFF
//
// The handshake of Redis 8's maintenance notifications, which go-redis v9
// sends on every RESP3 connection. In cluster mode a client that turns
// them on receives the SMIGRATED push when slots change owner; outside
// cluster mode the subcommand does not exist, as in Redis 7.0.
func cmdClientMaintNotifications(c *Client, args [][]byte) {
	cm := c.srv.cluster
	if cm == nil {
		cmdHelpDispatch(c, args)
		return
	}
	switch {
	case eqFold(args[2], "off") && len(args) == 3:
		cm.pusher().SetMaint(maintClient{c}, false)
		c.addOK()
	case eqFold(args[2], "on"):
		for i := 3; i < len(args); i += 2 {
			if !eqFold(args[i], "moving-endpoint-type") || i+1 >= len(args) {
				c.addError(errSyntax)
				return
			}
			switch strings.ToLower(string(args[i+1])) {
			case "internal-ip", "internal-fqdn", "external-ip", "external-fqdn", "none":
			default:
				c.addError(errSyntax)
				return
			}
		}
		if c.proto < 3 {
			c.addError("ERR CLIENT MAINT_NOTIFICATIONS ON requires RESP3")
			return
		}
		cm.pusher().SetMaint(maintClient{c}, true)
		c.addOK()
	default:
		c.addError(errSyntax)
	}
}
