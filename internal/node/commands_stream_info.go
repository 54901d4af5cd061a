package node

import (
	"github.com/shardis/shardis/internal/node/stream"
)

// XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS, XINFO HELP.

func registerStreamInfoCommands(t *commandTable) {
	t.add(&command{name: "xinfo", arity: -2, fn: cmdHelpDispatch, group: "stream", since: "5.0.0"})
	sub := func(name string, arity int, flags cmdFlag, fn handlerFunc) {
		c := &command{name: name, arity: arity, flags: flags, fn: fn, group: "stream", since: "5.0.0"}
		if name != "help" {
			c.first, c.last = 2, 2
		}
		t.addSub("xinfo", c)
	}
	sub("stream", -3, flagReadOnly, cmdXInfo)
	sub("groups", 3, flagReadOnly, cmdXInfo)
	sub("consumers", 4, flagReadOnly, cmdXInfo)
	sub("help", 2, flagLoading|flagStale, cmdXInfo)
}

// XINFO CONSUMERS key group | GROUPS key | STREAM key [FULL [COUNT count]] | HELP
func cmdXInfo(c *Client, args [][]byte) {
	if eqFold(args[1], "help") {
		if len(args) != 2 {
			c.addSubcommandSyntaxError(args)
			return
		}
		c.addHelp("XINFO", []string{
			"CONSUMERS <key> <groupname>",
			"    Show consumers of <groupname>.",
			"GROUPS <key>",
			"    Show the stream consumer groups.",
			"STREAM <key> [FULL [COUNT <count>]",
			"    Show information about the stream.",
		})
		return
	}
	if len(args) < 3 {
		c.addSubcommandSyntaxError(args)
		return
	}
	s, ok := c.lookupStream(args[2], true)
	if !ok {
		return
	}
	if s == nil {
		c.addError("ERR no such key")
		return
	}
	switch {
	case eqFold(args[1], "consumers") && len(args) == 4:
		g := s.Group(string(args[3]))
		if g == nil {
			c.addError("NOGROUP No such consumer group '" + string(args[3]) + "' for key name '" + string(args[2]) + "'")
			return
		}
		names := g.ConsumerNames()
		c.addArrayLen(len(names))
		for _, n := range names {
			cons := g.Consumer(n)
			c.addMapLen(3)
			c.addBulkString("name")
			c.addBulkString(n)
			c.addBulkString("pending")
			c.addInt(int64(cons.PendingCount()))
			c.addBulkString("idle")
			c.addInt(max(c.now-cons.SeenTime, 0))
		}
	case eqFold(args[1], "groups") && len(args) == 3:
		names := s.GroupNames()
		c.addArrayLen(len(names))
		for _, n := range names {
			g := s.Group(n)
			c.addMapLen(6)
			c.addBulkString("name")
			c.addBulkString(n)
			c.addBulkString("consumers")
			c.addInt(int64(g.NumConsumers()))
			c.addBulkString("pending")
			c.addInt(int64(g.PendingCount()))
			c.addBulkString("last-delivered-id")
			c.addStreamID(g.LastID)
			c.addBulkString("entries-read")
			c.addEntriesRead(g)
			c.addBulkString("lag")
			c.addLag(s, g)
		}
	case eqFold(args[1], "stream"):
		xinfoStream(c, args, s)
	default:
		c.addSubcommandSyntaxError(args)
	}
}

func (c *Client) addEntriesRead(g *stream.Group) {
	if g.EntriesRead != stream.InvalidEntriesRead {
		c.addInt(g.EntriesRead)
	} else {
		c.addNull()
	}
}

func (c *Client) addLag(s *stream.Stream, g *stream.Group) {
	if lag, ok := s.Lag(g); ok {
		c.addInt(lag)
	} else {
		c.addNull()
	}
}

// raxNodes estimates the radix tree's node count (XINFO's
// radix-tree-nodes): Redis's rax of 16-byte keys has about one node per
// key plus the compressed prefix chain.
func raxNodes(keys int) int64 {
	if keys == 0 {
		return 1
	}
	return int64(keys) + 1
}

