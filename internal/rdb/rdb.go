// Package rdb reads and writes Redis's RDB snapshot format as Redis 7.0
// writes it (RDB version 10), and the DUMP payload built on it.
//
// It is pure: no sockets, no files, no clock. The node turns its keyspace
// into Values and back. The encodings follow Redis's rdb.h/rdb.c,
// listpack.c, ziplist.c, intset.c, zipmap.c, lzf and crc64.c, written anew
// from their documented formats:
//
//   - lengths: 00xxxxxx (6 bits), 01xxxxxx xxxxxxxx (14 bits, big endian),
//     0x80 + 32-bit big endian, 0x81 + 64-bit big endian; 11xxxxxx marks a
//     special string encoding: int8, int16, int32 (little endian) or LZF.
//   - Writing uses the encodings Redis 7.0 writes itself: quicklist 2 with
//     listpack nodes for lists, listpack for small hashes and sorted sets,
//     intset for small integer sets, plain encodings otherwise.
//   - Reading accepts every encoding Redis 7.0 reads: also the old zipmap,
//     ziplist, quicklist 1 and plain list encodings, and streams of types 15
//     and 19 (stream.go; type 19 is written). Modules are refused with an
//     error naming the type.
package rdb

import (
	"errors"
	"fmt"
)

// Version is the RDB version written (Redis 7.0).
const Version = 10

// Object types (RDB_TYPE_*).
const (
	TypeString          = 0
	TypeList            = 1
	TypeSet             = 2
	TypeZSet            = 3
	TypeHash            = 4
	TypeZSet2           = 5
	TypeModule          = 6
	TypeModule2         = 7
	TypeHashZipmap      = 9
	TypeListZiplist     = 10
	TypeSetIntset       = 11
	TypeZSetZiplist     = 12
	TypeHashZiplist     = 13
	TypeListQuicklist   = 14
	TypeStreamListpacks = 15
	TypeHashListpack    = 16
	TypeZSetListpack    = 17
	TypeListQuicklist2  = 18
	TypeStreamListpack2 = 19
)

// Opcodes (RDB_OPCODE_*).
const (
	OpFunction2     = 245
	OpFunction      = 246
	OpModuleAux     = 247
	OpIdle          = 248
	OpFreq          = 249
	OpAux           = 250
	OpResizeDB      = 251
	OpExpireMs      = 252
	OpExpireSec     = 253
	OpSelectDB      = 254
	OpEOF           = 255
	quicklistPlain  = 1
	quicklistPacked = 2
)

// Kind is the logical type of a Value.
type Kind uint8

// Value kinds.
const (
	KindString Kind = iota
	KindList
	KindSet
	KindZSet
	KindHash
	KindStream
)

// ZMember is one sorted set member.
type ZMember struct {
	Member []byte
	Score  float64
}

// HashField is one hash field.
type HashField struct {
	Field, Value []byte
}

// Value is a decoded (or to be encoded) value. Exactly the field of its
// kind is used: Str for strings, Elems for lists and sets, ZSet, Hash,
// Stream.
type Value struct {
	Kind  Kind
	Str   []byte
	Elems [][]byte
	ZSet  []ZMember
	Hash  []HashField
	// Stream is a stream's content (KindStream).
	Stream *Stream
}

// Limits are the size thresholds deciding when small encodings are used
// (the node's *-max-listpack-* and set-max-intset-entries settings).
type Limits struct {
	HashEntries, HashValue int
	ZSetEntries, ZSetValue int
	SetIntsetEntries       int
	ListNodeBytes          int // target listpack size of a quicklist node
}

// DefaultLimits are Redis's defaults.
var DefaultLimits = Limits{HashEntries: 128, HashValue: 64, ZSetEntries: 128, ZSetValue: 64, SetIntsetEntries: 512, ListNodeBytes: 8192}

// ErrCorrupt is wrapped by every error about malformed input.
var ErrCorrupt = errors.New("rdb: corrupt data")

// UnsupportedTypeError is returned for values shardnode cannot hold
// (module types).
type UnsupportedTypeError struct{ Type byte }

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("rdb: unsupported value type %d (%s)", e.Type, TypeName(e.Type))
}

// TypeName names an RDB object type.
func TypeName(t byte) string {
	switch t {
	case TypeString:
		return "string"
	case TypeList, TypeListZiplist, TypeListQuicklist, TypeListQuicklist2:
		return "list"
	case TypeSet, TypeSetIntset:
		return "set"
	case TypeZSet, TypeZSet2, TypeZSetZiplist, TypeZSetListpack:
		return "zset"
	case TypeHash, TypeHashZipmap, TypeHashZiplist, TypeHashListpack:
		return "hash"
	case TypeModule, TypeModule2:
		return "module"
	case TypeStreamListpacks, TypeStreamListpack2:
		return "stream"
	}
	return "unknown"
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
