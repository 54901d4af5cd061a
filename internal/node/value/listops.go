package value

import "bytes"

// Searches and removals over a list's elements: LINSERT's pivot, LPOS and
// LREM.

// IndexOf returns the index of the first element equal to v, or -1.
func (l *List) IndexOf(v []byte) int {
	pos, i := -1, 0
	l.ForEach(func(e []byte) bool {
		if bytes.Equal(e, v) {
			pos = i
			return false
		}
		i++
		return true
	})
	return pos
}

// Positions returns the indexes of the elements equal to ele, as LPOS
// finds them: starting at the rank-th match (rank < 0 counts matches from
// the tail and walks backwards), at most count of them (0: all; -1: the
// first only), looking at no more than maxlen elements (0: all).
func (l *List) Positions(ele []byte, rank, count, maxlen int64) []int64 {
	fromTail := rank < 0
	if fromTail {
		rank = -rank
	}
	var found []int64
	matches, scanned := int64(0), int64(0)
	visit := func(idx int, v []byte) bool {
		if maxlen != 0 && scanned >= maxlen {
			return false
		}
		scanned++
		if bytes.Equal(v, ele) {
			matches++
			if matches >= rank {
				found = append(found, int64(idx))
				if count == -1 || (count != 0 && int64(len(found)) >= count) {
					return false
				}
			}
		}
		return true
	}
	n := l.Len()
	if fromTail {
		idx := n - 1
		l.RangeRev(n-1, func(v []byte) bool {
			ok := visit(idx, v)
			idx--
			return ok
		})
		return found
	}
	idx := 0
	l.ForEach(func(v []byte) bool {
		ok := visit(idx, v)
		idx++
		return ok
	})
	return found
}

// RemoveMatching removes elements equal to ele as LREM does: the first
// count of them from the head for count > 0, the last -count from the
// tail for count < 0, all for 0. It returns how many went.
func (l *List) RemoveMatching(ele []byte, count int64) int64 {
	var removed int64
	if count >= 0 {
		return int64(l.Filter(func(_ int, v []byte) bool {
			if (count == 0 || removed < count) && bytes.Equal(v, ele) {
				removed++
				return false
			}
			return true
		}))
	}
	// From the tail: find the indexes of the last -count matches.
	limit := -count
	drop := make(map[int]struct{})
	n := l.Len()
	idx := n - 1
	l.RangeRev(n-1, func(v []byte) bool {
		if bytes.Equal(v, ele) {
			drop[idx] = struct{}{}
			if int64(len(drop)) >= limit {
				return false
			}
		}
		idx--
		return true
	})
	if len(drop) == 0 {
		return 0
	}
	return int64(l.Filter(func(i int, _ []byte) bool {
		_, d := drop[i]
		return !d
	}))
}

// TrimRange keeps the elements between Redis indexes start and end
// (negative counts from the end), as LTRIM does: a range that selects
// nothing empties the list. It returns how many elements went.
func (l *List) TrimRange(start, end int64) int {
	n := l.Len()
	lo, hi, ok := ClampRange(start, end, n)
	if !ok {
		l.Trim(1, 0)
		return n
	}
	l.Trim(lo, hi)
	return n - l.Len()
}
