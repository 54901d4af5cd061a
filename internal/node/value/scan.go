package value

// HSCAN, SSCAN and ZSCAN over a collection: a small encoding (listpack,
// intset) is returned whole with cursor 0, as Redis does; a large one is
// walked through its hash table with Dict's reverse-binary cursor, so an
// element present for the whole scan is returned at least once.

// Scan calls fn with the fields and values (views) of one SCAN step from
// cursor, visiting buckets until count fields are seen (at most count*10
// buckets, as Redis's scanGenericCommand), and returns the next cursor.
func (h *Hash) Scan(cursor uint64, count int, fn func(field, val []byte)) uint64 {
	if h.Dict == nil {
		h.Each(func(f, v []byte) bool { fn(f, v); return true })
		return 0
	}
	return h.Dict.ScanCount(cursor, count, func(n *DictNode[[]byte]) { fn(sbytes(n.Key), n.Val) })
}

// Scan calls fn with the members of one SCAN step from cursor (see
// Hash.Scan); a member of the intset encoding is a fresh slice.
func (s *Set) Scan(cursor uint64, count int, fn func(member []byte)) uint64 {
	if s.Dict == nil {
		s.Each(func(m []byte) bool { fn([]byte(string(m))); return true })
		return 0
	}
	return s.Dict.ScanCount(cursor, count, func(n *DictNode[struct{}]) { fn(sbytes(n.Key)) })
}

// Scan calls fn with the members and scores of one SCAN step from cursor
// (see Hash.Scan).
func (z *ZSet) Scan(cursor uint64, count int, fn func(member string, score float64)) uint64 {
	if z.Dict == nil {
		z.ForEach(func(m string, s float64) bool { fn(m, s); return true })
		return 0
	}
	return z.Dict.ScanCount(cursor, count, func(n *DictNode[*SkipNode]) { fn(n.Key, n.Val.Score) })
}
