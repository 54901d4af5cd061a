package node

import (
	"strconv"

	"github.com/shardis/shardis/internal/node/stream"
)

// Streams (Redis 7.0's t_stream.c): XADD, XRANGE, XREVRANGE, XLEN, XDEL,
// XTRIM, XSETID and XREAD here; consumer groups (XGROUP, XREADGROUP,
// XACK, XPENDING, XCLAIM, XAUTOCLAIM) in commands_stream_group.go; XINFO
// in commands_stream_info.go. The type itself is internal/node/stream.

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
	t.add(&command{name: "xread", arity: -4, flags: flagReadOnly | flagBlocking, keys: xreadKeys, fn: cmdXRead, group: "stream", since: "5.0.0"})
	registerStreamGroupCommands(t)
	registerStreamInfoCommands(t)
}

// xreadKeys finds the keys of XREAD and XREADGROUP: the first half of the
// arguments after STREAMS.
func xreadKeys(args [][]byte) []int {
	for i := 1; i < len(args); i++ {
		switch {
		case eqFold(args[i], "streams"):
			// As Redis's key spec (keyword STREAMS, limit 2): half the
			// rest, rounded down.
			n := len(args) - i - 1
			pos := make([]int, 0, n/2)
			for j := i + 1; j <= i+n/2; j++ {
				pos = append(pos, j)
			}
			return pos
		case eqFold(args[i], "block") || eqFold(args[i], "count"):
			i++
		case eqFold(args[i], "group"):
			i += 2
		}
	}
	return nil
}

// lookupStream returns the stream at key (see lookupValue).
func (c *Client) lookupStream(key []byte, read bool) (*stream.Stream, bool) {
	return lookupValue[*stream.Stream](c, key, read)
}

// streamLimits reads stream-node-max-bytes and stream-node-max-entries.
func (c *Client) streamLimits() stream.Limits {
	return stream.Limits{
		NodeMaxBytes:   c.srv.cfg.Int(DirStreamNodeMaxBytes),
		NodeMaxEntries: c.srv.cfg.Int(DirStreamNodeMaxEntries),
	}
}

// parseStreamID parses an ID argument, replying Redis's error on failure.
// strict refuses "-" and "+".
func parseStreamID(c *Client, arg []byte, missingSeq uint64, strict bool) (stream.ID, bool) {
	id, _, err := stream.Parse(arg, stream.ParseOptions{MissingSeq: missingSeq, Strict: strict})
	if err != nil {
		c.addError(err.Error())
		return id, false
	}
	return id, true
}

// parseIntervalID parses a range bound: "(" makes it exclusive (and then
// strict), as Redis's streamParseIntervalIDOrReply.
func parseIntervalID(c *Client, arg []byte, missingSeq uint64) (id stream.ID, exclude, ok bool) {
	if len(arg) > 1 && arg[0] == '(' {
		id, ok = parseStreamID(c, arg[1:], missingSeq, true)
		return id, true, ok
	}
	id, ok = parseStreamID(c, arg, missingSeq, false)
	return id, false, ok
}

// parseRangeBounds parses an interval's start and end (exclusive bounds
// moved inwards), replying on error.
func parseRangeBounds(c *Client, startArg, endArg []byte) (start, end stream.ID, ok bool) {
	start, ex, ok := parseIntervalID(c, startArg, 0)
	if !ok {
		return start, end, false
	}
	if ex {
		if start, ok = start.Incr(); !ok {
			c.addError("ERR invalid start ID for the interval")
			return start, end, false
		}
	}
	end, ex, ok = parseIntervalID(c, endArg, ^uint64(0))
	if !ok {
		return start, end, false
	}
	if ex {
		if end, ok = end.Decr(); !ok {
			c.addError("ERR invalid end ID for the interval")
			return start, end, false
		}
	}
	return start, end, true
}

// addStreamID replies an ID as a bulk string.
func (c *Client) addStreamID(id stream.ID) {
	var buf [48]byte
	c.addBulk(id.Append(buf[:0]))
}

// addStreamEntry replies [id, [field, value, ...]].
func (c *Client) addStreamEntry(id stream.ID, fv [][]byte) {
	c.addArrayLen(2)
	c.addStreamID(id)
	c.addArrayLen(len(fv))
	for _, b := range fv {
		c.addBulk(b)
	}
}

// addTrim holds the parsed options of XADD and XTRIM.
type addTrim struct {
	trim      stream.TrimArgs
	argIdx    int // position of the MAXLEN/MINID value (for rewriting)
	id        stream.ID
	idGiven   bool
	seqGiven  bool
	noMkStrem bool
}

