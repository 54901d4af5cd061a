package keyspace

import "github.com/shardis/shardis/internal/node/value"

// Encoding returns the entry's OBJECT ENCODING: int, embstr or raw for a
// string (as Redis chooses them: an integer of at most 20 bytes, at most
// 44 bytes), the value's own encoding otherwise.
func (e *Entry) Encoding() string {
	if e.Obj == nil {
		if len(e.Str) <= 20 {
			if _, ok := value.ParseInt(e.Str); ok {
				return "int"
			}
		}
		if len(e.Str) <= 44 {
			return "embstr"
		}
		return "raw"
	}
	if tv, ok := e.Obj.(value.Value); ok {
		return tv.Encoding()
	}
	return "unknown"
}
