package clusternode

import (
	"time"
	"unsafe"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/redirect"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// SlotQuery is a redirect.Query fed from a command's arguments: the
// existence checks of keys of a migrating or importing slot read DB.
type SlotQuery struct {
	redirect.Query
	// DB is database 0.
	DB *keyspace.DB
	// Locked: the command's shard locks are held (the existence checks
	// then read the keyspace without locking).
	Locked bool
}

// Keys feeds the keys of one call, given the command's key positions:
// keys for movable keys, else the first/last/step range (last < 0 counts
// from the end; first 0: no keys). It does not allocate for a range and
// returns the error to reply at once, "" for none.
func (q *SlotQuery) Keys(args [][]byte, keys func([][]byte) []int, first, last, step int) string {
	if keys != nil {
		for _, p := range keys(args) {
			if p < len(args) {
				if msg := q.key(args[p]); msg != "" {
					return msg
				}
			}
		}
		return ""
	}
	if first == 0 {
		return ""
	}
	if last < 0 {
		last = len(args) + last
	}
	last = min(last, len(args)-1)
	for i := first; i <= last; i += max(step, 1) {
		if msg := q.key(args[i]); msg != "" {
			return msg
		}
	}
	return ""
}

// key is one key of the request, viewed without a copy.
func (q *SlotQuery) key(key []byte) string {
	k := unsafe.String(unsafe.SliceData(key), len(key))
	msg, check := q.Key(k)
	if check {
		q.Exists(KeyExists(q.DB, k, q.Locked))
	}
	return msg
}

// KeyExists reports whether key is in db, not expired, without touching
// it (LOOKUP_NOTOUCH|NOSTATS|NONOTIFY|NOEXPIRE); locked says the caller
// holds the key's shard lock.
func KeyExists(db *keyspace.DB, key string, locked bool) bool {
	sh := db.KeyShard(key)
	if !locked {
		sh.Mu.Lock()
		defer sh.Mu.Unlock()
	}
	e := db.GetEntry(key)
	return e != nil && !e.Expired(time.Now().UnixMilli())
}

// FirstKeySlot is the slot of a call's first key, -1 without keys (the
// key positions as for SlotQuery.Keys).
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
