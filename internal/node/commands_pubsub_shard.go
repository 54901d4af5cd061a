package node

import (
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/pubsub"
)

// Sharded pub/sub (Redis 7.0): a shard channel hashes to a slot like a
// key; in cluster mode SPUBLISH reaches the subscribers of the nodes
// serving that slot only, where PUBLISH reaches every node.
func registerShardPubSubCommands(t *commandTable) {
	f := flagPubSub | flagNoScript | flagLoading | flagStale
	t.add(&command{name: "ssubscribe", arity: -2, flags: f, first: 1, last: -1, step: 1, fn: cmdSSubscribe, group: "pubsub", since: "7.0.0"})
	t.add(&command{name: "sunsubscribe", arity: -1, flags: f, first: 1, last: -1, step: 1, fn: cmdSUnsubscribe, group: "pubsub", since: "7.0.0"})
	t.add(&command{name: "spublish", arity: 3, flags: flagPubSub | flagLoading | flagStale | flagFast | flagMayReplicate, first: 1, last: 1, step: 1, fn: cmdSPublish, group: "pubsub", since: "7.0.0"})
	t.addSub("pubsub", &command{name: "shardchannels", arity: -2, flags: flagPubSub | flagLoading | flagStale, fn: cmdPubsubShardChannels})
	t.addSub("pubsub", &command{name: "shardnumsub", arity: -2, flags: flagPubSub | flagLoading | flagStale, fn: cmdPubsubShardNumsub})
}

// isShardPubSub reports the commands Redis's getNodeByQuery treats as
// pubsubshard.
func isShardPubSub(cmd *command) bool {
	switch cmd.name {
	case "ssubscribe", "sunsubscribe", "spublish":
		return true
	}
	return false
}

// SSUBSCRIBE shardchannel [shardchannel ...]
func cmdSSubscribe(c *Client, args [][]byte) { subscribe(c, args, pubsub.Shard, "SSUBSCRIBE") }

// SUNSUBSCRIBE [shardchannel ...]
func cmdSUnsubscribe(c *Client, args [][]byte) {
	c.srv.pubsub.Unsubscribe(subscriber{c}, pubsub.Shard, argStrings(args[1:]))
}

// SPUBLISH shardchannel message
func cmdSPublish(c *Client, args [][]byte) {
	n := c.srv.publishShardLocal(string(args[1]), args[2])
	if cm := c.srv.cluster; cm != nil {
		ch, msg := cloneBytes(args[1]), cloneBytes(args[2])
		cm.Post(func(m *cluster.Machine, now time.Time) { m.PublishShard(now, ch, msg) })
	} else {
		c.markDirty(1) // propagated to replicas outside cluster mode
	}
	c.addInt(int64(n))
}

// publishShardLocal delivers msg to this node's subscribers of a shard
// channel and returns their number.
func (s *Server) publishShardLocal(channel string, msg []byte) int {
	return s.pubsub.PublishShard(channel, msg)
}

// PUBSUB SHARDCHANNELS [pattern]
func cmdPubsubShardChannels(c *Client, args [][]byte) { replyChannels(c, args, pubsub.Shard) }

// PUBSUB SHARDNUMSUB [shardchannel ...]
func cmdPubsubShardNumsub(c *Client, args [][]byte) { replyNumsub(c, args, pubsub.Shard) }

func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }
