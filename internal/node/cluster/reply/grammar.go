package reply

import (
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/value"
)

// Argument errors of the CLUSTER subcommands, Redis's texts. ErrSubSyntax
// is not a text: the node replies Redis's addReplySubcommandSyntaxError,
// which names the subcommand as the client spelled it.
const (
	ErrSyntax    = "ERR syntax error"
	ErrSubSyntax = "\x00subcommand syntax"
)

// HelpLines are Redis 7.0's CLUSTER HELP lines, in its order.
var HelpLines = []string{
	"ADDSLOTS <slot> [<slot> ...]",
	"    Assign slots to current node.",
	"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Assign slots which are between <start-slot> and <end-slot> to current node.",
	"BUMPEPOCH",
	"    Advance the cluster config epoch.",
	"COUNT-FAILURE-REPORTS <node-id>",
	"    Return number of failure reports for <node-id>.",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"DELSLOTS <slot> [<slot> ...]",
	"    Delete slots information from current node.",
	"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Delete slots information which are between <start-slot> and <end-slot> from current node.",
	"FAILOVER [FORCE|TAKEOVER]",
	"    Promote current replica node to being a master.",
	"FORGET <node-id>",
	"    Remove a node from the cluster.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"FLUSHSLOTS",
	"    Delete current node own slots information.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MEET <ip> <port> [<bus-port>]",
	"    Connect nodes into a working cluster.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"REPLICATE <node-id>",
	"    Configure current node as replica to <node-id>.",
	"RESET [HARD|SOFT]",
	"    Reset current node (default: soft).",
	"SET-CONFIG-EPOCH <epoch>",
	"    Set config epoch of current node.",
	"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
	"    Set slot state.",
	"REPLICAS <node-id>",
	"    Return <node-id> replicas.",
	"SAVECONFIG",
	"    Force saving cluster configuration on disk.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"LINKS",
	"    Return information about all network links between this node and its peers.",
	"    Output format is an array where each array element is a map containing attributes of a link",
}

// ParseReset parses CLUSTER RESET's arguments after the subcommand:
// whether it is HARD (the default is SOFT), or the error.
func ParseReset(args [][]byte) (hard bool, msg string) {
	switch {
	case len(args) > 1:
		return false, ErrSubSyntax
	case len(args) == 0:
		return false, ""
	}
	switch {
	case eqASCII(args[0], "hard"):
		return true, ""
	case eqASCII(args[0], "soft"):
		return false, ""
	}
	return false, ErrSyntax
}

// eqASCII reports whether b is s, ignoring ASCII case only (s is lower
// case).
func eqASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// ParseSlotRanges parses start end [start end ...] (CLUSTER MIGRATION
// and SYNCSLOTS): inclusive ranges, each slot named once.
func ParseSlotRanges(args [][]byte) ([][2]int, string) {
	if len(args) == 0 || len(args)%2 != 0 {
		return nil, "ERR wrong number of arguments for 'cluster|migration' command"
	}
	var seen [cluster.NumSlots]bool
	var out [][2]int
	for i := 0; i < len(args); i += 2 {
		a, ok1 := value.ParseInt(args[i])
		b, ok2 := value.ParseInt(args[i+1])
		if !ok1 || !ok2 || a < 0 || b < 0 || a >= cluster.NumSlots || b >= cluster.NumSlots {
			return nil, "ERR Invalid or out of range slot"
		}
		if a > b {
			return nil, "ERR start slot number " + strconv.FormatInt(a, 10) + " is greater than end slot number " + strconv.FormatInt(b, 10)
		}
		for s := a; s <= b; s++ {
			if seen[s] {
				return nil, "ERR Slot " + strconv.FormatInt(s, 10) + " specified multiple times"
			}
			seen[s] = true
		}
		out = append(out, [2]int{int(a), int(b)})
	}
	return out, ""
}

// SlotList expands ranges into their slots, in order.
func SlotList(ranges [][2]int) []int {
	var slots []int
	for _, r := range ranges {
		for s := r[0]; s <= r[1]; s++ {
			slots = append(slots, s)
		}
	}
	return slots
}

// MigrationOp is CLUSTER MIGRATION's parsed request.
type MigrationOp struct {
	// Verb is "import", "cancel" or "status".
	Verb string
	// Ranges are IMPORT's slot ranges.
	Ranges [][2]int
	// All: CANCEL ALL or STATUS ALL; ID: CANCEL ID <id> or STATUS ID <id>
	// (a STATUS with neither asks for the active task).
	All bool
	ID  string
}

// ParseMigration parses CLUSTER MIGRATION IMPORT <start> <end> [...] |
// CANCEL ID <id> | CANCEL ALL | STATUS [ID <id> | ALL] (args after
// MIGRATION), or returns the error.
func ParseMigration(args [][]byte) (MigrationOp, string) {
	var op MigrationOp
	for _, v := range []string{"import", "cancel", "status"} {
		if strings.EqualFold(string(args[0]), v) {
			op.Verb = v
		}
	}
	switch op.Verb {
	case "import":
		var msg string
		op.Ranges, msg = ParseSlotRanges(args[1:])
		return op, msg
	case "cancel", "status":
		switch {
		case len(args) == 1 && op.Verb == "status":
		case len(args) == 2 && strings.EqualFold(string(args[1]), "all"):
			op.All = true
		case len(args) == 3 && strings.EqualFold(string(args[1]), "id"):
			op.ID = string(args[2])
		default:
			return op, ErrSyntax
		}
		return op, ""
	}
	return op, ErrSubSyntax
}

// ErrNotInt is Redis's reply to an argument that is not an integer.
const ErrNotInt = "ERR value is not an integer or out of range"

// ParseCountKeysInSlot parses CLUSTER COUNTKEYSINSLOT's slot.
func ParseCountKeysInSlot(arg []byte) (int, string) {
	slot, ok := value.ParseInt(arg)
	if !ok {
		return 0, ErrNotInt
	}
	if slot < 0 || slot >= cluster.NumSlots {
		return 0, "ERR Invalid slot"
	}
	return int(slot), ""
}

// ParseGetKeysInSlot parses CLUSTER GETKEYSINSLOT's slot and count (at
// most 2^30: the count only bounds the keys listed).
func ParseGetKeysInSlot(slotArg, countArg []byte) (slot, count int, msg string) {
	s, ok1 := value.ParseInt(slotArg)
	if !ok1 {
		return 0, 0, ErrNotInt
	}
	n, ok2 := value.ParseInt(countArg)
	if !ok2 {
		return 0, 0, ErrNotInt
	}
	if s < 0 || s >= cluster.NumSlots || n < 0 {
		return 0, 0, "ERR Invalid slot or number of keys"
	}
	return int(s), int(min(n, 1<<30)), ""
}
