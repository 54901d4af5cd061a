package node

import (
	"strconv"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/stream"
)

// Stream reads and consumer groups: XREAD, XREADGROUP (with blocking on
// the machinery of blocking.go), XGROUP, XACK, XPENDING, XCLAIM and
// XAUTOCLAIM. Group state changes reach replicas and the AOF as Redis
// sends them: XCLAIM ... FORCE JUSTID LASTID per delivered entry, XGROUP
// SETID for a NOACK read, XGROUP CREATECONSUMER for a consumer a NOACK
// read created; the reading command itself is never propagated.

// xreadBlockedCount is XREAD_BLOCKED_DEFAULT_COUNT: the COUNT of a blocked
// read given none.
const xreadBlockedCount = 1000

func registerStreamGroupCommands(t *commandTable) {
	t.add(&command{name: "xreadgroup", arity: -7, flags: flagWrite | flagBlocking, keys: xreadKeys, fn: cmdXReadGroup, group: "stream", since: "5.0.0"})
	add := func(name string, arity int, flags cmdFlag, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: 1, last: 1, fn: fn, group: "stream", since: since})
	}
	add("xack", -4, flagWrite|flagFast, cmdXAck, "5.0.0")
	add("xpending", -3, flagReadOnly, cmdXPending, "5.0.0")
	add("xclaim", -6, flagWrite|flagFast, cmdXClaim, "5.0.0")
	add("xautoclaim", -6, flagWrite|flagFast, cmdXAutoClaim, "6.2.0")
	t.add(&command{name: "xgroup", arity: -2, fn: cmdHelpDispatch, group: "stream", since: "5.0.0"})
	sub := func(name string, arity int, flags cmdFlag, fn handlerFunc, since string) {
		c := &command{name: name, arity: arity, flags: flags, fn: fn, group: "stream", since: since}
		if name != "help" {
			c.first, c.last = 2, 2
		}
		t.addSub("xgroup", c)
	}
	sub("create", -5, flagWrite|flagDenyOOM, cmdXGroup, "5.0.0")
	sub("setid", -5, flagWrite, cmdXGroup, "5.0.0")
	sub("destroy", 4, flagWrite, cmdXGroup, "5.0.0")
	sub("createconsumer", 5, flagWrite|flagDenyOOM, cmdXGroup, "6.2.0")
	sub("delconsumer", 5, flagWrite, cmdXGroup, "5.0.0")
	sub("help", 2, flagLoading|flagStale, cmdXGroup, "5.0.0")
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
// anywhere (replicas, the AOF, an EXEC or script being collected): the
// XCLAIMs and XGROUPs standing for a group read are built only then.
func (c *Client) propagating() bool { return c.inExec || c.srv.hasPropagators() }

// propXClaim queues the XCLAIM that recreates na on replicas and the AOF.
func (c *Client) propXClaim(key, group []byte, g *stream.Group, id stream.ID, na *stream.NACK) {
	if !c.propagating() {
		return
	}
	c.propagateAs([][]byte{
		[]byte("XCLAIM"), key, group, []byte(na.Consumer.Name), []byte("0"), []byte(id.String()),
		[]byte("TIME"), strconv.AppendInt(nil, na.DeliveryTime, 10),
		[]byte("RETRYCOUNT"), strconv.AppendUint(nil, na.DeliveryCount, 10),
		[]byte("FORCE"), []byte("JUSTID"), []byte("LASTID"), []byte(g.LastID.String()),
	})
}

// propGroupID queues XGROUP SETID key group last-id ENTRIESREAD n.
func (c *Client) propGroupID(key, group []byte, g *stream.Group) {
	if !c.propagating() {
		return
	}
	c.propagateAs([][]byte{
		[]byte("XGROUP"), []byte("SETID"), key, group, []byte(g.LastID.String()),
		[]byte("ENTRIESREAD"), strconv.AppendInt(nil, g.EntriesRead, 10),
	})
}

// propCreateConsumer queues XGROUP CREATECONSUMER key group consumer.
func (c *Client) propCreateConsumer(key, group []byte, name string) {
	if !c.propagating() {
		return
	}
	c.propagateAs([][]byte{[]byte("XGROUP"), []byte("CREATECONSUMER"), key, group, []byte(name)})
}

