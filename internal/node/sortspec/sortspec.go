// Package sortspec holds the logic of SORT and SORT_RO (Redis's sort.c)
// that needs no keyspace: the grammar of their options, the keys SORT
// names, the BY/GET pattern's substitution, the LIMIT window and the
// ordering of the elements. The node's handler reads the sorted value and
// the pattern keys, and hands this package a lookup function.
package sortspec

import (
	"bytes"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/value"
)

// Errors of SORT, in Redis's words.
var (
	// ErrSyntax is Redis's generic syntax error.
	ErrSyntax = errors.New("ERR syntax error")
	// ErrNotInt refuses a LIMIT that is not an integer.
	ErrNotInt = errors.New("ERR value is not an integer or out of range")
	// ErrByCluster refuses a BY pattern in cluster mode.
	ErrByCluster = errors.New("ERR BY option of SORT denied in Cluster mode.")
	// ErrByACL refuses a BY pattern to a user who may not read every key.
	ErrByACL = errors.New("ERR BY option of SORT denied due to insufficient ACL permissions.")
	// ErrGetCluster refuses GET in cluster mode.
	ErrGetCluster = errors.New("ERR GET option of SORT denied in Cluster mode.")
	// ErrGetACL refuses GET to a user who may not read every key.
	ErrGetACL = errors.New("ERR GET option of SORT denied due to insufficient ACL permissions.")
	// ErrScore is the reply when a weight is not a number.
	ErrScore = errors.New("ERR One or more scores can't be converted into double")
)

// Spec is a parsed SORT call.
type Spec struct {
	// Desc, Alpha: the order and the comparison.
	Desc, Alpha bool
	// LimitStart and LimitCount are LIMIT's arguments (0, -1 without it).
	LimitStart, LimitCount int64
	// By is BY's pattern when HasBy; DontSort is a BY without '*'.
	By       []byte
	HasBy    bool
	DontSort bool
	// Store is STORE's destination ("" none).
	Store string
	// Gets are the GET patterns.
	Gets [][]byte
}

// Env is what the grammar needs to know about the caller.
type Env struct {
	// ReadOnly: SORT_RO, which has no STORE.
	ReadOnly bool
	// Cluster: cluster mode, where BY and GET patterns are refused.
	Cluster bool
	// FullKeyRead reports whether the user may read every key; called
	// only when a pattern needs it.
	FullKeyRead func() bool
}

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// Parse parses SORT's options (the arguments after the key).
func Parse(opts [][]byte, env Env) (Spec, error) {
	s := Spec{LimitCount: -1}
	for j := 0; j < len(opts); j++ {
		left := len(opts) - j - 1
		a := opts[j]
		switch {
		case eqFold(a, "asc"):
			s.Desc = false
		case eqFold(a, "desc"):
			s.Desc = true
		case eqFold(a, "alpha"):
			s.Alpha = true
		case eqFold(a, "limit") && left >= 2:
			var ok1, ok2 bool
			s.LimitStart, ok1 = value.ParseInt(opts[j+1])
			if ok1 {
				s.LimitCount, ok2 = value.ParseInt(opts[j+2])
			}
			if !ok1 || !ok2 {
				return s, ErrNotInt
			}
			j += 2
		case !env.ReadOnly && eqFold(a, "store") && left >= 1:
			s.Store = string(opts[j+1])
			j++
		case eqFold(a, "by") && left >= 1:
			s.By, s.HasBy = opts[j+1], true
			s.DontSort = bytes.IndexByte(s.By, '*') < 0
			if !s.DontSort && env.Cluster {
				return s, ErrByCluster
			}
			if !s.DontSort && !env.FullKeyRead() {
				return s, ErrByACL
			}
			j++
		case eqFold(a, "get") && left >= 1:
			if env.Cluster {
				return s, ErrGetCluster
			}
			if !env.FullKeyRead() {
				return s, ErrGetACL
			}
			s.Gets = append(s.Gets, opts[j+1])
			j++
		default:
			return s, ErrSyntax
		}
	}
	return s, nil
}

// Keys returns the positions of SORT's keys in args: the sorted key and
// the STORE destination (the last STORE wins, as in Parse).
func Keys(args [][]byte) []int {
	pos := []int{1}
	dst := 0
	for i := 2; i < len(args); i++ {
		switch strings.ToLower(string(args[i])) {
		case "limit":
			i += 2
		case "get", "by":
			i++
		case "store":
			if i+1 < len(args) {
				dst = i + 1
			}
			i++
		}
	}
	if dst > 0 {
		pos = append(pos, dst)
	}
	return pos
}

