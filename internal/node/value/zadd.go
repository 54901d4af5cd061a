package value

import "math"

// ZAddFlags are ZADD's options (ZINCRBY is ZADD with Incr).
type ZAddFlags struct {
	NX, XX, GT, LT bool // only add new / only update existing / only raise / only lower
	CH             bool // reply the changed count, not the added one
	Incr           bool // add to the score (one pair only)
}

// ZAddResult is what ZAddPairs did.
type ZAddResult struct {
	Added     int     // members created
	Updated   int     // existing members whose score changed
	Processed int     // pairs that passed NX/XX/GT/LT
	Score     float64 // the last processed score (ZINCRBY's and INCR's reply)
	NaN       bool    // an INCR made a NaN score: the pairs after it were not applied
}

// ZAddPairs applies ZADD's score/member pairs (scores[j] for pairs[2j+1];
// pairs holds score member score member ...) under f, as Redis's
// zsetAdd does for each: members are copied only when stored, and in the
// skiplist encoding an existing member's node is updated in place.
func (z *ZSet) ZAddPairs(f ZAddFlags, scores []float64, pairs [][]byte, lim ZSetLimits) (r ZAddResult) {
	for j, s := range scores {
		arg := pairs[2*j+1]
		var node *SkipNode
		var cur float64
		var exists bool
		if z.Dict != nil {
			if n := z.Dict.FindBytes(arg); n != nil {
				node = n.Val
				cur, exists = node.Score, true
			}
		} else {
			cur, exists = z.Score(bstr(arg))
		}
		if !exists {
			if !f.XX {
				z.Set(string(arg), s, lim)
				r.Added++
				r.Processed++
				r.Score = s
			}
			continue
		}
		if f.NX {
			continue
		}
		if f.Incr {
			s += cur
			if math.IsNaN(s) {
				r.NaN = true
				return r
			}
		}
		if (f.LT && s >= cur) || (f.GT && s <= cur) {
			continue
		}
		r.Processed++
		r.Score = s
		if s != cur {
			if node != nil {
				z.Zsl.UpdateScore(node, s)
			} else {
				z.Set(string(arg), s, lim)
			}
			r.Updated++
		}
	}
	return r
}
