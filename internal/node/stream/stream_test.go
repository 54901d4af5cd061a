package stream

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in       string
		o        ParseOptions
		want     ID
		seqGiven bool
		err      bool
	}{
		{"1-2", ParseOptions{}, ID{1, 2}, true, false},
		{"5", ParseOptions{}, ID{5, 0}, true, false},
		{"5", ParseOptions{MissingSeq: math.MaxUint64}, ID{5, math.MaxUint64}, true, false},
		{"-", ParseOptions{}, ID{}, true, false},
		{"+", ParseOptions{}, MaxID, true, false},
		{"-", ParseOptions{Strict: true}, ID{}, false, true},
		{"5-*", ParseOptions{AllowSeqStar: true}, ID{5, 0}, false, false},
		{"5-*", ParseOptions{}, ID{}, false, true},
		{"18446744073709551615-18446744073709551615", ParseOptions{}, MaxID, true, false},
		{"18446744073709551616", ParseOptions{}, ID{}, false, true},
		{"-1", ParseOptions{}, ID{}, false, true},
		{"007-1", ParseOptions{}, ID{7, 1}, true, false}, // strtoull takes leading zeros
		{"1-x", ParseOptions{}, ID{}, false, true},
		{"", ParseOptions{}, ID{}, false, true},
		{"1-", ParseOptions{}, ID{}, false, true},
	}
	for _, c := range cases {
		id, sg, err := Parse([]byte(c.in), c.o)
		if (err != nil) != c.err || (!c.err && (id != c.want || sg != c.seqGiven)) {
			t.Errorf("Parse(%q, %+v) = %v %v %v", c.in, c.o, id, sg, err)
		}
	}
}

func TestIncrDecr(t *testing.T) {
	if id, ok := (ID{1, math.MaxUint64}).Incr(); !ok || id != (ID{2, 0}) {
		t.Fatal(id)
	}
	if _, ok := MaxID.Incr(); ok {
		t.Fatal("MaxID.Incr ok")
	}
	if id, ok := (ID{2, 0}).Decr(); !ok || id != (ID{1, math.MaxUint64}) {
		t.Fatal(id)
	}
	if _, ok := (ID{}).Decr(); ok {
		t.Fatal("0-0 Decr ok")
	}
}

func fv(kv ...string) [][]byte {
	out := make([][]byte, len(kv))
	for i, s := range kv {
		out[i] = []byte(s)
	}
	return out
}

func TestAppendIDs(t *testing.T) {
	s := New()
	if id, err := s.Append(fv("a", "1"), ID{}, false, false, 1000, DefaultLimits); err != nil || id != (ID{1000, 0}) {
		t.Fatal(id, err)
	}
	if id, _ := s.Append(fv("a", "1"), ID{}, false, false, 999, DefaultLimits); id != (ID{1000, 1}) {
		t.Fatalf("clock going back: %v", id)
	}
	if id, _ := s.Append(fv("a", "1"), ID{1000, 0}, true, false, 0, DefaultLimits); id != (ID{1000, 2}) {
		t.Fatalf("1000-*: %v", id)
	}
	if _, err := s.Append(fv("a", "1"), ID{1000, 2}, true, true, 0, DefaultLimits); err != ErrIDTooSmall {
		t.Fatalf("equal ID: %v", err)
	}
	if id, _ := s.Append(fv("a", "1"), ID{2000, 0}, true, false, 0, DefaultLimits); id != (ID{2000, 0}) {
		t.Fatalf("2000-*: %v", id)
	}
	if s.Len() != 4 || s.EntriesAdded != 4 || s.FirstID != (ID{1000, 0}) || s.LastID != (ID{2000, 0}) {
		t.Fatalf("meta %d %d %v %v", s.Len(), s.EntriesAdded, s.FirstID, s.LastID)
	}
}