// consumerFor looks the consumer up (refreshing its seen time) or creates
// it (notified and counted as Redis's streamCreateConsumer).
func (c *Client) consumerFor(g *stream.Group, name []byte, key string) (cons *stream.Consumer, created bool) {
	if cons = g.Consumer(string(name)); cons != nil {
		cons.SeenTime = c.now
		return cons, false
	}
	cons = g.CreateConsumer(string(name), c.now)
	c.markDirty(1)
	c.notify(notifyStream, "xgroup-createconsumer", key)
	return cons, true
}

// readGroup describes an XREADGROUP read.
type readGroup struct {
	name, consumer []byte
	noack          bool
}

// deliverRange replies the entries after gt (at most count, 0: all) and,
// for a group read, delivers them to the consumer (Redis's
// streamReplyWithRange with a group).
func (c *Client) deliverRange(s *stream.Stream, key []byte, gt stream.ID, count int64, g *stream.Group, rg *readGroup, cons *stream.Consumer) {
	start, ok := gt.Incr()
	if !ok {
		c.addArrayLen(0)
		return
	}
	var ids []stream.ID
	var fvs [][][]byte
	s.Range(start, stream.MaxID, false, func(id stream.ID, fv [][]byte) bool {
		ids = append(ids, id)
		fvs = append(fvs, fv)
		return count == 0 || int64(len(ids)) < count
	})
	c.addArrayLen(len(ids))
	propLast := false
	for i, id := range ids {
		if g != nil && g.LastID.Less(id) {
			s.AdvanceGroup(g, id)
			if rg.noack {
				propLast = true
			}
		}
		c.addStreamEntry(id, fvs[i])
		if g != nil && !rg.noack {
			na := g.Deliver(id, cons, c.now)
			c.propXClaim(key, rg.name, g, id, na)
		}
	}
	if propLast {
		c.propGroupID(key, rg.name, g)
	}
}

