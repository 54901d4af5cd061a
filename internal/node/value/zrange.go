package value

// Ranges over a sorted set: by rank, by score and by member (lex), and the
// walks ZRANGE, ZCOUNT, ZREMRANGEBY* and ZRANGESTORE make over them.

// ClampRange turns Redis start/stop indexes (negative counts from the end)
// into ascending positions [lo, hi] (inclusive) of a sequence of n
// elements, as LRANGE, LTRIM, ZRANGE and ZREMRANGEBYRANK clamp them;
// ok=false when the range selects nothing.
func ClampRange(start, end int64, n int) (lo, hi int, ok bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if end < 0 {
		end += ln
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= ln {
		return 0, 0, false
	}
	if end >= ln {
		end = ln - 1
	}
	return int(start), int(end), true
}

// ScoreRange is a score interval; MinEx and MaxEx make an end open
// ("(1.5" in Redis's syntax).
type ScoreRange struct {
	Min, Max     float64 // the ends
	MinEx, MaxEx bool    // whether each end is excluded
}

// Bounds returns the ascending ranks [lo, hi) of the members of z whose
// score is in r.
func (r ScoreRange) Bounds(z *ZSet) (lo, hi int) {
	lo = z.CountWhile(func(s float64, _ string) bool {
		if r.MinEx {
			return s <= r.Min
		}
		return s < r.Min
	})
	hi = z.CountWhile(func(s float64, _ string) bool {
		if r.MaxEx {
			return s < r.Max
		}
		return s <= r.Max
	})
	return lo, max(lo, hi)
}

// LexBound is one end of a member range: S with Ex for "(S" (excluded) or
// "[S" (included), or Inf -1 for "-" and +1 for "+".
type LexBound struct {
	S   string // the member at the end
	Ex  bool   // whether S itself is excluded
	Inf int    // -1: below every member, +1: above every member, 0: S
}

// LexRange is a member interval (ZRANGEBYLEX, ZLEXCOUNT, ZREMRANGEBYLEX).
type LexRange struct{ Min, Max LexBound }

// Bounds returns the ascending ranks [lo, hi) of the members of z inside
// r (the members are assumed to share one score, as Redis requires).
func (r LexRange) Bounds(z *ZSet) (lo, hi int) {
	below := func(b LexBound, upper bool) int {
		switch b.Inf {
		case -1:
			return 0
		case 1:
			return z.Len()
		}
		return z.CountWhile(func(_ float64, m string) bool {
			if upper != b.Ex {
				return m <= b.S
			}
			return m < b.S
		})
	}
	lo = below(r.Min, false)
	hi = below(r.Max, true)
	return lo, max(lo, hi)
}

// RangeWindow calls fn for the members of ascending ranks [lo, hi) after
// skipping offset of them and stopping after limit (negative: no limit),
// walking from hi down when rev, as ZRANGE BYSCORE|BYLEX LIMIT does. An
// offset that is negative, or not below the window's length (or, when
// positive, z's length), selects nothing.
func (z *ZSet) RangeWindow(lo, hi int, offset, limit int64, rev bool, fn func(member string, score float64) bool) {
	n := int64(hi - lo)
	if offset < 0 || offset >= n || (offset > 0 && offset >= int64(z.Len())) {
		return
	}
	n -= offset
	if limit >= 0 && limit < n {
		n = limit
	}
	if n <= 0 {
		return
	}
	if rev {
		top := hi - 1 - int(offset)
		z.RangeByRank(top-int(n)+1, top, true, fn)
		return
	}
	first := lo + int(offset)
	z.RangeByRank(first, first+int(n)-1, false, fn)
}

// RangeRank calls fn for the members between Redis rank indexes start
// and end (negative counts from the end), from the highest score down
// when rev, as ZRANGE and ZREVRANGE do. It returns how many members the
// range holds (0 when it is empty), for a reply's length.
func (z *ZSet) RangeRank(start, end int64, rev bool, fn func(member string, score float64) bool) int {
	lo, hi, ok := ClampRange(start, end, z.Len())
	if !ok {
		return 0
	}
	if rev {
		n := z.Len()
		lo, hi = n-1-hi, n-1-lo
	}
	z.RangeByRank(lo, hi, rev, fn)
	return hi - lo + 1
}

// Items lists z's members in order.
func (z *ZSet) Items() []ZItem {
	items := make([]ZItem, 0, z.Len())
	z.ForEach(func(m string, s float64) bool {
		items = append(items, ZItem{Member: m, Score: s})
		return true
	})
	return items
}

// FromItems builds a sorted set from items (distinct members), in the
// small encoding unless there are more than lim.Entries of them.
func FromItems(items []ZItem, lim ZSetLimits) *ZSet {
	res := NewZSet()
	if len(items) > lim.Entries {
		res = NewZSetLarge()
	}
	for _, it := range items {
		res.Set(it.Member, it.Score, lim)
	}
	return res
}

// RankRange is a range of Redis rank indexes (negative counts from the
// end), as ZREMRANGEBYRANK takes it.
type RankRange struct{ Start, End int64 }

// Bounds returns the ascending ranks [lo, hi) r selects in z.
func (r RankRange) Bounds(z *ZSet) (lo, hi int) {
	lo, hi, ok := ClampRange(r.Start, r.End, z.Len())
	if !ok {
		return 0, 0
	}
	return lo, hi + 1
}

// Span is a range of a sorted set's members: a RankRange, a ScoreRange or
// a LexRange.
type Span interface {
	// Bounds returns the ascending ranks [lo, hi) of the members inside.
	Bounds(z *ZSet) (lo, hi int)
}

// PopN calls fn with the n (0 < n <= Len) lowest members, or with max the
// n highest from the top down, and removes them (ZPOPMIN, ZPOPMAX, ZMPOP).
func (z *ZSet) PopN(n int, max bool, fn func(member string, score float64)) {
	emit := func(m string, s float64) bool { fn(m, s); return true }
	lo, hi := 0, n-1
	if max {
		lo, hi = z.Len()-n, z.Len()-1
	}
	z.RangeByRank(lo, hi, max, emit)
	z.RemoveRankRange(lo, hi)
}
