package node

import (
	"bytes"
	"context"
	"testing"
)

// TestIncrementalFsyncConfig: Redis's two settings exist, default yes, and
// a SAVE (6 MB) with either value writes a file that loads back.
func TestIncrementalFsyncConfig(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"yes", "no"} {
		ts := startServer(t, "rdb-save-incremental-fsync", v, "enable-debug-command", "yes")
		c := ts.client(t)
		for _, name := range []string{"rdb-save-incremental-fsync", "aof-rewrite-incremental-fsync"} {
			got, err := c.ConfigGet(ctx, name).Result()
			if err != nil || len(got) != 1 {
				t.Fatalf("CONFIG GET %s: %v %v", name, got, err)
			}
			if want := map[bool]string{true: v, false: "yes"}[name == "rdb-save-incremental-fsync"]; got[name] != want {
				t.Fatalf("%s = %q, want %q", name, got[name], want)
			}
		}
		for i := 0; i < 2000; i++ {
			c.Set(ctx, "k"+itoa(i), bytes.Repeat([]byte{byte('a' + i%26)}, 3000), 0)
		}
		if err := c.Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
			t.Fatal(err)
		}
		if n := c.DBSize(ctx).Val(); n != 2000 {
			t.Fatalf("incremental-fsync %s: %d keys after DEBUG RELOAD, want 2000", v, n)
		}
	}
}
