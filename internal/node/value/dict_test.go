package value

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestChainDictMatchesMap runs random inserts, byte-keyed upserts, removals
// (by key and by node, as SPOP) and random pops against a Go map, through
// growth and shrinking, and checks lookups, the dense array and buckets.
func TestChainDictMatchesMap(t *testing.T) {
	d := newChainDict[int](0)
	ref := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(step int) {
		t.Helper()
		if d.len() != len(ref) || len(d.dense) != len(ref) {
			t.Fatalf("step %d: len %d dense %d, want %d", step, d.len(), len(d.dense), len(ref))
		}
		inBuckets := 0
		for i, n := range d.Buckets {
			for ; n != nil; n = n.next {
				inBuckets++
				if d.BucketOf(n.Hash) != i || n.Hash != DictHash(n.Key) {
					t.Fatalf("step %d: node %q in bucket %d with hash %x", step, n.Key, i, n.Hash)
				}
				if d.dense[n.idx] != n {
					t.Fatalf("step %d: dense index of %q broken", step, n.Key)
				}
			}
		}
		if inBuckets != len(ref) {
			t.Fatalf("step %d: %d nodes in buckets, want %d", step, inBuckets, len(ref))
		}
		for k, v := range ref {
			n := d.FindBytes([]byte(k))
			if n == nil || n.Val != v {
				t.Fatalf("step %d: find %q = %v, want %d", step, k, n, v)
			}
		}
	}
	for step := 0; step < 30000; step++ {
		k := "k:" + strconv.Itoa(rng.IntN(3000))
		switch op := rng.IntN(10); {
		case op < 4 || step < 5000:
			n, isNew := d.upsertBytes([]byte(k))
			if _, had := ref[k]; had == isNew {
				t.Fatalf("step %d: upsert %q isNew=%v", step, k, isNew)
			}
			n.Val = step
			ref[k] = step
		case op < 7:
			v, ok := d.remove(k)
			want, had := ref[k]
			if ok != had || v != want {
				t.Fatalf("step %d: remove %q = %d,%v want %d,%v", step, k, v, ok, want, had)
			}
			delete(ref, k)
		default:
			if n := d.RandomNode(); n != nil {
				if _, had := ref[n.Key]; !had {
					t.Fatalf("step %d: random node %q not in the dict", step, n.Key)
				}
				d.removeNode(n)
				delete(ref, n.Key)
			}
		}
		if step%997 == 0 {
			check(step)
		}
	}
	check(-1)
	for k := range ref {
		d.remove(k)
	}
	if d.len() != 0 || len(d.Buckets) > 4 {
		t.Fatalf("emptied dict: len %d, %d buckets", d.len(), len(d.Buckets))
	}
}

// TestSkiplistUpdateScoreMoves moves members of a large sorted set to
// random scores (the node is relinked, not reallocated) and checks order,
// ranks and select-by-rank against a sorted reference.
func TestSkiplistUpdateScoreMoves(t *testing.T) {
	z := NewZSetLarge()
	ref := map[string]float64{}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		m := "m" + strconv.Itoa(i)
		s := float64(rng.IntN(500))
		z.Set(m, s, defaultZSetLimits)
		ref[m] = s
	}
	for step := 0; step < 20000; step++ {
		m := "m" + strconv.Itoa(rng.IntN(2000))
		n := z.Dict.find(m)
		s := float64(rng.IntN(500))
		if n.Val.Score != s {
			z.Zsl.UpdateScore(n.Val, s)
		}
		ref[m] = s
	}
	prevS, prevM, rank := -1.0, "", 0
	z.ForEach(func(m string, s float64) bool {
		if ref[m] != s || (rank > 0 && !Zless(prevS, prevM, s, m)) {
			t.Fatalf("rank %d: %q %v out of order or wrong score (want %v)", rank, m, s, ref[m])
		}
		if r, ok := z.Rank(m); !ok || r != rank {
			t.Fatalf("Rank(%q) = %d, want %d", m, r, rank)
		}
		if am, _ := z.At(rank); am != m {
			t.Fatalf("At(%d) = %q, want %q", rank, am, m)
		}
		prevS, prevM = s, m
		rank++
		return true
	})
	if rank != len(ref) || z.Zsl.Length != len(ref) {
		t.Fatalf("walked %d, length %d, want %d", rank, z.Zsl.Length, len(ref))
	}
}
