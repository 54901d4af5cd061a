package tocluster

import (
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/commands"
	"github.com/shardis/shardis/internal/consistent"
)

// Kind is how one command of a source's replication stream is applied to
// the cluster (see [Classify]).
type Kind int

// The rules, one per kind of stream command.
const (
	// Ignore: not data (PING, REPLCONF, SELECT 0, PUBLISH, the tool's own
	// notice key).
	Ignore Kind = iota
	// Single: every key in one slot; sent as is to that slot's master.
	Single
	// Split: DEL, UNLINK, TOUCH, MSET, MSETNX over several slots; one
	// command per slot with that slot's keys, in the order the slots first
	// appear (MSETNX is replicated only when it succeeded, so every part
	// succeeds too).
	Split
	// Colocate: any other command whose keys span slots (RENAME, SMOVE,
	// LMOVE, SUNIONSTORE, ZUNIONSTORE, BITOP, PFMERGE, COPY, SORT ... STORE
	// ...): applied by its effects. Every key outside the first key's slot
	// is copied (DUMP, PTTL, RESTORE) under a temporary name in that slot,
	// the command runs there on the temporary names, and every temporary
	// key is copied back to its own name (or its own name deleted if the
	// command removed it) and dropped. The values end as the source's.
	Colocate
	// Flush: FLUSHALL or FLUSHDB: delete the keys of this shard only (the
	// keys the tool copied or saw written), never the other shards'.
	Flush
	// Broadcast: FUNCTION LOAD/DELETE/FLUSH/RESTORE and SCRIPT FLUSH/LOAD,
	// keyless state every master needs.
	Broadcast
	// Multi opens a transaction (script effects are replicated as one):
	// its commands are grouped per slot and each group runs in its own
	// MULTI/EXEC on its slot's master. Atomicity across slots cannot
	// survive in a cluster.
	Multi
	// Exec closes a transaction: its per-slot groups are sent.
	Exec
	// Refuse: the stream cannot be applied to a cluster (SELECT of a
	// database other than 0, SWAPDB, MOVE, an unknown command): the shard's
	// migration stops with an error, before any cut-over.
	Refuse
)

// NoticeKey is the key the tool writes on every source master before the
// cut-over (see doc.go); it is never copied to the cluster.
const NoticeKey = "shardis:tocluster"

// CommitKey is the cluster key whose value is the migration id once the
// cut-over is committed.
const CommitKey = "shardis:tocluster:commit"

// AttemptKey is the cluster key naming the migration that is copying into
// the cluster, so that a rerun knows the data there is its own.
const AttemptKey = "shardis:tocluster:attempt"

// RequestKey is the cluster key through which --cutover-only asks a
// running --no-cutover migration to cut over.
const RequestKey = "shardis:tocluster:request"

var splitSteps = map[string]int{"del": 1, "unlink": 1, "touch": 1, "mset": 2, "msetnx": 2}

// Classify returns the rule applying a stream command (args[0] is its
// name), the positions of its keys, and, for Refuse, why.
func Classify(args [][]byte) (k Kind, keys []int, why string) {
	if len(args) == 0 {
		return Ignore, nil, ""
	}
	name := strings.ToLower(string(args[0]))
	switch name {
	case "ping", "replconf", "publish", "spublish":
		return Ignore, nil, ""
	case "select":
		if len(args) == 2 && string(args[1]) == "0" {
			return Ignore, nil, ""
		}
		return Refuse, nil, "the source writes to a database other than 0 (a cluster has only db 0)"
	case "multi":
		return Multi, nil, ""
	case "exec":
		return Exec, nil, ""
	case "flushall", "flushdb":
		return Flush, nil, ""
	case "swapdb", "move":
		return Refuse, nil, "the source ran " + strings.ToUpper(name) + ": data moves between databases, and a cluster has only db 0"
	case "function", "script":
		return Broadcast, nil, ""
	case "copy":
		for i := 3; i < len(args); i++ {
			if strings.EqualFold(string(args[i]), "db") {
				return Refuse, nil, "the source ran COPY ... DB: a cluster has only db 0"
			}
		}
	}
	pos, known := commands.KeyPositions(args)
	if !known {
		return Refuse, nil, "the source replicated " + strconv.Quote(name) + ", a command this tool cannot place"
	}
	if len(pos) == 0 {
		return Refuse, nil, "the source replicated " + strings.ToUpper(name) + " with no key, which this tool cannot place"
	}
	for _, p := range pos {
		if string(args[p]) == NoticeKey {
			return Ignore, nil, ""
		}
	}
	first := consistent.KeySlot(string(args[pos[0]]))
	for _, p := range pos[1:] {
		if consistent.KeySlot(string(args[p])) != first {
			if _, ok := splitSteps[name]; ok {
				return Split, pos, ""
			}
			return Colocate, pos, ""
		}
	}
	return Single, pos, ""
}

// SplitBySlot cuts a Split command into one command per slot, in the order
// the slots first appear, each with its keys (and values) in their order.
func SplitBySlot(args [][]byte) [][][]byte {
	step := splitSteps[strings.ToLower(string(args[0]))]
	if step == 0 {
		return [][][]byte{args}
	}
	var order []int
	parts := map[int][][]byte{}
	for p := 1; p+step <= len(args); p += step {
		s := consistent.KeySlot(string(args[p]))
		if _, ok := parts[s]; !ok {
			order = append(order, s)
			parts[s] = [][]byte{args[0]}
		}
		parts[s] = append(parts[s], args[p:p+step]...)
	}
	out := make([][][]byte, len(order))
	for i, s := range order {
		out[i] = parts[s]
	}
	return out
}

// slotTags[s] is a short string whose CRC16 slot is s: a key "{tag}..."
// then lands in slot s whatever follows.
var slotTags = func() [consistent.SlotCount]string {
	var t [consistent.SlotCount]string
	left := consistent.SlotCount
	for i := 0; left > 0; i++ {
		s := strconv.Itoa(i)
		slot := int(consistent.CRC16(s) & (consistent.SlotCount - 1))
		if t[slot] == "" {
			t[slot] = s
			left--
		}
	}
	return t
}()

// TempKey returns the n-th temporary key name in slot.
func TempKey(slot, n int) string {
	return "{" + slotTags[slot] + "}shardis:tocluster:tmp:" + strconv.Itoa(n)
}
