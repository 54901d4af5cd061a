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

// GroupOutcome is what an XGROUP subcommand did: its reply (OK, or Int),
// the keyspace event to notify ("" for none, which also means nothing
// changed), whether blocked readers must be woken (a destroyed group),
// and the stream MKSTREAM created (nil when none).
type GroupOutcome struct {
	OK      bool
	Int     int64
	Event   string
	Wake    bool
	Created *Stream
}

// XGroup runs XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER
// (args from the subcommand's name on) on s, nil when the key is missing,
// at now, with the options a (Redis's xgroupCommand after the key's type
// check).
func XGroup(args [][]byte, s *Stream, a GroupArgs, now int64) (GroupOutcome, error) {
	sub, n := args[1], len(args)
	key, grp := string(args[2]), string(args[3])
	var g *Group
	if !a.MkStream {
		if s == nil {
			return GroupOutcome{}, errors.New("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
		}
		if g = s.Group(grp); g == nil && (eqFold(sub, "setid") || eqFold(sub, "createconsumer") || eqFold(sub, "delconsumer")) {
			return GroupOutcome{}, errors.New("NOGROUP No such consumer group '" + grp + "' for key name '" + key + "'")
		}
	}
	switch {
	case eqFold(sub, "create") && n >= 5 && n <= 8:
		id, err := GroupID(args[4], s, true)
		if err != nil {
			return GroupOutcome{}, err
		}
		var out GroupOutcome
		if s == nil {
			s = New()
			out.Created = s
		}
		if s.CreateGroup(grp, id, a.EntriesRead) == nil {
			return out, errors.New("BUSYGROUP Consumer Group name already exists")
		}
		out.OK, out.Event = true, "xgroup-create"
		return out, nil
	case eqFold(sub, "setid") && (n == 5 || n == 7):
		id, err := GroupID(args[4], s, false)
		if err != nil {
			return GroupOutcome{}, err
		}
		g.LastID, g.EntriesRead = id, a.EntriesRead
		return GroupOutcome{OK: true, Event: "xgroup-setid"}, nil
	case eqFold(sub, "destroy") && n == 4:
		if g == nil {
			return GroupOutcome{}, nil
		}
		s.DestroyGroup(grp)
		return GroupOutcome{Int: 1, Event: "xgroup-destroy", Wake: true}, nil
	case eqFold(sub, "createconsumer") && n == 5:
		if g.CreateConsumer(string(args[4]), now) == nil {
			return GroupOutcome{}, nil
		}
		return GroupOutcome{Int: 1, Event: "xgroup-createconsumer"}, nil
	case eqFold(sub, "delconsumer") && n == 5:
		cons := g.Consumer(string(args[4]))
		if cons == nil {
			return GroupOutcome{}, nil
		}
		return GroupOutcome{Int: int64(g.DeleteConsumer(cons)), Event: "xgroup-delconsumer"}, nil
	}
	return GroupOutcome{}, ErrSubcommandSyntax
}
