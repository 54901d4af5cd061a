package grammar

import (
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/node/value"
)

// argv splits a command line into arguments.
func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestZAdd(t *testing.T) {
	cases := []struct {
		in    string
		flags value.ZAddFlags
		first int
		err   error
	}{
		{"zadd k 1 a", value.ZAddFlags{}, 2, nil},
		{"zadd k nx ch 1 a 2 b", value.ZAddFlags{NX: true, CH: true}, 4, nil},
		{"zadd k XX GT incr 1 a", value.ZAddFlags{XX: true, GT: true, Incr: true}, 5, nil},
		{"zadd k 1", value.ZAddFlags{}, 0, ErrSyntax},
		{"zadd k nx", value.ZAddFlags{}, 0, ErrSyntax},
		{"zadd k nx xx 1 a", value.ZAddFlags{}, 0, ErrZXXNX},
		{"zadd k gt lt 1 a", value.ZAddFlags{}, 0, ErrZGTLTNX},
		{"zadd k nx lt 1 a", value.ZAddFlags{}, 0, ErrZGTLTNX},
		{"zadd k incr 1 a 2 b", value.ZAddFlags{}, 0, ErrZIncrPairs},
		{"zadd k 1 a nx", value.ZAddFlags{}, 0, ErrSyntax}, // options only lead
	}
	for _, tc := range cases {
		f, first, err := ZAdd(argv(tc.in), false)
		if err != tc.err || (err == nil && (f != tc.flags || first != tc.first)) {
			t.Errorf("ZAdd(%q) = %+v %d %v; want %+v %d %v", tc.in, f, first, err, tc.flags, tc.first, tc.err)
		}
	}
	if f, _, err := ZAdd(argv("zincrby k 1 a"), true); err != nil || !f.Incr {
		t.Errorf("ZINCRBY: %+v %v", f, err)
	}
	scores := make([]float64, 2)
	if err := Scores(scores, argv("1.5 a x b")); err != ErrNotFloat {
		t.Errorf("Scores with a bad score: %v", err)
	}
	if err := Scores(scores, argv("1.5 a -2 b")); err != nil || scores[0] != 1.5 || scores[1] != -2 {
		t.Errorf("Scores = %v %v", scores, err)
	}
}

