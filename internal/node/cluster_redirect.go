package node

import (
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/redirect"
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
	rt := cm.route.Load()
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
			qc := c.srv.table.lookup(mq[0])
			if qc == nil {
				continue
			}
			if qc.subs != nil && len(mq) >= 2 {
				if sub := qc.subs[lowerASCII(mq[1])]; sub != nil {
					qc = sub
				}
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
			r.AllowPubsubShardWhenDown = c.srv.cfg.Bool(DirClusterAllowPubsubshardWhenDown)
		} else {
			r.AllowReadsWhenDown = c.srv.cfg.Bool(DirClusterAllowReadsWhenDown)
		}
	}
	switch out, msg, to := q.Decide(r); out {
	case redirect.Serve:
		return ""
	case redirect.Refuse:
		return msg
	default:
		return cm.reply(out, msg, q.Slot, rt, to)
	}
}

// scriptWrites reports whether an EVAL or EVALSHA runs a script that
// declared flags without no-writes: Redis's evalGetCommandFlags then
// gives the command the write flag, so a replica redirects it with MOVED
// even after READONLY.
func (c *Client) scriptWrites(cmd *command, args [][]byte) bool {
	if len(args) < 2 || (cmd.name != "eval" && cmd.name != "evalsha") {
		return false
	}
	var flags script.Flags
	if cmd.name == "eval" {
		f, _, err := script.ParseShebang(args[1])
		if err != nil {
			return false
		}
		flags = f
	} else if sc := c.srv.scriptEngine().Lookup(string(args[1])); sc != nil {
		flags = sc.Flags
	} else {
		return false
	}
	return flags&script.FlagEvalCompat == 0 && flags&script.FlagNoWrites == 0
}

// slotQuery is a redirect.Query fed from a command's arguments.
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
		q.Exists(q.c.srv.keyExistsDB0(bstr(key), q.locked))
	}
	return msg
}

// reply renders a redirect outcome: "" to serve, else the error text.
func (cm *clusterMode) reply(out redirect.Outcome, msg string, slot int, rt *cluster.Routing, to int32) string {
	switch out {
	case redirect.Moved:
		return cm.redirect("MOVED", slot, rt, to)
	case redirect.Ask:
		return cm.redirect("ASK", slot, rt, to)
	}
	return msg
}

// redirect renders "MOVED slot endpoint:port" or ASK (kind) with the
// endpoint cluster-preferred-endpoint-type asks for.
func (cm *clusterMode) redirect(kind string, slot int, rt *cluster.Routing, to int32) string {
	return redirect.Message(kind, slot, rt, to, cm.srv.cfg.Get(DirClusterPreferredEndpointType))
}

// keyExistsDB0 reports whether key is in database 0, not expired, without
// touching it (LOOKUP_NOTOUCH|NOSTATS|NONOTIFY|NOEXPIRE); locked says the
// caller holds the key's shard lock.
func (s *Server) keyExistsDB0(key string, locked bool) bool {
	db := s.dbs[0]
	sh := db.KeyShard(key)
	if !locked {
		sh.Mu.Lock()
		defer sh.Mu.Unlock()
	}
	e := db.GetEntry(key)
	return e != nil && !e.Expired(time.Now().UnixMilli())
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
		ro := rt.Owner[slot] >= 0 && c.hasFlag(clientReadOnly) && c.cmd != nil && c.cmd.flags&flagWrite == 0
		out, msg, to := redirect.Blocked(rt, slot, ro)
		if out != redirect.Serve {
			w.RedirectWith(s.cluster.reply(out, msg, slot, rt, to))
		}
	}
}
