// Package grammar parses the arguments of the collection commands (lists,
// hashes, sets, sorted sets) into small typed structs, with Redis 7.0's
// checks, in Redis's order, and its exact error texts as values: a parser
// returns an Error whose text the caller replies with as it is.
//
// It is pure code over the raw argument bytes: no keyspace, no client, no
// I/O. The handlers in internal/node look up the key, call a parser here
// and an algorithm in internal/node/value, and write the reply. Parsers
// that run on hot paths (ZADD) allocate nothing.
package grammar

import (
	"strings"

	"github.com/shardis/shardis/internal/node/value"
)

// Error is a parse failure; its text is Redis's reply, word for word.
type Error string

// Error returns the reply text.
func (e Error) Error() string { return string(e) }

// The error replies of the collection commands.
const (
	ErrSyntax        Error = "ERR syntax error"
	ErrNotInt        Error = "ERR value is not an integer or out of range"
	ErrNotFloat      Error = "ERR value is not a valid float"
	ErrPositive      Error = "ERR value is out of range, must be positive"
	ErrOutOfRange    Error = "ERR value is out of range"
	ErrRandRange     Error = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
	ErrNumKeys       Error = "ERR numkeys should be greater than 0"
	ErrCount         Error = "ERR count should be greater than 0"
	ErrLimitNeg      Error = "ERR LIMIT can't be negative"
	ErrNumKeysArgs   Error = "ERR Number of keys can't be greater than number of args"
	ErrInvalidCursor Error = "ERR invalid cursor"

	ErrZMinMaxFloat  Error = "ERR min or max is not a float"
	ErrZMinMaxLex    Error = "ERR min or max not valid string range item"
	ErrZWeightFloat  Error = "ERR weight value is not a float"
	ErrZLimitRank    Error = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	ErrZWithScoreLex Error = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	ErrZXXNX         Error = "ERR XX and NX options at the same time are not compatible"
	ErrZGTLTNX       Error = "ERR GT, LT, and/or NX options at the same time are not compatible"
	ErrZIncrPairs    Error = "ERR INCR option supports a single increment-element pair"

	ErrLPosRank   Error = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	ErrLPosCount  Error = "ERR COUNT can't be negative"
	ErrLPosMaxLen Error = "ERR MAXLEN can't be negative"
)

// eq reports whether a is the option name s, ignoring case.
func eq(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// Int parses an integer argument (Redis's string2ll), failing with
// ErrNotInt.
func Int(b []byte) (int64, error) {
	n, ok := value.ParseInt(b)
	if !ok {
		return 0, ErrNotInt
	}
	return n, nil
}

// IntPair parses two integer arguments (start and stop), failing with
// ErrNotInt.
func IntPair(a, b []byte) (x, y int64, err error) {
	if x, err = Int(a); err == nil {
		y, err = Int(b)
	}
	return x, y, err
}

// Positive parses the count of LPOP/RPOP/SPOP: an integer of at least 0,
// failing with ErrPositive.
func Positive(b []byte) (int64, error) { return nonNegative(b, ErrPositive) }

// nonNegative parses an integer of at least 0, failing with e.
func nonNegative(b []byte, e Error) (int64, error) {
	n, ok := value.ParseInt(b)
	if !ok || n < 0 {
		return 0, e
	}
	return n, nil
}

// OneOf parses an argument that must be one of two words (LEFT|RIGHT,
// MIN|MAX, BEFORE|AFTER), ignoring case: it reports whether it is the
// second, failing with ErrSyntax.
func OneOf(b []byte, first, second string) (isSecond bool, err error) {
	switch {
	case eq(b, first):
		return false, nil
	case eq(b, second):
		return true, nil
	}
	return false, ErrSyntax
}