// TestNodeBytes: a node's byte count is its listpack's size, so nodes
// split where Redis's do (checked against redis-server in the node's
// tests: nodes of 4 entries of 1000 bytes).
func TestNodeBytes(t *testing.T) {
	s := New()
	s.Append(fv("f", "v"), ID{1, 0}, true, true, 0, DefaultLimits)
	// lpNew: 6 header + 1 end; master: count 1, deleted 0, 1 field,
	// "f" (2 bytes + backlen), terminator 0; entry: flags, ms, seq, "v",
	// lp-count: 5 elements of 2 bytes each, "v" 3 bytes.
	want := 7 + (2 + 2 + 2 + 3 + 2) + (2 + 2 + 2 + 3 + 2)
	if got := s.nodes[0].bytes; got != want {
		t.Fatalf("bytes %d, want %d", got, want)
	}
	big := string(make([]byte, 1000))
	s = New()
	for i := 1; i <= 10; i++ {
		s.Append(fv("f", big), ID{uint64(i), 0}, true, true, 0, DefaultLimits)
	}
	var sizes []int
	for _, nd := range s.nodes {
		sizes = append(sizes, int(nd.count()))
	}
	if !slices.Equal(sizes, []int{4, 4, 2}) {
		t.Fatalf("node sizes %v", sizes)
	}
}

func TestDeleteAndTombstones(t *testing.T) {
	s := New()
	for i := 1; i <= 5; i++ {
		s.Append(fv("f", strconv.Itoa(i)), ID{uint64(i), 0}, true, true, 0, DefaultLimits)
	}
	if n := s.Delete([]ID{{1, 0}, {3, 0}, {9, 0}, {3, 0}}); n != 2 {
		t.Fatalf("deleted %d", n)
	}
	if s.FirstID != (ID{2, 0}) || s.MaxDeletedID != (ID{3, 0}) || s.Len() != 3 {
		t.Fatalf("first %v maxdel %v len %d", s.FirstID, s.MaxDeletedID, s.Len())
	}
	if !s.RangeHasTombstones(&ID{2, 0}, nil) || s.RangeHasTombstones(&ID{4, 0}, nil) {
		t.Fatal("RangeHasTombstones")
	}
	var got []ID
	s.Range(ID{}, MaxID, true, func(id ID, _ [][]byte) bool { got = append(got, id); return true })
	if !slices.Equal(got, []ID{{5, 0}, {4, 0}, {2, 0}}) {
		t.Fatalf("reverse range %v", got)
	}
	if s.EdgeID(true, false) != (ID{1, 0}) || s.EdgeID(true, true) != (ID{2, 0}) {
		t.Fatal("EdgeID")
	}
	s.Delete([]ID{{2, 0}, {4, 0}, {5, 0}})
	if s.Len() != 0 || len(s.nodes) != 0 || s.FirstID != (ID{}) {
		t.Fatalf("emptied: len %d nodes %d first %v", s.Len(), len(s.nodes), s.FirstID)
	}
}

func TestGroupsAndLag(t *testing.T) {
	s := New()
	for i := 1; i <= 3; i++ {
		s.Append(fv("f", "v"), ID{uint64(i), 0}, true, true, 0, DefaultLimits)
	}
	g := s.CreateGroup("g", ID{}, InvalidEntriesRead)
	if s.CreateGroup("g", ID{}, 0) != nil {
		t.Fatal("duplicate group created")
	}
	c := g.CreateConsumer("c", 10)
	s.AdvanceGroup(g, ID{1, 0})
	g.Deliver(ID{1, 0}, c, 10)
	if g.EntriesRead != 1 {
		t.Fatalf("entries read %d", g.EntriesRead)
	}
	if lag, ok := s.Lag(g); !ok || lag != 2 {
		t.Fatalf("lag %d %v", lag, ok)
	}
	s.Delete([]ID{{2, 0}})
	if _, ok := s.Lag(g); ok {
		t.Fatal("lag known across a tombstone")
	}
	d := g.CreateConsumer("d", 11)
	na := g.Deliver(ID{1, 0}, d, 12) // moved to d, count reset
	if na.Consumer != d || na.DeliveryCount != 1 || c.PendingCount() != 0 || d.PendingCount() != 1 {
		t.Fatal("redelivery did not move the NACK")
	}
	if !g.Ack(ID{1, 0}) || g.Ack(ID{1, 0}) || g.PendingCount() != 0 || d.PendingCount() != 0 {
		t.Fatal("Ack")
	}
	cl := s.Clone().(*Stream)
	cl.Group("g").CreateConsumer("e", 0)
	if g.NumConsumers() != 2 || cl.Group("g").NumConsumers() != 3 {
		t.Fatal("Clone shares groups")
	}
}

