package hll

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// TestHashVectors pins MurmurHash64A on a few inputs whose registers and
// counts redis-server agrees with (TestMatchesRedis compares the bytes).
func TestHashVectors(t *testing.T) {
	if h := Hash(nil, 0); h != 0 {
		t.Fatalf("Hash(empty, 0) = %#x, want 0", h)
	}
	// Every tail length goes through its own case.
	seen := map[uint64]bool{}
	for n := 0; n <= 17; n++ {
		h := Hash(bytes.Repeat([]byte{'a'}, n), 0xadc83b19)
		if seen[h] {
			t.Fatalf("collision at length %d", n)
		}
		seen[h] = true
	}
}

func TestDenseRegisters(t *testing.T) {
	b, err := ToDense(New())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	want := make([]uint8, Registers)
	for i := range want {
		want[i] = uint8(rng.IntN(64))
		setReg(b[HeaderSize:], i, want[i])
	}
	for i := range want {
		if got := getReg(b[HeaderSize:], i); got != want[i] {
			t.Fatalf("register %d = %d, want %d", i, got, want[i])
		}
	}
}

// TestSparseEditsMatchRedisOrderRules checks the case where Redis's in-place
// edit and a canonical re-encoding differ: runs 0-1 and 3-5 of one value
// joined by setting register 2 give VAL:3 VAL:3, not VAL:4 VAL:2.
func TestSparseEditsMatchRedisOrderRules(t *testing.T) {
	b := New()
	var err error
	for _, i := range []int{0, 1, 3, 4, 5, 2} {
		if b, _, err = Set(b, i, 3, 3000); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := Decode(b)
	if want := "v:3,3 v:3,3 Z:16378"; got != want {
		t.Fatalf("decode %q, want %q", got, want)
	}
}

// TestMatchesRedis adds the same elements to redis-server and to this
// package, in the same order, and compares the stored bytes (sparse edits,
// promotion to dense, cached cardinalities) and PFCOUNT/PFMERGE results.
func TestMatchesRedis(t *testing.T) {
	p := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: p.Addr})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(7, 11))
	const maxBytes = 3000
	ours := map[string][]byte{}
	for round := 0; round < 12; round++ {
		key := fmt.Sprintf("h%d", round%4)
		if ours[key] == nil {
			ours[key] = New()
		}
		n := 64 << (round / 2) // 64 .. 2048 elements a round
		elems := make([]interface{}, n)
		for i := range elems {
			elems[i] = fmt.Sprintf("e%d", rng.IntN(50000))
		}
		changedAny := false
		for _, e := range elems {
			var ch bool
			var err error
			ours[key], ch, err = Add(ours[key], []byte(e.(string)), maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			changedAny = changedAny || ch
		}
		got, err := rc.PFAdd(ctx, key, elems...).Result()
		if err != nil {
			t.Fatal(err)
		}
		if (got == 1) != (changedAny || round < 4) {
			t.Fatalf("round %d: redis PFADD %d, ours changed %v", round, got, changedAny)
		}
		theirs, _ := rc.Get(ctx, key).Bytes()
		if !bytes.Equal(theirs, ours[key]) {
			t.Fatalf("round %d key %s (%d elements): bytes differ: redis %d bytes enc %d, ours %d bytes enc %d",
				round, key, n, len(theirs), theirs[4], len(ours[key]), ours[key][4])
		}
		card, _ := rc.PFCount(ctx, key).Result()
		mine, err := Count(ours[key])
		if err != nil || uint64(card) != mine {
			t.Fatalf("round %d: PFCOUNT redis %d, ours %d (%v)", round, card, mine, err)
		}
		SetCached(ours[key], mine)
		theirs, _ = rc.Get(ctx, key).Bytes()
		if !bytes.Equal(theirs, ours[key]) {
			t.Fatalf("round %d: bytes after PFCOUNT's cache differ", round)
		}
	}
	encodings := ""
	for _, k := range []string{"h0", "h1", "h2", "h3"} {
		encodings += fmt.Sprint(ours[k][4])
	}
	if encodings == "1111" || encodings == "0000" {
		t.Fatalf("encodings %s: the rounds should leave both sparse and dense values", encodings)
	}
	// Multi-key count and merge.
	var max [Registers]uint8
	keys := []string{"h0", "h1", "h2", "h3"}
	dense := false
	for _, k := range keys {
		if err := MergeInto(&max, ours[k]); err != nil {
			t.Fatal(err)
		}
		dense = dense || !IsSparse(ours[k])
	}
	card, _ := rc.PFCount(ctx, keys...).Result()
	if uint64(card) != CountRegisters(&max) {
		t.Fatalf("PFCOUNT of 4 keys: redis %d, ours %d", card, CountRegisters(&max))
	}
	if err := rc.PFMerge(ctx, "dst", keys...).Err(); err != nil {
		t.Fatal(err)
	}
	merged, err := FromRegisters(nil, &max, dense, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	theirs, _ := rc.Get(ctx, "dst").Bytes()
	if !bytes.Equal(theirs, merged) {
		t.Fatalf("PFMERGE bytes differ: redis %d bytes, ours %d", len(theirs), len(merged))
	}
	// A small merge stays sparse and must match too.
	var small [Registers]uint8
	if err := MergeInto(&small, ours["h0"]); err != nil {
		t.Fatal(err)
	}
	rc.Del(ctx, "h9")
	rc.PFAdd(ctx, "s1", "a", "b", "c")
	rc.PFAdd(ctx, "s2", "c", "d")
	rc.PFMerge(ctx, "sm", "s1", "s2")
	var sm [Registers]uint8
	s1, _, _ := Add(New(), []byte("a"), maxBytes)
	s1, _, _ = Add(s1, []byte("b"), maxBytes)
	s1, _, _ = Add(s1, []byte("c"), maxBytes)
	s2, _, _ := Add(New(), []byte("c"), maxBytes)
	s2, _, _ = Add(s2, []byte("d"), maxBytes)
	MergeInto(&sm, s1)
	MergeInto(&sm, s2)
	smOurs, _ := FromRegisters(nil, &sm, false, maxBytes)
	if theirs, _ := rc.Get(ctx, "sm").Bytes(); !bytes.Equal(theirs, smOurs) {
		t.Fatalf("sparse PFMERGE differs:\n redis %x\n ours  %x", theirs, smOurs)
	}
}

func TestCorrupt(t *testing.T) {
	b := New()
	b = append(b, 0x00) // one extra zero register: 16385 in all
	if _, err := Count(b); err != ErrCorrupt {
		t.Fatalf("Count of a corrupt code: %v", err)
	}
	if _, _, err := Set(b, 16384-1, 5, 3000); err != nil && err != ErrCorrupt {
		t.Fatalf("Set: %v", err)
	}
	if err := Check([]byte("HYLL\x02")); err != ErrInvalid {
		t.Fatalf("Check of a short value: %v", err)
	}
	if err := Check(append([]byte("HYLL\x00\x00\x00\x00"), make([]byte, 8)...)); err != ErrInvalid {
		t.Fatalf("Check of a dense value of the wrong size: %v", err)
	}
}

func FuzzSparseSet(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 200, 201}, uint16(3000))
	f.Fuzz(func(t *testing.T, ops []byte, maxBytes uint16) {
		b := New()
		var ref [Registers]uint8
		for i := 0; i+1 < len(ops); i += 2 {
			idx := (int(ops[i])<<6 | int(ops[i+1])) % Registers
			v := ops[i+1]%40 + 1
			var err error
			if b, _, err = Set(b, idx, v, int(maxBytes)); err != nil {
				t.Fatal(err)
			}
			if v > ref[idx] {
				ref[idx] = v
			}
		}
		got, err := RegisterValues(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ref {
			if got[i] != ref[i] {
				t.Fatalf("register %d = %d, want %d", i, got[i], ref[i])
			}
		}
	})
}
