package consistent

import (
	"strconv"
	"testing"
)

func TestJumpRange(t *testing.T) {
	for n := 1; n <= 20; n++ {
		j := NewJump(n)
		for i := range 1000 {
			if got := j.Get(strconv.Itoa(i)); got < 0 || got >= n {
				t.Fatalf("n=%d: Get = %d out of range", n, got)
			}
		}
	}
}

func TestJumpSingleShard(t *testing.T) {
	j := NewJump(1)
	for i := range 100 {
		if j.Get(strconv.Itoa(i)) != 0 {
			t.Fatal("one shard must own every key")
		}
	}
}

func TestJumpDistribution(t *testing.T) {
	const n, keys = 5, 100_000
	j := NewJump(n)
	counts := make([]int, n)
	for i := range keys {
		counts[j.Get("key:"+strconv.Itoa(i))]++
	}
	for i, c := range counts {
		if c < keys/n*95/100 || c > keys/n*105/100 {
			t.Errorf("shard %d got %d keys, want about %d", i, c, keys/n)
		}
	}
}

// TestJumpRemapping: growing n -> n+1 moves about 1/(n+1) of the keys, and
// only to the new shard.
func TestJumpRemapping(t *testing.T) {
	const keys = 100_000
	for n := 1; n <= 10; n++ {
		a, b := NewJump(n), NewJump(n+1)
		moved := 0
		for i := range keys {
			k := "k" + strconv.Itoa(i)
			x, y := a.Get(k), b.Get(k)
			if x != y {
				moved++
				if y != n {
					t.Fatalf("n=%d: key moved from %d to %d, not to the new shard", n, x, y)
				}
			}
		}
		frac, want := float64(moved)/keys, 1/float64(n+1)
		if frac < want*0.9 || frac > want*1.1 {
			t.Errorf("n=%d: moved %.4f, want about %.4f", n, frac, want)
		}
	}
}

func TestJumpPanicsOnZero(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewJump(0) did not panic")
		}
	}()
	NewJump(0)
}

func BenchmarkJumpGet(b *testing.B) {
	j := NewJump(8)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = j.Get("user:" + strconv.Itoa(i&1023))
	}
}
