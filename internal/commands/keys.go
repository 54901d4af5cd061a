// Package commands is Redis 7.0.15's command metadata that more than one
// part of shardis needs, generated from Redis's src/commands/*.json by
// scripts/gen-keyspecs.py: where each command's keys are (its key specs),
// the ACL categories it declares and its command tips. The node answers
// COMMAND INFO and COMMAND GETKEYSANDFLAGS from it; client/shardedpool
// finds the keys it routes by with KeyPositions.
package commands

import (
	"strconv"
	"strings"
)

// KeySpec is one of a command's key specs as Redis 7.0 declares them: the
// key flags, and how the spec finds its keys (begin search by index or
// keyword, then a range or a numkeys argument).
type KeySpec struct {
	Flags string // as Redis prints them: "RW access delete"
	Notes string // the spec's notes, "" if none

	Pos       int    // begin search: index
	Keyword   string // begin search: keyword
	StartFrom int    // where the keyword search starts (negative: from the end, backwards)
	Unknown   bool   // begin search not declared (found by the command's own code)

	UnknownKeys bool // find keys not declared
	KeyNum      bool // find keys: numkeys argument (else a range)
	LastKey     int  // range: last key relative to the first (negative: from the end)
	Limit       int  // range: with LastKey -1, only 1/Limit of the remaining args
	KeyNumIdx   int  // keynum: index of numkeys relative to the begin
	FirstKey    int  // keynum: first key relative to the begin
	Step        int  // distance between two keys
}

// NotKey reports whether the spec's "keys" are not keys (SPUBLISH's
// shard channel): Redis leaves them out of a command's keys.
func (ks *KeySpec) NotKey() bool { return hasFlag(ks.Flags, "not_key") }

// Incomplete reports whether the spec may miss keys that only the
// command's own code finds.
func (ks *KeySpec) Incomplete() bool { return hasFlag(ks.Flags, "incomplete") }

func hasFlag(flags, f string) bool {
	for _, x := range strings.Fields(flags) {
		if x == f {
			return true
		}
	}
	return false
}

// Arg is a command argument: the node has []byte, a client string.
type Arg interface{ ~string | ~[]byte }

// Begin finds where the spec's keys start in args (args[0] is the command
// name), 0 when it cannot say: an unknown begin search, or a keyword that
// is not there. A keyword search forward stops before the last argument
// and a backward one before the first, as Redis's getKeysUsingKeySpecs.
func Begin[S Arg](ks *KeySpec, args []S) int {
	switch {
	case ks.Unknown:
		return 0
	case ks.Keyword == "":
		return ks.Pos
	case ks.StartFrom > 0:
		for i := ks.StartFrom; i < len(args)-1; i++ {
			if strings.EqualFold(string(args[i]), ks.Keyword) {
				return i + 1
			}
		}
	default:
		for i := len(args) + ks.StartFrom; i > 1 && i < len(args); i-- {
			if strings.EqualFold(string(args[i]), ks.Keyword) {
				return i + 1
			}
		}
	}
	return 0
}

// Covers reports whether the argument at position p of args is one of the
// keys the spec finds.
func Covers[S Arg](ks *KeySpec, args []S, p int) bool {
	b := Begin(ks, args)
	if b <= 0 || p < b || ks.UnknownKeys {
		return false
	}
	step := max(ks.Step, 1)
	if ks.KeyNum {
		idx := b + ks.KeyNumIdx
		if idx >= len(args) {
			return false
		}
		n, ok := parseInt(string(args[idx]))
		first := b + ks.FirstKey
		return ok && p >= first && int64(p) < int64(first)+n*int64(step) && (p-first)%step == 0
	}
	last := b + ks.LastKey
	if ks.LastKey < 0 {
		last = len(args) + ks.LastKey
	}
	return p <= last && (p-b)%step == 0
}

