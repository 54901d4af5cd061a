package node

import (
	"sort"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
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

func cmdSubscribe(c *Client, args [][]byte) {
	if c.hasFlag(clientMulti) {
		c.addError("ERR SUBSCRIBE isn't allowed for a DENY BLOCKING client")
		return
	}
	for _, a := range args[1:] {
		c.srv.pubsub.subscribe(c, string(a), false)
	}
}

func cmdPSubscribe(c *Client, args [][]byte) {
	if c.hasFlag(clientMulti) {
		c.addError("ERR PSUBSCRIBE isn't allowed for a DENY BLOCKING client")
		return
	}
	for _, a := range args[1:] {
		c.srv.pubsub.subscribe(c, string(a), true)
	}
}

func cmdUnsubscribe(c *Client, args [][]byte) {
	c.srv.pubsub.unsubscribe(c, argStrings(args[1:]), false)
}

func cmdPUnsubscribe(c *Client, args [][]byte) {
	c.srv.pubsub.unsubscribe(c, argStrings(args[1:]), true)
}

// PUBLISH channel message
func cmdPublish(c *Client, args [][]byte) {
	// Subscription commands that arrived before it have run: PUBLISH is
	// sequenced (sequence.go).
	n := c.srv.pubsub.publish(string(args[1]), args[2])
	if cm := c.srv.cluster; cm != nil {
		// In a cluster the bus carries it to every node, replicas
		// included; it is not put in the replication stream.
		ch, msg := cloneBytes(args[1]), cloneBytes(args[2])
		cm.r.Post(func(m *cluster.Machine, now time.Time) { m.Publish(now, ch, msg) })
	} else {
		c.markDirty(1) // PUBLISH is propagated to replicas
	}
	c.addInt(int64(n))
}

// PUBSUB CHANNELS [pattern]
func cmdPubsubChannels(c *Client, args [][]byte) {
	c.replyChannels(args, func(h *pubsubHub) map[string]map[*Client]struct{} { return h.channels })
}

// PUBSUB NUMSUB [channel ...]
func cmdPubsubNumsub(c *Client, args [][]byte) {
	c.replyNumsub(args, func(h *pubsubHub) map[string]map[*Client]struct{} { return h.channels })
}

// replyChannels replies the sorted channels of one of the hub's maps that
// match args[2] (PUBSUB CHANNELS and SHARDCHANNELS).
func (c *Client) replyChannels(args [][]byte, which func(*pubsubHub) map[string]map[*Client]struct{}) {
	h := c.srv.pubsub
	h.mu.RLock()
	var out []string
	for ch := range which(h) {
		if len(args) < 3 || globMatch(string(args[2]), ch, false) {
			out = append(out, ch)
		}
	}
	h.mu.RUnlock()
	sort.Strings(out)
	c.addStrings(out)
}

// replyNumsub replies the subscriber count of each channel of args[2:]
// in one of the hub's maps (PUBSUB NUMSUB and SHARDNUMSUB).
func (c *Client) replyNumsub(args [][]byte, which func(*pubsubHub) map[string]map[*Client]struct{}) {
	h := c.srv.pubsub
	h.mu.RLock()
	defer h.mu.RUnlock()
	m := which(h)
	c.addMapLen(len(args) - 2)
	for _, a := range args[2:] {
		c.addBulk(a)
		c.addInt(int64(len(m[string(a)])))
	}
}

// PUBSUB NUMPAT
func cmdPubsubNumpat(c *Client, args [][]byte) {
	h := c.srv.pubsub
	h.mu.RLock()
	n := len(h.patterns)
	h.mu.RUnlock()
	c.addInt(int64(n))
}

func cmdPubsubHelp(c *Client, args [][]byte) {
	c.addHelp("PUBSUB", []string{
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
	})
}

func argStrings(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// addHelp replies to a HELP subcommand as Redis's addReplyHelp does.
func (c *Client) addHelp(name string, lines []string) {
	c.addArrayLen(len(lines) + 3)
	c.addSimple(name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.addSimple(l)
	}
	c.addSimple("HELP")
	c.addSimple("    Prints this help.")
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
