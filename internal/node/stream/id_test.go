package stream

import (
	"math"
	"strconv"
	"testing"
)

// TestIDAppend: Append writes what strconv writes, at every digit count
// and at the extremes, after whatever b held.
func TestIDAppend(t *testing.T) {
	vals := []uint64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1733228553123, math.MaxUint64 - 1, math.MaxUint64}
	for p := uint64(1); p < math.MaxUint64/10; p *= 10 {
		vals = append(vals, p-1, p, p+1, p*7+3)
	}
	rng := uint64(3)
	for i := 0; i < 1000; i++ {
		rng = rng*6364136223846793005 + 1442695040888963407
		vals = append(vals, rng, rng>>(i%64))
	}
	for i, ms := range vals {
		seq := vals[(i*7+3)%len(vals)]
		id := ID{Ms: ms, Seq: seq}
		want := "x" + strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq, 10)
		if got := string(id.Append([]byte("x"))); got != want {
			t.Fatalf("ID{%d, %d}.Append = %q, want %q", ms, seq, got, want)
		}
	}
}

// BenchmarkIDAppend formats an XADD * ID (13 digits, sequence 0).
func BenchmarkIDAppend(b *testing.B) {
	var buf [48]byte
	id := ID{Ms: 1733228553123}
	n := 0
	for i := 0; i < b.N; i++ {
		id.Ms += uint64(i & 1)
		n += len(id.Append(buf[:0]))
	}
	_ = n
}
