package keyspace

import (
	"bytes"
	"unsafe"
)

// A new small string key is allocated as one object: its entry followed by
// the key's and the value's bytes. Same size class as the three separate
// allocations it replaces for 16-byte keys and values (96+16+16 -> 128),
// but one object for the GC instead of three, and a lookup that finds the
// entry finds its key and value on the adjacent cache line instead of two
// more random memory accesses.
type (
	entryInline16 struct {
		e Entry
		b [16]byte
	}
	entryInline32 struct {
		e Entry
		b [32]byte
	}
	entryInline48 struct {
		e Entry
		b [48]byte
	}
	entryInline64 struct {
		e Entry
		b [64]byte
	}
)

// newStringEntry returns an entry holding copies of key and val. The value
// slice's capacity is its length, so growing it (APPEND) reallocates and
// never writes past the entry's bytes; writing within it (SETRANGE, a SET
// of the same length) stays in place as with a separate slice.
func newStringEntry(key, val []byte) *Entry {
	n := len(key) + len(val)
	var e *Entry
	var b []byte
	switch {
	case n <= 16:
		p := new(entryInline16)
		e, b = &p.e, p.b[:]
	case n <= 32:
		p := new(entryInline32)
		e, b = &p.e, p.b[:]
	case n <= 48:
		p := new(entryInline48)
		e, b = &p.e, p.b[:]
	case n <= 64:
		p := new(entryInline64)
		e, b = &p.e, p.b[:]
	default:
		return &Entry{Key: string(key), Str: bytes.Clone(val)}
	}
	copy(b, key)
	copy(b[len(key):], val)
	e.Key = unsafe.String(&b[0], len(key))
	e.Str = b[len(key):n:n]
	return e
}

// AddString adds key (which must not exist) with a copy of val and
// returns its entry, or nil if the key exists (an expired key a replica
// keeps): the caller then replaces it. The key's shard must be locked.
func (db *DB) AddString(key, val []byte, expire int64) *Entry {
	if db.GetEntry(bstr(key)) != nil {
		return nil
	}
	e := newStringEntry(key, val)
	e.Expire = expire
	db.Add(e.Key, e)
	return e
}
