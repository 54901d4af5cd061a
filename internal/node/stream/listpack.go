package stream

import (
	"math"
	"strconv"

	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
)

// Listpack sizes, as Redis's listpack.c encodes elements: a node's byte
// count decides when XADD starts a new node, so it must be exact.

const (
	lpHeaderSize = 6 // total bytes (4) + element count (2)
	lpEndSize    = 1 // 0xff terminator
)

// intEncSize is the encoded size (without back-length) of an integer.
func intEncSize(v int64) int {
	switch {
	case v >= 0 && v <= 127:
		return 1
	case v >= -4096 && v <= 4095:
		return 2
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return 3
	case v >= -(1<<23) && v < 1<<23:
		return 4
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return 5
	}
	return 9
}

// lpIntSize is the listpack size of an integer element.
func lpIntSize(v int64) int {
	n := intEncSize(v)
	return n + rdb.ListpackBacklenSize(n)
}

// lpStrSize is the listpack size of a string element (integer-encoded when
// it is the canonical form of an int64, as lpAppend does).
func lpStrSize(s []byte) int {
	// lpStringToInt64 takes the canonical decimal form only; what cannot
	// be one is refused here without ParseInt's error allocation.
	if mayBeInt(s) {
		if v, ok := value.ParseInt(s); ok {
			return lpIntSize(v)
		}
	}
	l := len(s)
	var n int
	switch {
	case l < 64:
		n = 1 + l
	case l < 4096:
		n = 2 + l
	default:
		n = 5 + l
	}
	return n + rdb.ListpackBacklenSize(n)
}

// mayBeInt reports whether s has the shape of an integer: 1 to 20
// bytes, digits after an optional leading '-'.
func mayBeInt(s []byte) bool {
	if len(s) == 0 || len(s) > 20 {
		return false
	}
	for i, c := range s {
		if (c < '0' || c > '9') && (i > 0 || c != '-') {
			return false
		}
	}
	return true
}

// itoa formats an integer element.
func itoa(v int64) []byte { return strconv.AppendInt(nil, v, 10) }
