package persist

// DUMP and RESTORE payloads: a key's value in RDB encoding with the RDB
// version and a CRC64 (internal/rdb's Dump and Undump), converted from and
// to keyspace entries. RESTORE payloads are untrusted input: the decoder
// checks them (FuzzUndump in internal/rdb) and FillEntry refuses empty
// collections.

import (
	"errors"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
)

// ErrBadFormat is a RESTORE payload whose checksum is right but whose
// value does not decode (Redis's "Bad data format").
var ErrBadFormat = errors.New("persist: bad data format")

// EntryValue converts a live entry (its shard locked) to an rdb.Value;
// the value's slices alias the entry's and must be used under the lock.
func EntryValue(e *keyspace.Entry) *rdb.Value {
	se := keyspace.SnapEntry{Key: e.Key, Str: e.Str, Expire: e.Expire}
	if tv, ok := e.Obj.(value.Value); ok {
		se.Obj = tv
	}
	v := &rdb.Value{}
	ToRDBValue(&se, v)
	return v
}

// Dump is DUMP's payload of a live entry (its shard locked).
func Dump(e *keyspace.Entry, compress bool, lim Limits) []byte {
	return AppendDump(nil, e, compress, lim)
}

// AppendDump appends the DUMP payload of a live entry (its shard locked)
// to dst (rdb.AppendDump): MIGRATE dumps its keys into one buffer.
func AppendDump(dst []byte, e *keyspace.Entry, compress bool, lim Limits) []byte {
	se := keyspace.SnapEntry{Key: e.Key, Str: e.Str, Expire: e.Expire}
	if tv, ok := e.Obj.(value.Value); ok {
		se.Obj = tv
	}
	var v rdb.Value
	ToRDBValue(&se, &v)
	return rdb.AppendDump(dst, &v, compress, lim.RDB())
}

// Restore decodes a RESTORE payload into a new entry (no expiry, no LRU
// set). A payload whose version or checksum is wrong gives an error that
// is rdb.ErrBadPayload; one that does not decode, ErrBadFormat.
func Restore(payload []byte, lim Limits) (*keyspace.Entry, error) {
	return RestoreKeep(payload, lim, 0)
}

// RestoreKeep is Restore keeping a raw string of at least keep bytes in
// the payload's memory (rdb.UndumpKeep): the entry's value is then a
// subslice of payload, which the caller must own and leave alone.
func RestoreKeep(payload []byte, lim Limits, keep int) (*keyspace.Entry, error) {
	var v rdb.Value
	if err := rdb.UndumpKeepInto(payload, keep, &v); err != nil {
		if errors.Is(err, rdb.ErrBadPayload) {
			return nil, err
		}
		return nil, errors.Join(ErrBadFormat, err)
	}
	e := &keyspace.Entry{}
	if err := FillEntry(e, &v, lim); err != nil {
		return nil, errors.Join(ErrBadFormat, err)
	}
	return e, nil
}
