package node

import (
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/stream"
)

// Streams (Redis 7.0's t_stream.c): XADD, XRANGE, XREVRANGE, XLEN, XDEL,
// XTRIM, XSETID and XINFO here; reads and consumer groups (XREAD,
// XREADGROUP, XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM) in
// commands_stream_group.go. The type, its grammars and its reply shapes
// are internal/node/stream; these handlers look the key up, call it,
// reply, and propagate and notify.

func registerStreamCommands(t *commandTable) {
	add := func(name string, arity int, flags cmdFlag, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: 1, last: 1, fn: fn, group: "stream", since: since})
	}
	add("xadd", -5, flagWrite|flagDenyOOM|flagFast, cmdXAdd, "5.0.0")
	add("xrange", -4, flagReadOnly, cmdXRange, "5.0.0")
	add("xrevrange", -4, flagReadOnly, cmdXRevRange, "5.0.0")
	add("xlen", 2, flagReadOnly|flagFast, cmdXLen, "5.0.0")
	add("xdel", -3, flagWrite|flagFast, cmdXDel, "5.0.0")
	add("xtrim", -4, flagWrite, cmdXTrim, "5.0.0")
	add("xsetid", -3, flagWrite|flagDenyOOM|flagFast, cmdXSetID, "5.0.0")
	t.add(&command{name: "xread", arity: -4, flags: flagReadOnly | flagBlocking, keys: stream.ReadKeys, mayBlock: stream.ReadMayBlock, fn: cmdXRead, group: "stream", since: "5.0.0"})
	addStreamSubs(t, "xinfo", cmdXInfo, []streamSub{
		{"stream", -3, flagReadOnly, "5.0.0"}, {"groups", 3, flagReadOnly, "5.0.0"},
		{"consumers", 4, flagReadOnly, "5.0.0"}, {"help", 2, flagLoading | flagStale, "5.0.0"},
	})
	registerStreamGroupCommands(t)
}

// streamSub is a subcommand row of XINFO or XGROUP.
type streamSub struct {
	name  string
	arity int
	flags cmdFlag
	since string
}

// addStreamSubs registers the container command and its subcommands, all
// run by fn; every one but HELP has its key at position 2.
func addStreamSubs(t *commandTable, container string, fn handlerFunc, subs []streamSub) {
	t.add(&command{name: container, arity: -2, fn: cmdHelpDispatch, group: "stream", since: "5.0.0"})
	for _, s := range subs {
		c := &command{name: s.name, arity: s.arity, flags: s.flags, fn: fn, group: "stream", since: s.since}
		if s.name != "help" {
			c.first, c.last = 2, 2
		}
		t.addSub(container, c)
	}
}

// lookupStream returns the stream at key (see lookupValue).
func (c *Client) lookupStream(key []byte, read bool) (*stream.Stream, bool) {
	return lookupValue[*stream.Stream](c, key, read)
}

// streamArgErr replies a stream grammar's error; it reports whether
// there was one.
func (c *Client) streamArgErr(args [][]byte, err error) bool {
	switch err {
	case nil:
		return false
	case stream.ErrSubcommandSyntax:
		c.addSubcommandSyntaxError(args)
	default:
		c.addError(err.Error())
	}
	return true
}

// addStreamID replies an ID as a bulk string.
func (c *Client) addStreamID(id stream.ID) {
	var buf [48]byte
	c.addBulk(id.Append(buf[:0]))
}

// addStreamEntries replies an array of entries (see addStreamEntry), or
// of their IDs alone.
func (c *Client) addStreamEntries(entries []stream.Entry, justID bool) {
	c.addArrayLen(len(entries))
	for i := range entries {
		if justID {
			c.addStreamID(entries[i].ID)
		} else {
			c.addStreamEntry(&entries[i])
		}
	}
}

// addStreamEntry replies [id, [field, value, ...]], or [id, nil] for an
// entry deleted meanwhile.
func (c *Client) addStreamEntry(e *stream.Entry) {
	c.addArrayLen(2)
	c.addStreamID(e.ID)
	if e.Deleted {
		c.addNullArray()
		return
	}
	c.addArrayLen(len(e.FV))
	for _, b := range e.FV {
		c.addBulk(b)
	}
}

// addStreamReply renders a reply the stream package shaped as data (see
// stream.Map for the values).
func (c *Client) addStreamReply(v any) {
	switch v := v.(type) {
	case nil:
		c.addNull()
	case stream.NullArray:
		c.addNullArray()
	case int64:
		c.addInt(v)
	case string:
		c.addBulkString(v)
	case stream.ID:
		c.addStreamID(v)
	case stream.Entry:
		c.addStreamEntry(&v)
	case []stream.Entry:
		c.addStreamEntries(v, false)
	case []any:
		c.addArrayLen(len(v))
		for _, e := range v {
			c.addStreamReply(e)
		}
	case stream.Map:
		c.addMapLen(len(v))
		for _, kv := range v {
			c.addBulkString(kv.Key)
			c.addStreamReply(kv.Value)
		}
	}
}

// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
func cmdXAdd(c *Client, args [][]byte) {
	o, err := stream.ParseAddTrim(args, true, c.hasFlag(clientMaster|clientDenyBlocking), c.srv.cfg.Int(config.DirStreamNodeMaxEntries))
	if c.streamArgErr(args, err) {
		return
	}
	s, ok := c.lookupStream(args[1], false)
	if !ok {
		return
	}
	key := string(args[1])
	if s == nil {
		if o.NoMkStream {
			c.addNull()
			return
		}
		s = stream.New()
		c.curDB().SetObject(key, s)
	}
	if s.LastID == stream.MaxID {
		c.addError("ERR The stream has exhausted the last possible ID, unable to add more items")
		return
	}
	lim := stream.Limits{NodeMaxBytes: c.srv.cfg.Int(config.DirStreamNodeMaxBytes), NodeMaxEntries: c.srv.cfg.Int(config.DirStreamNodeMaxEntries)}
	id, err := s.Append(args[o.IDPos+1:], o.ID, o.IDGiven, o.SeqGiven, c.now, lim)
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addStreamID(id)
	c.signalModifiedKey(key)
	c.notify(notifyStream, "xadd", key)
	c.markDirty(1)
	if o.Trim.Strategy != stream.TrimNone && s.Trim(o.Trim) > 0 {
		c.notify(notifyStream, "xtrim", key)
	}
	if c.propagating() {
		if prop := o.Propagated(args, s, id); prop != nil {
			c.propagateAs(prop)
		}
	}
	c.signalKeyAsReady(key)
}

// XRANGE key start end [COUNT count]
func cmdXRange(c *Client, args [][]byte) { xrangeGeneric(c, args, false) }

// XREVRANGE key end start [COUNT count]
func cmdXRevRange(c *Client, args [][]byte) { xrangeGeneric(c, args, true) }

func xrangeGeneric(c *Client, args [][]byte, rev bool) {
	r, err := stream.ParseRangeArgs(args, rev)
	if c.streamArgErr(args, err) {
		return
	}
	s, ok := c.lookupStream(args[1], true)
	switch {
	case !ok:
	case s == nil:
		c.addArrayLen(0)
	case r.Count == 0:
		c.addNullArray()
	default:
		c.addStreamEntries(s.Collect(nil, r.Start, r.End, rev, r.Count), false)
	}
}

// XLEN key
func cmdXLen(c *Client, args [][]byte) {
	if s, ok := c.lookupStream(args[1], true); ok {
		c.addInt(int64(s.Len()))
	}
}

// XDEL key id [id ...]
func cmdXDel(c *Client, args [][]byte) {
	s, ok := c.lookupStream(args[1], false)
	if !ok {
		return
	}
	if s == nil {
		c.addInt(0)
		return
	}
	ids, err := stream.ParseIDs(args[2:])
	if c.streamArgErr(args, err) {
		return
	}
	deleted := s.Delete(ids)
	if deleted > 0 {
		key := string(args[1])
		c.signalModifiedKey(key)
		c.notify(notifyStream, "xdel", key)
		c.markDirty(deleted)
	}
	c.addInt(int64(deleted))
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
func cmdXTrim(c *Client, args [][]byte) {
	o, err := stream.ParseAddTrim(args, false, c.hasFlag(clientMaster|clientDenyBlocking), c.srv.cfg.Int(config.DirStreamNodeMaxEntries))
	if c.streamArgErr(args, err) {
		return
	}
	s, ok := c.lookupStream(args[1], false)
	if !ok {
		return
	}
	if s == nil {
		c.addInt(0)
		return
	}
	deleted := s.Trim(o.Trim)
	if deleted > 0 {
		key := string(args[1])
		c.notify(notifyStream, "xtrim", key)
		if o.Trim.Approx {
			c.propagateAs(o.RewriteTrim(args, s))
		}
		c.signalModifiedKey(key)
		c.markDirty(int(deleted))
	}
	c.addInt(deleted)
}

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
func cmdXSetID(c *Client, args [][]byte) {
	a, err := stream.ParseSetID(args)
	if c.streamArgErr(args, err) {
		return
	}
	s, ok := c.lookupStream(args[1], false)
	if !ok {
		return
	}
	if s == nil {
		c.addError(errNoSuchKey)
		return
	}
	if c.streamArgErr(args, s.SetID(a)) {
		return
	}
	c.addOK()
	c.markDirty(1)
	c.notify(notifyStream, "xsetid", string(args[1]))
}

// XINFO CONSUMERS key group | GROUPS key | STREAM key [FULL [COUNT count]] | HELP
func cmdXInfo(c *Client, args [][]byte) {
	if eqFold(args[1], "help") && len(args) == 2 {
		c.addHelp("XINFO", stream.InfoHelp)
		return
	}
	if len(args) < 3 || eqFold(args[1], "help") {
		c.addSubcommandSyntaxError(args)
		return
	}
	s, ok := c.lookupStream(args[2], true)
	if !ok {
		return
	}
	if s == nil {
		c.addError(errNoSuchKey)
		return
	}
	switch {
	case eqFold(args[1], "consumers") && len(args) == 4:
		if g := s.Group(string(args[3])); g == nil {
			c.addError("NOGROUP No such consumer group '" + string(args[3]) + "' for key name '" + string(args[2]) + "'")
		} else {
			c.addStreamReply(g.InfoConsumers(c.now))
		}
	case eqFold(args[1], "groups") && len(args) == 3:
		c.addStreamReply(s.InfoGroups())
	case eqFold(args[1], "stream"):
		full, count, err := stream.ParseInfoStream(args[3:])
		if !c.streamArgErr(args, err) {
			c.addStreamReply(s.InfoStream(full, count))
		}
	default:
		c.addSubcommandSyntaxError(args)
	}
}
