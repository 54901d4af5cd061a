package persist

import (
	"bytes"
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