// xinfoStream is XINFO STREAM key [FULL [COUNT count]].
func xinfoStream(c *Client, args [][]byte, s *stream.Stream) {
	full := false
	count := int64(10)
	opts := args[3:]
	if len(opts) > 0 {
		if len(opts) != 1 && len(opts) != 3 || !eqFold(opts[0], "full") {
			c.addSubcommandSyntaxError(args)
			return
		}
		full = true
		if len(opts) == 3 {
			if !eqFold(opts[1], "count") {
				c.addSubcommandSyntaxError(args)
				return
			}
			n, ok := parseInt(opts[2])
			if !ok {
				c.addError(errNotInt)
				return
			}
			if n < 0 {
				n = 10
			}
			count = n
		}
	}
	if full {
		c.addMapLen(9)
	} else {
		c.addMapLen(10)
	}
	c.addBulkString("length")
	c.addInt(int64(s.Len()))
	c.addBulkString("radix-tree-keys")
	c.addInt(int64(s.Nodes()))
	c.addBulkString("radix-tree-nodes")
	c.addInt(raxNodes(s.Nodes()))
	c.addBulkString("last-generated-id")
	c.addStreamID(s.LastID)
	c.addBulkString("max-deleted-entry-id")
	c.addStreamID(s.MaxDeletedID)
	c.addBulkString("entries-added")
	c.addInt(int64(s.EntriesAdded))
	c.addBulkString("recorded-first-entry-id")
	c.addStreamID(s.FirstID)
	if !full {
		c.addBulkString("groups")
		c.addInt(int64(s.NumGroups()))
		for _, rev := range []bool{false, true} {
			if rev {
				c.addBulkString("last-entry")
			} else {
				c.addBulkString("first-entry")
			}
			found := false
			s.Range(stream.ID{}, stream.MaxID, rev, func(id stream.ID, fv [][]byte) bool {
				c.addStreamEntry(id, fv)
				found = true
				return false
			})
			if !found {
				c.addNull()
			}
		}
		return
	}
	c.addBulkString("entries")
	c.replyRange(s, stream.ID{}, stream.MaxID, count, false)
	c.addBulkString("groups")
	names := s.GroupNames()
	c.addArrayLen(len(names))
	for _, n := range names {
		g := s.Group(n)
		c.addMapLen(7)
		c.addBulkString("name")
		c.addBulkString(n)
		c.addBulkString("last-delivered-id")
		c.addStreamID(g.LastID)
		c.addBulkString("entries-read")
		c.addEntriesRead(g)
		c.addBulkString("lag")
		c.addLag(s, g)
		c.addBulkString("pel-count")
		c.addInt(int64(g.PendingCount()))
		c.addBulkString("pending")
		pend := firstPending(g.Pending, count)
		c.addArrayLen(len(pend))
		for _, na := range pend {
			c.addArrayLen(4)
			c.addStreamID(na.ID)
			c.addBulkString(na.Consumer.Name)
			c.addInt(na.DeliveryTime)
			c.addInt(int64(na.DeliveryCount))
		}
		c.addBulkString("consumers")
		cnames := g.ConsumerNames()
		c.addArrayLen(len(cnames))
		for _, cn := range cnames {
			cons := g.Consumer(cn)
			c.addMapLen(4)
			c.addBulkString("name")
			c.addBulkString(cn)
			c.addBulkString("seen-time")
			c.addInt(cons.SeenTime)
			c.addBulkString("pel-count")
			c.addInt(int64(cons.PendingCount()))
			c.addBulkString("pending")
			cp := firstPending(cons.Pending, count)
			c.addArrayLen(len(cp))
			for _, na := range cp {
				c.addArrayLen(3)
				c.addStreamID(na.ID)
				c.addInt(na.DeliveryTime)
				c.addInt(int64(na.DeliveryCount))
			}
		}
	}
}

// firstPending collects the first count entries (all with count 0) of a
// group's or a consumer's PEL, for XINFO STREAM FULL.
func firstPending(pending func(stream.ID, func(*stream.NACK) bool), count int64) []*stream.NACK {
	var out []*stream.NACK
	pending(stream.ID{}, func(na *stream.NACK) bool {
		out = append(out, na)
		return count == 0 || int64(len(out)) < count
	})
	return out
}
