package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveInPlace: a shorter text replaces a longer file exactly, through
// the padded write (which leaves only blank lines after the text, which
// LoadNodesConf skips) and the truncation; a missing file is an error (the
// atomic path then creates it).
func TestSaveInPlace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.conf")
	if err := saveInPlace(p, "x"); err == nil {
		t.Fatal("saveInPlace created a missing file")
	}
	long := strings.Repeat("old line\n", 20)
	if err := os.WriteFile(p, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"a b c\nvars currentEpoch 1\n", strings.Repeat("longer line\n", 30)} {
		if err := saveInPlace(p, text); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != text {
			t.Fatalf("file holds %q, want %q", got, text)
		}
	}
}
