package node

import (
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/persist"
	"github.com/shardis/shardis/internal/node/slotmig"
	"github.com/shardis/shardis/internal/node/stream"
)

// Stream reads and consumer groups: XREAD, XREADGROUP (with blocking on
// the machinery of blocking.go), XGROUP, XACK, XPENDING, XCLAIM and
// XAUTOCLAIM. Group state changes reach replicas and the AOF as Redis
// sends them (stream.Log: XCLAIM ... FORCE JUSTID LASTID per delivered
// entry, XGROUP SETID for a NOACK read, XGROUP CREATECONSUMER for a
// consumer a NOACK read created); the reading command itself is never
// propagated.

// xreadBlockedCount is XREAD_BLOCKED_DEFAULT_COUNT: the COUNT of a blocked
// read given none.
const xreadBlockedCount = 1000

func registerStreamGroupCommands(t *commandTable) {
	t.add(&command{name: "xreadgroup", arity: -7, flags: flagWrite | flagBlocking, keys: stream.ReadKeys, mayBlock: stream.ReadMayBlock, fn: cmdXReadGroup, group: "stream", since: "5.0.0"})
	add := func(name string, arity int, flags cmdFlag, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: 1, last: 1, fn: fn, group: "stream", since: since})
	}
	add("xack", -4, flagWrite|flagFast, cmdXAck, "5.0.0")
	add("xpending", -3, flagReadOnly, cmdXPending, "5.0.0")
	add("xclaim", -6, flagWrite|flagFast, cmdXClaim, "5.0.0")
	add("xautoclaim", -6, flagWrite|flagFast, cmdXAutoClaim, "6.2.0")
	addStreamSubs(t, "xgroup", cmdXGroup, []streamSub{
		{"create", -5, flagWrite | flagDenyOOM, "5.0.0"}, {"setid", -5, flagWrite, "5.0.0"},
		{"destroy", 4, flagWrite, "5.0.0"}, {"createconsumer", 5, flagWrite | flagDenyOOM, "6.2.0"},
		{"delconsumer", 5, flagWrite, "5.0.0"}, {"help", 2, flagLoading | flagStale, "5.0.0"},
	})
}

// absorbDirty counts the command's changes without propagating the
// command itself (Redis's preventCommandPropagation): what replicas need
// was queued with propagateAs.
func (c *Client) absorbDirty() {
	if c.propArgs == nil && c.dirty > 0 {
		c.srv.dirty.Add(int64(c.dirty))
		c.dirty = 0
	}
}

