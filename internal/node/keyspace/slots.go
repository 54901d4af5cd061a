package keyspace

// The per-slot key index. Cluster mode needs the number of keys of a hash
// slot (CLUSTER COUNTKEYSINSLOT), the keys of one slot (GETKEYSINSLOT) and
// a way to walk a slot's keys for slot migration, each in time
// proportional to the answer, not to the database. As Redis 7.0 does with
// two pointers of dictEntry metadata, every entry is linked into a doubly
// linked list of its slot's keys: insertion and removal are O(1), and the
// entries never move between lists (a rehash or resize moves chains, not
// entries; SWAPDB swaps the lists with the tables; FLUSHDB drops them).
// A slot's keys all live in one shard (the shard is slot mod NumShards),
// so the list heads are kept per shard, under the shard's lock.

// NumSlots is the number of Redis Cluster hash slots.
const NumSlots = numSlots

// slotsPerShard is how many hash slots one shard holds.
const slotsPerShard = numSlots / NumShards

// SlotShard returns the index of the shard holding the keys of slot.
func SlotShard(slot int) int { return slot & (NumShards - 1) }

// slotLink puts e at the head of slot's list. The shard is locked.
func (s *Shard) slotLink(e *Entry, slot int) {
	if s.slots == nil {
		s.slots = new([slotsPerShard]*Entry)
	}
	h := &s.slots[slot>>ShardBits]
	e.slotPrev, e.slotNext = nil, *h
	if *h != nil {
		(*h).slotPrev = e
	}
	*h = e
}

// slotUnlink takes e out of slot's list. The shard is locked.
func (s *Shard) slotUnlink(e *Entry, slot int) {
	if e.slotPrev != nil {
		e.slotPrev.slotNext = e.slotNext
	} else if s.slots != nil && s.slots[slot>>ShardBits] == e {
		s.slots[slot>>ShardBits] = e.slotNext
	}
	if e.slotNext != nil {
		e.slotNext.slotPrev = e.slotPrev
	}
	e.slotPrev, e.slotNext = nil, nil
}

// CountKeysInSlot returns the number of keys of slot (expired keys not
// yet removed included, as Redis counts them), in O(1) and without a lock.
func (db *DB) CountKeysInSlot(slot int) int {
	if slot < 0 || slot >= numSlots {
		return 0
	}
	return int(db.slotKeys[slot].Load())
}

// ForEachInSlot calls fn for the keys of slot, newest first, until fn
// returns false. fn may remove the entry it is given (slot migration
// deletes the keys it moved), nothing else. The slot's shard
// (Shards[SlotShard(slot)]) must be locked.
func (db *DB) ForEachInSlot(slot int, fn func(e *Entry) bool) {
	if slot < 0 || slot >= numSlots {
		return
	}
	s := &db.Shards[SlotShard(slot)]
	if s.slots == nil {
		return
	}
	for e := s.slots[slot>>ShardBits]; e != nil; {
		next := e.slotNext
		if !fn(e) {
			return
		}
		e = next
	}
}

// KeysInSlot returns up to count keys of slot (CLUSTER GETKEYSINSLOT), in
// O(count). It locks the slot's shard itself: the caller must not hold
// it.
func (db *DB) KeysInSlot(slot, count int) []string {
	if count <= 0 || slot < 0 || slot >= numSlots {
		return nil
	}
	s := &db.Shards[SlotShard(slot)]
	s.Mu.Lock()
	defer s.Mu.Unlock()
	keys := make([]string, 0, min(count, db.CountKeysInSlot(slot)))
	db.ForEachInSlot(slot, func(e *Entry) bool {
		keys = append(keys, e.Key)
		return len(keys) < count
	})
	return keys
}
