package node

import "strings"

// keySpec is one of a command's key specs as Redis 7.0 declares them
// (keyspecs_table.go), reduced to what COMMAND GETKEYSANDFLAGS needs: the
// key flags, and how the spec finds its keys (begin search by index or
// keyword, then a range or a numkeys argument).
type keySpec struct {
	flags string // as Redis prints them: "RW access delete"
	notes string

	pos       int    // begin search: index
	keyword   string // begin search: keyword
	startFrom int    // where the keyword search starts (negative: from the end, backwards)
	unknown   bool   // begin search not declared (found by the command's own code)

	unknownKeys bool // find keys not declared
	keyNum      bool // find keys: numkeys argument (else a range)
	lastKey     int  // range: last key relative to the first (negative: from the end)
	limit       int  // range: with lastKey -1, only 1/limit of the remaining args
	keyNumIdx   int  // keynum: index of numkeys relative to the begin
	firstKey    int  // keynum: first key relative to the begin
	step        int
}

// begin finds where the spec's keys start in args, 0 when it cannot say.
func (ks *keySpec) begin(args [][]byte) int {
	switch {
	case ks.unknown:
		return 0
	case ks.keyword == "":
		return ks.pos
	case ks.startFrom >= 0:
		for i := ks.startFrom; i < len(args); i++ {
			if eqFold(args[i], ks.keyword) {
				return i + 1
			}
		}
	default:
		for i := len(args) + ks.startFrom; i > 0; i-- {
			if eqFold(args[i], ks.keyword) {
				return i + 1
			}
		}
	}
	return 0
}

// covers reports whether the key at position p of args is one of the
// spec's keys.
func (ks *keySpec) covers(args [][]byte, p int) bool {
	b := ks.begin(args)
	if b <= 0 || p < b || ks.unknownKeys {
		return false
	}
	step := max(ks.step, 1)
	if ks.keyNum {
		idx := b + ks.keyNumIdx
		if idx >= len(args) {
			return false
		}
		n, ok := parseInt(args[idx])
		first := b + ks.firstKey
		return ok && p >= first && int64(p) < int64(first)+n*int64(step) && (p-first)%step == 0
	}
	last := b + ks.lastKey
	if ks.lastKey < 0 {
		last = len(args) + ks.lastKey
	}
	return p <= last && (p-b)%step == 0
}

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
	flags := specs[len(specs)-1].flags
	for i := range specs {
		if specs[i].covers(args, p) {
			flags = specs[i].flags
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
		if ks.notes != "" {
			c.addMapLen(4)
			c.addBulkString("notes")
			c.addBulkString(ks.notes)
		} else {
			c.addMapLen(3)
		}
		c.addBulkString("flags")
		c.addStatusSet(strings.Fields(ks.flags))
		c.addBulkString("begin_search")
		switch {
		case ks.unknown:
			c.addTypedSpec("unknown")
		case ks.keyword != "":
			c.addTypedSpec("keyword", "keyword", ks.keyword, "startfrom", ks.startFrom)
		default:
			c.addTypedSpec("index", "index", ks.pos)
		}
		c.addBulkString("find_keys")
		switch {
		case ks.unknownKeys:
			c.addTypedSpec("unknown")
		case ks.keyNum:
			c.addTypedSpec("keynum", "keynumidx", ks.keyNumIdx, "firstkey", ks.firstKey, "keystep", ks.step)
		default:
			c.addTypedSpec("range", "lastkey", ks.lastKey, "keystep", ks.step, "limit", ks.limit)
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
