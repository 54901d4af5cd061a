package keyspace

import "errors"

// ErrWrongType is the error of an operation on a key that holds another
// type. Its text is Redis's WRONGTYPE reply, which a command writes as is.
var ErrWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")

// ValueAt returns the live entry at key and its value as a T: (zero, nil,
// nil) when the key is missing (or expired), ErrWrongType (with the
// entry) when it holds another type. Like Lookup, it deletes or hides an
// expired key and refreshes the LRU clock. The key's shard must be
// locked.
func ValueAt[T any](db *DB, key string, now int64) (v T, e *Entry, err error) {
	e = db.Lookup(key, now)
	if e == nil {
		return v, nil, nil
	}
	v, ok := e.Obj.(T)
	if !ok {
		return v, e, ErrWrongType
	}
	return v, e, nil
}
