package value

import (
	"math/rand/v2"
	"slices"
	"strconv"
)

// Random selections of HRANDFIELD, SRANDMEMBER, ZRANDMEMBER and SPOP with
// a count, with Redis's strategies: independent draws when repetitions
// are allowed; for distinct elements a partial shuffle when many are
// wanted (or the encoding is small), random draws with a seen-set when
// few are.

// shuffleEach calls emit with count distinct random indexes of [0, size)
// (a partial Fisher-Yates shuffle that touches only the positions it
// swaps).
func shuffleEach(size, count int, emit func(i int)) {
	swapped := make(map[int]int, count)
	get := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	for i := 0; i < count; i++ {
		j := i + rand.IntN(size-i)
		vi, vj := get(i), get(j)
		swapped[i], swapped[j] = vj, vi
		emit(vj)
	}
}

// RandomDistinct calls emit with n distinct random members of z
// (0 < n < z.Len()), in random order.
func (z *ZSet) RandomDistinct(n int, emit func(member string, score float64)) {
	shuffleEach(z.Len(), n, func(i int) { emit(z.At(i)) })
}

// RandomRepeats calls emit with count independent random members of z
// (repetitions allowed) until emit returns false.
func (z *ZSet) RandomRepeats(count int64, emit func(member string, score float64) bool) {
	for ; count > 0; count-- {
		if !emit(z.At(rand.IntN(z.Len()))) {
			return
		}
	}
}

// pairs lists the fields and values of h (views into h).
func (h *Hash) pairs() [][2][]byte {
	all := make([][2][]byte, 0, h.Len())
	h.Each(func(f, v []byte) bool {
		all = append(all, [2][]byte{f, v})
		return true
	})
	return all
}

// RandomRepeats calls emit with count independent random fields of h and
// their values (repetitions allowed; views into h) until emit returns
// false.
func (h *Hash) RandomRepeats(count int64, emit func(field, val []byte) bool) {
	if h.Dict == nil {
		all := h.pairs()
		for ; count > 0; count-- {
			p := all[rand.IntN(len(all))]
			if !emit(p[0], p[1]) {
				return
			}
		}
		return
	}
	for ; count > 0; count-- {
		if !emit(h.RandomField()) {
			return
		}
	}
}

// RandomDistinct calls emit with count distinct random fields of h and
// their values (0 < count < h.Len(); views into h).
func (h *Hash) RandomDistinct(count int, emit func(field, val []byte)) {
	if h.Dict == nil || count*3 > h.Len() {
		all := h.pairs()
		for i := 0; i < count; i++ {
			j := i + rand.IntN(len(all)-i)
			all[i], all[j] = all[j], all[i]
			emit(all[i][0], all[i][1])
		}
		return
	}
	seen := make(map[string]struct{}, count)
	for len(seen) < count {
		n := h.Dict.RandomNode()
		if _, dup := seen[n.Key]; dup {
			continue
		}
		seen[n.Key] = struct{}{}
		emit(sbytes(n.Key), n.Val)
	}
}

// Members lists the members of s as strings.
func (s *Set) Members() []string {
	out := make([]string, 0, s.Len())
	if s.Dict != nil {
		s.Dict.ForEach(func(n *DictNode[struct{}]) bool { out = append(out, n.Key); return true })
		return out
	}
	for _, v := range s.Ints {
		out = append(out, strconv.FormatInt(v, 10))
	}
	return out
}

// RandomRepeats calls emit with count independent random members of s
// (repetitions allowed; the slice is valid during the call) until emit
// returns false.
func (s *Set) RandomRepeats(count int64, emit func(member []byte) bool) {
	if s.Dict == nil {
		var buf [24]byte
		for ; count > 0; count-- {
			if !emit(strconv.AppendInt(buf[:0], s.Ints[rand.IntN(len(s.Ints))], 10)) {
				return
			}
		}
		return
	}
	for ; count > 0; count-- {
		if !emit(sbytes(s.Dict.RandomNode().Key)) {
			return
		}
	}
}

// RandomDistinct calls emit with count distinct random members of s
// (0 < count < s.Len()).
func (s *Set) RandomDistinct(count int, emit func(member string)) {
	if s.Dict == nil || count*3 > s.Len() {
		all := s.Members()
		for i := 0; i < count; i++ {
			j := i + rand.IntN(len(all)-i)
			all[i], all[j] = all[j], all[i]
			emit(all[i])
		}
		return
	}
	seen := make(map[string]struct{}, count)
	for len(seen) < count {
		k := s.Dict.RandomNode().Key
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		emit(k)
	}
}

// PopMany removes count random members of s (0 < count < s.Len()) and
// calls emit with each (a slice valid after the call). When few members
// stay, it moves those to a new set and pops all the rest, as Redis's
// third SPOP strategy does; s then takes the new set's contents.
// maxInts is set-max-intset-entries.
func (s *Set) PopMany(count int, maxInts int, emit func(member []byte)) {
	size := s.Len()
	remaining := size - count
	if remaining*5 > count {
		for ; count > 0; count-- {
			m := s.RandomMember()
			s.RemB(sbytes(m))
			emit(sbytes(m))
		}
		return
	}
	var ns *Set
	for ; remaining > 0; remaining-- {
		m := s.RandomMember()
		if ns == nil {
			ns = NewSetFor(sbytes(m), size-count)
		}
		ns.AddB(sbytes(m), maxInts)
		s.RemB(sbytes(m))
	}
	s.Each(func(m []byte) bool {
		emit(slices.Clone(m))
		return true
	})
	*s = *ns
}

// RandMode is how a random reply with a count picks its elements.
type RandMode int

// The modes of RandPlan.
const (
	RandRepeats  RandMode = iota // independent draws: a negative count, or 1
	RandAll                      // every element: a count of at least the size
	RandDistinct                 // distinct elements: RandomDistinct
)

// RandPlan decides the reply of HRANDFIELD, SRANDMEMBER or ZRANDMEMBER
// with a count l (not 0) over size elements, as Redis does: how many
// elements the reply has and how they are picked.
func RandPlan(l int64, size int) (n int64, mode RandMode) {
	switch {
	case l < 0 || l == 1:
		return max(l, -l), RandRepeats
	case l >= int64(size):
		return int64(size), RandAll
	}
	return l, RandDistinct
}
