package grammar

import (
	"math"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/value"
)

// Scores and score/lex range specs of the sorted-set commands.

// strtod parses a float the way Redis's range parser (zslParseRange's
// strtod with a full match of the C string) accepts it: leading spaces
// allowed, NaN refused, the empty string is 0, an overflow is ±inf, an
// underflow 0, and a NUL byte ends the text.
func strtod(s string) (float64, bool) {
	// zslParseRange hands strtod the argument as a C string: it ends at
	// the first NUL byte. strtod takes no digit separators.
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if strings.IndexByte(s, '_') >= 0 {
		return 0, false
	}
	if s == "" {
		return 0, true
	}
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(cHexFloat(s), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// cHexFloat adapts a C hexadecimal float ("0x10", whose binary exponent is
// optional for strtod) to Go's syntax, which requires the exponent.
func cHexFloat(s string) string {
	t := strings.TrimLeft(s, "+-")
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') && !strings.ContainsAny(t, "pP_") {
		return s + "p0"
	}
	return s
}

// Score parses a score argument (ZADD, ZINCRBY) as Redis's string2d
// (strtod) does, hexadecimal floats included; short integers, the common
// case, take a fast path that allocates nothing.
func Score(b []byte) (float64, bool) {
	if f, ok := smallInt(b); ok {
		return f, true
	}
	return value.ParseFloat(b)
}

// smallInt parses an optionally negative decimal integer of at most 15
// digits (redis-benchmark's scores), which a float64 holds exactly, as
// strtod would ("-0" is -0); anything else is left to the float parser.
func smallInt(b []byte) (float64, bool) {
	d := b
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 {
		return 0, false
	}
	var v int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	f := float64(v)
	if len(d) < len(b) {
		f = -f
	}
	return f, true
}

func scoreBound(b []byte) (float64, bool, bool) {
	if len(b) > 0 && b[0] == '(' {
		f, ok := strtod(string(b[1:]))
		return f, true, ok
	}
	f, ok := strtod(string(b))
	return f, false, ok
}

// ScoreRange parses "min max" of ZRANGEBYSCORE, ZCOUNT and
// ZREMRANGEBYSCORE: floats (inf, -inf, hexadecimal), each optionally
// after "(" to exclude it; it fails with ErrZMinMaxFloat.
func ScoreRange(min, max []byte) (r value.ScoreRange, err error) {
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = scoreBound(min)
	r.Max, r.MaxEx, ok2 = scoreBound(max)
	if !ok1 || !ok2 {
		return r, ErrZMinMaxFloat
	}
	return r, nil
}

func lexBound(b []byte) (value.LexBound, bool) {
	if len(b) == 0 {
		return value.LexBound{}, false
	}
	switch b[0] {
	case '+':
		return value.LexBound{Inf: 1}, len(b) == 1
	case '-':
		return value.LexBound{Inf: -1}, len(b) == 1
	case '(':
		return value.LexBound{S: string(b[1:]), Ex: true}, true
	case '[':
		return value.LexBound{S: string(b[1:])}, true
	}
	return value.LexBound{}, false
}

// LexRange parses "min max" of ZRANGEBYLEX, ZLEXCOUNT and
// ZREMRANGEBYLEX: "-", "+", "(member" or "[member"; it fails with
// ErrZMinMaxLex.
func LexRange(min, max []byte) (r value.LexRange, err error) {
	var ok1, ok2 bool
	r.Min, ok1 = lexBound(min)
	r.Max, ok2 = lexBound(max)
	if !ok1 || !ok2 {
		return r, ErrZMinMaxLex
	}
	return r, nil
}

// Span parses the "min max" (or "start stop") of ZCOUNT, ZLEXCOUNT and
// ZREMRANGEBYRANK|SCORE|LEX as a range by rank, score or member.
func Span(by RangeBy, min, max []byte) (value.Span, error) {
	switch by {
	case ByRank:
		start, end, err := IntPair(min, max)
		return value.RankRange{Start: start, End: end}, err
	case ByScore:
		return ScoreRange(min, max)
	}
	return LexRange(min, max)
}
