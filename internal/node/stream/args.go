package stream

import (
	"errors"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/value"
)

// Argument grammars of XADD, XTRIM, XRANGE/XREVRANGE, XDEL, XACK and
// XSETID (Redis's t_stream.c). Each parser returns a typed struct, or an
// error whose text is Redis's reply; the node replies with err.Error().

// Errors of the grammars, with Redis's reply texts.
var (
	// ErrSyntax is Redis's generic syntax error.
	ErrSyntax = errors.New("ERR syntax error")
	// ErrNotInt is an integer argument that does not parse.
	ErrNotInt = errors.New("ERR value is not an integer or out of range")
	// ErrSubcommandSyntax stands for Redis's addReplySubcommandSyntaxError,
	// whose text names the command: the node renders it.
	ErrSubcommandSyntax = errors.New("stream: subcommand syntax error")

	errTrimBoth       = errors.New("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
	errMaxLenNegative = errors.New("ERR The MAXLEN argument must be >= 0.")
	errLimitNegative  = errors.New("ERR The LIMIT argument must be >= 0.")
	errLimitNoTrim    = errors.New("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
	errXTrimNoTrim    = errors.New("ERR syntax error, XTRIM must be called with a trimming strategy")
	errLimitNoApprox  = errors.New("ERR syntax error, LIMIT cannot be used without the special ~ option")
	errStartInterval  = errors.New("ERR invalid start ID for the interval")
	errEndInterval    = errors.New("ERR invalid end ID for the interval")
	errXAddZeroID     = errors.New("ERR The ID specified in XADD must be greater than 0-0")
	errEntriesAdded   = errors.New("ERR entries_added must be positive")
	errSetIDMaxDel    = errors.New("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
)

// eqFold compares an argument with a lower-case keyword, ignoring case.
func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// isOne reports whether a is the one-byte argument ch.
func isOne(a []byte, ch byte) bool { return len(a) == 1 && a[0] == ch }

// parseNonNegative parses an integer argument that must be >= 0.
func parseNonNegative(a []byte, negative error) (int64, error) {
	n, ok := value.ParseInt(a)
	if !ok {
		return 0, ErrNotInt
	}
	if n < 0 {
		return 0, negative
	}
	return n, nil
}

// ParseID parses an ID argument with Redis's error; strict refuses "-"
// and "+".
func ParseID(arg []byte, missingSeq uint64, strict bool) (ID, error) {
	id, _, err := Parse(arg, ParseOptions{MissingSeq: missingSeq, Strict: strict})
	return id, err
}

// ParseIDs parses a list of strict IDs (XDEL, XACK).
func ParseIDs(args [][]byte) ([]ID, error) {
	ids := make([]ID, 0, len(args))
	for _, a := range args {
		id, err := ParseID(a, 0, true)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ParseIntervalID parses a range bound: "(" makes it exclusive (and then
// strict), as Redis's streamParseIntervalIDOrReply.
func ParseIntervalID(arg []byte, missingSeq uint64) (id ID, exclude bool, err error) {
	if len(arg) > 1 && arg[0] == '(' {
		id, err = ParseID(arg[1:], missingSeq, true)
		return id, true, err
	}
	id, err = ParseID(arg, missingSeq, false)
	return id, false, err
}

// ParseStart parses an interval's start, an exclusive bound moved
// inwards.
func ParseStart(arg []byte) (ID, error) {
	start, ex, err := ParseIntervalID(arg, 0)
	if err != nil || !ex {
		return start, err
	}
	start, ok := start.Incr()
	if !ok {
		return start, errStartInterval
	}
	return start, nil
}

// ParseRange parses an interval's start and end (exclusive bounds moved
// inwards).
func ParseRange(startArg, endArg []byte) (start, end ID, err error) {
	if start, err = ParseStart(startArg); err != nil {
		return start, end, err
	}
	end, ex, err := ParseIntervalID(endArg, ^uint64(0))
	if err != nil || !ex {
		return start, end, err
	}
	end, ok := end.Decr()
	if !ok {
		return start, end, errEndInterval
	}
	return start, end, nil
}

// RangeArgs are the arguments of XRANGE and XREVRANGE.
type RangeArgs struct {
	Start, End ID
	// Count is the COUNT (-1: none given).
	Count int64
}

// ParseRangeArgs parses XRANGE key start end [COUNT n] (rev: XREVRANGE
// key end start ...).
func ParseRangeArgs(args [][]byte, rev bool) (RangeArgs, error) {
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	r := RangeArgs{Count: -1}
	var err error
	if r.Start, r.End, err = ParseRange(startArg, endArg); err != nil {
		return r, err
	}
	for j := 4; j < len(args); j++ {
		if !eqFold(args[j], "count") || j+1 >= len(args) {
			return r, ErrSyntax
		}
		n, ok := value.ParseInt(args[j+1])
		if !ok {
			return r, ErrNotInt
		}
		r.Count = max(n, 0)
		j++
	}
	return r, nil
}

// AddTrimArgs are the parsed options of XADD and XTRIM.
type AddTrimArgs struct {
	// Trim is the trimming strategy (TrimNone when there is none).
	Trim TrimArgs
	// ArgIdx is the position of the MAXLEN/MINID value (for rewriting).
	ArgIdx int
	// IDPos is XADD's ID position (the fields follow it).
	IDPos int
	// ID is XADD's explicit ID, when IDGiven; SeqGiven is false for
	// "<ms>-*".
	ID                ID
	IDGiven, SeqGiven bool
	// NoMkStream is XADD's NOMKSTREAM.
	NoMkStream bool
	limitGiven bool
}

// ParseAddTrim parses XADD's (xadd) or XTRIM's options as Redis's
// streamParseAddOrTrimArgsOrReply. exact (a command from the master or
// the AOF, whose trim was rewritten to be exact) ignores LIMIT;
// nodeMaxEntries (stream-node-max-entries) sets an approximate trim's
// default LIMIT.
func ParseAddTrim(args [][]byte, xadd, exact bool, nodeMaxEntries int64) (AddTrimArgs, error) {
	var o AddTrimArgs
	i, err := o.parseOptions(args, xadd)
	if err != nil {
		return o, err
	}
	o.IDPos = i
	if err := o.settleLimit(xadd, exact, nodeMaxEntries); err != nil {
		return o, err
	}
	if xadd {
		if n := len(args) - i - 1; n < 2 || n%2 == 1 {
			return o, errors.New("ERR wrong number of arguments for 'xadd' command")
		}
		if o.IDGiven && o.SeqGiven && o.ID.IsZero() {
			return o, errXAddZeroID
		}
	}
	return o, nil
}

// parseOptions reads the options up to XADD's ID (whose position it
// returns).
func (o *AddTrimArgs) parseOptions(args [][]byte, xadd bool) (int, error) {
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && isOne(opt, '*'):
			return i, nil
		case (eqFold(opt, "maxlen") || eqFold(opt, "minid")) && more > 0:
			if o.Trim.Strategy != TrimNone {
				return i, errTrimBoth
			}
			o.Trim.Approx = false
			if next := args[i+1]; more >= 2 && (isOne(next, '~') || isOne(next, '=')) {
				o.Trim.Approx = next[0] == '~'
				i++
			}
			if eqFold(opt, "maxlen") {
				n, err := parseNonNegative(args[i+1], errMaxLenNegative)
				if err != nil {
					return i, err
				}
				o.Trim.MaxLen, o.Trim.Strategy = n, TrimMaxLen
			} else {
				id, err := ParseID(args[i+1], 0, true)
				if err != nil {
					return i, err
				}
				o.Trim.MinID, o.Trim.Strategy = id, TrimMinID
			}
			i++
			o.ArgIdx = i
		case eqFold(opt, "limit") && more > 0:
			n, err := parseNonNegative(args[i+1], errLimitNegative)
			if err != nil {
				return i, err
			}
			o.Trim.Limit, o.limitGiven = n, true
			i++
		case xadd && eqFold(opt, "nomkstream"):
			o.NoMkStream = true
		case xadd:
			id, seqGiven, err := Parse(opt, ParseOptions{Strict: true, AllowSeqStar: true})
			if err != nil {
				return i, err
			}
			o.ID, o.SeqGiven, o.IDGiven = id, seqGiven, true
			return i, nil
		default:
			return i, ErrSyntax
		}
	}
	return i, nil
}

// settleLimit checks LIMIT against the strategy and sets its default.
func (o *AddTrimArgs) settleLimit(xadd, exact bool, nodeMaxEntries int64) error {
	if o.Trim.Limit != 0 && o.Trim.Strategy == TrimNone {
		return errLimitNoTrim
	}
	if !xadd && o.Trim.Strategy == TrimNone {
		return errXTrimNoTrim
	}
	switch {
	case exact:
		o.Trim.Limit = 0
	case o.limitGiven:
		if !o.Trim.Approx {
			return errLimitNoApprox
		}
	case o.Trim.Approx:
		o.Trim.Limit = 100 * nodeMaxEntries
		if o.Trim.Limit <= 0 {
			o.Trim.Limit = 10000
		}
		o.Trim.Limit = min(o.Trim.Limit, 1000000)
	default:
		o.Trim.Limit = 0
	}
	return nil
}

// RewriteTrim returns args with an approximate trim made exact (MAXLEN =
// <length> or MINID = <first id>), as Redis propagates it.
func (o *AddTrimArgs) RewriteTrim(args [][]byte, s *Stream) [][]byte {
	out := append([][]byte(nil), args...)
	out[o.ArgIdx-1] = []byte("=")
	if o.Trim.Strategy == TrimMaxLen {
		out[o.ArgIdx] = strconv.AppendUint(nil, s.Len(), 10)
	} else {
		out[o.ArgIdx] = []byte(s.EdgeID(true, false).String())
	}
	return out
}

// Propagated returns what replicas and the AOF receive for an XADD that
// added id to s (after its trim), or nil when that is the command as
// given: an approximate trim made exact, a generated ID made explicit.
func (o *AddTrimArgs) Propagated(args [][]byte, s *Stream, id ID) [][]byte {
	var prop [][]byte
	if o.Trim.Strategy != TrimNone && o.Trim.Approx {
		prop = o.RewriteTrim(args, s)
	}
	if !o.IDGiven || !o.SeqGiven {
		if prop == nil {
			prop = append([][]byte(nil), args...)
		}
		prop[o.IDPos] = []byte(id.String())
	}
	return prop
}

// SetIDArgs are the arguments of XSETID.
type SetIDArgs struct {
	ID ID
	// EntriesAdded is -1 when not given.
	EntriesAdded int64
	MaxDeleted   ID
}

// ParseSetID parses XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id].
func ParseSetID(args [][]byte) (SetIDArgs, error) {
	a := SetIDArgs{EntriesAdded: -1}
	var err error
	if a.ID, err = ParseID(args[2], 0, true); err != nil {
		return a, err
	}
	for i := 3; i < len(args); i += 2 {
		more := len(args) - 1 - i
		switch {
		case eqFold(args[i], "entriesadded") && more > 0:
			if a.EntriesAdded, err = parseNonNegative(args[i+1], errEntriesAdded); err != nil {
				return a, err
			}
		case eqFold(args[i], "maxdeletedid") && more > 0:
			if a.MaxDeleted, err = ParseID(args[i+1], 0, true); err != nil {
				return a, err
			}
			if a.ID.Less(a.MaxDeleted) {
				return a, errSetIDMaxDel
			}
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

// SetID applies XSETID to s (Redis's xsetidCommand after parsing).
func (s *Stream) SetID(a SetIDArgs) error {
	if s.Len() > 0 {
		top, _ := s.LastValid()
		if a.ID.Less(top) {
			return errors.New("ERR The ID specified in XSETID is smaller than the target stream top item")
		}
		if a.EntriesAdded != -1 && s.Len() > uint64(a.EntriesAdded) {
			return errors.New("ERR The entries_added specified in XSETID is smaller than the target stream length")
		}
	}
	s.LastID = a.ID
	if a.EntriesAdded != -1 {
		s.EntriesAdded = uint64(a.EntriesAdded)
	}
	if !a.MaxDeleted.IsZero() {
		s.MaxDeletedID = a.MaxDeleted
	}
	return nil
}
