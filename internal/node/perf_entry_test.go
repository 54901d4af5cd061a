package node

import (
	"strings"
	"testing"
)

// Keys and values stored in one allocation with their entry
// (keyspace/entry_inline.go) behave as separate ones: growing, rewriting in place,
// renaming and deleting never corrupt the key or a neighbour.
func TestPackedStringEntries(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	check := func(key, want string) {
		t.Helper()
		got, err := rc.Get(c, key).Result()
		if err != nil || got != want {
			t.Fatalf("GET %q = %q, %v; want %q", key, got, err, want)
		}
	}
	for _, kv := range [][2]string{{"", ""}, {"k", ""}, {"", "v"}, {"key:000000000001", "val:000000000001"},
		{"k48", strings.Repeat("x", 40)}, {"k64", strings.Repeat("y", 60)}, {"big", strings.Repeat("z", 100)}} {
		if err := rc.Set(c, kv[0], kv[1], 0).Err(); err != nil {
			t.Fatal(err)
		}
		check(kv[0], kv[1])
	}
	// Grow past the inline bytes, then rewrite in place.
	if n, err := rc.Append(c, "key:000000000001", "+more").Result(); err != nil || n != 21 {
		t.Fatalf("APPEND = %d, %v", n, err)
	}
	check("key:000000000001", "val:000000000001+more")
	rc.Set(c, "k2", "abcd", 0)
	if err := rc.SetRange(c, "k2", 1, "XY").Err(); err != nil {
		t.Fatal(err)
	}
	check("k2", "aXYd")
	rc.Set(c, "k2", "wxyz", 0) // same length: rewritten in place
	check("k2", "wxyz")
	if err := rc.Rename(c, "k2", "renamed").Err(); err != nil {
		t.Fatal(err)
	}
	check("renamed", "wxyz")
	if n, _ := rc.Exists(c, "k2").Result(); n != 0 {
		t.Fatal("k2 still exists after RENAME")
	}
	rc.Set(c, "k3", "1", 0)
	if n, err := rc.Incr(c, "k3").Result(); err != nil || n != 2 {
		t.Fatalf("INCR = %d, %v", n, err)
	}
	if keys, _ := rc.Keys(c, "k*").Result(); len(keys) != 5 {
		t.Fatalf("KEYS k* = %q", keys)
	}
	rc.Del(c, "k48")
	check("k64", strings.Repeat("y", 60))
	check("", "v")
}