// TestExportImport: nodes exported as listpack elements import back to
// the same stream, tombstones and master fields included.
func TestExportImport(t *testing.T) {
	s := New()
	lim := Limits{NodeMaxBytes: 4096, NodeMaxEntries: 5}
	for i := 1; i <= 23; i++ {
		f := fv("a", strconv.Itoa(i), "b", "x")
		if i%4 == 0 {
			f = fv("other", "y")
		}
		s.Append(f, ID{uint64(i), uint64(i)}, true, true, 0, lim)
	}
	s.Delete([]ID{{2, 2}, {7, 7}, {21, 21}})
	s.Trim(TrimArgs{Strategy: TrimMaxLen, MaxLen: 18})
	checkRoundTrip(t, s)
}

func checkRoundTrip(t *testing.T, s *Stream) {
	t.Helper()
	n := New()
	s.EachNode(func(m ID, elems [][]byte) {
		if err := n.ImportNode(m, elems); err != nil {
			t.Fatalf("ImportNode: %v", err)
		}
	})
	if err := n.SetMeta(Meta{Length: s.Len(), LastID: s.LastID, FirstID: s.FirstID, MaxDeletedID: s.MaxDeletedID, EntriesAdded: s.EntriesAdded, V2: true}); err != nil {
		t.Fatal(err)
	}
	if dump(s) != dump(n) {
		t.Fatalf("round trip:\n%s\nvs\n%s", dump(s), dump(n))
	}
	for i := range s.nodes {
		if s.nodes[i].bytes != n.nodes[i].bytes {
			t.Fatalf("node %d bytes %d vs %d", i, s.nodes[i].bytes, n.nodes[i].bytes)
		}
	}
}

func dump(s *Stream) string {
	var b []byte
	s.Range(ID{}, MaxID, false, func(id ID, f [][]byte) bool {
		b = fmt.Appendf(b, "%v %q;", id, f)
		return true
	})
	return fmt.Sprintf("%s len=%d nodes=%d", b, s.Len(), len(s.nodes))
}

// modelEntry is an entry of FuzzStreamOps's reference model.
type modelEntry struct {
	id ID
	fv []string
}

// randomFields returns field/value pairs of the shapes that exercise the
// node encoding: the master fields or others, integers (listpack integer
// elements), empty strings and values longer than one varint byte.
func randomFields(r *rand.Rand, op int) []string {
	switch r.IntN(5) {
	case 0:
		return []string{"f", strconv.Itoa(op), "g", "x"}
	case 1:
		return []string{"f", "", "g", strings.Repeat("v", 100+r.IntN(300))}
	case 2:
		return []string{"h", strconv.Itoa(-op)}
	case 3:
		out := []string{}
		for i := 0; i <= r.IntN(4); i++ {
			out = append(out, "k"+strconv.Itoa(i), strconv.Itoa(r.IntN(1000)))
		}
		return out
	}
	return []string{"f", "1", "g", "18446744073709551616"}
}

// checkModel compares s with the model entry by entry: a forward and a
// reverse range over random bounds, and Get of every model entry.
func checkModel(t *testing.T, r *rand.Rand, s *Stream, model []modelEntry) {
	t.Helper()
	want := func(lo, hi ID, rev bool) string {
		var b []byte
		for i := range model {
			e := model[i]
			if rev {
				e = model[len(model)-1-i]
			}
			if !e.id.Less(lo) && !hi.Less(e.id) {
				b = fmt.Appendf(b, "%v %q;", e.id, e.fv)
			}
		}
		return string(b)
	}
	got := func(lo, hi ID, rev bool) string {
		var b []byte
		s.Range(lo, hi, rev, func(id ID, f [][]byte) bool {
			ss := make([]string, len(f))
			for i := range f {
				ss[i] = string(f[i])
			}
			b = fmt.Appendf(b, "%v %q;", id, ss)
			return true
		})
		return string(b)
	}
	bounds := [][2]ID{{ID{}, MaxID}}
	if len(model) > 0 {
		for range 3 {
			lo, hi := model[r.IntN(len(model))].id, model[r.IntN(len(model))].id
			if r.IntN(2) == 0 {
				lo.Seq++
			}
			bounds = append(bounds, [2]ID{lo, hi})
		}
	}
	for _, bd := range bounds {
		for _, rev := range []bool{false, true} {
			if w, g := want(bd[0], bd[1], rev), got(bd[0], bd[1], rev); w != g {
				t.Fatalf("range %v %v rev=%v:\n got %s\nwant %s", bd[0], bd[1], rev, g, w)
			}
		}
	}
	for _, e := range model {
		f, ok := s.Get(e.id)
		if !ok || len(f) != len(e.fv) {
			t.Fatalf("Get %v: %q %v, want %q", e.id, f, ok, e.fv)
		}
		for i := range f {
			if string(f[i]) != e.fv[i] {
				t.Fatalf("Get %v: %q, want %q", e.id, f, e.fv)
			}
		}
	}
	if uint64(len(model)) != s.Len() {
		t.Fatalf("len %d, model %d", s.Len(), len(model))
	}
	if len(model) > 0 && s.FirstID != model[0].id {
		t.Fatalf("first %v, model %v", s.FirstID, model[0].id)
	}
}