func TestZAddAllocatesNothing(t *testing.T) {
	args := argv("zadd k 0 member")
	var buf [8]float64
	n := testing.AllocsPerRun(100, func() {
		_, first, err := ZAdd(args, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := Scores(buf[:1], args[first:]); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("ZAdd+Scores allocate %v times", n)
	}
}

func TestParseZRange(t *testing.T) {
	cases := []struct {
		in     string
		keyIdx int
		by     RangeBy
		dir    Dir
		want   ZRange
		err    error
	}{
		{"zrange k 0 -1", 1, ByAuto, DirAuto, ZRange{By: ByRank, Start: 0, End: -1, Limit: -1}, nil},
		{"zrange k 0 -1 rev withscores", 1, ByAuto, DirAuto, ZRange{By: ByRank, Rev: true, WithScores: true, End: -1, Limit: -1}, nil},
		{"zrange k (1 5 byscore limit 1 2", 1, ByAuto, DirAuto, ZRange{By: ByScore, Offset: 1, Limit: 2, Score: value.ScoreRange{Min: 1, MinEx: true, Max: 5}}, nil},
		{"zrange k 5 1 byscore rev", 1, ByAuto, DirAuto, ZRange{By: ByScore, Rev: true, Limit: -1, Score: value.ScoreRange{Min: 1, Max: 5}}, nil},
		{"zrange k [a + bylex", 1, ByAuto, DirAuto, ZRange{By: ByLex, Limit: -1, Lex: value.LexRange{Min: value.LexBound{S: "a"}, Max: value.LexBound{Inf: 1}}}, nil},
		{"zrange k 0 1 limit 0 1", 1, ByAuto, DirAuto, ZRange{}, ErrZLimitRank},
		{"zrange k - + bylex withscores", 1, ByAuto, DirAuto, ZRange{}, ErrZWithScoreLex},
		{"zrange k 0 1 byscore bylex", 1, ByAuto, DirAuto, ZRange{}, ErrSyntax},
		{"zrange k 0 1 limit x 1", 1, ByAuto, DirAuto, ZRange{}, ErrNotInt},
		{"zrange k 0 1 limit 1", 1, ByAuto, DirAuto, ZRange{}, ErrSyntax},
		{"zrange k a 1", 1, ByAuto, DirAuto, ZRange{}, ErrNotInt},
		{"zrange k a 1 byscore", 1, ByAuto, DirAuto, ZRange{}, ErrZMinMaxFloat},
		{"zrangestore d k 0 1 withscores", 2, ByAuto, DirAuto, ZRange{}, ErrSyntax},
		{"zrevrange k 0 1 rev", 1, ByRank, DirReverse, ZRange{}, ErrSyntax},
		{"zrangebyscore k 1 2 byscore", 1, ByScore, DirForward, ZRange{}, ErrSyntax},
		{"zrevrangebylex k + - limit 0 5", 1, ByLex, DirReverse, ZRange{By: ByLex, Rev: true, Limit: 5, Lex: value.LexRange{Min: value.LexBound{Inf: -1}, Max: value.LexBound{Inf: 1}}}, nil},
	}
	for _, tc := range cases {
		r, err := ParseZRange(argv(tc.in), tc.keyIdx, tc.keyIdx == 2, tc.by, tc.dir)
		if err != tc.err || (err == nil && r != tc.want) {
			t.Errorf("ParseZRange(%q) = %+v, %v; want %+v, %v", tc.in, r, err, tc.want, tc.err)
		}
	}
}

// zsetOf builds a sorted set from "score member ..." pairs.
func zsetOf(pairs string) *value.ZSet {
	z := value.NewZSet()
	f := strings.Fields(pairs)
	for i := 0; i+1 < len(f); i += 2 {
		s, _ := Score([]byte(f[i]))
		z.Add(f[i+1], s)
	}
	return z
}

func TestZRangeEach(t *testing.T) {
	z := zsetOf("1 a 2 b 3 c 4 d 5 e")
	cases := []struct{ in, want string }{
		{"zrange k 0 -1", "a b c d e"},
		{"zrange k 1 2 rev", "d c"},
		{"zrange k -100 100", "a b c d e"},
		{"zrange k 3 1", ""},
		{"zrange k (1 4 byscore", "b c d"},
		{"zrange k (1 4 byscore limit 1 1", "c"},
		{"zrange k 4 (1 byscore rev limit 1 -1", "c b"},
		{"zrange k 1 5 byscore limit 5 1", ""},
		{"zrange k 1 5 byscore limit -1 1", ""},
		{"zrange k - + bylex limit 0 2", "a b"},
	}
	for _, tc := range cases {
		r, err := ParseZRange(argv(tc.in), 1, false, ByAuto, DirAuto)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		var got []string
		r.Each(z, func(m string, _ float64) bool { got = append(got, m); return true })
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%q selects %q, want %q", tc.in, g, tc.want)
		}
	}
}

func TestSpan(t *testing.T) {
	z := zsetOf("1 a 2 b 3 c")
	cases := []struct {
		by       RangeBy
		min, max string
		lo, hi   int
	}{
		{ByRank, "0", "-1", 0, 3},
		{ByRank, "-2", "10", 1, 3},
		{ByRank, "2", "1", 0, 0},
		{ByScore, "(1", "3", 1, 3},
		{ByScore, "5", "1", 3, 3}, // empty: [lo, lo)
		{ByLex, "[b", "+", 1, 3},
	}
	for _, tc := range cases {
		s, err := Span(tc.by, []byte(tc.min), []byte(tc.max))
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi := s.Bounds(z); lo != tc.lo || hi != tc.hi {
			t.Errorf("Span(%d, %s, %s) = [%d, %d), want [%d, %d)", tc.by, tc.min, tc.max, lo, hi, tc.lo, tc.hi)
		}
	}
	if _, err := Span(ByRank, []byte("x"), []byte("1")); err != ErrNotInt {
		t.Errorf("rank span with a bad start: %v", err)
	}
}

func TestParseZOpOptions(t *testing.T) {
	cases := []struct {
		opts        string
		op          ZOp
		store, card bool
		want        ZOpOptions
		weights     []float64
		err         error
	}{
		{"", ZOpUnion, false, false, ZOpOptions{}, []float64{1, 1}, nil},
		{"weights 2 3 aggregate max withscores", ZOpUnion, false, false, ZOpOptions{Aggregate: value.AggregateMax, WithScores: true}, []float64{2, 3}, nil},
		{"aggregate MIN", ZOpInter, true, false, ZOpOptions{Aggregate: value.AggregateMin}, []float64{1, 1}, nil},
		{"weights 2", ZOpUnion, false, false, ZOpOptions{}, nil, ErrSyntax},
		{"weights 2 x", ZOpUnion, false, false, ZOpOptions{}, nil, ErrZWeightFloat},
		{"aggregate avg", ZOpUnion, false, false, ZOpOptions{}, nil, ErrSyntax},
		{"withscores", ZOpUnion, true, false, ZOpOptions{}, nil, ErrSyntax},
		{"weights 1 1", ZOpDiff, false, false, ZOpOptions{}, nil, ErrSyntax},
		{"limit 5", ZOpInter, false, true, ZOpOptions{Limit: 5}, []float64{1, 1}, nil},
		{"limit -1", ZOpInter, false, true, ZOpOptions{}, nil, ErrLimitNeg},
		{"withscores", ZOpInter, false, true, ZOpOptions{}, nil, ErrSyntax},
	}
	for _, tc := range cases {
		srcs := []value.ZSource{{Weight: 1}, {Weight: 1}}
		o, err := ParseZOpOptions(argv(tc.opts), srcs, tc.op, tc.store, tc.card)
		if err != tc.err || (err == nil && o != tc.want) {
			t.Errorf("ParseZOpOptions(%q) = %+v, %v; want %+v, %v", tc.opts, o, err, tc.want, tc.err)
			continue
		}
		for i, w := range tc.weights {
			if srcs[i].Weight != w {
				t.Errorf("%q: weight %d = %v, want %v", tc.opts, i, srcs[i].Weight, w)
			}
		}
	}
}

func TestNumKeys(t *testing.T) {
	if _, err := NumKeys([]byte("0"), "zunion", 3); err == nil || err.Error() != "ERR at least 1 input key is needed for 'zunion' command" {
		t.Errorf("numkeys 0: %v", err)
	}
	if _, err := NumKeys([]byte("4"), "zunion", 3); err != ErrSyntax {
		t.Errorf("numkeys past the arguments: %v", err)
	}
	if _, err := NumKeys([]byte("x"), "zunion", 3); err != ErrNotInt {
		t.Errorf("numkeys not a number: %v", err)
	}
	if n, err := NumKeys([]byte("3"), "zunion", 3); n != 3 || err != nil {
		t.Errorf("numkeys 3: %d %v", n, err)
	}
}

// FuzzParseZRange: no input makes the parser panic, and a request it
// accepts walks any sorted set without panicking.
func FuzzParseZRange(f *testing.F) {
	for _, s := range []string{"zrange k 0 -1", "zrange k (1 5 byscore limit 1 2 rev", "zrange k [a + bylex limit 0 -1", "zrange k 0 1 limit 9223372036854775807 9223372036854775807 byscore"} {
		f.Add(s)
	}
	z := zsetOf("1 a 2 b 3 c 4 d 5 e")
	f.Fuzz(func(t *testing.T, s string) {
		args := argv(s)
		if len(args) < 4 {
			return
		}
		r, err := ParseZRange(args, 1, false, ByAuto, DirAuto)
		if err != nil {
			return
		}
		n := 0
		r.Each(z, func(string, float64) bool { n++; return true })
		if n > z.Len() {
			t.Fatalf("%q selected %d of %d members", s, n, z.Len())
		}
	})
}
