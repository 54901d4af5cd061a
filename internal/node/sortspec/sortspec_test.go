package sortspec

import (
	"bytes"
	"strings"
	"testing"
)

func args(s string) [][]byte { return bytes.Fields([]byte(s)) }

func TestParse(t *testing.T) {
	full := func() bool { return true }
	none := func() bool { return false }
	for _, tc := range []struct {
		opts string
		env  Env
		err  error
	}{
		{"DESC ALPHA LIMIT 0 10 BY w_* GET # GET o_* STORE dst", Env{FullKeyRead: full}, nil},
		{"LIMIT 0", Env{FullKeyRead: full}, ErrSyntax},
		{"LIMIT x 1", Env{FullKeyRead: full}, ErrNotInt},
		{"STORE dst", Env{ReadOnly: true, FullKeyRead: full}, ErrSyntax},
		{"BY w_*", Env{Cluster: true, FullKeyRead: full}, ErrByCluster},
		{"BY nosort", Env{Cluster: true, FullKeyRead: none}, nil},
		{"BY w_*", Env{FullKeyRead: none}, ErrByACL},
		{"GET #", Env{Cluster: true, FullKeyRead: full}, ErrGetCluster},
		{"GET #", Env{FullKeyRead: none}, ErrGetACL},
	} {
		if _, err := Parse(args(tc.opts), tc.env); err != tc.err {
			t.Errorf("%q: %v, want %v", tc.opts, err, tc.err)
		}
	}
	s, _ := Parse(args("desc alpha limit 1 2 by nosort get # store d"), Env{FullKeyRead: full})
	if !s.Desc || !s.Alpha || s.LimitStart != 1 || s.LimitCount != 2 || !s.DontSort || s.Store != "d" || len(s.Gets) != 1 {
		t.Errorf("%+v", s)
	}
	if got := Keys(args("SORT k LIMIT 0 1 STORE a GET x STORE b")); len(got) != 2 || got[1] != 10 {
		t.Errorf("Keys: %v", got)
	}
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		start, count, n int64
		from, to        int64
	}{
		{0, -1, 5, 0, 4}, {1, 2, 5, 1, 2}, {-3, 2, 5, 0, 1}, {4, 10, 5, 4, 4}, {7, 1, 5, 4, 3}, {0, 0, 5, 0, -1}, {0, -1, 0, -1, -2},
	} {
		s := Spec{LimitStart: tc.start, LimitCount: tc.count}
		if from, to := s.Window(tc.n); from != tc.from || to != tc.to {
			t.Errorf("LIMIT %d %d of %d: %d..%d, want %d..%d", tc.start, tc.count, tc.n, from, to, tc.from, tc.to)
		}
	}
}

func TestSubstitute(t *testing.T) {
	for _, tc := range []struct {
		pattern, elem, key, field string
		self, ok                  bool
	}{
		{"#", "e", "", "", true, true},
		{"w_*", "e", "w_e", "", false, true},
		{"h_*->f", "e", "h_e", "f", false, true},
		{"h_*->", "e", "h_e->", "", false, true},
		{"nostar", "e", "", "", false, false},
	} {
		p, ok := Substitute([]byte(tc.pattern), []byte(tc.elem))
		if ok != tc.ok || p.Self != tc.self || string(p.Key) != tc.key || string(p.Field) != tc.field {
			t.Errorf("%q: %+v %v", tc.pattern, p, ok)
		}
	}
}

func TestSort(t *testing.T) {
	vals := func(items []Item) string {
		var b []string
		for _, it := range items {
			b = append(b, string(it.Val))
		}
		return strings.Join(b, " ")
	}
	weights := map[string]string{"w_a": "3", "w_b": "1", "w_c": "2"}
	lookup := func(pattern, elem []byte) ([]byte, bool) {
		p, ok := Substitute(pattern, elem)
		if !ok {
			return nil, false
		}
		v, ok := weights[string(p.Key)]
		return []byte(v), ok
	}
	elems := args("c a b 10")
	for _, tc := range []struct {
		spec Spec
		set  bool
		want string
		err  error
	}{
		{Spec{Alpha: true}, false, "10 a b c", nil},
		{Spec{Alpha: true, Desc: true}, false, "c b a 10", nil},
		{Spec{}, false, "", ErrScore},
		{Spec{DontSort: true, Desc: true}, false, "10 b a c", nil},
		{Spec{DontSort: true, Desc: true}, true, "c a b 10", nil},
		{Spec{HasBy: true, By: []byte("w_*")}, false, "10 b c a", nil},
		{Spec{HasBy: true, By: []byte("w_*"), Alpha: true, Desc: true}, false, "a c b 10", nil},
	} {
		items, err := tc.spec.Sort(elems, tc.set, lookup)
		if err != tc.err || (err == nil && vals(items) != tc.want) {
			t.Errorf("%+v: %q, %v; want %q, %v", tc.spec, vals(items), err, tc.want, tc.err)
		}
	}
	s := Spec{DontSort: true, Store: "d"}
	if s.ForceAlpha(true, false); s.DontSort || !s.Alpha {
		t.Errorf("ForceAlpha: %+v", s)
	}
}
