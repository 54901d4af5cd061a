package value

import "slices"

// The set algebra of SINTER, SINTERCARD, SUNION, SDIFF and their STORE
// forms, as pure functions over sets.

// SInter calls emit with each member of the intersection of sets (none
// nil; the slice is valid during the call) until emit returns false,
// walking the smallest set.
func SInter(sets []*Set, emit func(m []byte) bool) {
	sets = slices.Clone(sets)
	slices.SortStableFunc(sets, func(a, b *Set) int { return a.Len() - b.Len() })
	sets[0].Each(func(m []byte) bool {
		for _, o := range sets[1:] {
			if o != sets[0] && !o.HasB(m) {
				return true
			}
		}
		return emit(m)
	})
}

// SInterCard counts the intersection of sets (none nil), stopping at
// limit (0: no limit).
func SInterCard(sets []*Set, limit int64) int64 {
	var card int64
	SInter(sets, func([]byte) bool {
		card++
		return limit == 0 || card < limit
	})
	return card
}

// SUnion returns the union of sets (nil is empty); maxInts is
// set-max-intset-entries.
func SUnion(sets []*Set, maxInts int) *Set {
	res := NewSet()
	for _, s := range sets {
		if s == nil {
			continue
		}
		s.Each(func(m []byte) bool { res.AddB(m, maxInts); return true })
	}
	return res
}

// SDiff returns sets[0] minus the others (nil is empty); maxInts is
// set-max-intset-entries.
func SDiff(sets []*Set, maxInts int) *Set {
	res := NewSet()
	first := sets[0]
	if first == nil {
		return res
	}
	for _, s := range sets[1:] {
		if s == first {
			return res
		}
	}
	first.Each(func(m []byte) bool {
		for _, s := range sets[1:] {
			if s != nil && s.HasB(m) {
				return true
			}
		}
		res.AddB(m, maxInts)
		return true
	})
	return res
}