// ForceAlpha applies Redis's rule for a set without sorting: a set has
// no natural order, so when storing, or inside a script (whose effects
// must not depend on it), it is sorted by value, as Redis forces ALPHA.
func (s *Spec) ForceAlpha(isSet, inScript bool) {
	if s.DontSort && isSet && (s.Store != "" || inScript) {
		s.DontSort, s.Alpha, s.HasBy = false, true, false
	}
}

// Window returns the inclusive range of the n sorted elements LIMIT
// selects (end < start when none).
func (s *Spec) Window(n int64) (start, end int64) {
	start = min(max(s.LimitStart, 0), n)
	count := min(max(s.LimitCount, -1), n)
	end = n - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	if end >= n {
		end = n - 1
	}
	return start, end
}

// Pattern is a BY or GET pattern resolved for one element: the key to
// read and, with a "->field" suffix, the hash field.
type Pattern struct {
	// Self: the pattern is "#", the element itself.
	Self bool
	// Key is the key to read; Field the hash field (nil: the key's string).
	Key, Field []byte
}

// Substitute resolves pattern for element subst: "#" is the element
// itself; the first '*' is replaced by the element; a "->field" suffix
// names a hash field. ok is false when the pattern has no '*'.
func Substitute(pattern, subst []byte) (p Pattern, ok bool) {
	if len(pattern) == 1 && pattern[0] == '#' {
		return Pattern{Self: true}, true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return Pattern{}, false
	}
	keyEnd := len(pattern)
	if f := bytes.Index(pattern[star+1:], []byte("->")); f >= 0 && star+1+f+2 < len(pattern) {
		p.Field = pattern[star+1+f+2:]
		keyEnd = star + 1 + f
	}
	key := make([]byte, 0, keyEnd+len(subst))
	key = append(key, pattern[:star]...)
	key = append(key, subst...)
	p.Key = append(key, pattern[star+1:keyEnd]...)
	return p, true
}

// Item is one element being sorted.
type Item struct {
	// Val is the element.
	Val   []byte
	score float64
	cmp   []byte
	// hasCmp: a BY value was found for an ALPHA sort.
	hasCmp bool
}

// Lookup resolves a pattern for an element: its value, ok=false when
// there is none.
type Lookup func(pattern, elem []byte) ([]byte, bool)

// Sort orders elems as s asks (isSet: they come from a set, which has no
// order to reverse), reading BY values through lookup.
func (s *Spec) Sort(elems [][]byte, isSet bool, lookup Lookup) ([]Item, error) {
	items := make([]Item, len(elems))
	for i, el := range elems {
		items[i].Val = el
	}
	if s.DontSort {
		if !isSet && s.Desc {
			for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
				items[i], items[j] = items[j], items[i]
			}
		}
		return items, nil
	}
	convErr := false
	for i := range items {
		byval := items[i].Val
		if s.HasBy {
			v, ok := lookup(s.By, items[i].Val)
			if !ok {
				continue
			}
			byval = v
		}
		if s.Alpha {
			if s.HasBy {
				items[i].cmp, items[i].hasCmp = byval, true
			}
			continue
		}
		f, ok := strtod(byval)
		if !ok {
			convErr = true
		}
		items[i].score = f
	}
	sort.SliceStable(items, func(i, j int) bool { return s.compare(&items[i], &items[j]) < 0 })
	if convErr {
		return nil, ErrScore
	}
	return items, nil
}

// compare orders two items as Redis's sortCompare does.
func (s *Spec) compare(a, b *Item) int {
	var r int
	switch {
	case !s.Alpha:
		switch {
		case a.score > b.score:
			r = 1
		case a.score < b.score:
			r = -1
		default:
			r = bytes.Compare(a.Val, b.Val)
		}
	case s.HasBy:
		switch {
		case a.hasCmp && b.hasCmp:
			r = bytes.Compare(a.cmp, b.cmp)
		case a.hasCmp == b.hasCmp:
			r = 0
		case !a.hasCmp:
			r = -1
		default:
			r = 1
		}
	default:
		r = bytes.Compare(a.Val, b.Val)
	}
	if s.Desc {
		return -r
	}
	return r
}

// strtod parses a sort weight as Redis does (strtod with a full match;
// out of range and NaN are errors, the empty string is 0).
func strtod(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
