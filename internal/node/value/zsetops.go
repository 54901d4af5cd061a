package value

import (
	"math"
	"sort"
)

// The set algebra of ZUNION, ZINTER, ZDIFF, ZINTERCARD and their STORE
// forms, as pure functions over sorted sets and sets.

// Aggregate is how ZUNION and ZINTER combine the scores of one member.
type Aggregate int

// The AGGREGATE options.
const (
	AggregateSum Aggregate = iota // SUM (the default)
	AggregateMin                  // MIN
	AggregateMax                  // MAX
)

// apply folds v into *target, as Redis's zunionInterAggregate does: a sum
// that makes NaN (inf + -inf) is 0.
func (a Aggregate) apply(target *float64, v float64) {
	switch a {
	case AggregateSum:
		*target += v
		if math.IsNaN(*target) {
			*target = 0
		}
	case AggregateMin:
		if v < *target {
			*target = v
		}
	case AggregateMax:
		if v > *target {
			*target = v
		}
	}
}

// ZSource is one input of the sorted-set algebra: a sorted set, a set
// (whose members score 1), or neither (a missing key, empty), with its
// WEIGHTS factor.
type ZSource struct {
	ZSet   *ZSet   // the sorted set, or nil
	Set    *Set    // the set, or nil
	Weight float64 // the WEIGHTS factor (1 by default)
}

// Len is the number of members.
func (s *ZSource) Len() int {
	switch {
	case s.ZSet != nil:
		return s.ZSet.Len()
	case s.Set != nil:
		return s.Set.Len()
	}
	return 0
}

func (s *ZSource) forEach(fn func(m string, score float64) bool) {
	switch {
	case s.ZSet != nil:
		s.ZSet.ForEach(fn)
	case s.Set != nil:
		s.Set.ForEach(func(m string) bool { return fn(m, 1) })
	}
}

func (s *ZSource) find(m string) (float64, bool) {
	switch {
	case s.ZSet != nil:
		return s.ZSet.Score(m)
	case s.Set != nil:
		if s.Set.Has(m) {
			return 1, true
		}
	}
	return 0, false
}

// weighted is score times the source's weight, NaN (0 * inf) made 0.
func (s *ZSource) weighted(score float64) float64 {
	v := s.Weight * score
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// bySize orders srcs from the smallest, as Redis does before a union or
// an intersection (the result's order does not depend on it).
func bySize(srcs []ZSource) {
	sort.SliceStable(srcs, func(a, b int) bool { return srcs[a].Len() < srcs[b].Len() })
}

// interEach calls fn with each member of the intersection of srcs and its
// aggregated score, until fn returns false. It reorders srcs.
func interEach(srcs []ZSource, aggr Aggregate, fn func(m string, score float64) bool) {
	bySize(srcs)
	if srcs[0].Len() == 0 {
		return
	}
	srcs[0].forEach(func(m string, s float64) bool {
		score := srcs[0].weighted(s)
		for k := 1; k < len(srcs); k++ {
			v, ok := srcs[k].find(m)
			if !ok {
				return true
			}
			aggr.apply(&score, v*srcs[k].Weight)
		}
		return fn(m, score)
	})
}

// ZInter returns the intersection of srcs (at least one) in the skiplist
// encoding (ShrinkIfSmall picks the small one for a stored result). It
// reorders srcs.
func ZInter(srcs []ZSource, aggr Aggregate) *ZSet {
	res := NewZSetLarge()
	interEach(srcs, aggr, func(m string, score float64) bool {
		res.InsertNew(m, score)
		return true
	})
	return res
}

// ZInterCard counts the intersection of srcs, stopping at limit (0: no
// limit), as ZINTERCARD. It reorders srcs.
func ZInterCard(srcs []ZSource, limit int64) int64 {
	var n int64
	interEach(srcs, AggregateSum, func(string, float64) bool {
		n++
		return limit == 0 || n < limit
	})
	return n
}

// ZUnion returns the union of srcs in the skiplist encoding. It reorders
// srcs.
func ZUnion(srcs []ZSource, aggr Aggregate) *ZSet {
	bySize(srcs)
	acc := make(map[string]float64, srcs[len(srcs)-1].Len())
	for i := range srcs {
		srcs[i].forEach(func(m string, s float64) bool {
			score := srcs[i].weighted(s)
			if cur, ok := acc[m]; ok {
				aggr.apply(&cur, score)
				acc[m] = cur
			} else {
				acc[m] = score
			}
			return true
		})
	}
	res := NewZSetLarge()
	for m, s := range acc {
		res.InsertNew(m, s)
	}
	return res
}

// ZDiff returns the members of srcs[0] in none of the others, with their
// scores (weights play no part), in the skiplist encoding.
func ZDiff(srcs []ZSource) *ZSet {
	res := NewZSetLarge()
	srcs[0].forEach(func(m string, s float64) bool {
		for k := 1; k < len(srcs); k++ {
			if _, ok := srcs[k].find(m); ok {
				return true
			}
		}
		res.InsertNew(m, s)
		return true
	})
	return res
}
