package clusternode

import (
	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// KeysInSlot lists up to count keys (count < 0: all) of db in slot,
// newest first as Redis's slot-to-keys list, from the keyspace's per-slot
// index (O(keys listed)).
func KeysInSlot(db *keyspace.DB, slot, count int) []string {
	if count < 0 {
		count = db.CountKeysInSlot(slot)
	}
	return db.KeysInSlot(slot, count)
}

// DeleteSlot deletes every key of db in slot, as Redis's delKeysInSlot
// (not propagated: every node of the shard does it), each under its
// shard lock; touched is called for each key once its lock is released
// (WATCH). It returns the number of keys deleted.
func DeleteSlot(db *keyspace.DB, slot int, touched func(key string)) int {
	n := 0
	for _, k := range KeysInSlot(db, slot, -1) {
		sh := db.KeyShard(k)
		sh.Mu.Lock()
		if db.Remove(k) != nil {
			n++
		}
		sh.Mu.Unlock()
		touched(k)
	}
	return n
}

// TrimSlots deletes every key of db in slots: per slot, under the slot's
// shard lock, the keys go and propagate receives one DEL of those deleted
// (one AOF write and fsync, not one per key), so replicas and a restart
// drop them too; touched is called with the slot's keys once the lock is
// released. It returns the number of keys deleted.
func TrimSlots(db *keyspace.DB, slots []int, propagate func(del [][]byte), touched func(keys []string)) int {
	n := 0
	for _, slot := range slots {
		if db.CountKeysInSlot(slot) == 0 {
			continue
		}
		sh := &db.Shards[keyspace.SlotShard(slot)]
		sh.Mu.Lock()
		var keys []string
		db.ForEachInSlot(slot, func(e *keyspace.Entry) bool {
			keys = append(keys, e.Key)
			return true
		})
		del := [][]byte{[]byte("DEL")}
		for _, k := range keys {
			if db.Remove(k) != nil {
				n++
				del = append(del, []byte(k))
			}
		}
		if len(del) > 1 {
			propagate(del)
		}
		sh.Mu.Unlock()
		touched(keys)
	}
	return n
}

// InSlots returns whether a key or shard channel hashes to one of slots.
func InSlots(slots []int) func(name string) bool {
	in := make(map[int]bool, len(slots))
	for _, slot := range slots {
		in[slot] = true
	}
	return func(name string) bool { return in[consistent.KeySlot(name)] }
}
