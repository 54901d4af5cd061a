package node

import (
	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/redirect"
	"github.com/shardis/shardis/internal/node/clusternode"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/script"
)

// hasKeySpecs reports whether cmd can name keys, so the slot check looks
// at it (Redis checks commands with key specs or movable keys, and EXEC).
func hasKeySpecs(cmd *command) bool {
	return cmd.first > 0 || cmd.keys != nil || cmd.fullName() == "exec"
}

// clusterRedirect is Redis's getNodeByQuery followed by
// clusterRedirectClient: the error to reply when this node does not serve
// the command in cluster mode, "" when it does. It runs in the
// dispatcher's ordered checks, before the command takes any lock; it
// notes whether the check must be repeated under the locks
// (settleLocked), which happens when it saw a migrating or importing slot
// (MIGRATE may move a key in between) or when the routing changes before
// the locks are taken.
func (c *Client) clusterRedirect(cmd *command, args [][]byte) string {
	return c.clusterCheck(cmd, args, false)
}

// clusterCheck is clusterRedirect; locked says the caller holds the
// command's shard locks (the existence checks of keys of a migrating or
// importing slot then read the keyspace without locking).
func (c *Client) clusterCheck(cmd *command, args [][]byte, locked bool) string {
	cm := c.srv.cluster
	rt := cm.Routing()
	q := slotQuery{Query: redirect.NewQuery(rt, isShardPubSub(cmd)), c: c, locked: locked}
	if !locked {
		defer func() { c.slotRoute, c.slotRecheck = rt, q.Migrating || q.Importing }()
	}
	isWrite := cmd.flags&flagWrite != 0 || c.scriptWrites(cmd, args)
	if cmd.fullName() == "exec" {
		if !c.hasFlag(clientMulti) {
			return ""
		}
		for _, mq := range c.multi {
			qc := c.srv.queuedCommand(mq)
			if qc == nil {
				continue
			}
			if qc.flags&flagWrite != 0 {
				isWrite = true
			}
			if msg := q.cmdKeys(qc, mq); msg != "" {
				return msg
			}
		}
	} else if msg := q.cmdKeys(cmd, args); msg != "" {
		return msg
	}
	if !q.HaveKeys {
		return ""
	}
	r := redirect.Request{Write: isWrite, Asking: c.hasFlag(clientAsking), ReadOnly: c.hasFlag(clientReadOnly), Name: cmd.name}
	if rt.State != cluster.ClusterOK {
		if q.ShardPubSub {
			r.AllowPubsubShardWhenDown = c.srv.cfg.Bool(config.DirClusterAllowPubsubshardWhenDown)
		} else {
			r.AllowReadsWhenDown = c.srv.cfg.Bool(config.DirClusterAllowReadsWhenDown)
		}
	}
	switch out, msg, to := q.Decide(r); out {
	case redirect.Serve:
		return ""
	case redirect.Refuse:
		return msg
	default:
		return cm.Reply(out, msg, q.Slot, rt, to)
	}
}

// scriptWrites reports whether an EVAL or EVALSHA runs a script that
// declared flags without no-writes: Redis's evalGetCommandFlags then
// gives the command the write flag, so a replica redirects it with MOVED
// even after READONLY.
func (c *Client) scriptWrites(cmd *command, args [][]byte) bool {
	return script.EvalWrites(cmd.name, args, c.srv.scriptEngine)
}

// slotQuery is a redirect.Query fed from a command's arguments (the
// dispatcher's hot path: a plain walk of the command's key range).
type slotQuery struct {
	redirect.Query
	c *Client
	// locked: the command's shard locks are held (settleLocked).
	locked bool
}

// cmdKeys feeds the keys of one call of cmd, without allocating for
// commands with a first/last/step key range.
func (q *slotQuery) cmdKeys(cmd *command, args [][]byte) string {
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				if msg := q.key(args[p]); msg != "" {
					return msg
				}
			}
		}
		return ""
	}
	if cmd.first == 0 {
		return ""
	}
	last := cmd.last
	if last < 0 {
		last = len(args) + last
	}
	last = min(last, len(args)-1)
	for i := cmd.first; i <= last; i += max(cmd.step, 1) {
		if msg := q.key(args[i]); msg != "" {
			return msg
		}
	}
	return ""
}

// key is one key of the request.
func (q *slotQuery) key(key []byte) string {
	msg, check := q.Key(bstr(key))
	if check {
		q.Exists(clusternode.KeyExists(q.c.srv.dbs[0], bstr(key), q.locked, q.c.srv.nowMs()))
	}
	return msg
}

// redirectBlockedClients is Redis's clusterRedirectBlockedClientIfNeeded,
// run when the routing changes: a client blocked on keys of a slot this
// node no longer serves (and does not import) is unblocked with MOVED, or
// CLUSTERDOWN for an unassigned slot or a failed cluster, since no write
// here could serve it.
func (s *Server) redirectBlockedClients(rt *cluster.Routing) {
	for _, w := range s.blocking.All() {
		if len(w.Keys) == 0 {
			continue
		}
		slot := keySlot(w.Keys[0].key)
		c := w.Data.c
		ro := rt.Owner(slot) >= 0 && c.hasFlag(clientReadOnly) && c.cmd != nil && c.cmd.flags&flagWrite == 0
		out, msg, to := redirect.Blocked(rt, slot, ro)
		if out != redirect.Serve {
			w.RedirectWith(s.cluster.Reply(out, msg, slot, rt, to))
		}
	}
}
