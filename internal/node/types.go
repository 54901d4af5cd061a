package node

// Value types. A string key keeps its bytes in entry.str; every other type
// is an object in entry.obj implementing typedValue. Each type lives in its
// own types_<name>.go file with its compact small encoding and its large
// one, and offers the methods persistence and replication use to walk and
// rebuild values (see each type's doc):
//
//	*hashValue:  newHash(), Len, Get, Set, Delete, ForEach(func(field string, val []byte) bool)
//	*listValue:  newList(), Len, PushBack, PushFront, ForEach(func(v []byte) bool)
//	*setValue:   newSet(), Len, Add, Has, Remove, ForEach(func(member string) bool)
//	*zsetValue:  newZSet(), Len, Add(member, score), Score, ForEach(func(member string, score float64) bool) in order
type typedValue interface {
	// typeName is what TYPE answers: "hash", "list", "set", "zset".
	typeName() string
	// encoding is what OBJECT ENCODING answers.
	encoding() string
	// clone returns a deep copy (COPY).
	clone() typedValue
	// memUsage estimates the bytes the value uses (MEMORY USAGE).
	memUsage() int64
	// length is the number of elements; a value whose length drops to 0
	// is removed from the keyspace by the command that emptied it.
	length() int
}

// typeOf returns the TYPE of an entry.
func typeOf(e *entry) string {
	if e.obj == nil {
		return "string"
	}
	if tv, ok := e.obj.(typedValue); ok {
		return tv.typeName()
	}
	return "none"
}

// encodingOf returns the OBJECT ENCODING of an entry.
func encodingOf(e *entry) string {
	if e.obj == nil {
		if len(e.str) <= 20 {
			if _, ok := parseInt(e.str); ok {
				return "int"
			}
		}
		if len(e.str) <= 44 {
			return "embstr"
		}
		return "raw"
	}
	if tv, ok := e.obj.(typedValue); ok {
		return tv.encoding()
	}
	return "unknown"
}
