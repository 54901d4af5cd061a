package grammar

import "math"

// RandCount parses the "count [WITHVALUES|WITHSCORES]" arguments of
// HRANDFIELD and ZRANDMEMBER (args is the whole command, args[2] the
// count; with names the option) with Redis's checks: a count that is not
// an integer, math.MinInt64 (it cannot be negated), another option, or,
// with the option, a count whose doubled reply length would overflow.
func RandCount(args [][]byte, with string) (count int64, withValues bool, err error) {
	l, err := Int(args[2])
	if err != nil {
		return 0, false, err
	}
	if l == math.MinInt64 {
		return 0, false, ErrRandRange
	}
	if len(args) > 4 || (len(args) == 4 && !eq(args[3], with)) {
		return 0, false, ErrSyntax
	}
	if len(args) == 4 {
		// The reply has two elements per field: the count must double safely.
		if l < -math.MaxInt64/2 || l > math.MaxInt64/2 {
			return 0, false, ErrOutOfRange
		}
		return l, true, nil
	}
	return l, false, nil
}

// SRandCount parses SRANDMEMBER's count: an integer other than
// math.MinInt64.
func SRandCount(b []byte) (int64, error) {
	l, err := Int(b)
	if err == nil && l == math.MinInt64 {
		return 0, ErrRandRange
	}
	return l, err
}
