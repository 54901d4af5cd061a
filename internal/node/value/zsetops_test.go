package value

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// zs builds a sorted set (small, or large with large=true) from
// member/score pairs.
func zs(large bool, kv ...any) *ZSet {
	z := NewZSet()
	if large {
		z = NewZSetLarge()
	}
	for i := 0; i < len(kv); i += 2 {
		z.Add(kv[i].(string), float64(kv[i+1].(int)))
	}
	return z
}

// dump renders z as "member:score ...".
func dump(z *ZSet) string {
	var b []string
	z.ForEach(func(m string, s float64) bool {
		b = append(b, m+":"+fmtScore(s))
		return true
	})
	return strings.Join(b, " ")
}

// fmtScore renders a score as Redis does: "inf", "-inf", or the shortest
// decimal.
func fmtScore(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "inf"
	case math.IsInf(s, -1):
		return "-inf"
	}
	return strconv.FormatFloat(s, 'f', -1, 64)
}

func setOf(ms ...string) *Set {
	s := NewSet()
	for _, m := range ms {
		s.Add(m)
	}
	return s
}

func TestZSetAlgebra(t *testing.T) {
	for _, large := range []bool{false, true} {
		a := zs(large, "a", 1, "b", 2, "c", 3)
		b := zs(large, "b", 10, "c", 20, "d", 30)
		s := setOf("c", "x")
		cases := []struct {
			name string
			got  *ZSet
			want string
		}{
			{"union sum", ZUnion([]ZSource{{ZSet: a, Weight: 1}, {ZSet: b, Weight: 1}}, AggregateSum), "a:1 b:12 c:23 d:30"},
			{"union weights max", ZUnion([]ZSource{{ZSet: a, Weight: 2}, {ZSet: b, Weight: 0.5}}, AggregateMax), "a:2 b:5 c:10 d:15"},
			{"union with a set", ZUnion([]ZSource{{ZSet: a, Weight: 1}, {Set: s, Weight: 1}}, AggregateMin), "a:1 c:1 x:1 b:2"},
			{"union with a missing key", ZUnion([]ZSource{{ZSet: a, Weight: 1}, {Weight: 1}}, AggregateSum), "a:1 b:2 c:3"},
			{"inter sum", ZInter([]ZSource{{ZSet: a, Weight: 1}, {ZSet: b, Weight: 1}}, AggregateSum), "b:12 c:23"},
			{"inter min with a set", ZInter([]ZSource{{ZSet: b, Weight: 1}, {Set: s, Weight: 1}}, AggregateMin), "c:1"},
			{"inter with a missing key", ZInter([]ZSource{{ZSet: a, Weight: 1}, {Weight: 1}}, AggregateSum), ""},
			{"diff", ZDiff([]ZSource{{ZSet: a, Weight: 7}, {ZSet: b, Weight: 1}}), "a:1"},
			{"diff with a set", ZDiff([]ZSource{{ZSet: b, Weight: 1}, {Set: s, Weight: 1}}), "b:10 d:30"},
			// inf * 0 and inf + -inf are NaN, which Redis makes 0.
			{"nan weight", ZUnion([]ZSource{{ZSet: zs(large, "m", 0), Weight: math.Inf(1)}}, AggregateSum), "m:0"},
		}
		for _, tc := range cases {
			if g := dump(tc.got); g != tc.want {
				t.Errorf("large=%v %s = %q, want %q", large, tc.name, g, tc.want)
			}
		}
		inf := zs(large, "m", 0)
		inf.Add("m", math.Inf(1))
		ninf := zs(large, "m", 0)
		ninf.Add("m", math.Inf(-1))
		if g := dump(ZInter([]ZSource{{ZSet: inf, Weight: 1}, {ZSet: ninf, Weight: 1}}, AggregateSum)); g != "m:0" {
			t.Errorf("inf + -inf = %q, want m:0", g)
		}
		for limit, want := range map[int64]int64{0: 2, 1: 1, 2: 2, 5: 2} {
			if n := ZInterCard([]ZSource{{ZSet: a, Weight: 1}, {ZSet: b, Weight: 1}}, limit); n != want {
				t.Errorf("ZInterCard limit %d = %d, want %d", limit, n, want)
			}
		}
	}
}