// propagating reports whether the effects of the running command go
// anywhere now: an EXEC or script being collected, an enabled AOF, a
// master's replication backlog, a slot migration's tap (or a propagator
// of another kind). XADD's rewritten form and the XCLAIMs and XGROUPs
// standing for a group read are built only then, as Redis builds them
// only to propagate; every propagator is registered from the start, so
// their mere presence says nothing.
func (c *Client) propagating() bool {
	if c.inExec {
		return true
	}
	s := c.srv
	s.propMu.RLock()
	defer s.propMu.RUnlock()
	for _, p := range s.propagators {
		switch p := p.(type) {
		case *persist.AOF:
			if p.Enabled() {
				return true
			}
		case *replication:
			// History is true once a backlog exists (or existed); a
			// replica's stream is its master's.
			_, _, hist := p.History()
			p.mu.Lock()
			replica := p.link != nil
			p.mu.Unlock()
			if hist && !replica {
				return true
			}
		case *slotmig.Engine:
			if p.Gate() != nil {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// streamLog returns a log for the group changes on key (nil when nothing
// listens).
func (c *Client) streamLog(key, group []byte) *stream.Log {
	if !c.propagating() {
		return nil
	}
	return &stream.Log{Key: key, Group: group}
}

// flushStreamLog propagates what log collected.
func (c *Client) flushStreamLog(log *stream.Log) {
	if log != nil {
		for _, cmd := range log.Cmds {
			c.propagateAs(cmd)
		}
	}
}

// consumerFor looks the consumer up (refreshing its seen time) or creates
// it (notified and counted as Redis's streamCreateConsumer).
func (c *Client) consumerFor(g *stream.Group, name []byte, key string) (*stream.Consumer, bool) {
	cons, created := g.Touch(name, c.now)
	c.consumerCreated(created, key)
	return cons, created
}

// consumerCreated counts and notifies a consumer a command created.
func (c *Client) consumerCreated(created bool, key string) {
	if created {
		c.markDirty(1)
		c.notify(notifyStream, "xgroup-createconsumer", key)
	}
}

// readGroup serves XREADGROUP on stream s at key, new entries after gt or
// (history) the consumer's pending ones, and replies them.
func (c *Client) readGroup(s *stream.Stream, g *stream.Group, key []byte, r *stream.ReadArgs, gt stream.ID, count int64, history bool) {
	cons, created := c.consumerFor(g, r.Consumer, string(key))
	log := c.streamLog(key, r.Group)
	if created && r.NoAck {
		log.CreateConsumer(cons.Name)
	}
	if history {
		c.addStreamEntries(s.History(cons, gt, count, c.now), false)
	} else {
		c.addStreamEntries(s.ReadNew(gt, count, &stream.GroupRead{Group: g, Consumer: cons, NoAck: r.NoAck, Log: log}, c.now), false)
	}
	c.flushStreamLog(log)
}

// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
func cmdXRead(c *Client, args [][]byte) { xreadGeneric(c, args, false) }

// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]
func cmdXReadGroup(c *Client, args [][]byte) {
	xreadGeneric(c, args, true)
	c.absorbDirty()
}

// xreadGeneric is XREAD and XREADGROUP (Redis's xreadCommand).
func xreadGeneric(c *Client, args [][]byte, xreadgroup bool) {
	r, err := stream.ParseRead(args, xreadgroup, c.inScript, c.now)
	if c.streamArgErr(args, err) {
		return
	}
	n := len(r.Keys)
	ids := make([]stream.ID, n)
	streams := make([]*stream.Stream, n)
	var groups []*stream.Group
	if xreadgroup {
		groups = make([]*stream.Group, n)
	}
	for i, key := range r.Keys {
		s, ok := c.lookupStream(key, true)
		if !ok {
			return
		}
		streams[i] = s
		if xreadgroup {
			if s != nil {
				groups[i] = s.Group(string(r.Group))
			}
			if groups[i] == nil {
				c.addError("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(r.Group) + "' in XREADGROUP with GROUP option")
				return
			}
		}
		if ids[i], err = stream.ReadID(r.IDArgs[i], xreadgroup, s); c.streamArgErr(args, err) {
			return
		}
	}
	plans := stream.PlanRead(streams, groups, ids)
	if len(plans) == 0 {
		if r.Timeout == -1 || !c.canBlock() {
			c.addNullArray()
		} else {
			xreadBlock(c, ids, &r)
		}
		return
	}
	c.addStreamsHeader(len(plans))
	for _, p := range plans {
		s, key := streams[p.Index], r.Keys[p.Index]
		if c.proto == 2 {
			c.addArrayLen(2)
		}
		c.addBulk(key)
		if !xreadgroup {
			c.addStreamEntries(s.ReadNew(p.After, r.Count, nil, c.now), false)
			continue
		}
		g := s.Group(string(r.Group)) // a repeated key may have changed it
		if g == nil {
			g = groups[p.Index]
		}
		gt := p.After
		if !p.History && gt.Less(g.LastID) {
			gt = g.LastID
		}
		c.readGroup(s, g, key, &r, gt, r.Count, p.History)
		c.markDirty(1)
	}
}

// addStreamsHeader starts a read's reply of n streams: an array of
// [key, entries] pairs in RESP2, a map in RESP3.
func (c *Client) addStreamsHeader(n int) {
	if c.proto == 2 {
		c.addArrayLen(n)
	} else {
		c.addMapLen(n)
	}
}

// xreadBlock blocks an XREAD/XREADGROUP until one of its streams gets an
// entry after its ID (for a group: after the group's last delivered ID
// at serving time), the key of a group read is deleted or changes type
// (an UNBLOCKED error), or its group is destroyed (NOGROUP).
func xreadBlock(c *Client, ids []stream.ID, r *stream.ReadArgs) {
	count := r.Count
	if count == 0 {
		count = xreadBlockedCount
	}
	names := make([]string, len(r.Keys))
	gts := make(map[string]stream.ID, len(r.Keys))
	for i, k := range r.Keys {
		names[i] = string(k)
		if _, dup := gts[names[i]]; !dup {
			gts[names[i]] = ids[i]
		}
	}
	var rg *stream.ReadArgs
	if r.Group != nil {
		rg = &stream.ReadArgs{Group: append([]byte(nil), r.Group...), Consumer: append([]byte(nil), r.Consumer...), NoAck: r.NoAck}
	}
	c.srv.blocking.streamReads.Store(true)
	c.blockForKeys(blockSpec{
		keys:    names,
		timeout: r.Timeout,
		each:    true,
		serve: func(c *Client, key string) bool {
			return serveStreamWaiter(c, key, gts[key], count, rg)
		},
	})
}

// serveStreamWaiter serves a client blocked by XREAD/XREADGROUP (rg non
// nil) on key (Redis's serveClientsBlockedOnStreamKey and
// unblockDeletedStreamReadgroupClients).
func serveStreamWaiter(c *Client, key string, gt stream.ID, count int64, rg *stream.ReadArgs) bool {
	s, _, err := keyspace.ValueAt[*stream.Stream](c.curDB(), key, c.now)
	if s == nil || err != nil {
		if rg != nil {
			c.addError("UNBLOCKED the stream key no longer exists")
			return true
		}
		return false
	}
	var g *stream.Group
	if rg != nil {
		if g = s.Group(string(rg.Group)); g == nil {
			c.addError("NOGROUP the consumer group this client was blocked on no longer exists")
			return true
		}
		gt = g.LastID
	}
	if !gt.Less(s.LastID) {
		return false
	}
	kb := []byte(key)
	c.addStreamsHeader(1)
	if c.proto == 2 {
		c.addArrayLen(2)
	}
	c.addBulk(kb)
	if g == nil {
		c.addStreamEntries(s.ReadNew(gt, count, nil, c.now), false)
	} else {
		c.readGroup(s, g, kb, rg, gt, count, false)
	}
	return true
}

// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP ...
func cmdXGroup(c *Client, args [][]byte) {
	if len(args) == 2 && eqFold(args[1], "help") {
		c.addHelp("XGROUP", stream.GroupHelp)
		return
	}
	if len(args) < 4 {
		c.addSubcommandSyntaxError(args)
		return
	}
	a, err := stream.ParseGroupOptions(args[1], args[min(5, len(args)):])
	if c.streamArgErr(args, err) {
		return
	}
	s, ok := c.lookupStream(args[2], false)
	if !ok {
		return
	}
	out, err := stream.XGroup(args, s, a, c.now)
	key := string(args[2])
	if out.Created != nil {
		c.curDB().SetObject(key, out.Created)
		c.signalModifiedKey(key)
	}
	if c.streamArgErr(args, err) {
		return
	}
	if out.OK {
		c.addOK()
	} else {
		c.addInt(out.Int)
	}
	if out.Event != "" {
		c.markDirty(1)
		c.notify(notifyStream, out.Event, key)
	}
	if out.Wake {
		c.signalKeyAsReady(key) // blocked XREADGROUPs get NOGROUP
	}
}

// addSubcommandSyntaxError is Redis's addReplySubcommandSyntaxError.
func (c *Client) addSubcommandSyntaxError(args [][]byte) {
	c.addError("ERR unknown subcommand or wrong number of arguments for '" + truncArg(args[1]) + "'. Try " + upper(string(args[0])) + " HELP.")
}

// XACK key group id [id ...]
func cmdXAck(c *Client, args [][]byte) {
	s, ok := c.lookupStream(args[1], true)
	if !ok {
		return
	}
	var g *stream.Group
	if s != nil {
		g = s.Group(string(args[2]))
	}
	if g == nil {
		c.addInt(0)
		return
	}
	ids, err := stream.ParseIDs(args[3:])
	if c.streamArgErr(args, err) {
		return
	}
	acked := g.AckAll(ids)
	c.markDirty(acked)
	c.addInt(int64(acked))
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
func cmdXPending(c *Client, args [][]byte) {
	a, err := stream.ParsePending(args)
	if c.streamArgErr(args, err) {
		return
	}
	if _, g, ok := c.lookupGroup(args[1], args[2]); ok {
		c.addStreamReply(g.PendingReply(a, c.now))
	}
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
func cmdXClaim(c *Client, args [][]byte) {
	defer c.absorbDirty()
	s, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	a, err := stream.ParseClaim(args, c.now)
	if c.streamArgErr(args, err) {
		return
	}
	log := c.streamLog(args[1], args[2])
	res := s.Claim(g, args[3], a, c.now, log)
	c.claimed(args, res, log)
	c.addStreamEntries(res.Entries, a.JustID)
}

// claimed propagates, counts and notifies what a claim did.
func (c *Client) claimed(args [][]byte, res stream.ClaimResult, log *stream.Log) {
	c.flushStreamLog(log)
	c.markDirty(res.Dirty)
	if res.Created {
		c.notify(notifyStream, "xgroup-createconsumer", string(args[1]))
	}
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
func cmdXAutoClaim(c *Client, args [][]byte) {
	defer c.absorbDirty()
	a, err := stream.ParseAutoClaim(args)
	if c.streamArgErr(args, err) {
		return
	}
	s, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	log := c.streamLog(args[1], args[2])
	res := s.AutoClaim(g, args[3], a, c.now, log)
	c.claimed(args, res, log)
	c.addArrayLen(3)
	c.addStreamID(res.Next)
	c.addStreamEntries(res.Entries, a.JustID)
	c.addArrayLen(len(res.Deleted))
	for _, id := range res.Deleted {
		c.addStreamID(id)
	}
}

// lookupGroup finds the consumer group of the stream at key, replying
// with WRONGTYPE or Redis's NOGROUP error (ok false) when there is none.
func (c *Client) lookupGroup(key, group []byte) (*stream.Stream, *stream.Group, bool) {
	s, ok := c.lookupStream(key, true)
	if !ok {
		return nil, nil, false
	}
	var g *stream.Group
	if s != nil {
		g = s.Group(string(group))
	}
	if g == nil {
		c.addError("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'")
		return nil, nil, false
	}
	return s, g, true
}