// parseAddTrim parses XADD's (xadd) or XTRIM's options as Redis's
// streamParseAddOrTrimArgsOrReply; it returns the ID's position (XADD),
// or -1 after replying an error.
func parseAddTrim(c *Client, args [][]byte, xadd bool, o *addTrim) int {
	i := 2
	limitGiven := false
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			goto done
		case (eqFold(opt, "maxlen") || eqFold(opt, "minid")) && more > 0:
			if o.trim.Strategy != stream.TrimNone {
				c.addError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return -1
			}
			o.trim.Approx = false
			next := args[i+1]
			if more >= 2 && len(next) == 1 && next[0] == '~' {
				o.trim.Approx = true
				i++
			} else if more >= 2 && len(next) == 1 && next[0] == '=' {
				i++
			}
			if eqFold(opt, "maxlen") {
				n, ok := parseInt(args[i+1])
				if !ok {
					c.addError(errNotInt)
					return -1
				}
				if n < 0 {
					c.addError("ERR The MAXLEN argument must be >= 0.")
					return -1
				}
				o.trim.MaxLen, o.trim.Strategy = n, stream.TrimMaxLen
			} else {
				id, ok := parseStreamID(c, args[i+1], 0, true)
				if !ok {
					return -1
				}
				o.trim.MinID, o.trim.Strategy = id, stream.TrimMinID
			}
			i++
			o.argIdx = i
		case eqFold(opt, "limit") && more > 0:
			n, ok := parseInt(args[i+1])
			if !ok {
				c.addError(errNotInt)
				return -1
			}
			if n < 0 {
				c.addError("ERR The LIMIT argument must be >= 0.")
				return -1
			}
			o.trim.Limit, limitGiven = n, true
			i++
		case xadd && eqFold(opt, "nomkstream"):
			o.noMkStrem = true
		case xadd:
			id, seqGiven, err := stream.Parse(opt, stream.ParseOptions{Strict: true, AllowSeqStar: true})
			if err != nil {
				c.addError(err.Error())
				return -1
			}
			o.id, o.seqGiven, o.idGiven = id, seqGiven, true
			goto done
		default:
			c.addError(errSyntax)
			return -1
		}
	}
done:
	if o.trim.Limit != 0 && o.trim.Strategy == stream.TrimNone {
		c.addError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return -1
	}
	if !xadd && o.trim.Strategy == stream.TrimNone {
		c.addError("ERR syntax error, XTRIM must be called with a trimming strategy")
		return -1
	}
	if c.hasFlag(clientMaster | clientDenyBlocking) {
		// From the master or the AOF: the trim argument was rewritten
		// to be exact, never limit it.
		o.trim.Limit = 0
	} else if limitGiven {
		if !o.trim.Approx {
			c.addError("ERR syntax error, LIMIT cannot be used without the special ~ option")
			return -1
		}
	} else if o.trim.Approx {
		o.trim.Limit = 100 * c.srv.cfg.Int(DirStreamNodeMaxEntries)
		if o.trim.Limit <= 0 {
			o.trim.Limit = 10000
		}
		if o.trim.Limit > 1000000 {
			o.trim.Limit = 1000000
		}
	} else {
		o.trim.Limit = 0
	}
	return i
}

// rewriteTrim returns args with an approximate trim made exact (MAXLEN =
// <length> or MINID = <first id>), as Redis propagates it.
func rewriteTrim(args [][]byte, s *stream.Stream, o *addTrim) [][]byte {
	out := append([][]byte(nil), args...)
	out[o.argIdx-1] = []byte("=")
	if o.trim.Strategy == stream.TrimMaxLen {
		out[o.argIdx] = strconv.AppendUint(nil, s.Len(), 10)
	} else {
		out[o.argIdx] = []byte(s.EdgeID(true, false).String())
	}
	return out
}

// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
func cmdXAdd(c *Client, args [][]byte) {
	var o addTrim
	idpos := parseAddTrim(c, args, true, &o)
	if idpos < 0 {
		return
	}
	fieldPos := idpos + 1
	if n := len(args) - fieldPos; n < 2 || n%2 == 1 {
		c.addError(errWrongArgs("xadd"))
		return
	}
	if o.idGiven && o.seqGiven && o.id.IsZero() {
		c.addError("ERR The ID specified in XADD must be greater than 0-0")
		return
	}
	s, ok := c.lookupStream(args[1], false)
	if !ok {
		return
	}
	key := string(args[1])
	if s == nil {
		if o.noMkStrem {
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
	id, err := s.Append(args[fieldPos:], o.id, o.idGiven, o.seqGiven, c.now, c.streamLimits())
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addStreamID(id)
	c.signalModifiedKey(key)
	c.notify(notifyStream, "xadd", key)
	c.markDirty(1)
	var prop [][]byte
	propagating := c.propagating()
	if o.trim.Strategy != stream.TrimNone {
		if s.Trim(o.trim) > 0 {
			c.notify(notifyStream, "xtrim", key)
		}
		if o.trim.Approx && propagating {
			prop = rewriteTrim(args, s, &o)
		}
	}
	if propagating && (!o.idGiven || !o.seqGiven) {
		if prop == nil {
			prop = append([][]byte(nil), args...)
		}
		prop[idpos] = []byte(id.String())
	}
	if prop != nil {
		c.propagateAs(prop)
	}
	c.signalKeyAsReady(key)
}

// XRANGE key start end [COUNT count]
func cmdXRange(c *Client, args [][]byte) { xrangeGeneric(c, args, false) }

// XREVRANGE key end start [COUNT count]
func cmdXRevRange(c *Client, args [][]byte) { xrangeGeneric(c, args, true) }

func xrangeGeneric(c *Client, args [][]byte, rev bool) {
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, end, ok := parseRangeBounds(c, startArg, endArg)
	if !ok {
		return
	}
	count := int64(-1)
	for j := 4; j < len(args); j++ {
		if eqFold(args[j], "count") && j+1 < len(args) {
			n, ok := parseInt(args[j+1])
			if !ok {
				c.addError(errNotInt)
				return
			}
			count = max(n, 0)
			j++
		} else {
			c.addError(errSyntax)
			return
		}
	}
	s, ok := c.lookupStream(args[1], true)
	if !ok {
		return
	}
	if s == nil {
		c.addArrayLen(0)
		return
	}
	if count == 0 {
		c.addNullArray()
		return
	}
	c.replyRange(s, start, end, count, rev)
}

// replyRange replies the entries of [start, end] (at most count, 0 or
// -1: all) as an array.
func (c *Client) replyRange(s *stream.Stream, start, end stream.ID, count int64, rev bool) {
	var ids []stream.ID
	var fvs [][][]byte
	s.Range(start, end, rev, func(id stream.ID, fv [][]byte) bool {
		ids = append(ids, id)
		fvs = append(fvs, fv)
		return count <= 0 || int64(len(ids)) < count
	})
	c.addArrayLen(len(ids))
	for i, id := range ids {
		c.addStreamEntry(id, fvs[i])
	}
}

// XLEN key
func cmdXLen(c *Client, args [][]byte) {
	s, ok := c.lookupStream(args[1], true)
	if !ok {
		return
	}
	if s == nil {
		c.addInt(0)
		return
	}
	c.addInt(int64(s.Len()))
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
	ids := make([]stream.ID, 0, len(args)-2)
	for _, a := range args[2:] {
		id, ok := parseStreamID(c, a, 0, true)
		if !ok {
			return
		}
		ids = append(ids, id)
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
	var o addTrim
	if parseAddTrim(c, args, false, &o) < 0 {
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
	deleted := s.Trim(o.trim)
	if deleted > 0 {
		key := string(args[1])
		c.notify(notifyStream, "xtrim", key)
		if o.trim.Approx {
			c.propagateAs(rewriteTrim(args, s, &o))
		}
		c.signalModifiedKey(key)
		c.markDirty(int(deleted))
	}
	c.addInt(deleted)
}

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
func cmdXSetID(c *Client, args [][]byte) {
	id, ok := parseStreamID(c, args[2], 0, true)
	if !ok {
		return
	}
	var maxDel stream.ID
	entriesAdded := int64(-1)
	for i := 3; i < len(args); i += 2 {
		more := len(args) - 1 - i
		switch {
		case eqFold(args[i], "entriesadded") && more > 0:
			n, ok := parseInt(args[i+1])
			if !ok {
				c.addError(errNotInt)
				return
			}
			if n < 0 {
				c.addError("ERR entries_added must be positive")
				return
			}
			entriesAdded = n
		case eqFold(args[i], "maxdeletedid") && more > 0:
			if maxDel, ok = parseStreamID(c, args[i+1], 0, true); !ok {
				return
			}
			if id.Less(maxDel) {
				c.addError("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
		default:
			c.addError(errSyntax)
			return
		}
	}
	s, ok := c.lookupStream(args[1], false)
	if !ok {
		return
	}
	if s == nil {
		c.addError("ERR no such key")
		return
	}
	if s.Len() > 0 {
		top, _ := s.LastValid()
		if id.Less(top) {
			c.addError("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if entriesAdded != -1 && s.Len() > uint64(entriesAdded) {
			c.addError("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	s.LastID = id
	if entriesAdded != -1 {
		s.EntriesAdded = uint64(entriesAdded)
	}
	if !maxDel.IsZero() {
		s.MaxDeletedID = maxDel
	}
	c.addOK()
	c.markDirty(1)
	c.notify(notifyStream, "xsetid", string(args[1]))
}
