package node

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/value"
)

// SORT and SORT_RO. BY and GET patterns read arbitrary keys of the current
// database, so both commands lock the whole database (flagLockDB); their
// key metadata (the sorted key and STORE's destination) still describes
// them for COMMAND GETKEYS.

func registerSortCommands(t *commandTable) {
	t.add(&command{name: "sort", arity: -2, flags: flagWrite | flagDenyOOM | flagLockDB, keys: sortKeys, first: 1, last: 1, step: 1, fn: cmdSort, group: "generic", since: "1.0.0"})
	// SORT_RO's only key is the sorted one, yet Redis flags it movablekeys.
	t.add(&command{name: "sort_ro", arity: -2, flags: flagReadOnly | flagLockDB, keys: func([][]byte) []int { return []int{1} }, first: 1, last: 1, step: 1, fn: cmdSortRO, group: "generic", since: "7.0.0"})
}

// sortKeys returns SORT's keys: the sorted key and the STORE destination
// (the last STORE wins, as in the handler).
func sortKeys(args [][]byte) []int {
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

// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE destination]
func cmdSort(c *Client, args [][]byte) { sortGeneric(c, args, false) }

// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
func cmdSortRO(c *Client, args [][]byte) { sortGeneric(c, args, true) }

// sortItem is one element being sorted with its sort key.
type sortItem struct {
	val    []byte
	score  float64
	cmp    []byte
	hasCmp bool
}

func sortGeneric(c *Client, args [][]byte, readonly bool) {
	var desc, alpha, dontsort bool
	var limitStart, limitCount int64 = 0, -1
	var sortby []byte
	hasBy := false
	store := ""
	var gets [][]byte
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case eqFold(a, "asc"):
			desc = false
		case eqFold(a, "desc"):
			desc = true
		case eqFold(a, "alpha"):
			alpha = true
		case eqFold(a, "limit") && left >= 2:
			var ok1, ok2 bool
			limitStart, ok1 = parseInt(args[j+1])
			if ok1 {
				limitCount, ok2 = parseInt(args[j+2])
			}
			if !ok1 || !ok2 {
				c.addError(errNotInt)
				return
			}
			j += 2
		case !readonly && eqFold(a, "store") && left >= 1:
			store = string(args[j+1])
			j++
		case eqFold(a, "by") && left >= 1:
			sortby, hasBy = args[j+1], true
			dontsort = bytes.IndexByte(sortby, '*') < 0
			if !dontsort && c.srv.cfg.Bool(DirClusterEnabled) {
				c.addError("ERR BY option of SORT denied in Cluster mode.")
				return
			}
			if !dontsort && !c.aclFullKeyRead(args) {
				c.addError("ERR BY option of SORT denied due to insufficient ACL permissions.")
				return
			}
			j++
		case eqFold(a, "get") && left >= 1:
			if c.srv.cfg.Bool(DirClusterEnabled) {
				c.addError("ERR GET option of SORT denied in Cluster mode.")
				return
			}
			if !c.aclFullKeyRead(args) {
				c.addError("ERR GET option of SORT denied due to insufficient ACL permissions.")
				return
			}
			gets = append(gets, args[j+1])
			j++
		default:
			c.addError(errSyntax)
			return
		}
	}
	db := c.curDB()
	e := db.Lookup(string(args[1]), c.now)
	var elems [][]byte
	kind := "list"
	if e != nil {
		switch v := e.Obj.(type) {
		case *value.List:
			v.ForEach(func(b []byte) bool { elems = append(elems, b); return true })
		case *value.Set:
			kind = "set"
			v.ForEach(func(m string) bool { elems = append(elems, []byte(m)); return true })
		case *value.ZSet:
			kind = "zset"
			v.ForEach(func(m string, _ float64) bool { elems = append(elems, []byte(m)); return true })
		default:
			c.addError(errWrongType)
			return
		}
	}
	// A set has no natural order: when storing, or inside a script (whose
	// effects must not depend on it), sort it so the result is the same
	// everywhere, as Redis forces ALPHA for both.
	if dontsort && kind == "set" && (store != "" || c.inScript) {
		dontsort, alpha, hasBy = false, true, false
	}
	vlen := int64(len(elems))
	start := min(max(limitStart, 0), vlen)
	limitCount = min(max(limitCount, -1), vlen)
	end := vlen - 1
	if limitCount >= 0 {
		end = start + limitCount - 1
	}
	if start >= vlen {
		start, end = vlen-1, vlen-2
	}
	if end >= vlen {
		end = vlen - 1
	}
	items := make([]sortItem, len(elems))
	for i, el := range elems {
		items[i].val = el
	}
	if dontsort && kind != "set" && desc {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	convErr := false
	if !dontsort {
		for i := range items {
			byval := items[i].val
			if hasBy {
				v, ok := c.sortLookupPattern(sortby, items[i].val)
				if !ok {
					continue
				}
				byval = v
			}
			if alpha {
				if hasBy {
					items[i].cmp, items[i].hasCmp = byval, true
				}
				continue
			}
			f, ok := sortStrtod(byval)
			if !ok {
				convErr = true
			}
			items[i].score = f
		}
		cmp := func(a, b *sortItem) int {
			var r int
			switch {
			case !alpha:
				switch {
				case a.score > b.score:
					r = 1
				case a.score < b.score:
					r = -1
				default:
					r = bytes.Compare(a.val, b.val)
				}
			case hasBy:
				switch {
				case !a.hasCmp || !b.hasCmp:
					switch {
					case a.hasCmp == b.hasCmp:
						r = 0
					case !a.hasCmp:
						r = -1
					default:
						r = 1
					}
				default:
					r = bytes.Compare(a.cmp, b.cmp)
				}
			default:
				r = bytes.Compare(a.val, b.val)
			}
			if desc {
				return -r
			}
			return r
		}
		sort.SliceStable(items, func(i, j int) bool { return cmp(&items[i], &items[j]) < 0 })
	}
	count := end - start + 1
	if count < 0 {
		count = 0
	}
	outputLen := count
	if len(gets) > 0 {
		outputLen = int64(len(gets)) * count
	}
	if convErr {
		c.addError("ERR One or more scores can't be converted into double")
		return
	}
	if store == "" {
		c.addArrayLen(int(outputLen))
		for j := start; j <= end; j++ {
			if len(gets) == 0 {
				c.addBulk(items[j].val)
			}
			for _, g := range gets {
				if v, ok := c.sortLookupPattern(g, items[j].val); ok {
					c.addBulk(v)
				} else {
					c.addNull()
				}
			}
		}
		return
	}
	l := value.NewList()
	for j := start; j <= end; j++ {
		if len(gets) == 0 {
			l.PushBack(bytes.Clone(items[j].val))
		}
		for _, g := range gets {
			v, _ := c.sortLookupPattern(g, items[j].val)
			l.PushBack(bytes.Clone(v))
		}
	}
	if outputLen > 0 {
		db.SetObject(store, l)
		c.signalModifiedKey(store)
		c.notify(notifyList, "sortstore", store)
		c.signalKeyAsReady(store)
		c.markDirty(int(outputLen))
	} else if db.Lookup(store, c.now) != nil {
		db.Remove(store)
		c.signalModifiedKey(store)
		c.notify(notifyGeneric, "del", store)
		c.markDirty(1)
	}
	c.addInt(outputLen)
}