// span returns the first and last key position the spec finds in args,
// and false when the spec cannot say (Redis's "invalid spec": unknown,
// a bad numkeys, or positions outside args).
func span[S Arg](ks *KeySpec, args []S) (first, last int, ok bool) {
	if ks.Unknown || ks.UnknownKeys {
		return 0, 0, false
	}
	first = Begin(ks, args)
	if first == 0 {
		return 0, -1, true // keyword absent: the spec finds no key
	}
	if ks.KeyNum {
		idx := first + ks.KeyNumIdx
		if idx >= len(args) {
			return 0, 0, false
		}
		n, ok := parseInt(string(args[idx]))
		if !ok || n < 0 || n > int64(len(args)) {
			return 0, 0, false
		}
		first += ks.FirstKey
		last = first + int(n) - 1
	} else {
		switch {
		case ks.LastKey >= 0:
			last = first + ks.LastKey
		case ks.Limit == 0:
			last = len(args) + ks.LastKey
		default:
			last = first + (len(args)-first)/ks.Limit + ks.LastKey
		}
	}
	if last >= len(args) || last < first || first >= len(args) {
		return 0, 0, false // numkeys 0 included, as Redis
	}
	return first, last, true
}

// Lookup returns the metadata row of a call: the key specs of args[0]
// (or of "args[0]|args[1]" for a container command such as OBJECT), and
// whether Redis 7.0 has such a command at all.
func Lookup[S Arg](args []S) (name string, specs []KeySpec, known bool) {
	if len(args) == 0 {
		return "", nil, false
	}
	name = strings.ToLower(string(args[0]))
	if specs, ok := KeySpecs[name]; ok {
		return name, specs, true
	}
	if len(args) > 1 {
		full := name + "|" + strings.ToLower(string(args[1]))
		if _, ok := ACLCategories[full]; ok {
			return full, KeySpecs[full], true
		}
	}
	_, known = ACLCategories[name]
	return name, nil, known
}

// KeyPositions returns the positions of the keys in a call of a Redis 7.0
// command (args[0] is its name), as Redis's getKeysFromCommandWithSpecs
// finds them: from the key specs when they all apply, else from the
// command's own key finder (SORT's STORE, MIGRATE's KEYS). known is false
// for a command Redis 7.0 does not have. A call whose keys cannot be
// found (a bad numkeys) has none.
func KeyPositions[S Arg](args []S) (pos []int, known bool) {
	name, specs, known := Lookup(args)
	if !known {
		return nil, false
	}
	for i := range specs {
		ks := &specs[i]
		if ks.NotKey() {
			continue
		}
		first, last, ok := span(ks, args)
		if !ok || ks.Incomplete() {
			return ownKeys(name, args), true
		}
		for p := first; p <= last; p += max(ks.Step, 1) {
			pos = append(pos, p)
		}
	}
	return pos, true
}

// ownKeys finds the keys of the commands whose key specs are incomplete,
// as their own code does (Redis's getkeys_proc).
func ownKeys[S Arg](name string, args []S) []int {
	switch name {
	case "sort":
		// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...]
		// [ASC|DESC] [ALPHA] [STORE destination]: the last STORE counts.
		if len(args) < 2 {
			return nil
		}
		pos, store := []int{1}, 0
		for i := 2; i < len(args); i++ {
			switch a := string(args[i]); {
			case strings.EqualFold(a, "limit"):
				i += 2
			case strings.EqualFold(a, "get"), strings.EqualFold(a, "by"):
				i++
			case strings.EqualFold(a, "store") && i+1 < len(args):
				store = i + 1
			}
		}
		if store > 0 {
			pos = append(pos, store)
		}
		return pos
	case "sort_ro":
		if len(args) < 2 {
			return nil
		}
		return []int{1}
	case "migrate":
		// MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw]
		// [AUTH2 user pw] [KEYS key ...]
		if len(args) < 4 {
			return nil
		}
		for i := 6; i < len(args); i++ {
			switch a := string(args[i]); {
			case strings.EqualFold(a, "keys"):
				if len(args[3]) > 0 {
					return nil // a syntax error MIGRATE reports
				}
				pos := make([]int, 0, len(args)-i-1)
				for p := i + 1; p < len(args); p++ {
					pos = append(pos, p)
				}
				return pos
			case strings.EqualFold(a, "auth"):
				i++
			case strings.EqualFold(a, "auth2"):
				i += 2
			}
		}
		return []int{3}
	}
	return nil
}

// parseInt parses an integer argument as Redis's string2ll: no sign '+',
// no leading zeros, no spaces.
func parseInt(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if s[0] == '+' || (len(s) > 1 && s[0] == '0') || (len(s) > 1 && s[0] == '-' && s[1] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
