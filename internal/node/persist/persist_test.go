package persist

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
)

type nopObserver struct{}

func (nopObserver) Expired(int, string)    {}
func (nopObserver) Added(int, string, any) {}

var testLimits = Limits{Hash: value.HashLimits{Entries: 128, Value: 64}, ZSet: value.ZSetLimits{Entries: 128, Value: 64}, Intset: 512}

// TestDumpRestoreRoundTrip: every value type survives Dump and Restore
// with the same digest; a payload with a wrong checksum is
// rdb.ErrBadPayload, and one holding an empty collection ErrBadFormat.
func TestDumpRestoreRoundTrip(t *testing.T) {
	l := value.NewList()
	l.PushBack([]byte("a"))
	l.PushBack([]byte("b"))
	st := value.NewSet()
	st.AddB([]byte("1"), testLimits.Intset)
	st.AddB([]byte("x"), testLimits.Intset)
	z := value.NewZSet()
	z.Set("m", 1.5, testLimits.ZSet)
	h := value.NewHash()
	h.SetB([]byte("f"), []byte("v"), testLimits.Hash)
	for _, e := range []*keyspace.Entry{
		{Key: "s", Str: []byte("hello")}, {Key: "l", Obj: l}, {Key: "set", Obj: st}, {Key: "z", Obj: z}, {Key: "h", Obj: h},
	} {
		for _, compress := range []bool{false, true} {
			p := Dump(e, compress, testLimits)
			got, err := Restore(p, testLimits)
			if err != nil {
				t.Fatalf("%s: %v", e.Key, err)
			}
			if ValueDigest(got) != ValueDigest(e) {
				t.Fatalf("%s (compress %v): restored value differs", e.Key, compress)
			}
		}
	}
	p := Dump(&keyspace.Entry{Str: []byte("v")}, false, testLimits)
	p[len(p)-1] ^= 0xff
	if _, err := Restore(p, testLimits); !errors.Is(err, rdb.ErrBadPayload) {
		t.Fatalf("bad checksum: %v", err)
	}
	empty := rdb.Dump(&rdb.Value{Kind: rdb.KindList}, false, testLimits.RDB())
	if _, err := Restore(empty, testLimits); !errors.Is(err, ErrBadFormat) {
		t.Fatalf("empty list: %v", err)
	}
}

// TestDatasetDigest: an empty dataset digests to zeros; the digest does
// not depend on the order members were added, and changes with an expiry.
func TestDatasetDigest(t *testing.T) {
	ks := keyspace.NewShared(nopObserver{})
	dbs := []*keyspace.DB{keyspace.NewDB(ks, 0), keyspace.NewDB(ks, 1)}
	if DatasetDigest(dbs) != (Digest{}) {
		t.Fatal("empty dataset has a digest")
	}
	set := func(members ...string) *keyspace.Entry {
		s := value.NewSet()
		for _, m := range members {
			s.AddB([]byte(m), testLimits.Intset)
		}
		return &keyspace.Entry{Obj: s}
	}
	dbs[1].Add("k", set("a", "b", "c"))
	d1 := DatasetDigest(dbs)
	dbs[1].Remove("k")
	dbs[1].Add("k", set("c", "a", "b"))
	if DatasetDigest(dbs) != d1 || d1 == (Digest{}) {
		t.Fatal("set digest depends on insertion order")
	}
	e := set("a", "b", "c")
	e.Expire = 1 << 40
	if bytes.Equal(func() []byte { d := ValueDigest(e); return d[:] }(), func() []byte { d := ValueDigest(set("a", "b", "c")); return d[:] }()) {
		t.Fatal("an expiry does not change the value digest")
	}
}
