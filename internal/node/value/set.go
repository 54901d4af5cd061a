package value

import (
	"math/rand/v2"
	"slices"
	"strconv"
)

// Set is a Redis set. A set holding only integers (as Redis's
// string2ll accepts them) and at most set-max-intset-entries members uses
// the "intset" encoding, a sorted []int64; anything else is a Dict
// ("hashtable"). As in Redis 7.0 there is no listpack encoding for sets,
// and conversion to the hashtable is for good.
//
// Persistence walks a set with Len and ForEach and rebuilds one with
// NewSet and Add; commands use AddB/HasB/RemB with the configured limit.
type Set struct {
	Ints []int64         // intset encoding (sorted) when Dict == nil
	Dict *Dict[struct{}] // hashtable encoding, nil while an intset
}

// defaultIntsetEntries is Redis's default set-max-intset-entries.
const defaultIntsetEntries = 512

// NewSet returns an empty set in the intset encoding.
func NewSet() *Set { return &Set{} }

// NewSetFor returns an empty set in the encoding Redis picks for a set
// whose first member is first: intset for an integer, else hashtable.
func NewSetFor(first []byte, sizeHint int) *Set {
	if _, ok := ParseInt(first); ok {
		return &Set{}
	}
	return &Set{Dict: newChainDict[struct{}](sizeHint)}
}

// TypeName returns "set" (TYPE).
func (s *Set) TypeName() string { return "set" }

// Encoding returns the OBJECT ENCODING name of the current encoding.
func (s *Set) Encoding() string {
	if s.Dict != nil {
		return "hashtable"
	}
	return "intset"
}

// Length is Len, for the Value interface.
func (s *Set) Length() int { return s.Len() }

// Len returns the number of members.
func (s *Set) Len() int {
	if s.Dict != nil {
		return s.Dict.len()
	}
	return len(s.Ints)
}

// Clone returns a deep copy in the same encoding (COPY).
func (s *Set) Clone() Value {
	if s.Dict == nil {
		return &Set{Ints: slices.Clone(s.Ints)}
	}
	d := newChainDict[struct{}](s.Dict.len())
	s.Dict.ForEach(func(n *DictNode[struct{}]) bool {
		d.upsert(n.Key)
		return true
	})
	return &Set{Dict: d}
}

func (s *Set) MemUsage() int64 {
	if s.Dict == nil {
		return 16 + 32 + int64(cap(s.Ints))*8
	}
	return 16 + 32 + s.Dict.memUsage(nil)
}

// toDict converts an intset to the hashtable encoding.
func (s *Set) toDict() {
	if s.Dict != nil {
		return
	}
	d := newChainDict[struct{}](len(s.Ints) + 1)
	for _, v := range s.Ints {
		d.upsert(strconv.FormatInt(v, 10))
	}
	s.Dict, s.Ints = d, nil
}

// AddB adds member (copied) and reports whether it is new. The intset
// converts to a hashtable for a non-integer member or when it would hold
// more than maxInts members.
func (s *Set) AddB(member []byte, maxInts int) bool {
	if s.Dict == nil {
		if v, ok := ParseInt(member); ok {
			i, found := slices.BinarySearch(s.Ints, v)
			if found {
				return false
			}
			s.Ints = slices.Insert(s.Ints, i, v)
			if len(s.Ints) > maxInts {
				s.toDict()
			}
			return true
		}
		s.toDict()
	}
	_, isNew := s.Dict.upsertBytes(member)
	return isNew
}

// HasB reports whether member is in the set.
func (s *Set) HasB(member []byte) bool {
	if s.Dict != nil {
		return s.Dict.FindBytes(member) != nil
	}
	v, ok := ParseInt(member)
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(s.Ints, v)
	return found
}

// RemB removes member and reports whether it was present.
func (s *Set) RemB(member []byte) bool {
	if s.Dict != nil {
		_, ok := s.Dict.remove(bstr(member))
		return ok
	}
	v, ok := ParseInt(member)
	if !ok {
		return false
	}
	i, found := slices.BinarySearch(s.Ints, v)
	if !found {
		return false
	}
	s.Ints = slices.Delete(s.Ints, i, i+1)
	return true
}

// Each visits every member until fn returns false. The slice is only
// valid during the call; fn must not change s.
func (s *Set) Each(fn func(member []byte) bool) {
	if s.Dict != nil {
		s.Dict.ForEach(func(n *DictNode[struct{}]) bool { return fn(sbytes(n.Key)) })
		return
	}
	var buf [24]byte
	for _, v := range s.Ints {
		if !fn(strconv.AppendInt(buf[:0], v, 10)) {
			return
		}
	}
}

// PopRandom removes a uniformly random member and returns it.
func (s *Set) PopRandom() string {
	if s.Dict != nil {
		n := s.Dict.RandomNode()
		s.Dict.removeNode(n)
		return n.Key
	}
	i := rand.IntN(len(s.Ints))
	m := strconv.FormatInt(s.Ints[i], 10)
	s.Ints = slices.Delete(s.Ints, i, i+1)
	return m
}

// RandomMember returns a uniformly random member as a new string.
func (s *Set) RandomMember() string {
	if s.Dict != nil {
		return s.Dict.RandomNode().Key
	}
	return strconv.FormatInt(s.Ints[rand.IntN(len(s.Ints))], 10)
}

// ---- persistence API (strings) ---------------------------------------------

// Add adds member with Redis's default intset limit and reports whether it
// is new.
func (s *Set) Add(member string) bool { return s.AddB(sbytes(member), defaultIntsetEntries) }

// Has reports whether member is in the set.
func (s *Set) Has(member string) bool { return s.HasB(sbytes(member)) }

// Remove removes member and reports whether it was present.
func (s *Set) Remove(member string) bool { return s.RemB(sbytes(member)) }

// ForEach visits every member until fn returns false.
func (s *Set) ForEach(fn func(member string) bool) {
	s.Each(func(m []byte) bool { return fn(string(m)) })
}
