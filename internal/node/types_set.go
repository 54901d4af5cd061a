package node

import (
	"math/rand/v2"
	"slices"
	"strconv"
)

// setValue is a Redis set. A set holding only integers (as Redis's
// string2ll accepts them) and at most set-max-intset-entries members uses
// the "intset" encoding, a sorted []int64; anything else is a chainDict
// ("hashtable"). As in Redis 7.0 there is no listpack encoding for sets,
// and conversion to the hashtable is for good.
//
// Persistence walks a set with Len and ForEach and rebuilds one with
// newSet and Add; commands use addB/hasB/remB with the configured limit.
type setValue struct {
	ints []int64              // intset encoding when d == nil
	d    *chainDict[struct{}] // hashtable encoding
}

// defaultIntsetEntries is Redis's default set-max-intset-entries.
const defaultIntsetEntries = 512

// intsetLimit reads set-max-intset-entries from the configuration.
func (s *Server) intsetLimit() int { return s.hot().intsetLimit }

// newSet returns an empty set in the intset encoding.
func newSet() *setValue { return &setValue{} }

// newSetFor returns an empty set in the encoding Redis picks for a set
// whose first member is first: intset for an integer, else hashtable.
func newSetFor(first []byte, sizeHint int) *setValue {
	if _, ok := parseInt(first); ok {
		return &setValue{}
	}
	return &setValue{d: newChainDict[struct{}](sizeHint)}
}

func (s *setValue) typeName() string { return "set" }

func (s *setValue) encoding() string {
	if s.d != nil {
		return "hashtable"
	}
	return "intset"
}

func (s *setValue) length() int { return s.Len() }

// Len returns the number of members.
func (s *setValue) Len() int {
	if s.d != nil {
		return s.d.len()
	}
	return len(s.ints)
}

func (s *setValue) clone() typedValue {
	if s.d == nil {
		return &setValue{ints: slices.Clone(s.ints)}
	}
	d := newChainDict[struct{}](s.d.len())
	s.d.forEach(func(n *dictNode[struct{}]) bool {
		d.upsert(n.key)
		return true
	})
	return &setValue{d: d}
}

func (s *setValue) memUsage() int64 {
	if s.d == nil {
		return 16 + 32 + int64(cap(s.ints))*8
	}
	return 16 + 32 + s.d.memUsage(nil)
}

// toDict converts an intset to the hashtable encoding.
func (s *setValue) toDict() {
	if s.d != nil {
		return
	}
	d := newChainDict[struct{}](len(s.ints) + 1)
	for _, v := range s.ints {
		d.upsert(strconv.FormatInt(v, 10))
	}
	s.d, s.ints = d, nil
}

// addB adds member (copied) and reports whether it is new. The intset
// converts to a hashtable for a non-integer member or when it would hold
// more than maxInts members.
func (s *setValue) addB(member []byte, maxInts int) bool {
	if s.d == nil {
		if v, ok := parseInt(member); ok {
			i, found := slices.BinarySearch(s.ints, v)
			if found {
				return false
			}
			s.ints = slices.Insert(s.ints, i, v)
			if len(s.ints) > maxInts {
				s.toDict()
			}
			return true
		}
		s.toDict()
	}
	_, isNew := s.d.upsertBytes(member)
	return isNew
}

// hasB reports whether member is in the set.
func (s *setValue) hasB(member []byte) bool {
	if s.d != nil {
		return s.d.findBytes(member) != nil
	}
	v, ok := parseInt(member)
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(s.ints, v)
	return found
}

// remB removes member and reports whether it was present.
func (s *setValue) remB(member []byte) bool {
	if s.d != nil {
		_, ok := s.d.remove(bstr(member))
		return ok
	}
	v, ok := parseInt(member)
	if !ok {
		return false
	}
	i, found := slices.BinarySearch(s.ints, v)
	if !found {
		return false
	}
	s.ints = slices.Delete(s.ints, i, i+1)
	return true
}

// each visits every member until fn returns false. The slice is only
// valid during the call; fn must not change s.
func (s *setValue) each(fn func(member []byte) bool) {
	if s.d != nil {
		s.d.forEach(func(n *dictNode[struct{}]) bool { return fn(sbytes(n.key)) })
		return
	}
	var buf [24]byte
	for _, v := range s.ints {
		if !fn(strconv.AppendInt(buf[:0], v, 10)) {
			return
		}
	}
}

// popRandom removes a uniformly random member and returns it.
func (s *setValue) popRandom() string {
	if s.d != nil {
		n := s.d.randomNode()
		s.d.removeNode(n)
		return n.key
	}
	i := rand.IntN(len(s.ints))
	m := strconv.FormatInt(s.ints[i], 10)
	s.ints = slices.Delete(s.ints, i, i+1)
	return m
}

// randomMember returns a uniformly random member as a new string.
func (s *setValue) randomMember() string {
	if s.d != nil {
		return s.d.randomNode().key
	}
	return strconv.FormatInt(s.ints[rand.IntN(len(s.ints))], 10)
}

// ---- persistence API (strings) ---------------------------------------------

// Add adds member with Redis's default intset limit and reports whether it
// is new.
func (s *setValue) Add(member string) bool { return s.addB(sbytes(member), defaultIntsetEntries) }

// Has reports whether member is in the set.
func (s *setValue) Has(member string) bool { return s.hasB(sbytes(member)) }

// Remove removes member and reports whether it was present.
func (s *setValue) Remove(member string) bool { return s.remB(sbytes(member)) }

// ForEach visits every member until fn returns false.
func (s *setValue) ForEach(fn func(member string) bool) {
	s.each(func(m []byte) bool { return fn(string(m)) })
}
