package keyspace

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// A shard checked against a map through growths in progress: every key
// findable in one of the two tables, removals from either, the count.
func TestShardIncrementalRehashModel(t *testing.T) {
	var s Shard
	model := map[string]*Entry{}
	r := rand.New(rand.NewPCG(1, 2))
	sawRehash := false
	for op := 0; op < 200000; op++ {
		k := "k" + strconv.Itoa(r.IntN(20000))
		h := KeyHash(k)
		if r.IntN(3) > 0 {
			if s.find(k, h) == nil {
				e := &Entry{Key: k}
				s.insert(e, h)
				model[k] = e
			}
		} else if e := s.remove(k, h); e != model[k] {
			t.Fatalf("op %d: remove(%q) = %p, want %p", op, k, e, model[k])
		} else {
			delete(model, k)
		}
		if s.old != nil {
			sawRehash = true
		}
		if s.count != len(model) {
			t.Fatalf("op %d: count %d, model %d", op, s.count, len(model))
		}
		if op%5000 == 0 {
			for mk, me := range model {
				if got := s.find(mk, KeyHash(mk)); got != me {
					t.Fatalf("op %d: find(%q) = %p, want %p (rehashing %v)", op, mk, got, me, s.old != nil)
				}
			}
		}
	}
	if !sawRehash {
		t.Fatal("no incremental growth happened")
	}
	s.FinishRehash()
	n := 0
	for _, e := range s.buckets {
		for ; e != nil; e = e.next {
			n++
		}
	}
	if s.old != nil || n != len(model) {
		t.Fatalf("after finishRehash: old=%v, %d keys in buckets, want %d", s.old != nil, n, len(model))
	}
}

// SCAN's guarantee across a growth that starts and progresses during the
// scan: every key present for the whole scan is returned.
func TestShardScanDuringIncrementalRehash(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		var s Shard
		r := rand.New(rand.NewPCG(seed, 7))
		stable := map[string]bool{}
		for i := 0; i < 3000+r.IntN(3000); i++ {
			k := "stable:" + strconv.Itoa(i)
			s.insert(&Entry{Key: k}, KeyHash(k))
			stable[k] = true
		}
		seen := map[string]bool{}
		cursor, steps, added := uint64(0), 0, 0
		midRehash := 0
		for {
			if s.old != nil {
				midRehash++
			}
			cursor = s.Scan(cursor, func(e *Entry) { seen[e.Key] = true })
			steps++
			// Grow while scanning: enough inserts to start and advance
			// one or more growths.
			for j := r.IntN(3); j > 0 && added < 20000; j-- {
				k := "new:" + strconv.Itoa(added)
				added++
				s.insert(&Entry{Key: k}, KeyHash(k))
			}
			if cursor == 0 || steps > 1<<18 {
				break
			}
		}
		if cursor != 0 {
			t.Fatalf("seed %d: scan did not end in %d steps", seed, steps)
		}
		if midRehash == 0 {
			t.Fatalf("seed %d: no scan step ran during a growth", seed)
		}
		if added < 3000 {
			t.Fatalf("seed %d: only %d keys added: no growth during the scan", seed, added)
		}
		for k := range stable {
			if !seen[k] {
				t.Fatalf("seed %d: %q present for the whole scan but not returned (%d steps, %d added)", seed, k, steps, added)
			}
		}
	}
}