// FuzzStreamOps runs random appends, deletions and trims against a sorted
// slice model, comparing every entry's ID and fields after every
// operation; a clone taken midway must keep its own entries while the
// original changes, and both must survive an export/import round trip
// (EachNode/ImportNode) unchanged, node sizes included.
func FuzzStreamOps(f *testing.F) {
	f.Add(uint64(1), uint8(50))
	f.Add(uint64(42), uint8(255))
	f.Add(uint64(7), uint8(200))
	f.Fuzz(func(t *testing.T, seed uint64, nops uint8) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e37))
		s := New()
		lim := Limits{NodeMaxBytes: int64(64 + r.IntN(2048)), NodeMaxEntries: int64(r.IntN(8))}
		var model, cloneModel []modelEntry
		var clone *Stream
		next := uint64(1)
		for op := 0; op < int(nops); op++ {
			if op == int(nops)/2 {
				clone = s.Clone().(*Stream)
				cloneModel = slices.Clone(model)
			}
			switch r.IntN(6) {
			case 0, 1, 2:
				next += uint64(r.IntN(3))
				id := ID{next, uint64(r.IntN(3))}
				if !s.LastID.Less(id) {
					id, _ = s.LastID.Incr()
				}
				kv := randomFields(r, op)
				if _, err := s.Append(fv(kv...), id, true, true, 0, lim); err != nil {
					t.Fatal(err)
				}
				model = append(model, modelEntry{id, kv})
			case 3:
				if len(model) > 0 {
					id := model[r.IntN(len(model))].id
					if s.Delete([]ID{id, {id.Ms, id.Seq + 1000}}) != 1 {
						t.Fatalf("XDEL %v did not delete one", id)
					}
					model = slices.DeleteFunc(model, func(x modelEntry) bool { return x.id == id })
				}
			case 4:
				ml := int64(r.IntN(len(model) + 2))
				approx := r.IntN(2) == 0
				n := s.Trim(TrimArgs{Strategy: TrimMaxLen, MaxLen: ml, Approx: approx})
				if !approx && int64(len(model)) > ml {
					if n != int64(len(model))-ml {
						t.Fatalf("MAXLEN %d trimmed %d of %d", ml, n, len(model))
					}
					model = model[int64(len(model))-ml:]
				} else if approx {
					model = model[n:]
				}
			case 5:
				if len(model) > 0 {
					min := model[r.IntN(len(model))].id
					n := s.Trim(TrimArgs{Strategy: TrimMinID, MinID: min})
					model = model[n:]
					if len(model) > 0 && model[0].id.Less(min) {
						t.Fatalf("MINID left %v before %v", model[0].id, min)
					}
				}
			}
			checkModel(t, r, s, model)
		}
		if clone != nil {
			checkModel(t, r, clone, cloneModel)
			checkRoundTrip(t, clone)
		}
		checkRoundTrip(t, s)
	})
}

// FuzzImportNode: arbitrary listpack elements never panic the importer.
func FuzzImportNode(f *testing.F) {
	s := New()
	s.Append(fv("a", "1"), ID{1, 1}, true, true, 0, DefaultLimits)
	s.Append(fv("b", "2"), ID{1, 2}, true, true, 0, DefaultLimits)
	s.EachNode(func(_ ID, elems [][]byte) {
		var b []byte
		for _, e := range elems {
			b = append(b, e...)
			b = append(b, ',')
		}
		f.Add(b)
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		var elems [][]byte
		start := 0
		for i, c := range data {
			if c == ',' {
				elems = append(elems, data[start:i])
				start = i + 1
			}
		}
		n := New()
		if n.ImportNode(ID{1, 1}, elems) == nil {
			n.Range(ID{}, MaxID, false, func(ID, [][]byte) bool { return true })
			n.EachNode(func(ID, [][]byte) {})
		}
	})
}
