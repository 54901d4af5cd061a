package node

import (
	"time"
)

// Sequenced commands.
//
// Redis runs every command in one event loop, in the order the commands
// reached the machine, and clients that wake or feed each other depend on
// it: two clients that block on a list one after the other are served in
// that order, an EXEC sent before another client's push runs first, an
// UNSUBSCRIBE sent before another client's PUBLISH takes effect first.
// shardnode runs a goroutine per connection, in whatever order the
// scheduler picks. So the commands that can block, wake or feed other
// clients are sequenced (flagSequenced, setSequenced): before one runs,
// every other connection's input received before it (by the kernel's
// receive timestamp) has run (netio.Sequencer.Wait), except the input of a
// client that is blocked or whose replies its socket does not take. Plain
// reads and writes stay parallel; writes of other types are sequenced only
// while some client WATCHes keys (they could fail an EXEC that arrived
// before them). The sequencer is switched on by the first blocking or
// subscription command: before that no client waits on a key or a channel,
// and a server that never blocks or subscribes pays nothing.

// setSequenced marks the commands that run in arrival order: blocking
// commands, pub/sub commands, and the writes that can make a key ready
// for a blocking command or move keys (list, sorted-set, generic and
// keyspace groups, whole-keyspace writes). EXEC carries the flag on its
// row.
func setSequenced(t *commandTable) {
	mark := func(cmd *command) {
		g := cmd.cmdGroup()
		switch {
		case cmd.flags&(flagBlocking|flagPubSub) != 0:
		case cmd.flags&flagWrite != 0 && (g == "list" || g == "sorted-set" || g == "stream" || g == "generic" || g == "keyspace" || cmd.flags&flagLockAll != 0):
		default:
			return
		}
		cmd.flags |= flagSequenced
	}
	for _, cmd := range t.cmds {
		mark(cmd)
		for _, sub := range cmd.subs {
			mark(sub)
		}
	}
}

// sequence runs before a command takes its locks (Client.call): it turns
// the sequencer on at the first blocking or subscription command, and
// waits, for a sequenced command, until the input other connections
// received before it has run. A call of a blocking command that cannot
// block (XREAD without BLOCK: command.mayBlock) is neither: it runs as a
// plain read or write.
func (c *Client) sequence(cmd *command, args [][]byte) {
	s := c.srv
	if c.raw == nil || c.hasFlag(clientMaster) {
		// Not a TCP client (an AOF load's client, a unix socket): no
		// receive times. The master's stream is in the master's order.
		return
	}
	plain := cmd.flags&flagBlocking != 0 && !cmd.blocks(args)
	if !s.seq.On() {
		if (cmd.flags&flagBlocking == 0 || plain) && (cmd.flags&flagPubSub == 0 || cmd.flags&flagMayReplicate != 0) {
			return // neither blocking nor a subscription: stays off
		}
		s.enableSequencer()
	}
	if (cmd.flags&flagSequenced == 0 || plain) && (cmd.flags&flagWrite == 0 || (s.watches.n.Load() == 0 && !s.blocking.streamReads.Load())) {
		return
	}
	s.seq.Wait(c.raw, c.arrivalNs(), c.done)
}

// enableSequencer turns the sequencer on and makes every connected client
// a member; new clients join as they are admitted (clientAdmitted).
func (s *Server) enableSequencer() {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if s.seq.On() || !s.seq.Enable() {
		return
	}
	for _, c := range s.clients {
		s.clientAdmitted(c)
	}
}

// clientAdmitted makes a new client a member of the sequencer; called with
// s.clientsMu held.
func (s *Server) clientAdmitted(c *Client) {
	if r := c.raw; r != nil && s.seq.On() {
		s.seq.Add(r, c.id, c.isBlocked)
	}
}

// clientGone ends a client's membership; called with s.clientsMu held.
func (s *Server) clientGone(c *Client) {
	if r := c.raw; r != nil {
		s.seq.Remove(r)
	}
}

// isBlocked reports whether the sequencer need not wait for the client's
// input: it waits in a blocking command, a pause or WAIT (parkStart), it
// is a replica's link (its input is REPLCONF, and its full sync keeps its
// goroutine in SYNC for the whole transfer), or it is the link to our
// master (the stream, ordered by the master, is applied by the link's own
// loop, which never ends its busy time).
func (c *Client) isBlocked() bool {
	return c.hasFlag(clientBlocked | clientParked | clientReplica | clientMaster)
}

// parkStart marks the client as waiting inside its command for something
// other than a key (WAIT's acknowledgements), so sequenced commands of
// other clients do not wait for it; parkEnd ends that.
func (c *Client) parkStart() {
	c.setFlag(clientParked, true)
	c.srv.seq.Notify()
}

// parkEnd ends parkStart.
func (c *Client) parkEnd() { c.setFlag(clientParked, false) }

// inputDone records that the client ran everything it read.
func (c *Client) inputDone() {
	if r := c.raw; r != nil {
		r.Done()
	}
}

// arrivalNs is when the command being run reached the machine, in unix ns:
// the kernel's receive time of the data the client's last read returned
// (the read that completed this command), or now when that is unknown
// (no timestamps on this platform or connection type).
func (c *Client) arrivalNs() int64 {
	if r := c.raw; r != nil {
		if ns := r.RxTime(); ns != 0 {
			return ns
		}
	}
	return time.Now().UnixNano()
}
