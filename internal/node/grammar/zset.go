package grammar

import "github.com/shardis/shardis/internal/node/value"

// ZAdd parses ZADD's (and ZINCRBY's, incr=true) options from args[2:]:
// it returns the flags and the index of the first score; the score/member
// pairs are args[first:]. It checks the pairs' count and the options'
// combinations in Redis's order (the scores are parsed by Scores).
func ZAdd(args [][]byte, incr bool) (f value.ZAddFlags, first int, err error) {
	f.Incr = incr
	i := 2
options:
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "nx"):
			f.NX = true
		case eq(a, "xx"):
			f.XX = true
		case eq(a, "ch"):
			f.CH = true
		case eq(a, "incr"):
			f.Incr = true
		case eq(a, "gt"):
			f.GT = true
		case eq(a, "lt"):
			f.LT = true
		default:
			break options
		}
	}
	elems := len(args) - i
	if elems%2 != 0 || elems == 0 {
		return f, 0, ErrSyntax
	}
	if f.NX && f.XX {
		return f, 0, ErrZXXNX
	}
	if (f.GT && f.NX) || (f.LT && f.NX) || (f.GT && f.LT) {
		return f, 0, ErrZGTLTNX
	}
	if f.Incr && elems > 2 {
		return f, 0, ErrZIncrPairs
	}
	return f, i, nil
}

// Scores parses the scores of ZADD's score/member pairs into dst (one per
// pair, len(dst) == len(pairs)/2), failing with ErrNotFloat.
func Scores(dst []float64, pairs [][]byte) error {
	for j := range dst {
		f, ok := Score(pairs[2*j])
		if !ok {
			return ErrNotFloat
		}
		dst[j] = f
	}
	return nil
}

// RangeBy is what a ZRANGE-family range selects by.
type RangeBy int

// The kinds of ZRANGE ranges.
const (
	ByAuto  RangeBy = iota // ZRANGE/ZRANGESTORE: decided by BYSCORE/BYLEX, else by rank
	ByRank                 // indexes
	ByScore                // a ScoreRange
	ByLex                  // a LexRange
)

// Dir is a ZRANGE-family direction.
type Dir int

// The directions.
const (
	DirAuto    Dir = iota // ZRANGE/ZRANGESTORE: REV decides
	DirForward            // ascending
	DirReverse            // descending
)

// ZRange is a parsed ZRANGE, ZRANGESTORE or legacy Z[REV]RANGE[BYSCORE|
// BYLEX] request.
type ZRange struct {
	By         RangeBy          // ByRank, ByScore or ByLex (never ByAuto)
	Rev        bool             // descending
	WithScores bool             // WITHSCORES (never for ZRANGESTORE)
	Offset     int64            // LIMIT's offset (0 without LIMIT)
	Limit      int64            // LIMIT's count (-1: none)
	Start, End int64            // the indexes, for ByRank
	Score      value.ScoreRange // for ByScore
	Lex        value.LexRange   // for ByLex
}

