package node

import (
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
)

// Expiry on a replica, as Redis does it:
//   - a replica never deletes a key of its master's dataset because it
//     expired: lookups hide it and the master sends a DEL when it expires
//     the key itself;
//   - the master's own commands see such keys as alive (the master decides
//     when they die), so a DEL or a write from the master always reaches
//     the key (shard.masterAccess, set by setMasterAccess around each
//     command of the master link);
//   - keys given a TTL by local writes on a writable replica
//     (replica-read-only no) are the replica's own: it remembers them and
//     expires them itself (Redis's rememberSlaveKeyWithExpire and
//     expireSlaveKeys).

// setMasterAccess marks (or unmarks) the shards the running command of the
// master link holds, so lookups there see expired keys as alive. The
// command's shard locks are held, so the flag is never read concurrently.
func (c *Client) setMasterAccess(cmd *command, args [][]byte, on bool) {
	s := c.srv
	switch {
	case cmd.flags&flagLockAll != 0:
		for _, db := range s.dbs {
			for i := range db.Shards {
				db.Shards[i].SetMasterAccess(on)
			}
		}
	case cmd.flags&flagLockDB != 0:
		db := s.dbs[c.db]
		for i := range db.Shards {
			db.Shards[i].SetMasterAccess(on)
		}
	default:
		db := s.dbs[c.db]
		for _, p := range cmd.keyPositions(args) {
			if p < len(args) {
				db.KeyShard(string(args[p])).SetMasterAccess(on)
			}
		}
	}
}

// rememberLocalExpires records the command's keys that have a TTL after a
// local write on a replica, so the replica expires them itself. The
// command's shard locks are held.
func (c *Client) rememberLocalExpires(cmd *command, args [][]byte) {
	if cmd.flags&(flagLockAll|flagLockDB) != 0 {
		return
	}
	db := c.curDB()
	var keys []string
	for _, p := range cmd.keyPositions(args) {
		if p >= len(args) {
			continue
		}
		if e := db.GetEntry(string(args[p])); e != nil && e.Expire != 0 {
			keys = append(keys, e.Key)
		}
	}
	if len(keys) == 0 {
		return
	}
	c.srv.repl.localExp.Remember(c.db, keys)
}

// expireLocalKeys deletes the remembered local keys whose TTL passed and
// forgets those that no longer have one. It runs from the replication cron
// while this node is a replica.
func (r *replication) expireLocalKeys(now time.Time) {
	todo := r.localExp.Keys()
	ms := now.UnixMilli()
	s := r.srv
	for _, t := range todo {
		if t.DB >= len(s.dbs) {
			continue
		}
		db := s.dbs[t.DB]
		locks := lockShards(s, []keyspace.ShardRef{{DB: t.DB, Shard: keyspace.ShardOf(t.Key)}})
		e := db.GetEntry(t.Key)
		forget := e == nil || e.Expire == 0
		if e != nil && e.Expired(ms) {
			db.ExpireEntry(t.Key)
			forget = true
		}
		keyspace.UnlockShards(locks)
		if forget {
			r.localExp.Forget(t.DB, t.Key)
		}
	}
}
