package clusternode

import (
	"errors"
	"strconv"
	"time"
	"unsafe"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/persist"
	"github.com/shardis/shardis/internal/node/slotmig"
	"github.com/shardis/shardis/internal/rdb"
)

// MigHost is the node's part of slotmig.Host: the replication stream,
// the command execution on the target, the directives, and database 0
// with the DUMP settings a snapshot encodes with. The Mode adds the
// cluster machine's part (slotmig.Cluster) and the snapshot.
type MigHost interface {
	slotmig.Propagation
	slotmig.Applying
	// TrimSlots is slotmig.Dataset's.
	TrimSlots(slots []int) int
	// Settings is slotmig.Host's.
	Settings() slotmig.Settings
	// Dump returns database 0 and how DUMP encodes now (rdbcompression,
	// the RDB limits).
	Dump() Dump
}

// Dump is what SnapshotSlot reads and encodes with.
type Dump struct {
	DB       *keyspace.DB
	Compress bool
	Limits   rdb.Limits
}

// migHost is slotmig.Host: the node's MigHost and the Mode's machine.
type migHost struct {
	MigHost
	m *Mode
}

func (h migHost) Routing() *cluster.Routing { return h.m.route.Load() }

func (h migHost) ClaimSlots(slots []int) (uint64, error) {
	var epoch uint64
	var err error
	if !h.m.Do(func(m *cluster.Machine, now time.Time) { epoch, err = m.ClaimSlots(now, slots) }) {
		return 0, errors.New("slotmig: the cluster bus is closed")
	}
	return epoch, err
}

func (h migHost) YieldSlots(dest string, epoch uint64, slots []int) error {
	var err error
	h.m.Do(func(m *cluster.Machine, now time.Time) { err = m.YieldSlots(now, dest, epoch, slots) })
	return err
}

func (h migHost) ConfigEpoch() uint64 {
	var e uint64
	h.m.Do(func(m *cluster.Machine, _ time.Time) { e = m.Myself().ConfigEpoch })
	return e
}

// SnapshotSlot dumps slot's keys under the slot's shard lock, which every
// write to the slot holds while it applies and propagates itself: a
// string as SET key value [PXAT ms], any other type as RESTORE ... REPLACE
// ABSTTL. SET replaces a key of any type, as RESTORE REPLACE does, and a
// PXAT in the past leaves no key, as a past ABSTTL does.
func (h migHost) SnapshotSlot(slot int, b []byte, locked func(b []byte, keys int)) []byte {
	d := h.Dump()
	db := d.DB
	restore, replace, absttl := []byte("RESTORE"), []byte("REPLACE"), []byte("ABSTTL")
	sh := &db.Shards[keyspace.SlotShard(slot)]
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	set, pxat := []byte("SET"), []byte("PXAT")
	var ttl []byte
	n := 0
	db.ForEachInSlot(slot, func(e *keyspace.Entry) bool {
		key := unsafe.Slice(unsafe.StringData(e.Key), len(e.Key)) // appended, not kept
		if e.Obj == nil {
			// A string goes as SET, as an AOF rewrite writes it: no DUMP
			// to encode here and no payload to check and decode there.
			if e.Expire > 0 {
				ttl = strconv.AppendInt(ttl[:0], e.Expire, 10)
				b = persist.AppendCommand(b, set, key, e.Str, pxat, ttl)
			} else {
				b = persist.AppendCommand(b, set, key, e.Str)
			}
		} else {
			ttl = strconv.AppendInt(ttl[:0], max(e.Expire, 0), 10)
			b = persist.AppendCommand(b, restore, key, ttl, rdb.Dump(persist.EntryValue(e), d.Compress, d.Limits), replace, absttl)
		}
		n++
		return true
	})
	locked(b, n)
	return b
}

// AdmitWrite passes a write to slot through the write gate of the source
// task moving it, if any (slot < 0 or no gate: at once). It returns the
// function to call once the command has run, or, when the command waited
// for a pause and the slots changed owner meanwhile, the redirect to
// reply instead (redirect is the cluster slot check, run again after
// every wait); both are empty when the client went away (done) while it
// waited.
func (cm *Mode) AdmitWrite(slot int, done <-chan struct{}, redirect func() string) (exit func(), msg string) {
	g := cm.mig.Gate()
	if g == nil || !g.Covers(slot) {
		return nil, ""
	}
	for {
		if g.Released() {
			return nil, redirect()
		}
		if g.Enter() {
			return g.Exit, ""
		}
		select {
		case <-g.Wait():
		case <-done:
			return nil, ""
		}
		if msg := redirect(); msg != "" {
			return nil, msg
		}
		if g = cm.mig.Gate(); g == nil || !g.Covers(slot) {
			return nil, ""
		}
	}
}