// deliverHistory replies the consumer's pending entries after gt (Redis's
// streamReplyWithRangeFromConsumerPEL): an entry deleted meanwhile is
// [id, nil].
func (c *Client) deliverHistory(s *stream.Stream, gt stream.ID, count int64, cons *stream.Consumer) {
	start, ok := gt.Incr()
	if !ok {
		c.addArrayLen(0)
		return
	}
	var nacks []*stream.NACK
	cons.Pending(start, func(na *stream.NACK) bool {
		nacks = append(nacks, na)
		return count == 0 || int64(len(nacks)) < count
	})
	c.addArrayLen(len(nacks))
	for _, na := range nacks {
		fv, ok := s.Get(na.ID)
		if !ok {
			c.addArrayLen(2)
			c.addStreamID(na.ID)
			c.addNullArray()
			continue
		}
		c.addStreamEntry(na.ID, fv)
		na.DeliveryTime = c.now
		na.DeliveryCount++
	}
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
	timeout := int64(-1)
	var count int64
	streamsArg, nstreams := 0, 0
	var rg *readGroup
	noack := false
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case eqFold(o, "block") && more > 0:
			if c.inScript {
				c.addError("ERR " + string(args[0]) + " command is not allowed with BLOCK option from scripts")
				return
			}
			i++
			n, ok := parseInt(args[i])
			if !ok {
				c.addError("ERR timeout is not an integer or out of range")
				return
			}
			if n < 0 {
				c.addError("ERR timeout is negative")
				return
			}
			if n > 0 {
				n += c.now
			}
			timeout = n
		case eqFold(o, "count") && more > 0:
			i++
			n, ok := parseInt(args[i])
			if !ok {
				c.addError(errNotInt)
				return
			}
			count = max(n, 0)
		case eqFold(o, "streams") && more > 0:
			streamsArg = i + 1
			nstreams = len(args) - streamsArg
			if nstreams%2 != 0 {
				c.addError("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
				return
			}
			nstreams /= 2
			i = len(args)
		case eqFold(o, "group") && more >= 2:
			if !xreadgroup {
				c.addError("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			rg = &readGroup{name: args[i+1], consumer: args[i+2]}
			i += 2
		case eqFold(o, "noack"):
			if !xreadgroup {
				c.addError("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			noack = true
		default:
			c.addError(errSyntax)
			return
		}
	}
	if streamsArg == 0 {
		c.addError(errSyntax)
		return
	}
	if xreadgroup && rg == nil {
		c.addError("ERR Missing GROUP option for XREADGROUP")
		return
	}
	if rg != nil {
		rg.noack = noack
	}
	keys := args[streamsArg : streamsArg+nstreams]
	ids := make([]stream.ID, nstreams)
	streams := make([]*stream.Stream, nstreams)
	groups := make([]*stream.Group, nstreams)
	for i := range keys {
		s, ok := c.lookupStream(keys[i], true)
		if !ok {
			return
		}
		streams[i] = s
		if rg != nil {
			var g *stream.Group
			if s != nil {
				g = s.Group(string(rg.name))
			}
			if g == nil {
				c.addError("NOGROUP No such key '" + string(keys[i]) + "' or consumer group '" + string(rg.name) + "' in XREADGROUP with GROUP option")
				return
			}
			groups[i] = g
		}
		arg := args[streamsArg+nstreams+i]
		switch {
		case len(arg) == 1 && arg[0] == '$':
			if xreadgroup {
				c.addError("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
				return
			}
			if s != nil {
				ids[i] = s.LastID
			}
		case len(arg) == 1 && arg[0] == '>':
			if !xreadgroup {
				c.addError("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
				return
			}
			ids[i] = stream.MaxID
		default:
			id, ok := parseStreamID(c, arg, 0, true)
			if !ok {
				return
			}
			ids[i] = id
		}
	}
	// Which streams serve now is decided first: the reply's length
	// comes before them.
	type plan struct {
		i       int
		gt      stream.ID
		history bool
	}
	var plans []plan
	for i, s := range streams {
		if s == nil {
			continue
		}
		gt := ids[i]
		if rg != nil {
			if gt != stream.MaxID {
				plans = append(plans, plan{i, gt, true})
			} else if s.Len() > 0 {
				if top, _ := s.LastValid(); groups[i].LastID.Less(top) {
					plans = append(plans, plan{i, groups[i].LastID, false})
				}
			}
		} else if s.Len() > 0 {
			if top, _ := s.LastValid(); gt.Less(top) {
				plans = append(plans, plan{i, gt, false})
			}
		}
	}
	if len(plans) > 0 {
		if c.proto == 2 {
			c.addArrayLen(len(plans))
		} else {
			c.addMapLen(len(plans))
		}
		for _, p := range plans {
			i, s := p.i, streams[p.i]
			if c.proto == 2 {
				c.addArrayLen(2)
			}
			c.addBulk(keys[i])
			if rg == nil {
				c.deliverRange(s, keys[i], p.gt, count, nil, nil, nil)
				continue
			}
			g := s.Group(string(rg.name)) // a repeated key may have changed it
			if g == nil {
				g = groups[i]
			}
			gt := p.gt
			if !p.history && gt.Less(g.LastID) {
				gt = g.LastID
			}
			cons, created := c.consumerFor(g, rg.consumer, string(keys[i]))
			if created && rg.noack {
				c.propCreateConsumer(keys[i], rg.name, cons.Name)
			}
			if p.history {
				c.deliverHistory(s, gt, count, cons)
			} else {
				c.deliverRange(s, keys[i], gt, count, g, rg, cons)
			}
			c.markDirty(1)
		}
		return
	}
	if timeout == -1 || !c.canBlock() {
		c.addNullArray()
		return
	}
	xreadBlock(c, keys, ids, timeout, count, rg)
}

// xreadBlock blocks an XREAD/XREADGROUP until one of its streams gets an
// entry after its ID (for a group: after the group's last delivered ID
// at serving time), the key of a group read is deleted or changes type
// (an UNBLOCKED error), or its group is destroyed (NOGROUP).
func xreadBlock(c *Client, keys [][]byte, ids []stream.ID, timeout, count int64, rg *readGroup) {
	if count == 0 {
		count = xreadBlockedCount
	}
	names := make([]string, len(keys))
	gts := make(map[string]stream.ID, len(keys))
	for i, k := range keys {
		names[i] = string(k)
		if _, dup := gts[names[i]]; !dup {
			gts[names[i]] = ids[i]
		}
	}
	if rg != nil {
		rg = &readGroup{name: append([]byte(nil), rg.name...), consumer: append([]byte(nil), rg.consumer...), noack: rg.noack}
	}
	c.srv.blocking.streamReads.Store(true)
	c.blockForKeys(blockSpec{
		keys:    names,
		timeout: timeout,
		each:    true,
		serve: func(c *Client, key string) bool {
			return serveStreamWaiter(c, key, gts[key], count, rg)
		},
	})
}

// serveStreamWaiter serves a client blocked by XREAD/XREADGROUP on key
// (Redis's serveClientsBlockedOnStreamKey and
// unblockDeletedStreamReadgroupClients).
func serveStreamWaiter(c *Client, key string, gt stream.ID, count int64, rg *readGroup) bool {
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
		if g = s.Group(string(rg.name)); g == nil {
			c.addError("NOGROUP the consumer group this client was blocked on no longer exists")
			return true
		}
		gt = g.LastID
	}
	if !gt.Less(s.LastID) {
		return false
	}
	kb := []byte(key)
	if c.proto == 2 {
		c.addArrayLen(1)
		c.addArrayLen(2)
	} else {
		c.addMapLen(1)
	}
	c.addBulk(kb)
	if g == nil {
		c.deliverRange(s, kb, gt, count, nil, nil, nil)
		return true
	}
	cons, created := c.consumerFor(g, rg.consumer, key)
	if created && rg.noack {
		c.propCreateConsumer(kb, rg.name, cons.Name)
	}
	c.deliverRange(s, kb, gt, count, g, rg, cons)
	return true
}

// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP ...
func cmdXGroup(c *Client, args [][]byte) {
	opt := args[1]
	mkstream := false
	entriesRead := int64(stream.InvalidEntriesRead)
	var s *stream.Stream
	var g *stream.Group
	var grp []byte
	create, setid := eqFold(opt, "create"), eqFold(opt, "setid")
	if len(args) >= 4 {
		for i := 5; i < len(args); {
			switch {
			case create && eqFold(args[i], "mkstream"):
				mkstream = true
				i++
			case (create || setid) && eqFold(args[i], "entriesread") && i+1 < len(args):
				n, ok := parseInt(args[i+1])
				if !ok {
					c.addError(errNotInt)
					return
				}
				if n < 0 && n != stream.InvalidEntriesRead {
					c.addError("ERR value for ENTRIESREAD must be positive or -1")
					return
				}
				entriesRead = n
				i += 2
			default:
				c.addSubcommandSyntaxError(args)
				return
			}
		}
		var ok bool
		if s, ok = c.lookupStream(args[2], false); !ok {
			return
		}
		grp = args[3]
		if !mkstream {
			if s == nil {
				c.addError("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
				return
			}
			if g = s.Group(string(grp)); g == nil && (setid || eqFold(opt, "createconsumer") || eqFold(opt, "delconsumer")) {
				c.addError("NOGROUP No such consumer group '" + string(grp) + "' for key name '" + string(args[2]) + "'")
				return
			}
		}
	}
	key := ""
	if len(args) > 2 {
		key = string(args[2])
	}
	switch {
	case len(args) == 2 && eqFold(opt, "help"):
		c.addHelp("XGROUP", []string{
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
		})
	case create && len(args) >= 5 && len(args) <= 8:
		var id stream.ID
		if a := args[4]; len(a) == 1 && a[0] == '$' {
			if s != nil {
				id = s.LastID
			}
		} else {
			var ok bool
			if id, ok = parseStreamID(c, a, 0, true); !ok {
				return
			}
		}
		if s == nil {
			s = stream.New()
			c.curDB().SetObject(key, s)
			c.signalModifiedKey(key)
		}
		if s.CreateGroup(string(grp), id, entriesRead) == nil {
			c.addError("BUSYGROUP Consumer Group name already exists")
			return
		}
		c.addOK()
		c.markDirty(1)
		c.notify(notifyStream, "xgroup-create", key)
	case setid && (len(args) == 5 || len(args) == 7):
		var id stream.ID
		if a := args[4]; len(a) == 1 && a[0] == '$' {
			id = s.LastID
		} else {
			var ok bool
			if id, ok = parseStreamID(c, a, 0, false); !ok {
				return
			}
		}
		g.LastID, g.EntriesRead = id, entriesRead
		c.addOK()
		c.markDirty(1)
		c.notify(notifyStream, "xgroup-setid", key)
	case eqFold(opt, "destroy") && len(args) == 4:
		if g == nil {
			c.addInt(0)
			return
		}
		s.DestroyGroup(string(grp))
		c.addInt(1)
		c.markDirty(1)
		c.notify(notifyStream, "xgroup-destroy", key)
		c.signalKeyAsReady(key) // blocked XREADGROUPs get NOGROUP
	case eqFold(opt, "createconsumer") && len(args) == 5:
		if g.CreateConsumer(string(args[4]), c.now) == nil {
			c.addInt(0)
			return
		}
		c.markDirty(1)
		c.notify(notifyStream, "xgroup-createconsumer", key)
		c.addInt(1)
	case eqFold(opt, "delconsumer") && len(args) == 5:
		var pending int
		if cons := g.Consumer(string(args[4])); cons != nil {
			pending = g.DeleteConsumer(cons)
			c.markDirty(1)
			c.notify(notifyStream, "xgroup-delconsumer", key)
		}
		c.addInt(int64(pending))
	default:
		c.addSubcommandSyntaxError(args)
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
	ids := make([]stream.ID, 0, len(args)-3)
	for _, a := range args[3:] {
		id, ok := parseStreamID(c, a, 0, true)
		if !ok {
			return
		}
		ids = append(ids, id)
	}
	acked := 0
	for _, id := range ids {
		if g.Ack(id) {
			acked++
		}
	}
	c.markDirty(acked)
	c.addInt(int64(acked))
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
func cmdXPending(c *Client, args [][]byte) {
	justInfo := len(args) == 3
	if len(args) != 3 && (len(args) < 6 || len(args) > 9) {
		c.addError(errSyntax)
		return
	}
	var start, end stream.ID
	var count, minIdle int64
	var consumer []byte
	if len(args) >= 6 {
		si := 3
		if eqFold(args[3], "idle") {
			n, ok := parseInt(args[4])
			if !ok {
				c.addError(errNotInt)
				return
			}
			minIdle = n
			if len(args) < 8 {
				c.addError(errSyntax)
				return
			}
			si += 2
		}
		n, ok := parseInt(args[si+2])
		if !ok {
			c.addError(errNotInt)
			return
		}
		count = max(n, 0)
		if start, end, ok = parseRangeBounds(c, args[si], args[si+1]); !ok {
			return
		}
		if si+3 < len(args) {
			consumer = args[si+3]
		}
	}
	_, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	if justInfo {
		c.addArrayLen(4)
		c.addInt(int64(g.PendingCount()))
		if g.PendingCount() == 0 {
			c.addNull()
			c.addNull()
			c.addNullArray()
			return
		}
		c.addStreamID(g.FirstPending().ID)
		c.addStreamID(g.LastPending().ID)
		var names []string
		for _, n := range g.ConsumerNames() {
			if g.Consumer(n).PendingCount() > 0 {
				names = append(names, n)
			}
		}
		c.addArrayLen(len(names))
		for _, n := range names {
			c.addArrayLen(2)
			c.addBulkString(n)
			c.addBulk(strconv.AppendInt(nil, int64(g.Consumer(n).PendingCount()), 10))
		}
		return
	}
	iter := g.Pending
	if consumer != nil {
		cons := g.Consumer(string(consumer))
		if cons == nil {
			c.addArrayLen(0)
			return
		}
		iter = cons.Pending
	}
	var out []*stream.NACK
	if count > 0 {
		iter(start, func(na *stream.NACK) bool {
			if end.Less(na.ID) {
				return false
			}
			if minIdle != 0 && c.now-na.DeliveryTime < minIdle {
				return true
			}
			out = append(out, na)
			return int64(len(out)) < count
		})
	}
	c.addArrayLen(len(out))
	for _, na := range out {
		c.addArrayLen(4)
		c.addStreamID(na.ID)
		c.addBulkString(na.Consumer.Name)
		c.addInt(max(c.now-na.DeliveryTime, 0))
		c.addInt(int64(na.DeliveryCount))
	}
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
func cmdXClaim(c *Client, args [][]byte) {
	defer c.absorbDirty()
	s, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	minIdle, ok := parseInt(args[4])
	if !ok {
		c.addError("ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	var ids []stream.ID
	j := 5
	for ; j < len(args); j++ {
		id, _, err := stream.Parse(args[j], stream.ParseOptions{Strict: true})
		if err != nil {
			break
		}
		ids = append(ids, id)
	}
	now := c.now
	retry := int64(-1)
	delivery := int64(-1)
	force, justID := false, false
	var lastID stream.ID
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		o := args[j]
		switch {
		case eqFold(o, "force"):
			force = true
		case eqFold(o, "justid"):
			justID = true
		case eqFold(o, "idle") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.addError("ERR Invalid IDLE option argument for XCLAIM")
				return
			}
			delivery = now - n
		case eqFold(o, "time") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.addError("ERR Invalid TIME option argument for XCLAIM")
				return
			}
			delivery = n
		case eqFold(o, "retrycount") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.addError("ERR Invalid RETRYCOUNT option argument for XCLAIM")
				return
			}
			retry = n
		case eqFold(o, "lastid") && more > 0:
			j++
			if lastID, ok = parseStreamID(c, args[j], 0, true); !ok {
				return
			}
		default:
			c.addError("ERR Unrecognized XCLAIM option '" + string(o) + "'")
			return
		}
	}
	propLast := false
	if g.LastID.Less(lastID) {
		g.LastID = lastID
		propLast = true
	}
	if delivery != -1 {
		if delivery < 0 || delivery > now {
			delivery = now
		}
	} else {
		delivery = now
	}
	var cons *stream.Consumer
	type claimed struct {
		id stream.ID
		fv [][]byte
	}
	var out []claimed
	for i, id := range ids {
		na := g.FindPending(id)
		fv, exists := s.Get(id)
		if !exists {
			if na != nil {
				c.propXClaim(args[1], args[2], g, id, na)
				propLast = false
				c.markDirty(1)
				g.Drop(na)
			}
			continue
		}
		_ = i
		if force && na == nil {
			na = g.AddPending(id, 0)
		}
		if na == nil {
			continue
		}
		if na.Consumer != nil && minIdle != 0 && now-na.DeliveryTime < minIdle {
			continue
		}
		if cons == nil {
			cons, _ = c.consumerFor(g, args[3], string(args[1]))
		}
		na.DeliveryTime = delivery
		if retry >= 0 {
			na.DeliveryCount = uint64(retry)
		} else if !justID {
			na.DeliveryCount++
		}
		g.Assign(na, cons)
		out = append(out, claimed{id, fv})
		c.propXClaim(args[1], args[2], g, id, na)
		propLast = false
		c.markDirty(1)
	}
	if propLast {
		c.propGroupID(args[1], args[2], g)
		c.markDirty(1)
	}
	c.addArrayLen(len(out))
	for _, cl := range out {
		if justID {
			c.addStreamID(cl.id)
		} else {
			c.addStreamEntry(cl.id, cl.fv)
		}
	}
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
func cmdXAutoClaim(c *Client, args [][]byte) {
	defer c.absorbDirty()
	minIdle, ok := parseInt(args[4])
	if !ok {
		c.addError("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ex, ok := parseIntervalID(c, args[5], 0)
	if !ok {
		return
	}
	if ex {
		if start, ok = start.Incr(); !ok {
			c.addError("ERR invalid start ID for the interval")
			return
		}
	}
	count := int64(100)
	justID := false
	const attemptsFactor = 10
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eqFold(args[j], "count") && more > 0:
			n, ok := parseInt(args[j+1])
			if !ok || n < 1 || n > (1<<63-1)/16 {
				c.addError("ERR COUNT must be > 0")
				return
			}
			count = n
			j++
		case eqFold(args[j], "justid"):
			justID = true
		default:
			c.addError(errSyntax)
			return
		}
	}
	s, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	now := c.now
	attempts := count * attemptsFactor
	var cons *stream.Consumer
	type claimed struct {
		id stream.ID
		fv [][]byte
	}
	var out []claimed
	var deleted []stream.ID
	next := stream.ID{}
	var stopAt *stream.NACK
	g.Pending(start, func(na *stream.NACK) bool {
		if attempts == 0 || count == 0 {
			stopAt = na
			return false
		}
		attempts--
		fv, exists := s.Get(na.ID)
		if !exists {
			c.propXClaim(args[1], args[2], g, na.ID, na)
			c.markDirty(1)
			g.Drop(na)
			deleted = append(deleted, na.ID)
			count--
			return true
		}
		if minIdle != 0 && now-na.DeliveryTime < minIdle {
			return true
		}
		if cons == nil {
			cons, _ = c.consumerFor(g, args[3], string(args[1]))
		}
		na.DeliveryTime = now
		if !justID {
			na.DeliveryCount++
		}
		g.Assign(na, cons)
		out = append(out, claimed{na.ID, fv})
		count--
		c.propXClaim(args[1], args[2], g, na.ID, na)
		c.markDirty(1)
		return true
	})
	if stopAt != nil {
		next = stopAt.ID
	}
	c.addArrayLen(3)
	c.addStreamID(next)
	c.addArrayLen(len(out))
	for _, cl := range out {
		if justID {
			c.addStreamID(cl.id)
		} else {
			c.addStreamEntry(cl.id, cl.fv)
		}
	}
	c.addArrayLen(len(deleted))
	for _, id := range deleted {
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