func TestZAddPairs(t *testing.T) {
	pairs := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	cases := []struct {
		f      ZAddFlags
		scores []float64
		pairs  string
		want   ZAddResult
		after  string
	}{
		{ZAddFlags{}, []float64{5, 9}, "5 a 9 z", ZAddResult{Added: 1, Updated: 1, Processed: 2, Score: 9}, "b:2 c:3 a:5 z:9"},
		{ZAddFlags{NX: true}, []float64{5, 9}, "5 a 9 z", ZAddResult{Added: 1, Processed: 1, Score: 9}, "a:1 b:2 c:3 z:9"},
		{ZAddFlags{XX: true}, []float64{5, 9}, "5 a 9 z", ZAddResult{Updated: 1, Processed: 1, Score: 5}, "b:2 c:3 a:5"},
		{ZAddFlags{GT: true}, []float64{0, 4}, "0 a 4 b", ZAddResult{Updated: 1, Processed: 1, Score: 4}, "a:1 c:3 b:4"},
		{ZAddFlags{LT: true}, []float64{0, 4}, "0 a 4 b", ZAddResult{Updated: 1, Processed: 1, Score: 0}, "a:0 b:2 c:3"},
		{ZAddFlags{Incr: true}, []float64{10}, "10 b", ZAddResult{Updated: 1, Processed: 1, Score: 12}, "a:1 c:3 b:12"},
		{ZAddFlags{}, []float64{1}, "1 a", ZAddResult{Processed: 1, Score: 1}, "a:1 b:2 c:3"},
	}
	for _, large := range []bool{false, true} {
		for i, tc := range cases {
			z := zs(large, "a", 1, "b", 2, "c", 3)
			r := z.ZAddPairs(tc.f, tc.scores, pairs(tc.pairs), ZSetLimits{Entries: 128, Value: 64})
			if r != tc.want || dump(z) != tc.after {
				t.Errorf("large=%v case %d: %+v %q, want %+v %q", large, i, r, dump(z), tc.want, tc.after)
			}
		}
		z := zs(large, "a", 0)
		z.Add("a", math.Inf(1))
		if r := z.ZAddPairs(ZAddFlags{Incr: true}, []float64{math.Inf(-1)}, pairs("x a"), defaultZSetLimits); !r.NaN {
			t.Errorf("large=%v: inf + -inf not reported as NaN: %+v", large, r)
		}
	}
}

func TestZSetRanges(t *testing.T) {
	z := zs(false, "a", 1, "b", 2, "c", 3, "d", 4)
	collect := func(f func(fn func(string, float64) bool)) string {
		var out []string
		f(func(m string, _ float64) bool { out = append(out, m); return true })
		return strings.Join(out, " ")
	}
	if g := collect(func(fn func(string, float64) bool) { z.RangeRank(-2, -1, false, fn) }); g != "c d" {
		t.Errorf("RangeRank(-2, -1) = %q", g)
	}
	if g := collect(func(fn func(string, float64) bool) { z.RangeRank(0, 1, true, fn) }); g != "d c" {
		t.Errorf("RangeRank(0, 1, rev) = %q", g)
	}
	if g := collect(func(fn func(string, float64) bool) { z.RangeWindow(1, 4, 1, 1, true, fn) }); g != "c" {
		t.Errorf("RangeWindow(1, 4, offset 1, limit 1, rev) = %q", g)
	}
	if g := collect(func(fn func(string, float64) bool) { z.RangeWindow(0, 4, 4, -1, false, fn) }); g != "" {
		t.Errorf("RangeWindow past the end = %q", g)
	}
	for _, tc := range []struct {
		start, end int64
		n          int
		lo, hi     int
		ok         bool
	}{
		{0, -1, 4, 0, 3, true}, {-100, 100, 4, 0, 3, true}, {2, 1, 4, 0, 0, false}, {4, 5, 4, 0, 0, false}, {0, 0, 0, 0, 0, false},
	} {
		lo, hi, ok := ClampRange(tc.start, tc.end, tc.n)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("ClampRange(%d, %d, %d) = %d %d %v", tc.start, tc.end, tc.n, lo, hi, ok)
		}
	}
	if g := dump(FromItems(z.Items(), ZSetLimits{Entries: 2, Value: 64})); g != dump(z) {
		t.Errorf("FromItems(Items) = %q", g)
	}
	if FromItems(z.Items(), ZSetLimits{Entries: 2, Value: 64}).IsSmall() {
		t.Error("FromItems past the entries limit is small")
	}
}
