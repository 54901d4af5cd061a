package node

import (
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/script"
)

// Cluster redirection errors, Redis 7.0's texts (clusterRedirectClient).
const (
	errCrossSlot          = "CROSSSLOT Keys in request don't hash to the same slot"
	errTryAgain           = "TRYAGAIN Multiple keys request during rehashing of slot"
	errClusterDown        = "CLUSTERDOWN The cluster is down"
	errClusterDownRO      = "CLUSTERDOWN The cluster is down and only accepts read commands"
	errClusterDownUnbound = "CLUSTERDOWN Hash slot not served"
)

// Client flags of cluster mode (after conn.go's).
const (
	// clientAsking: ASKING was sent; cleared after the next command
	// outside MULTI.
	clientAsking = clientPubSub << (1 + iota)
	// clientReadOnly: READONLY was sent (reads of the master's slots
	// are served on a replica).
	clientReadOnly
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
	q := slotQuery{c: c, rt: rt, owner: -1, shardPubSub: isShardPubSub(cmd), locked: locked}
	if !locked {
		defer func() { c.slotRoute, c.slotRecheck = rt, q.migrating || q.importing }()
	}
	isExec := cmd.fullName() == "exec"
	isWrite := cmd.flags&flagWrite != 0 || c.scriptWrites(cmd, args)
	if isExec {
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
	slot, owner, shardPubSub := q.slot, q.owner, q.shardPubSub
	migrating, importing := q.migrating, q.importing
	missingKeys, existingKeys, multipleKeys := q.missingKeys, q.existingKeys, q.multipleKeys
	if !q.haveKeys {
		return ""
	}
	if rt.State != cluster.ClusterOK {
		switch {
		case shardPubSub:
			if !c.srv.cfg.Bool(DirClusterAllowPubsubshardWhenDown) {
				return errClusterDown
			}
		case !c.srv.cfg.Bool(DirClusterAllowReadsWhenDown):
			return errClusterDown
		case isWrite:
			return errClusterDownRO
		}
	}
	if (migrating || importing) && cmd.name == "migrate" {
		return ""
	}
	if migrating && missingKeys > 0 {
		if existingKeys > 0 {
			return errTryAgain
		}
		return cm.redirect("ASK", slot, rt, rt.Migrating[slot])
	}
	if importing && (c.hasFlag(clientAsking) || cmd.name == "restore-asking") {
		if multipleKeys && missingKeys > 0 {
			return errTryAgain
		}
		return ""
	}
	if (c.hasFlag(clientReadOnly) || shardPubSub) && !isWrite && rt.MyMaster >= 0 && rt.MyMaster == owner {
		return ""
	}
	if owner != rt.Me {
		return cm.redirect("MOVED", slot, rt, owner)
	}
	return ""
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

// slotQuery accumulates what getNodeByQuery learns from a command's keys.
type slotQuery struct {
	c                         *Client
	rt                        *cluster.Routing
	firstKey                  []byte
	slot                      int
	owner                     int32
	haveKeys, multipleKeys    bool
	migrating, importing      bool
	shardPubSub               bool
	missingKeys, existingKeys int
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
	ks := keySlot(bstr(key))
	rt := q.rt
	if !q.haveKeys {
		q.haveKeys, q.firstKey, q.slot = true, key, ks
		q.owner = rt.Owner[ks]
		if q.owner < 0 {
			return errClusterDownUnbound
		}
		if q.owner == rt.Me && rt.Migrating[ks] >= 0 {
			q.migrating = true
		} else if rt.Importing[ks] >= 0 {
			q.importing = true
		}
	} else if string(key) != string(q.firstKey) {
		if ks != q.slot {
			return errCrossSlot
		}
		q.multipleKeys = true
	}
	if (q.migrating || q.importing) && !q.shardPubSub {
		if q.c.srv.keyExistsDB0(bstr(key), q.locked) {
			q.existingKeys++
		} else {
			q.missingKeys++
		}
	}
	return ""
}

// redirect renders "-MOVED slot endpoint:port" or ASK with the endpoint
// cluster-preferred-endpoint-type asks for (Redis's getPreferredEndpoint).
func (cm *clusterMode) redirect(kind string, slot int, rt *cluster.Routing, to int32) string {
	n := rt.Nodes[to]
	return kind + " " + strconv.Itoa(slot) + " " + cm.endpoint(n) + ":" + strconv.Itoa(n.Port)
}

// endpoint is Redis's getPreferredEndpoint: the IP; the hostname, or "?"
// for a node without one; or "" for unknown-endpoint (the client is to
// use the address it sent the command to).
func (cm *clusterMode) endpoint(n cluster.RouteNode) string {
	switch cm.srv.cfg.Get(DirClusterPreferredEndpointType) {
	case "hostname":
		if n.Hostname != "" {
			return n.Hostname
		}
		return "?"
	case "unknown-endpoint":
		return "" // Redis 7.0: "-MOVED 3999 :6381"
	}
	return n.IP
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
		msg := ""
		slot := keySlot(w.Keys[0].key)
		owner := rt.Owner[slot]
		if c := w.Data.c; owner >= 0 && c.hasFlag(clientReadOnly) && c.cmd != nil && c.cmd.flags&flagWrite == 0 && rt.MyMaster >= 0 && rt.MyMaster == owner {
			owner = rt.Me
		}
		switch {
		case rt.State != cluster.ClusterOK:
			msg = errClusterDown
		case owner == rt.Me || rt.Importing[slot] >= 0:
			continue
		case owner < 0:
			msg = errClusterDownUnbound
		default:
			msg = s.cluster.redirect("MOVED", slot, rt, owner)
		}
		w.RedirectWith(msg)
	}
}
