package node

import (
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/slotmig"
)

// CLUSTER MIGRATION (Redis 8.4's atomic slot migration, an extension of
// the 7.0 command set) and CLUSTER SYNCSLOTS, the internal command of its
// protocol between target and source: argument parsing and replies; the
// engine is package slotmig (slotmig.go is the node's side of it).

// parseSlotRanges parses start end [start end ...].
func parseSlotRanges(args [][]byte) ([][2]int, string) {
	if len(args) == 0 || len(args)%2 != 0 {
		return nil, "ERR wrong number of arguments for 'cluster|migration' command"
	}
	var seen [cluster.NumSlots]bool
	var out [][2]int
	for i := 0; i < len(args); i += 2 {
		a, ok1 := parseInt(args[i])
		b, ok2 := parseInt(args[i+1])
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

// CLUSTER MIGRATION IMPORT <start> <end> [...] | CANCEL ID <id> | CANCEL ALL | STATUS [ID <id> | ALL]
func cmdClusterMigration(c *Client, args [][]byte) {
	mig := c.srv.cluster.mig
	switch {
	case eqFold(args[2], "import"):
		ranges, msg := parseSlotRanges(args[3:])
		if msg != "" {
			c.addError(msg)
			return
		}
		t, err := mig.StartImport(ranges)
		if err != nil {
			c.addError(err.Error())
			return
		}
		c.addBulkString(t.ID())
	case eqFold(args[2], "cancel"):
		var tasks []*slotmig.Task
		switch {
		case len(args) == 4 && eqFold(args[3], "all"):
			tasks = mig.List()
		case len(args) == 5 && eqFold(args[3], "id"):
			if t := mig.Find(string(args[4])); t != nil {
				tasks = []*slotmig.Task{t}
			}
		default:
			c.addError(errSyntax)
			return
		}
		n := 0
		for _, t := range tasks {
			if t.Finished() {
				continue
			}
			t.Cancel()
			n++
			// Answer once the rollback is done, so STATUS shows it.
			select {
			case <-t.Done():
			case <-time.After(5 * time.Second):
			}
		}
		c.addInt(int64(n))
	case eqFold(args[2], "status"):
		var tasks []*slotmig.Task
		switch {
		case len(args) == 3:
			if t := mig.Active(); t != nil {
				tasks = []*slotmig.Task{t}
			}
		case len(args) == 4 && eqFold(args[3], "all"):
			tasks = mig.List()
		case len(args) == 5 && eqFold(args[3], "id"):
			if t := mig.Find(string(args[4])); t != nil {
				tasks = []*slotmig.Task{t}
			}
		default:
			c.addError(errSyntax)
			return
		}
		c.addArrayLen(len(tasks))
		for _, t := range tasks {
			fields := t.Fields()
			if c.proto >= 3 {
				c.addMapLen(len(fields) / 2)
			} else {
				c.addArrayLen(len(fields))
			}
			for _, f := range fields {
				c.addBulkString(f)
			}
		}
	default:
		clusterSubSyntaxError(c, args)
	}
}

// CLUSTER SYNCSLOTS START <id> <target-id> <start> <end> [...] | ACK <id> <applied> |
// HANDOFF <id> <epoch> | QUERY <id> <start> <end> [...]
func cmdClusterSyncSlots(c *Client, args [][]byte) {
	mig := c.srv.cluster.mig
	sub := strings.ToLower(string(args[2]))
	switch {
	case sub == "start" && len(args) >= 7:
		ranges, msg := parseSlotRanges(args[5:])
		if msg != "" {
			c.addError(msg)
			return
		}
		if err := mig.StartSource(migConn{c}, string(args[3]), string(args[4]), ranges); err != nil {
			c.addError(err.Error())
			return
		}
		c.replyMode = replyOff // the task writes on this connection from now on
	case sub == "ack" && len(args) == 5:
		if off, ok := parseInt(args[4]); ok {
			mig.Ack(string(args[3]), migConn{c}, off)
		}
	case sub == "handoff" && len(args) == 5:
		if epoch, err := strconv.ParseUint(string(args[4]), 10, 64); err == nil {
			mig.Handoff(string(args[3]), epoch)
		}
	case sub == "query" && len(args) >= 6:
		ranges, msg := parseSlotRanges(args[4:])
		if msg != "" {
			c.addError(msg)
			return
		}
		var slots []int
		for _, r := range ranges {
			for s := r[0]; s <= r[1]; s++ {
				slots = append(slots, s)
			}
		}
		c.addSimple(mig.AnswerQuery(string(args[3]), slots))
	default:
		clusterSubSyntaxError(c, args)
	}
}
