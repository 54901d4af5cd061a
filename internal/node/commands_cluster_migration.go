package node

import (
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// CLUSTER MIGRATION (Redis 8.4's atomic slot migration, an extension of
// the 7.0 command set) and CLUSTER SYNCSLOTS, the internal command of its
// protocol between target and source (slotmig*.go).

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
	sm := c.srv.cluster.mig
	switch {
	case eqFold(args[2], "import"):
		ranges, msg := parseSlotRanges(args[3:])
		if msg != "" {
			c.addError(msg)
			return
		}
		t, err := sm.startImport(ranges)
		if err != nil {
			c.addError(err.Error())
			return
		}
		c.addBulkString(t.id)
	case eqFold(args[2], "cancel"):
		var tasks []*migTask
		switch {
		case len(args) == 4 && eqFold(args[3], "all"):
			tasks = sm.list()
		case len(args) == 5 && eqFold(args[3], "id"):
			if t := sm.find(string(args[4])); t != nil {
				tasks = []*migTask{t}
			}
		default:
			c.addError(errSyntax)
			return
		}
		n := 0
		for _, t := range tasks {
			if t.finished() {
				continue
			}
			t.requestCancel()
			n++
			// Answer once the rollback is done, so STATUS shows it.
			select {
			case <-t.done:
			case <-time.After(5 * time.Second):
			}
		}
		c.addInt(int64(n))
	case eqFold(args[2], "status"):
		var tasks []*migTask
		switch {
		case len(args) == 3:
			if t := sm.active(); t != nil {
				tasks = []*migTask{t}
			}
		case len(args) == 4 && eqFold(args[3], "all"):
			tasks = sm.list()
		case len(args) == 5 && eqFold(args[3], "id"):
			if t := sm.find(string(args[4])); t != nil {
				tasks = []*migTask{t}
			}
		default:
			c.addError(errSyntax)
			return
		}
		c.addArrayLen(len(tasks))
		for _, t := range tasks {
			c.addMigTask(t)
		}
	default:
		clusterSubSyntaxError(c, args)
	}
}

// addMigTask writes one task of STATUS as field-value pairs, Redis 8.4's
// fields in its order.
func (c *Client) addMigTask(t *migTask) {
	t.mu.Lock()
	ms := func(tm time.Time) string {
		if tm.IsZero() {
			return "0"
		}
		return strconv.FormatInt(tm.UnixMilli(), 10)
	}
	fields := []string{
		"id", t.id,
		"slots", rangesText(t.ranges),
		"source", t.source,
		"dest", t.dest,
		"operation", t.op,
		"state", t.state,
		"last_error", t.lastErr,
		"retries", strconv.Itoa(t.retries),
		"create_time", ms(t.created),
		"start_time", ms(t.started),
		"end_time", ms(t.ended),
		"write_pause_ms", strconv.FormatInt(t.pauseMs, 10),
	}
	t.mu.Unlock()
	// Progress, after Redis's fields: keys of the snapshot, live writes.
	fields = append(fields, "keys", strconv.FormatInt(t.keys.Load(), 10), "writes", strconv.FormatInt(t.cmds.Load(), 10))
	if c.proto >= 3 {
		c.addMapLen(len(fields) / 2)
	} else {
		c.addArrayLen(len(fields))
	}
	for _, f := range fields {
		c.addBulkString(f)
	}
}

// CLUSTER SYNCSLOTS START <id> <target-id> <start> <end> [...] | ACK <id> <applied> |
// HANDOFF <id> <epoch> | QUERY <id> <start> <end> [...]
func cmdClusterSyncSlots(c *Client, args [][]byte) {
	sm := c.srv.cluster.mig
	sub := strings.ToLower(string(args[2]))
	switch {
	case sub == "start" && len(args) >= 7:
		ranges, msg := parseSlotRanges(args[5:])
		if msg != "" {
			c.addError(msg)
			return
		}
		if err := sm.startSource(c, string(args[3]), string(args[4]), ranges); err != nil {
			c.addError(err.Error())
		}
	case sub == "ack" && len(args) == 5:
		off, ok := parseInt(args[4])
		if t := sm.find(string(args[3])); ok && t != nil && t.src != nil && t.src.c == c {
			t.src.acked.Store(off)
			select {
			case t.src.ackCh <- struct{}{}:
			default:
			}
		}
	case sub == "handoff" && len(args) == 5:
		epoch, err := strconv.ParseUint(string(args[4]), 10, 64)
		if t := sm.find(string(args[3])); err == nil && t != nil && t.src != nil {
			select {
			case t.src.handoff <- epoch:
			default:
			}
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
		c.addSimple(sm.answerQuery(string(args[3]), slots))
	default:
		clusterSubSyntaxError(c, args)
	}
}
