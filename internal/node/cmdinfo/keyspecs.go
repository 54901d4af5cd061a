package cmdinfo

import (
	"strings"

	"github.com/shardis/shardis/internal/commands"
	"github.com/shardis/shardis/internal/resp"
)

// KeyArgFlags returns the flags Redis reports for the key at position p
// of a call of the command name (COMMAND GETKEYSANDFLAGS, ACL key
// permissions): those of the key spec that finds it, the last spec for a
// key only the command's own code finds (SORT's STORE), and for SET and
// BITFIELD the flags their arguments decide, as Redis's setGetKeys and
// bitfieldGetKeys do. write is the command's write flag, for a command
// without declared specs.
func KeyArgFlags(name string, write bool, args [][]byte, p int) string {
	eq := func(a []byte, s string) bool { return strings.EqualFold(string(a), s) }
	switch name {
	case "set":
		for _, a := range args[3:] {
			if eq(a, "get") {
				return "RW access update"
			}
		}
		return "OW update"
	case "bitfield":
		// Read-only when only GET (and OVERFLOW) subcommands are given;
		// anything else, a syntax error included, counts as a write.
		for i := 2; i < len(args); i++ {
			rem := len(args) - i - 1
			switch {
			case eq(args[i], "get") && rem >= 2:
				i += 2
			case eq(args[i], "overflow") && rem >= 1:
				i++
			default:
				return "RW access update"
			}
		}
		return "RO access"
	}
	specs := commands.KeySpecs[name]
	if len(specs) == 0 {
		if write {
			return "RW update"
		}
		return "RO access"
	}
	flags := specs[len(specs)-1].Flags
	for i := range specs {
		if commands.Covers(&specs[i], args, p) {
			flags = specs[i].Flags
			break
		}
	}
	// An incomplete spec makes Redis ask the command's own key finder,
	// whose flags do not carry the mark.
	return strings.TrimSuffix(strings.Replace(flags, " incomplete", "", 1), " ")
}

// appendKeySpecs appends COMMAND INFO's key specifications of c: Redis
// 7.0's declared specs, or one spec derived from the key metadata for a
// command the table lacks.
func appendKeySpecs(b []byte, proto int, c *Command) []byte {
	specs := commands.KeySpecs[c.Name]
	if len(specs) == 0 {
		return appendDerivedKeySpec(b, proto, c)
	}
	b = resp.AppendSetLen(b, proto, len(specs))
	for i := range specs {
		ks := &specs[i]
		if ks.Notes != "" {
			b = resp.AppendMapLen(b, proto, 4)
			b = resp.AppendBulkString(b, "notes")
			b = resp.AppendBulkString(b, ks.Notes)
		} else {
			b = resp.AppendMapLen(b, proto, 3)
		}
		b = resp.AppendBulkString(b, "flags")
		b = appendStatusSet(b, proto, strings.Fields(ks.Flags))
		b = resp.AppendBulkString(b, "begin_search")
		switch {
		case ks.Unknown:
			b = appendTypedSpec(b, proto, "unknown")
		case ks.Keyword != "":
			b = appendTypedSpec(b, proto, "keyword", "keyword", ks.Keyword, "startfrom", ks.StartFrom)
		default:
			b = appendTypedSpec(b, proto, "index", "index", ks.Pos)
		}
		b = resp.AppendBulkString(b, "find_keys")
		switch {
		case ks.UnknownKeys:
			b = appendTypedSpec(b, proto, "unknown")
		case ks.KeyNum:
			b = appendTypedSpec(b, proto, "keynum", "keynumidx", ks.KeyNumIdx, "firstkey", ks.FirstKey, "keystep", ks.Step)
		default:
			b = appendTypedSpec(b, proto, "range", "lastkey", ks.LastKey, "keystep", ks.Step, "limit", ks.Limit)
		}
	}
	return b
}

// appendDerivedKeySpec appends one key spec derived from c's key
// metadata (none for a command without keys).
func appendDerivedKeySpec(b []byte, proto int, c *Command) []byte {
	if !c.hasKeys() {
		return resp.AppendSetLen(b, proto, 0)
	}
	b = resp.AppendSetLen(b, proto, 1)
	b = resp.AppendMapLen(b, proto, 3)
	b = resp.AppendBulkString(b, "flags")
	b = appendStatusSet(b, proto, c.keyFlags())
	b = resp.AppendBulkString(b, "begin_search")
	if c.Traits.Movable {
		b = appendTypedSpec(b, proto, "unknown")
		b = resp.AppendBulkString(b, "find_keys")
		return appendTypedSpec(b, proto, "unknown")
	}
	b = appendTypedSpec(b, proto, "index", "index", c.First)
	b = resp.AppendBulkString(b, "find_keys")
	last := c.Last
	if last >= 0 {
		last -= c.First
	}
	return appendTypedSpec(b, proto, "range", "lastkey", last, "keystep", c.Step, "limit", 0)
}

// appendTypedSpec appends a key spec part: {type: typ, spec: {name:
// value ...}} with kv alternating names and values (strings or ints).
func appendTypedSpec(b []byte, proto int, typ string, kv ...any) []byte {
	b = resp.AppendMapLen(b, proto, 2)
	b = resp.AppendBulkString(b, "type")
	b = resp.AppendBulkString(b, typ)
	b = resp.AppendBulkString(b, "spec")
	b = resp.AppendMapLen(b, proto, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		b = resp.AppendBulkString(b, kv[i].(string))
		switch v := kv[i+1].(type) {
		case string:
			b = resp.AppendBulkString(b, v)
		case int:
			b = resp.AppendInt(b, int64(v))
		}
	}
	return b
}
