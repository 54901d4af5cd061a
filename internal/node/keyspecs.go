package node

import (
	"strings"

	"github.com/shardis/shardis/internal/commands"
)

// Redis 7.0's command metadata (key specs, declared ACL categories,
// tips), shared with the clients in internal/commands.
var (
	keySpecTable     = commands.KeySpecs
	aclCategoryTable = commands.ACLCategories
	commandTipsTable = commands.Tips
)

// keyArgFlags returns the flags Redis reports for the key at position p of
// a call of cmd (COMMAND GETKEYSANDFLAGS): those of the key spec that finds
// it, the last spec for a key only the command's own code finds (SORT's
// STORE), and for SET and BITFIELD the flags their arguments decide, as
// Redis's setGetKeys and bitfieldGetKeys do.
func keyArgFlags(cmd *command, args [][]byte, p int) string {
	switch cmd.fullName() {
	case "set":
		for _, a := range args[3:] {
			if eqFold(a, "get") {
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
			case eqFold(args[i], "get") && rem >= 2:
				i += 2
			case eqFold(args[i], "overflow") && rem >= 1:
				i++
			default:
				return "RW access update"
			}
		}
		return "RO access"
	}
	specs := keySpecTable[cmd.fullName()]
	if len(specs) == 0 {
		if cmd.flags&flagWrite != 0 {
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

// addKeySpecs writes COMMAND INFO's key specifications of cmd: Redis 7.0's
// declared specs, or one spec derived from the key metadata for a command
// the table lacks.
func (c *Client) addKeySpecs(cmd *command) {
	specs := keySpecTable[cmd.fullName()]
	if len(specs) == 0 {
		c.addDerivedKeySpec(cmd)
		return
	}
	c.addSetLen(len(specs))
	for i := range specs {
		ks := &specs[i]
		if ks.Notes != "" {
			c.addMapLen(4)
			c.addBulkString("notes")
			c.addBulkString(ks.Notes)
		} else {
			c.addMapLen(3)
		}
		c.addBulkString("flags")
		c.addStatusSet(strings.Fields(ks.Flags))
		c.addBulkString("begin_search")
		switch {
		case ks.Unknown:
			c.addTypedSpec("unknown")
		case ks.Keyword != "":
			c.addTypedSpec("keyword", "keyword", ks.Keyword, "startfrom", ks.StartFrom)
		default:
			c.addTypedSpec("index", "index", ks.Pos)
		}
		c.addBulkString("find_keys")
		switch {
		case ks.UnknownKeys:
			c.addTypedSpec("unknown")
		case ks.KeyNum:
			c.addTypedSpec("keynum", "keynumidx", ks.KeyNumIdx, "firstkey", ks.FirstKey, "keystep", ks.Step)
		default:
			c.addTypedSpec("range", "lastkey", ks.LastKey, "keystep", ks.Step, "limit", ks.Limit)
		}
	}
}

// addTypedSpec writes a key spec part: {type: typ, spec: {name: value
// ...}} with kv alternating names and values (strings or ints).
func (c *Client) addTypedSpec(typ string, kv ...any) {
	c.addMapLen(2)
	c.addBulkString("type")
	c.addBulkString(typ)
	c.addBulkString("spec")
	c.addMapLen(len(kv) / 2)
	for i := 0; i+1 < len(kv); i += 2 {
		c.addBulkString(kv[i].(string))
		switch v := kv[i+1].(type) {
		case string:
			c.addBulkString(v)
		case int:
			c.addInt(int64(v))
		}
	}
}
