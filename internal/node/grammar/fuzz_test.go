package grammar

import (
	"testing"

	"github.com/shardis/shardis/internal/node/value"
)

// FuzzParsers feeds every parser of the package argument lists of the
// lengths the command table's arity lets through (the dispatcher rejects
// shorter ones before a handler runs): none may panic, and what an
// accepted request names stays within its arguments.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{
		"zadd k nx ch 1 a 2 b", "lmpop 2 a b left count 3", "sintercard 2 a b limit 1",
		"hrandfield h -5 withvalues", "lpos k e rank -1 count 0 maxlen 9", "zunion 2 a b weights 1 2 aggregate max",
		"x 0 match * count 5", "zrange k (1 +inf byscore rev limit 0 -1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := argv(s)
		if len(args) >= 4 {
			if _, first, err := ZAdd(args, false); err == nil {
				pairs := args[first:]
				if len(pairs) == 0 || len(pairs)%2 != 0 {
					t.Fatalf("%q: ZAdd accepted %d pair arguments", s, len(pairs))
				}
				_ = Scores(make([]float64, len(pairs)/2), pairs)
			}
			if _, err := ParseZRange(args, 1, false, ByAuto, DirAuto); err != nil && err.Error() == "" {
				t.Fatal("empty error text")
			}
			if len(args) >= 5 {
				_, _ = ParseZRange(args, 2, true, ByAuto, DirAuto)
			}
			if o, err := ParseMPop(args, 1, "left", "right"); err == nil && len(o.Keys) >= len(args) {
				t.Fatalf("%q: %d keys of %d arguments", s, len(o.Keys), len(args))
			}
		}
		if len(args) >= 3 {
			_, _, _ = RandCount(args, "withvalues")
			if o, err := ParseInterCard(args); err == nil && len(o.Keys) > len(args)-2 {
				t.Fatalf("%q: %d keys", s, len(o.Keys))
			}
			_, _ = ParseLPos(args[3:])
			if n, err := NumKeys(args[1], "zunion", len(args)-2); err == nil {
				srcs := make([]value.ZSource, n)
				_, _ = ParseZOpOptions(args[2+n:], srcs, ZOpUnion, false, false)
				_, _ = ParseZOpOptions(args[2+n:], srcs, ZOpInter, true, true)
			}
			for _, p := range [][]int{NumKeysAt(1)(args), NumKeysUpTo(2, 1)(args)} {
				for _, i := range p {
					if i < 0 || i >= len(args) {
						t.Fatalf("%q: key position %d of %d arguments", s, i, len(args))
					}
				}
			}
		}
		if len(args) >= 1 {
			_, _ = ParseScan(args)
		}
	})
}
