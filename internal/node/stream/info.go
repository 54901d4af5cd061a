package stream

import "github.com/shardis/shardis/internal/node/value"

// Reply shaping as data: XINFO and XPENDING build their replies from
// these values and the node renders them, so the shapes live beside the
// type they describe. A reply value is one of:
//
//	nil          a null (bulk)
//	NullArray{}  a null array
//	int64        an integer
//	string       a bulk string
//	ID           an ID, as a bulk string
//	Entry        [id, [field, value ...]] (or [id, nil] when Deleted)
//	[]Entry      an array of entries
//	[]any        an array
//	Map          a map (RESP3), a flat array of pairs (RESP2)

// NullArray is a null array reply.
type NullArray struct{}

// KV is one pair of a Map.
type KV struct {
	Key   string
	Value any
}

// Map is a map reply, in order.
type Map []KV

// GroupHelp is XGROUP HELP's text.
var GroupHelp = []string{
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
}

// InfoHelp is XINFO HELP's text.
var InfoHelp = []string{
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
}

// InfoConsumers is XINFO CONSUMERS's reply at now.
func (g *Group) InfoConsumers(now int64) []any {
	names := g.ConsumerNames()
	out := make([]any, len(names))
	for i, n := range names {
		cons := g.consumers[n]
		out[i] = Map{{"name", n}, {"pending", int64(cons.PendingCount())}, {"idle", max(now-cons.SeenTime, 0)}}
	}
	return out
}

// InfoGroups is XINFO GROUPS's reply.
func (s *Stream) InfoGroups() []any {
	names := s.GroupNames()
	out := make([]any, len(names))
	for i, n := range names {
		g := s.groups[n]
		out[i] = Map{
			{"name", n}, {"consumers", int64(g.NumConsumers())}, {"pending", int64(g.PendingCount())},
			{"last-delivered-id", g.LastID}, {"entries-read", entriesRead(g)}, {"lag", s.lagReply(g)},
		}
	}
	return out
}

// entriesRead is a group's entries-read (null when unknown).
func entriesRead(g *Group) any {
	if g.EntriesRead != InvalidEntriesRead {
		return g.EntriesRead
	}
	return nil
}

// lagReply is a group's lag (null when it cannot be known).
func (s *Stream) lagReply(g *Group) any {
	if lag, ok := s.Lag(g); ok {
		return lag
	}
	return nil
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

// ParseInfoStream parses XINFO STREAM's options (after the key): FULL
// [COUNT n]; count defaults to 10 (0: all).
func ParseInfoStream(opts [][]byte) (full bool, count int64, err error) {
	count = 10
	if len(opts) == 0 {
		return false, count, nil
	}
	if len(opts) != 1 && len(opts) != 3 || !eqFold(opts[0], "full") {
		return false, count, ErrSubcommandSyntax
	}
	if len(opts) == 3 {
		if !eqFold(opts[1], "count") {
			return false, count, ErrSubcommandSyntax
		}
		n, ok := value.ParseInt(opts[2])
		if !ok {
			return false, count, ErrNotInt
		}
		if n >= 0 {
			count = n
		}
	}
	return true, count, nil
}

// InfoStream is XINFO STREAM's reply (full: XINFO STREAM FULL with at
// most count entries and PEL entries, 0: all).
func (s *Stream) InfoStream(full bool, count int64) Map {
	m := Map{
		{"length", int64(s.Len())}, {"radix-tree-keys", int64(s.Nodes())}, {"radix-tree-nodes", raxNodes(s.Nodes())},
		{"last-generated-id", s.LastID}, {"max-deleted-entry-id", s.MaxDeletedID},
		{"entries-added", int64(s.EntriesAdded)}, {"recorded-first-entry-id", s.FirstID},
	}
	if !full {
		return append(m, KV{"groups", int64(s.NumGroups())},
			KV{"first-entry", s.edgeEntry(false)}, KV{"last-entry", s.edgeEntry(true)})
	}
	m = append(m, KV{"entries", s.Collect([]Entry{}, ID{}, MaxID, false, count)})
	names := s.GroupNames()
	groups := make([]any, len(names))
	for i, n := range names {
		groups[i] = s.infoGroupFull(s.groups[n], count)
	}
	return append(m, KV{"groups", groups})
}

// edgeEntry is the first (or last) entry, null when empty.
func (s *Stream) edgeEntry(last bool) any {
	if e := s.Collect(nil, ID{}, MaxID, last, 1); len(e) > 0 {
		return e[0]
	}
	return nil
}

// infoGroupFull is a group of XINFO STREAM FULL.
func (s *Stream) infoGroupFull(g *Group, count int64) Map {
	var pend []any
	firstPending(g.Pending, count, func(na *NACK) {
		pend = append(pend, []any{na.ID, na.Consumer.Name, na.DeliveryTime, int64(na.DeliveryCount)})
	})
	cnames := g.ConsumerNames()
	consumers := make([]any, len(cnames))
	for i, cn := range cnames {
		cons := g.consumers[cn]
		var cp []any
		firstPending(cons.Pending, count, func(na *NACK) {
			cp = append(cp, []any{na.ID, na.DeliveryTime, int64(na.DeliveryCount)})
		})
		consumers[i] = Map{{"name", cn}, {"seen-time", cons.SeenTime}, {"pel-count", int64(cons.PendingCount())}, {"pending", orEmpty(cp)}}
	}
	return Map{
		{"name", g.Name}, {"last-delivered-id", g.LastID}, {"entries-read", entriesRead(g)}, {"lag", s.lagReply(g)},
		{"pel-count", int64(g.PendingCount())}, {"pending", orEmpty(pend)}, {"consumers", consumers},
	}
}

// orEmpty makes a nil array an empty one.
func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// firstPending calls fn for the first count entries (all with count 0)
// of a group's or a consumer's PEL.
func firstPending(pending func(ID, func(*NACK) bool), count int64, fn func(*NACK)) {
	n := int64(0)
	pending(ID{}, func(na *NACK) bool {
		fn(na)
		n++
		return count == 0 || n < count
	})
}
