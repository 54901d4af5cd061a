package node

import "testing"

func TestDefaultIOThreads(t *testing.T) {
	for _, c := range []struct{ cpus, want int }{{1, 1}, {2, 1}, {3, 2}, {8, 7}, {200, 128}} {
		if got := defaultIOThreads(c.cpus); got != c.want {
			t.Errorf("defaultIOThreads(%d) = %d, want %d", c.cpus, got, c.want)
		}
	}
}
