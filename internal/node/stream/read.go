package stream

import (
	"errors"
	"strconv"

	"github.com/shardis/shardis/internal/node/value"
)

// XREAD and XREADGROUP: their grammar, which streams serve now, and the
// delivery of entries to a group's consumer (Redis's xreadCommand and
// streamReplyWithRange).

// Errors of XREAD and XREADGROUP, with Redis's reply texts.
var (
	errTimeoutNotInt = errors.New("ERR timeout is not an integer or out of range")
	errTimeoutNeg    = errors.New("ERR timeout is negative")
	errUnbalanced    = errors.New("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
	errGroupOnXRead  = errors.New("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
	errNoAckOnXRead  = errors.New("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
	errMissingGroup  = errors.New("ERR Missing GROUP option for XREADGROUP")
	errDollarInGroup = errors.New("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
	errGreaterXRead  = errors.New("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
)

// ReadKeys finds the keys of XREAD and XREADGROUP: the first half of the
// arguments after STREAMS.
func ReadKeys(args [][]byte) []int {
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

// ReadMayBlock reports whether XREAD or XREADGROUP args ask to block:
// whether ParseRead would see a BLOCK option (it walks the options as
// ParseRead does, and reports false where ParseRead would stop with an
// error before one). True for every call that can block; false for a
// read without BLOCK, which never waits.
func ReadMayBlock(args [][]byte) bool {
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case eqFold(o, "block") && more > 0:
			return true
		case eqFold(o, "count") && more > 0:
			i++
		case eqFold(o, "group") && more >= 2:
			i += 2
		case eqFold(o, "noack"):
		default: // STREAMS ends the options; anything else is an error
			return false
		}
	}
	return false
}

// ReadArgs are the options of XREAD and XREADGROUP.
type ReadArgs struct {
	// Timeout is BLOCK's deadline: -1 without BLOCK, 0 for ever, else a
	// unix time in ms.
	Timeout int64
	// Count is COUNT (0: none).
	Count int64
	// Keys are the stream keys and IDArgs their ID arguments.
	Keys, IDArgs [][]byte
	// Group and Consumer are XREADGROUP's (nil for XREAD).
	Group, Consumer []byte
	// NoAck is XREADGROUP's NOACK.
	NoAck bool
}

// ParseRead parses XREAD's (or, with group, XREADGROUP's) options;
// inScript refuses BLOCK and now turns its timeout into a deadline.
func ParseRead(args [][]byte, group, inScript bool, now int64) (ReadArgs, error) {
	r := ReadArgs{Timeout: -1}
	streamsArg := 0
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case eqFold(o, "block") && more > 0:
			if inScript {
				return r, errors.New("ERR " + string(args[0]) + " command is not allowed with BLOCK option from scripts")
			}
			i++
			n, err := parseNonNegative(args[i], errTimeoutNeg)
			if err == ErrNotInt {
				err = errTimeoutNotInt
			}
			if err != nil {
				return r, err
			}
			if n > 0 {
				n += now
			}
			r.Timeout = n
		case eqFold(o, "count") && more > 0:
			i++
			n, ok := value.ParseInt(args[i])
			if !ok {
				return r, ErrNotInt
			}
			r.Count = max(n, 0)
		case eqFold(o, "streams") && more > 0:
			streamsArg = i + 1
			if (len(args)-streamsArg)%2 != 0 {
				return r, errUnbalanced
			}
			i = len(args)
		case eqFold(o, "group") && more >= 2:
			if !group {
				return r, errGroupOnXRead
			}
			r.Group, r.Consumer = args[i+1], args[i+2]
			i += 2
		case eqFold(o, "noack"):
			if !group {
				return r, errNoAckOnXRead
			}
			r.NoAck = true
		default:
			return r, ErrSyntax
		}
	}
	if streamsArg == 0 {
		return r, ErrSyntax
	}
	if group && r.Group == nil {
		return r, errMissingGroup
	}
	n := (len(args) - streamsArg) / 2
	r.Keys, r.IDArgs = args[streamsArg:streamsArg+n], args[streamsArg+n:]
	return r, nil
}

// ReadID resolves the ID argument of a stream read: "$" (XREAD) is the
// stream's last ID (s may be nil), ">" (XREADGROUP) is MaxID.
func ReadID(arg []byte, group bool, s *Stream) (ID, error) {
	switch {
	case isOne(arg, '$'):
		if group {
			return ID{}, errDollarInGroup
		}
		if s != nil {
			return s.LastID, nil
		}
		return ID{}, nil
	case isOne(arg, '>'):
		if !group {
			return ID{}, errGreaterXRead
		}
		return MaxID, nil
	}
	return ParseID(arg, 0, true)
}

// ReadPlan is one stream a read serves now: the entries after After, or
// with History the consumer's pending entries after After.
type ReadPlan struct {
	Index   int
	After   ID
	History bool
}

// PlanRead decides which streams serve a read now (the reply's length
// comes before them): streams[i] (nil when missing) with ID ids[i] and,
// for XREADGROUP, group groups[i] (groups is nil for XREAD).
func PlanRead(streams []*Stream, groups []*Group, ids []ID) []ReadPlan {
	var plans []ReadPlan
	for i, s := range streams {
		if s == nil {
			continue
		}
		gt := ids[i]
		switch {
		case groups != nil && gt != MaxID:
			plans = append(plans, ReadPlan{i, gt, true})
		case s.Len() == 0:
		case groups != nil:
			if top, _ := s.LastValid(); groups[i].LastID.Less(top) {
				plans = append(plans, ReadPlan{i, groups[i].LastID, false})
			}
		default:
			if top, _ := s.LastValid(); gt.Less(top) {
				plans = append(plans, ReadPlan{i, gt, false})
			}
		}
	}
	return plans
}

// Entry is an entry as a reply carries it; Deleted marks a pending
// entry whose stream entry is gone (replied as [id, nil]).
type Entry struct {
	ID      ID
	FV      [][]byte
	Deleted bool
}

// Collect appends to dst the valid entries of [start, end] in order
// (reversed with rev), at most count of them (count <= 0: all). The
// fields must not be changed.
func (s *Stream) Collect(dst []Entry, start, end ID, rev bool, count int64) []Entry {
	if dst == nil && count > 0 {
		dst = make([]Entry, 0, min(count, 128)) // one allocation for a COUNTed read
	}
	n := 0
	s.rangeHint(start, end, rev, int(max(count, 0)), func(id ID, fv [][]byte) bool {
		dst = append(dst, Entry{ID: id, FV: fv})
		n++
		return count <= 0 || int64(n) < count
	})
	return dst
}

// GroupRead is a consumer's read of a group.
type GroupRead struct {
	Group    *Group
	Consumer *Consumer
	NoAck    bool
	// Log collects the commands that stand for the read (nil: none).
	Log *Log
}

// ReadNew returns the entries after gt, at most count (0: all), and with
// gr (nil for XREAD) advances the group and delivers them to the consumer
// at now, as Redis's streamReplyWithRange with a group.
func (s *Stream) ReadNew(gt ID, count int64, gr *GroupRead, now int64) []Entry {
	start, ok := gt.Incr()
	if !ok {
		return nil
	}
	entries := s.Collect(nil, start, MaxID, false, count)
	if gr == nil {
		return entries
	}
	g := gr.Group
	advanced := false
	for _, e := range entries {
		if g.LastID.Less(e.ID) {
			s.AdvanceGroup(g, e.ID)
			advanced = true
		}
		if !gr.NoAck {
			gr.Log.claim(g, g.Deliver(e.ID, gr.Consumer, now))
		}
	}
	if advanced && gr.NoAck {
		gr.Log.SetID(g)
	}
	return entries
}

// History returns cons's pending entries after gt, at most count (0:
// all), counting a new delivery at now of each that still exists (Redis's
// streamReplyWithRangeFromConsumerPEL).
func (s *Stream) History(cons *Consumer, gt ID, count int64, now int64) []Entry {
	start, ok := gt.Incr()
	if !ok {
		return nil
	}
	var nacks []*NACK
	cons.Pending(start, func(na *NACK) bool {
		nacks = append(nacks, na)
		return count == 0 || int64(len(nacks)) < count
	})
	entries := make([]Entry, len(nacks))
	for i, na := range nacks {
		fv, ok := s.Get(na.ID)
		entries[i] = Entry{ID: na.ID, FV: fv, Deleted: !ok}
		if ok {
			na.DeliveryTime = now
			na.DeliveryCount++
		}
	}
	return entries
}

// Touch returns the consumer name of g, seen at now, creating it
// (created true) when there is none.
func (g *Group) Touch(name []byte, now int64) (cons *Consumer, created bool) {
	if cons = g.consumers[string(name)]; cons != nil {
		cons.SeenTime = now
		return cons, false
	}
	return g.addConsumer(string(name), now), true
}

// Log collects the commands that recreate a group's changes on replicas
// and in the AOF, as Redis propagates them: XCLAIM ... FORCE JUSTID
// LASTID per delivered or claimed entry, XGROUP SETID after a NOACK read,
// XGROUP CREATECONSUMER for a consumer a NOACK read created. A nil *Log
// collects nothing (nobody listens).
type Log struct {
	Key, Group []byte
	// Cmds are the commands, in order.
	Cmds [][][]byte
}

// claim adds the XCLAIM that recreates na.
func (l *Log) claim(g *Group, na *NACK) {
	if l == nil {
		return
	}
	l.Cmds = append(l.Cmds, [][]byte{
		[]byte("XCLAIM"), l.Key, l.Group, []byte(na.Consumer.Name), []byte("0"), []byte(na.ID.String()),
		[]byte("TIME"), strconv.AppendInt(nil, na.DeliveryTime, 10),
		[]byte("RETRYCOUNT"), strconv.AppendUint(nil, na.DeliveryCount, 10),
		[]byte("FORCE"), []byte("JUSTID"), []byte("LASTID"), []byte(g.LastID.String()),
	})
}

// SetID adds XGROUP SETID key group last-id ENTRIESREAD n.
func (l *Log) SetID(g *Group) {
	if l == nil {
		return
	}
	l.Cmds = append(l.Cmds, [][]byte{
		[]byte("XGROUP"), []byte("SETID"), l.Key, l.Group, []byte(g.LastID.String()),
		[]byte("ENTRIESREAD"), strconv.AppendInt(nil, g.EntriesRead, 10),
	})
}

// CreateConsumer adds XGROUP CREATECONSUMER key group name.
func (l *Log) CreateConsumer(name string) {
	if l == nil {
		return
	}
	l.Cmds = append(l.Cmds, [][]byte{[]byte("XGROUP"), []byte("CREATECONSUMER"), l.Key, l.Group, []byte(name)})
}