// sortLookupPattern resolves a BY/GET pattern for element subst: "#" is
// the element itself; the first '*' is replaced by the element; a
// "->field" suffix reads a hash field. ok is false when there is nothing
// (no '*', missing key, wrong type, missing field).
func (c *Client) sortLookupPattern(pattern, subst []byte) ([]byte, bool) {
	if len(pattern) == 1 && pattern[0] == '#' {
		return subst, true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false
	}
	var field []byte
	keyEnd := len(pattern)
	if f := bytes.Index(pattern[star+1:], []byte("->")); f >= 0 && star+1+f+2 < len(pattern) {
		field = pattern[star+1+f+2:]
		keyEnd = star + 1 + f
	}
	key := make([]byte, 0, keyEnd+len(subst))
	key = append(key, pattern[:star]...)
	key = append(key, subst...)
	key = append(key, pattern[star+1:keyEnd]...)
	e := c.curDB().Lookup(string(key), c.now)
	if e == nil {
		return nil, false
	}
	if field != nil {
		h, ok := e.Obj.(*value.Hash)
		if !ok {
			return nil, false
		}
		return h.Get(string(field))
	}
	if e.Obj != nil {
		return nil, false
	}
	return e.Str, true
}

// sortStrtod parses a sort weight as Redis does (strtod with a full match;
// out of range and NaN are errors, the empty string is 0).
func sortStrtod(b []byte) (float64, bool) {
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
