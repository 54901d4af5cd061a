package node

import (
	"time"

	"github.com/shardis/shardis/internal/node/admin"
	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/pubsub"
)

func registerPubSubCommands(t *commandTable) {
	f := flagPubSub | flagNoScript | flagLoading | flagStale
	t.add(&command{name: "subscribe", arity: -2, flags: f, fn: cmdSubscribe, group: "pubsub", since: "2.0.0"})
	t.add(&command{name: "unsubscribe", arity: -1, flags: f, fn: cmdUnsubscribe, group: "pubsub", since: "2.0.0"})
	t.add(&command{name: "psubscribe", arity: -2, flags: f, fn: cmdPSubscribe, group: "pubsub", since: "2.0.0"})
	t.add(&command{name: "punsubscribe", arity: -1, flags: f, fn: cmdPUnsubscribe, group: "pubsub", since: "2.0.0"})
	t.add(&command{name: "publish", arity: 3, flags: flagPubSub | flagLoading | flagStale | flagFast | flagMayReplicate, fn: cmdPublish, group: "pubsub", since: "2.0.0"})
	t.add(&command{name: "pubsub", arity: -2, fn: cmdHelpDispatch, group: "pubsub", since: "2.8.0"})
	t.addSub("pubsub", &command{name: "channels", arity: -2, flags: flagPubSub | flagLoading | flagStale, fn: cmdPubsubChannels})
	t.addSub("pubsub", &command{name: "numsub", arity: -2, flags: flagPubSub | flagLoading | flagStale, fn: cmdPubsubNumsub})
	t.addSub("pubsub", &command{name: "numpat", arity: 2, flags: flagPubSub | flagLoading | flagStale, fn: cmdPubsubNumpat})
	t.addSub("pubsub", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdPubsubHelp})
}

// SUBSCRIBE channel [channel ...]
func cmdSubscribe(c *Client, args [][]byte) { subscribe(c, args, pubsub.Channel, "SUBSCRIBE") }

// PSUBSCRIBE pattern [pattern ...]
func cmdPSubscribe(c *Client, args [][]byte) { subscribe(c, args, pubsub.Pattern, "PSUBSCRIBE") }

// subscribe is (P|S)SUBSCRIBE, refused inside MULTI.
func subscribe(c *Client, args [][]byte, k pubsub.Kind, name string) {
	if c.hasFlag(clientMulti) {
		c.addError("ERR " + name + " isn't allowed for a DENY BLOCKING client")
		return
	}
	c.srv.pubsub.Subscribe(subscriber{c}, k, argStrings(args[1:]))
}

// UNSUBSCRIBE [channel ...]
func cmdUnsubscribe(c *Client, args [][]byte) {
	c.srv.pubsub.Unsubscribe(subscriber{c}, pubsub.Channel, argStrings(args[1:]))
}

// PUNSUBSCRIBE [pattern ...]
func cmdPUnsubscribe(c *Client, args [][]byte) {
	c.srv.pubsub.Unsubscribe(subscriber{c}, pubsub.Pattern, argStrings(args[1:]))
}

// PUBLISH channel message
func cmdPublish(c *Client, args [][]byte) {
	// Subscription commands that arrived before it have run: PUBLISH is
	// sequenced (sequence.go).
	n := c.srv.pubsub.publish(string(args[1]), args[2])
	c.noteHello(args[1], args[2])
	if cm := c.srv.cluster; cm != nil {
		// In a cluster the bus carries it to every node, replicas
		// included; it is not put in the replication stream.
		ch, msg := cloneBytes(args[1]), cloneBytes(args[2])
		cm.Post(func(m *cluster.Machine, now time.Time) { m.Publish(now, ch, msg) })
	} else {
		c.markDirty(1) // PUBLISH is propagated to replicas
	}
	c.addInt(int64(n))
}

// PUBSUB CHANNELS [pattern]
func cmdPubsubChannels(c *Client, args [][]byte) { replyChannels(c, args, pubsub.Channel) }

// PUBSUB NUMSUB [channel ...]
func cmdPubsubNumsub(c *Client, args [][]byte) { replyNumsub(c, args, pubsub.Channel) }

// replyChannels replies the sorted channels of kind k that match args[2]
// (PUBSUB CHANNELS and SHARDCHANNELS).
func replyChannels(c *Client, args [][]byte, k pubsub.Kind) {
	if len(args) > 3 { // pubsubCommand takes at most the pattern
		c.addSubcommandSyntaxError(args)
		return
	}
	var pattern *string
	if len(args) >= 3 {
		p := string(args[2])
		pattern = &p
	}
	c.addStrings(c.srv.pubsub.Names(k, pattern))
}

// replyNumsub replies the subscriber count of each channel of args[2:]
// (PUBSUB NUMSUB and SHARDNUMSUB): channel, count, channel, count ... as
// a flat array in RESP3 too, as redis-server 7.0 answers (no map).
func replyNumsub(c *Client, args [][]byte, k pubsub.Kind) {
	counts := c.srv.pubsub.NumSub(k, args[2:])
	c.addArrayLen(2 * len(counts))
	for i, a := range args[2:] {
		c.addBulk(a)
		c.addInt(int64(counts[i]))
	}
}

// PUBSUB NUMPAT
func cmdPubsubNumpat(c *Client, args [][]byte) { c.addInt(int64(c.srv.pubsub.Len(pubsub.Pattern))) }

// PUBSUB HELP
func cmdPubsubHelp(c *Client, args [][]byte) { c.addHelp("PUBSUB", pubsub.Help) }

func argStrings(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// addHelp replies to a HELP subcommand as Redis's addReplyHelp does.
func (c *Client) addHelp(name string, lines []string) {
	c.addAppended(func(b []byte, _ int) []byte { return admin.AppendHelp(b, name, lines) })
}

// cmdHelpDispatch answers a container command called with an unknown
// subcommand (known ones are dispatched before the handler runs).
func cmdHelpDispatch(c *Client, args [][]byte) {
	c.addError("ERR unknown subcommand '" + truncArg(args[1]) + "'. Try " + upper(c.cmd.name) + " HELP.")
}

func upper(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'a' && ch <= 'z' {
			b[i] = ch - 'a' + 'A'
		}
	}
	return string(b)
}
