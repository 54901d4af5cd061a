package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestAutoSyncFile writes 10.5 MB in 64 kB pieces through autoSyncFile:
// the file holds exactly what was written, and write-back was started
// for every full autoSyncBytes block (two of them), the second after
// waiting for the first.
func TestAutoSyncFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := &autoSyncFile{f: f}
	var want bytes.Buffer
	piece := make([]byte, 64<<10)
	for i := 0; want.Len() < 10<<20+512<<10; i++ {
		for j := range piece {
			piece[j] = byte(i + j)
		}
		if n, err := a.Write(piece); err != nil || n != len(piece) {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		want.Write(piece)
	}
	if a.written != int64(want.Len()) || a.synced != 2*autoSyncBytes {
		t.Fatalf("written %d synced %d, want %d and %d", a.written, a.synced, want.Len(), 2*autoSyncBytes)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("file differs (%d bytes, want %d)", len(got), want.Len())
	}
}

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