// ParseZRange parses a ZRANGE-family request whose source key is
// args[keyIdx], followed by min, max and the options; store is
// ZRANGESTORE (no WITHSCORES); by and dir are fixed by the legacy
// commands and ByAuto/DirAuto for ZRANGE and ZRANGESTORE. The checks and
// errors follow Redis's zrangeGenericCommand, in its order.
func ParseZRange(args [][]byte, keyIdx int, store bool, by RangeBy, dir Dir) (ZRange, error) {
	r := ZRange{Limit: -1}
	minIdx, maxIdx := keyIdx+1, keyIdx+2
	for j := keyIdx + 3; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case !store && eq(a, "withscores"):
			r.WithScores = true
		case eq(a, "limit") && left >= 2:
			var err error
			if r.Offset, r.Limit, err = IntPair(args[j+1], args[j+2]); err != nil {
				return r, err
			}
			j += 2
		case dir == DirAuto && eq(a, "rev"):
			dir = DirReverse
		case by == ByAuto && eq(a, "bylex"):
			by = ByLex
		case by == ByAuto && eq(a, "byscore"):
			by = ByScore
		default:
			return r, ErrSyntax
		}
	}
	if by == ByAuto {
		by = ByRank
	}
	r.By, r.Rev = by, dir == DirReverse
	if r.Limit != -1 && by == ByRank {
		return r, ErrZLimitRank
	}
	if r.WithScores && by == ByLex {
		return r, ErrZWithScoreLex
	}
	if r.Rev && by != ByRank {
		minIdx, maxIdx = maxIdx, minIdx
	}
	var err error
	switch by {
	case ByRank:
		r.Start, r.End, err = IntPair(args[minIdx], args[maxIdx])
	case ByScore:
		r.Score, err = ScoreRange(args[minIdx], args[maxIdx])
	case ByLex:
		r.Lex, err = LexRange(args[minIdx], args[maxIdx])
	}
	return r, err
}

// Each calls fn for the members of z that r selects, in the reply's
// order, until fn returns false.
func (r *ZRange) Each(z *value.ZSet, fn func(member string, score float64) bool) {
	var lo, hi int
	switch r.By {
	case ByRank:
		z.RangeRank(r.Start, r.End, r.Rev, fn)
		return
	case ByScore:
		lo, hi = r.Score.Bounds(z)
	default:
		lo, hi = r.Lex.Bounds(z)
	}
	z.RangeWindow(lo, hi, r.Offset, r.Limit, r.Rev, fn)
}

// ZOp is a sorted-set algebra command.
type ZOp int

// The operations.
const (
	ZOpUnion ZOp = iota // ZUNION, ZUNIONSTORE
	ZOpInter            // ZINTER, ZINTERSTORE, ZINTERCARD
	ZOpDiff             // ZDIFF, ZDIFFSTORE
)

// ZOpOptions are the options after the keys of ZUNION, ZINTER, ZDIFF,
// ZINTERCARD and the STORE forms.
type ZOpOptions struct {
	Aggregate  value.Aggregate // AGGREGATE, SUM by default
	WithScores bool            // WITHSCORES (not for the STORE forms)
	Limit      int64           // ZINTERCARD's LIMIT, 0 for none
}

// ParseZOpOptions parses the options of a sorted-set algebra command
// (opts, after its keys), storing WEIGHTS into srcs (one per key); store
// is a STORE form, card ZINTERCARD. It follows Redis's
// zunionInterDiffGenericCommand: WEIGHTS and AGGREGATE only for unions
// and intersections, WITHSCORES only without a destination, LIMIT only
// for ZINTERCARD.
func ParseZOpOptions(opts [][]byte, srcs []value.ZSource, op ZOp, store, card bool) (ZOpOptions, error) {
	var o ZOpOptions
	for j := 0; j < len(opts); {
		remaining := len(opts) - j
		a := opts[j]
		switch {
		case op != ZOpDiff && !card && remaining >= len(srcs)+1 && eq(a, "weights"):
			j++
			for i := range srcs {
				f, ok := value.ParseFloat(opts[j])
				if !ok {
					return o, ErrZWeightFloat
				}
				srcs[i].Weight = f
				j++
			}
		case op != ZOpDiff && !card && remaining >= 2 && eq(a, "aggregate"):
			switch {
			case eq(opts[j+1], "sum"):
				o.Aggregate = value.AggregateSum
			case eq(opts[j+1], "min"):
				o.Aggregate = value.AggregateMin
			case eq(opts[j+1], "max"):
				o.Aggregate = value.AggregateMax
			default:
				return o, ErrSyntax
			}
			j += 2
		case !store && !card && eq(a, "withscores"):
			o.WithScores = true
			j++
		case card && remaining >= 2 && eq(a, "limit"):
			n, err := Limit(opts[j+1])
			if err != nil {
				return o, err
			}
			o.Limit = n
			j += 2
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}
