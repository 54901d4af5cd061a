package node

import (
	"sort"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/resp"
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
func cmdSSubscribe(c *Client, args [][]byte) {
	if c.hasFlag(clientMulti) {
		c.addError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
		return
	}
	h := c.srv.pubsub
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range args[1:] {
		name := string(a)
		if c.shardChannels == nil {
			c.shardChannels = make(map[string]struct{})
		}
		if _, ok := c.shardChannels[name]; !ok {
			c.shardChannels[name] = struct{}{}
			subs := h.shards[name]
			if subs == nil {
				subs = make(map[*Client]struct{})
				h.shards[name] = subs
			}
			subs[c] = struct{}{}
		}
		c.setFlag(clientPubSub, true)
		n := len(c.shardChannels)
		c.emitOrdered(func(b []byte) []byte {
			b = resp.AppendPushLen(b, c.proto, 3)
			b = resp.AppendBulkString(b, "ssubscribe")
			b = resp.AppendBulkString(b, name)
			return resp.AppendInt(b, int64(n))
		})
	}
}

// SUNSUBSCRIBE [shardchannel ...]
func cmdSUnsubscribe(c *Client, args [][]byte) {
	h := c.srv.pubsub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sunsubscribeLocked(c, argStrings(args[1:]), true)
}

// sunsubscribeLocked removes c from shard channels (all when names is
// empty), confirming each when notify. The hub lock must be held.
func (h *pubsubHub) sunsubscribeLocked(c *Client, names []string, notify bool) {
	if len(names) == 0 {
		for n := range c.shardChannels {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 && notify {
			c.emitOrdered(func(b []byte) []byte {
				b = resp.AppendPushLen(b, c.proto, 3)
				b = resp.AppendBulkString(b, "sunsubscribe")
				b = resp.AppendNull(b, c.proto)
				return resp.AppendInt(b, 0)
			})
		}
	}
	for _, name := range names {
		if _, ok := c.shardChannels[name]; ok {
			delete(c.shardChannels, name)
			if subs := h.shards[name]; subs != nil {
				delete(subs, c)
				if len(subs) == 0 {
					delete(h.shards, name)
				}
			}
		}
		n := len(c.shardChannels)
		if notify {
			c.emitOrdered(func(b []byte) []byte {
				b = resp.AppendPushLen(b, c.proto, 3)
				b = resp.AppendBulkString(b, "sunsubscribe")
				b = resp.AppendBulkString(b, name)
				return resp.AppendInt(b, int64(n))
			})
		}
	}
	if !c.anySubs() {
		c.setFlag(clientPubSub, false)
	}
}

// SPUBLISH shardchannel message
func cmdSPublish(c *Client, args [][]byte) {
	n := c.srv.publishShardLocal(string(args[1]), args[2])
	if cm := c.srv.cluster; cm != nil {
		ch, msg := cloneBytes(args[1]), cloneBytes(args[2])
		cm.r.Post(func(m *cluster.Machine, now time.Time) { m.PublishShard(now, ch, msg) })
	} else {
		c.markDirty(1) // propagated to replicas outside cluster mode
	}
	c.addInt(int64(n))
}

// publishShardLocal delivers msg to this node's subscribers of a shard
// channel and returns their number.
func (s *Server) publishShardLocal(channel string, msg []byte) int {
	h := s.pubsub
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for c := range h.shards[channel] {
		c.push(func(b []byte) []byte {
			b = resp.AppendPushLen(b, c.proto, 3)
			b = resp.AppendBulkString(b, "smessage")
			b = resp.AppendBulkString(b, channel)
			return resp.AppendBulk(b, msg)
		})
		n++
	}
	return n
}

// PUBSUB SHARDCHANNELS [pattern]
func cmdPubsubShardChannels(c *Client, args [][]byte) {
	c.replyChannels(args, func(h *pubsubHub) map[string]map[*Client]struct{} { return h.shards })
}

// PUBSUB SHARDNUMSUB [shardchannel ...]
func cmdPubsubShardNumsub(c *Client, args [][]byte) {
	c.replyNumsub(args, func(h *pubsubHub) map[string]map[*Client]struct{} { return h.shards })
}

func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }
