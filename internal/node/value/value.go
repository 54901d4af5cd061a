// Package value holds the encodings of Redis's collection values: hashes,
// lists, sets and sorted sets, each with its compact small encoding
// (listpack, intset) and its large one (hashtable, quicklist, skiplist),
// converting at the thresholds Redis uses (HashLimits, ZSetLimits and the
// intset limit are passed in by the caller, which reads them from its
// configuration). It is pure code: no keyspace, no server, no I/O, no
// clock; randomness for HRANDFIELD/SRANDMEMBER/SPOP comes from math/rand.
// A value is not safe for concurrent use: the keyspace's shard lock
// guards it.
package value

// Value is a non-string value of a key: *Hash, *List, *Set or *ZSet (a
// string key keeps its bytes in the keyspace entry itself). Each type lives
// in its own <name>.go file and offers the methods persistence and
// replication use to walk and rebuild values (see each type's doc):
//
//	*Hash:  NewHash(), Len, Get, Set, Delete, ForEach(func(field string, val []byte) bool)
//	*List:  NewList(), Len, PushBack, PushFront, ForEach(func(v []byte) bool)
//	*Set:   NewSet(), Len, Add, Has, Remove, ForEach(func(member string) bool)
//	*ZSet:  NewZSet(), Len, Add(member, score), Score, ForEach(func(member string, score float64) bool) in order
//
// The stream type (internal/node/stream) implements it too.
type Value interface {
	// TypeName is what TYPE answers: "hash", "list", "set", "zset".
	TypeName() string
	// Encoding is what OBJECT ENCODING answers.
	Encoding() string
	// Clone returns a deep copy (COPY).
	Clone() Value
	// MemUsage estimates the bytes the value uses (MEMORY USAGE).
	MemUsage() int64
	// Length is the number of elements; a value whose length drops to 0
	// is removed from the keyspace by the command that emptied it.
	Length() int
}
