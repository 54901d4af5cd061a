package grammar

import "github.com/shardis/shardis/internal/node/value"

// MPop is LMPOP/BLMPOP/ZMPOP/BZMPOP's "numkeys key [key ...] END
// [COUNT count]".
type MPop struct {
	Keys   [][]byte // the keys, views into the arguments
	Second bool     // END is the second of its two words (RIGHT, MAX)
	Count  int64    // COUNT, 1 by default
}

// ParseMPop parses MPop from args[i:], END being first or second (LEFT or
// RIGHT, MIN or MAX), as Redis's lmpopGenericCommand and
// zmpopGenericCommand do.
func ParseMPop(args [][]byte, i int, first, second string) (MPop, error) {
	var o MPop
	n, err := Int(args[i])
	if err != nil || n <= 0 {
		return o, ErrNumKeys
	}
	whereIdx := int64(i) + n + 1
	if whereIdx >= int64(len(args)) {
		return o, ErrSyntax
	}
	o.Keys = args[i+1 : whereIdx]
	if o.Second, err = OneOf(args[whereIdx], first, second); err != nil {
		return o, err
	}
	o.Count = -1
	for j := int(whereIdx) + 1; j < len(args); j++ {
		if o.Count != -1 || !eq(args[j], "count") || j+1 >= len(args) {
			return o, ErrSyntax
		}
		j++
		v, err := Int(args[j])
		if err != nil || v <= 0 {
			return o, ErrCount
		}
		o.Count = v
	}
	if o.Count == -1 {
		o.Count = 1
	}
	return o, nil
}

// InterCard is SINTERCARD's "numkeys key [key ...] [LIMIT limit]".
type InterCard struct {
	Keys  [][]byte // the keys, views into the arguments
	Limit int64    // LIMIT, 0 for none
}

// ParseInterCard parses SINTERCARD's arguments (args is the whole
// command).
func ParseInterCard(args [][]byte) (InterCard, error) {
	var o InterCard
	numkeys, err := Int(args[1])
	if err != nil || numkeys < 1 {
		return o, ErrNumKeys
	}
	if numkeys > int64(len(args)-2) {
		return o, ErrNumKeysArgs
	}
	for j := 2 + int(numkeys); j < len(args); j++ {
		if !eq(args[j], "limit") || j+1 >= len(args) {
			return o, ErrSyntax
		}
		j++
		if o.Limit, err = Limit(args[j]); err != nil {
			return o, err
		}
	}
	o.Keys = args[2 : 2+numkeys]
	return o, nil
}

// Limit parses a LIMIT of SINTERCARD/ZINTERCARD: an integer of at least
// 0, failing with ErrLimitNeg.
func Limit(b []byte) (int64, error) { return nonNegative(b, ErrLimitNeg) }

// NumKeys parses the numkeys argument of ZUNION/ZINTER/ZDIFF(STORE) and
// ZINTERCARD: at least 1 and at most avail (the arguments after it); name
// is the command's name for Redis's error text.
func NumKeys(b []byte, name string, avail int) (int, error) {
	n, err := Int(b)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, Error("ERR at least 1 input key is needed for '" + name + "' command")
	}
	if n > int64(avail) {
		return 0, ErrSyntax
	}
	return int(n), nil
}

// NumKeysAt returns the key positions of a "numkeys key [key ...]"
// command whose numkeys is args[pos] (SINTERCARD, LMPOP, EVAL ...): none
// when numkeys is malformed or larger than the arguments (the handler
// then rejects it).
func NumKeysAt(pos int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		if pos >= len(args) {
			return nil
		}
		n, ok := value.ParseInt(args[pos])
		if !ok || n <= 0 || n > int64(len(args)-pos-1) {
			return nil
		}
		keys := make([]int, n)
		for i := range keys {
			keys[i] = pos + 1 + i
		}
		return keys
	}
}

// NumKeysUpTo returns the key positions of a sorted-set command with
// numkeys at args[pos] followed by that many keys (as many as there are),
// after the fixed positions (ZUNIONSTORE's destination): only the fixed
// ones when numkeys is malformed (the handler then fails before touching
// any key).
func NumKeysUpTo(pos int, fixed ...int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		keys := append([]int(nil), fixed...)
		if pos >= len(args) {
			return keys
		}
		n, ok := value.ParseInt(args[pos])
		if !ok || n < 1 {
			return keys
		}
		for i := 0; i < int(n) && pos+1+i < len(args); i++ {
			keys = append(keys, pos+1+i)
		}
		return keys
	}
}
