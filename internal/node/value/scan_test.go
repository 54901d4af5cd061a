package value

import (
	"strconv"
	"testing"
)

// TestScanCoversAll: a full SCAN (cursor back to 0) of each collection,
// small and large, returns every element, each with its value or score.
func TestScanCoversAll(t *testing.T) {
	for _, n := range []int{5, 1000} {
		h, s, z := NewHash(), NewSet(), NewZSet()
		for i := 0; i < n; i++ {
			k := "m" + strconv.Itoa(i)
			h.Set(k, []byte(k+"v"))
			s.Add(k)
			z.Add(k, float64(i))
		}
		seen := map[string]int{}
		for cur, steps := uint64(0), 0; ; steps++ {
			cur = h.Scan(cur, 10, func(f, v []byte) {
				if string(v) != string(f)+"v" {
					t.Fatalf("HSCAN gave %q=%q", f, v)
				}
				seen["h"+string(f)]++
			})
			if cur == 0 || steps > 10*n {
				break
			}
		}
		for cur, steps := uint64(0), 0; ; steps++ {
			if cur = s.Scan(cur, 10, func(m []byte) { seen["s"+string(m)]++ }); cur == 0 || steps > 10*n {
				break
			}
		}
		for cur, steps := uint64(0), 0; ; steps++ {
			cur = z.Scan(cur, 10, func(m string, sc float64) {
				if want, _ := z.Score(m); want != sc {
					t.Fatalf("ZSCAN gave %q %v", m, sc)
				}
				seen["z"+m]++
			})
			if cur == 0 || steps > 10*n {
				break
			}
		}
		for i := 0; i < n; i++ {
			k := "m" + strconv.Itoa(i)
			for _, p := range []string{"h", "z"} {
				if seen[p+k] == 0 {
					t.Errorf("n=%d: %s scan missed %s", n, p, k)
				}
			}
			if seen["s"+k] == 0 {
				t.Errorf("n=%d: set scan missed %s", n, k)
			}
		}
	}
}
