package clusternode

import (
	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/redirect"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// KeyExists reports whether key is in db, not expired, without touching
// it (LOOKUP_NOTOUCH|NOSTATS|NONOTIFY|NOEXPIRE) at nowMs, the command's
// time (Unix ms); locked says the caller holds the key's shard lock.
func KeyExists(db *keyspace.DB, key string, locked bool, nowMs int64) bool {
	sh := db.KeyShard(key)
	if !locked {
		sh.Mu.Lock()
		defer sh.Mu.Unlock()
	}
	e := db.GetEntry(key)
	return e != nil && !e.Expired(nowMs)
}

// FirstKeySlot is the slot of a call's first key, -1 without keys (the
// key positions: keys for movable keys, else first, 0 for none).
func FirstKeySlot(args [][]byte, keys func([][]byte) []int, first int) int {
	if keys != nil {
		for _, p := range keys(args) {
			if p < len(args) {
				return consistent.KeySlot(string(args[p]))
			}
		}
		return -1
	}
	if first <= 0 || first >= len(args) {
		return -1
	}
	return consistent.KeySlot(string(args[first]))
}

// Reply renders a redirect outcome for slot under rt: the error text
// ("" for Serve), MOVED and ASK to node to with the endpoint
// cluster-preferred-endpoint-type asks for.
func (cm *Mode) Reply(out redirect.Outcome, msg string, slot int, rt *cluster.Routing, to int32) string {
	switch out {
	case redirect.Moved:
		return redirect.Message("MOVED", slot, rt, to, cm.h.EndpointType())
	case redirect.Ask:
		return redirect.Message("ASK", slot, rt, to, cm.h.EndpointType())
	}
	return msg
}
