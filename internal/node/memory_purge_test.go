package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestMemoryPurgeCollects checks that MEMORY PURGE leaves used_memory
// counting only live data: 20 MB of values are written and deleted, and
// after the purge used_memory is at least 10 MB below what it was while
// they were live (without a collection the deleted values stay counted).
func TestMemoryPurgeCollects(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	used := func() int64 {
		t.Helper()
		info, err := rc.Info(ctx(t), "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatalf("no used_memory in %q", info)
		return 0
	}
	val := strings.Repeat("x", 100<<10)
	for i := 0; i < 200; i++ {
		if err := rc.Set(ctx(t), fmt.Sprint("big", i), val, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.Do(ctx(t), "MEMORY", "PURGE").Err(); err != nil {
		t.Fatal(err)
	}
	live := used()
	for i := 0; i < 200; i++ {
		if err := rc.Del(ctx(t), fmt.Sprint("big", i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.Do(ctx(t), "MEMORY", "PURGE").Err(); err != nil {
		t.Fatal(err)
	}
	if after := used(); after > live-10<<20 {
		t.Errorf("used_memory %d after deleting 20 MB and MEMORY PURGE, %d while live: want at least 10 MB less", after, live)
	}
}
