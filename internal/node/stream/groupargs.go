package stream

import (
	"errors"

	"github.com/shardis/shardis/internal/node/value"
)

// XGROUP's grammar (Redis's xgroupCommand).

// GroupArgs are the options of XGROUP CREATE and SETID.
type GroupArgs struct {
	// MkStream is CREATE's MKSTREAM.
	MkStream bool
	// EntriesRead is ENTRIESREAD (InvalidEntriesRead when not given).
	EntriesRead int64
}

// ParseGroupOptions parses the options of XGROUP create|setid (opts are
// the arguments after the ID); another subcommand takes none.
func ParseGroupOptions(sub []byte, opts [][]byte) (GroupArgs, error) {
	a := GroupArgs{EntriesRead: InvalidEntriesRead}
	create, setid := eqFold(sub, "create"), eqFold(sub, "setid")
	for i := 0; i < len(opts); {
		switch {
		case create && eqFold(opts[i], "mkstream"):
			a.MkStream = true
			i++
		case (create || setid) && eqFold(opts[i], "entriesread") && i+1 < len(opts):
			n, ok := value.ParseInt(opts[i+1])
			if !ok {
				return a, ErrNotInt
			}
			if n < 0 && n != InvalidEntriesRead {
				return a, errors.New("ERR value for ENTRIESREAD must be positive or -1")
			}
			a.EntriesRead = n
			i += 2
		default:
			return a, ErrSubcommandSyntax
		}
	}
	return a, nil
}

// GroupID resolves XGROUP CREATE's (strict) or SETID's ID argument: "$"
// is the stream's last ID (s may be nil).
func GroupID(arg []byte, s *Stream, strict bool) (ID, error) {
	if isOne(arg, '$') {
		if s == nil {
			return ID{}, nil
		}
		return s.LastID, nil
	}
	return ParseID(arg, 0, strict)
}
