package node

import (
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/cluster/reply"
	"github.com/shardis/shardis/internal/node/slotmig"
)

// CLUSTER MIGRATION (Redis 8.4's atomic slot migration, an extension of
// the 7.0 command set) and CLUSTER SYNCSLOTS, the internal command of its
// protocol between target and source: argument parsing and replies; the
// engine is package slotmig (slotmig.go is the node's side of it).

// CLUSTER MIGRATION IMPORT <start> <end> [...] | CANCEL ID <id> | CANCEL ALL | STATUS [ID <id> | ALL]
func cmdClusterMigration(c *Client, args [][]byte) {
	mig := c.srv.cluster.mig
	op, msg := reply.ParseMigration(args[2:])
	if msg != "" {
		c.addClusterArgError(msg, args)
		return
	}
	if op.Verb == "import" {
		t, err := mig.StartImport(op.Ranges)
		if err != nil {
			c.addError(err.Error())
			return
		}
		c.addBulkString(t.ID())
		return
	}
	var tasks []*slotmig.Task
	switch {
	case op.All:
		tasks = mig.List()
	case op.ID != "":
		if t := mig.Find(op.ID); t != nil {
			tasks = []*slotmig.Task{t}
		}
	default:
		if t := mig.Active(); t != nil {
			tasks = []*slotmig.Task{t}
		}
	}
	if op.Verb == "status" {
		c.addArrayLen(len(tasks))
		for _, t := range tasks {
			reply.Fields(replyWriter{c}, t.Fields())
		}
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
}

// CLUSTER SYNCSLOTS START <id> <target-id> <start> <end> [...] | ACK <id> <applied> |
// HANDOFF <id> <epoch> | QUERY <id> <start> <end> [...]
func cmdClusterSyncSlots(c *Client, args [][]byte) {
	mig := c.srv.cluster.mig
	sub := strings.ToLower(string(args[2]))
	switch {
	case sub == "start" && len(args) >= 7:
		ranges, msg := reply.ParseSlotRanges(args[5:])
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
		ranges, msg := reply.ParseSlotRanges(args[4:])
		if msg != "" {
			c.addError(msg)
			return
		}
		c.addSimple(mig.AnswerQuery(string(args[3]), reply.SlotList(ranges)))
	default:
		clusterSubSyntaxError(c, args)
	}
}
